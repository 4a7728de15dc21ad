import Foundation
import Testing
import ReelCLI

/// SplitMix64: a small seedable generator, so a failing vector reproduces from its seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The seed of this run: `REEL_FUZZ_SEED`, else a fresh one (printed either way).
let fuzzSeed: UInt64 = {
    if let s = ProcessInfo.processInfo.environment["REEL_FUZZ_SEED"], let v = UInt64(s) { return v }
    var g = SystemRandomNumberGenerator()
    return g.next() >> 1
}()

/// Values an option or operand may get: numbers at and past every edge, NaN, infinities,
/// empty, unicode, control characters, path-like and very long text.
let fuzzValues: [String] = [
    "", " ", "0", "1", "2", "-1", "-0", "0.5", "1.5", "3", "30", "29.97", "30000/1001", "1/0", "0/0", "240", "241", "1000",
    "86400", "86401", "1e300", "-1e300", "1e-300", "1e308", "1e309", "nan", "NaN", "-nan", "inf", "-inf", "infinity", "0x10",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616", "2147483648",
    String(repeating: "9", count: 400), "4K", "6K", "1M", "64M", "65M", "1G", "8000000T", "64T", "65T", "1P", "1.5GiB",
    "150M/s", "10G", "1e300M", "8e12M", "4M", "16M", "#", "#0", "#-1", "#1e300", "#99999999999999999999", "1:9x16", "1e300:9x16",
    "nan:1x1", "#3:4x3", ":", "::", "x", "1x1", "16x9", "9x16", "3x4", "99x99", "prores", "prores:4444", "prores:bogus", "h264",
    "hevc", "ffv1", "mov", "mp4", "mkv", "MKV", "avi", "synthetic", "synthetic:", "synthetic:1280", "synthetic:1281",
    "synthetic:4032", "synthetic:1e9", "synthetic:-2", "v4l2", "v4l2:", "v4l2:/dev/video0", "v4l2:/dev/video0:99999999999x1@99999999999:YUYV",
    "v4l2:/dev/video0:1280x720@30:MJPG", "v4l2:relative", "v4l2:/dev/null", "none", "all", "bulk,fsync", "bulk,,", ",", "memory",
    "pool,buffered", "pool-direct", "bogus-arm", "auto", "buffered", "direct", "zero", "fallocate", "ünïcödé", "🎥🎞️", "名前",
    "a\nb", "tab\there", "\u{1B}[31mred", "\u{0}", "\u{2028}", "-", "--", "--json", "-h", "a", "a/b", "./x", "../x", "../../y",
    ".", "..", "out dir", "/dev/null", "/dev/null/x", "/proc/reel-fuzz", "/proc/self/status", "/dev/zero", "/proc/self/fd", "~", "$HOME", "*", "%s%n",
]

/// Paths a real run must not write (root can write almost anywhere): left out of the
/// vectors that go through the binary.
let unsafeForBinary: Set<String> = ["/", "//", "~", "$HOME"]

/// One random command line: groups of tokens (an option with its value, an operand, …).
func fuzzGroups(_ rng: inout SplitMix64, binary: Bool) -> [[String]] {
    let values = binary ? fuzzValues.filter { !unsafeForBinary.contains($0) } : fuzzValues
    func value() -> String { values.randomElement(using: &rng)! }
    let specs = CommandTable.all
    let roll = Int.random(in: 0..<100, using: &rng)
    if roll < 2 { return [] }
    if roll < 5 { return [[value()]] + (0..<Int.random(in: 0...3, using: &rng)).map { _ in [value()] } }
    let spec = specs.randomElement(using: &rng)!
    var groups: [[String]] = [spec.name.split(separator: " ").map(String.init)]
    if Int.random(in: 0..<10, using: &rng) < 6 {
        // Operands and required options the command wants, so that parsing gets further.
        if spec.operands != nil { groups.append([spec.name == "_load" ? ["bulk", "fsync", "metadata", "memory"].randomElement(using: &rng)! : value()]) }
        for o in spec.options where o.required { groups.append([o.name, o.sample!]) }
    }
    for _ in 0..<Int.random(in: 0...6, using: &rng) {
        let kind = Int.random(in: 0..<100, using: &rng)
        switch kind {
        case 0..<60 where !spec.options.isEmpty:
            let o = spec.options.randomElement(using: &rng)!
            let v = Bool.random(using: &rng) ? (o.sample ?? value()) : value()
            if !o.takesValue { groups.append(Int.random(in: 0..<10, using: &rng) == 0 ? ["\(o.name)=\(v)"] : [o.name]) }
            else if Int.random(in: 0..<4, using: &rng) == 0 { groups.append(["\(o.name)=\(v)"]) }
            else { groups.append([o.name, v]) }
        case 60..<70:
            let other = specs.randomElement(using: &rng)!
            if let o = other.options.randomElement(using: &rng) { groups.append(o.takesValue ? [o.name, value()] : [o.name]) }
        case 70..<80: groups.append([value()])
        case 80..<88: if groups.count > 1 { groups.append(groups.last!) }
        case 88..<95: groups.append([["-", "--", "---", "--=", "-x", "--no-such-option", "--json=", "--=x", "--json=1"].randomElement(using: &rng)!])
        default:
            // A value-taking option as the last word, without its value.
            if let o = spec.options.filter(\.takesValue).randomElement(using: &rng) { groups.append([o.name]) }
        }
    }
    return groups
}

/// Makes a command line safe and short to run for real: short recordings, small pools,
/// brief measurements (the options appended last win, or clash with a usage error).
func bounded(_ groups: [[String]]) -> [String] {
    guard let words = groups.first, !words.isEmpty else { return groups.flatMap { $0 } }
    let command = words.joined(separator: " ")
    func optionName(_ g: [String]) -> String { String(g[0].split(separator: "=", maxSplits: 1).first ?? "") }
    var rest = Array(groups.dropFirst())
    var tail: [String] = []
    switch command {
    case "record":
        rest.removeAll { ["--duration", "--frames"].contains(optionName($0)) }
        tail = ["--frames", "2"]
    case "jitter": tail = ["--duration", "0.1", "--rate", "50M", "--ring", "8M", "--contention", "none", "--no-floor"]
    case "pool create": tail = ["--capacity", "16M", "--slot", "4M", "--write-mode", "buffered"]
    case "photo":
        // One quick shot (4032x4032 sensor buffers are large): the options last win.
        rest.removeAll { ["--count", "--ring"].contains(optionName($0)) }
        tail = ["--count", "1", "--ring", "3"]
    case "preview":
        // Runs until SIGINT without --duration; a free port so runs never meet on 8080.
        rest.removeAll { ["--duration", "--preview"].contains(optionName($0)) }
        tail = ["--duration", "0.3", "--preview", "127.0.0.1:0"]
    case "pool resize": tail = ["--capacity", "16M"]
    case "pool wait": tail = ["--timeout", "1"]
    case "pool calibrate": tail = ["--seconds", "0.5"]
    case "calibrate":   // issue 13: measured once per fuzz run (the cache is shared), not at every --refresh
        rest.removeAll { optionName($0) == "--refresh" }
    case "_load":
        // Half the memory touched would disturb the other tests; the other loads are brief.
        rest = rest.map { $0 == ["memory"] ? ["metadata"] : $0 }
        tail = ["--seconds", "0.2"]
    default: break
    }
    return words + rest.flatMap { $0 } + tail
}

@Suite struct CLIFuzzTests {
    /// 3,000 random command lines through the parser, in this process: each parses or fails
    /// with a one-line usage error (exit 64), and parsing touches nothing.
    @Test func parserInProcess() throws {
        print("CLI fuzz (in process): seed \(fuzzSeed); REEL_FUZZ_SEED=\(fuzzSeed) reproduces")
        var rng = SplitMix64(seed: fuzzSeed)
        let sentinel = "reel-fuzz-sentinel-\(getpid())"
        var parsed = 0, refused = 0
        for i in 0..<3000 {
            var argv = fuzzGroups(&rng, binary: false).flatMap { $0 }
            if i % 50 == 0 { argv += ["--out", sentinel, "--dir", sentinel, "--report", sentinel, sentinel] }
            do {
                _ = try ReelCLI.parse(argv)
                parsed += 1
            } catch {
                refused += 1
                let (line, status) = ReelCLI.report(error)
                #expect(status == 64, "seed \(fuzzSeed) vector \(i): \(argv.debugDescription) → \(status) \(line)")
                #expect(!line.isEmpty && !line.contains("\n") && !line.contains("\r"), "seed \(fuzzSeed) vector \(i): \(argv.debugDescription) → \(line.debugDescription)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: sentinel), "parsing created \(sentinel)")
        #expect(parsed > 100 && refused > 100, "parsed \(parsed), refused \(refused): the generator should reach both")
        print("CLI fuzz (in process): \(parsed) parsed, \(refused) refused")
    }

    /// 110 (`REEL_FUZZ_RUNS`) random command lines through the real binary, each bounded (short recordings,
    /// small pools, a 60 s kill), with every path, pool and cache in a temporary directory:
    /// no run ends by a signal or hangs, every status is one the exit-status table (docs/cli.md) documents, and a
    /// failing run's stderr is exactly one line starting `reel: `.
    @Test func binary() throws {
        print("CLI fuzz (binary): seed \(fuzzSeed); REEL_FUZZ_SEED=\(fuzzSeed) reproduces")
        let documented = try documentedStatuses()
        #expect(documented.contains(64) && documented.contains(0))
        var rng = SplitMix64(seed: fuzzSeed ^ 0x5EED)
        let root = temporaryDirectory("reel-fuzz")
        defer { removeTree(root) }
        let work = root + "/w/x"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let pool = root + "/pool"
        let env = ["REEL_POOL": pool, "XDG_CACHE_HOME": root + "/cache", "XDG_DATA_HOME": root + "/data", "HOME": root + "/home"]
        var statuses: [Int32: Int] = [:]
        let runs = ProcessInfo.processInfo.environment["REEL_FUZZ_RUNS"].flatMap(Int.init) ?? 110
        for i in 0..<runs {
            // The default pool of these runs: small, remade when a run deleted it.
            if !FileManager.default.fileExists(atPath: pool + "/manifest.json") {
                removeTree(pool)
                let made = try reel(["pool", "create", pool, "--capacity", "16M", "--slot", "4M", "--write-mode", "buffered"], environment: env)
                try #require(made.status == 0, "\(made.stderr)")
            }
            let argv = bounded(fuzzGroups(&rng, binary: true))
            // A hang is what the bound catches. `reel calibrate` measures every codec on the
            // realistic scene (about 20 s on an idle 2-core machine, over a minute under the
            // parallel pass): it gets longer.
            let bound: Double = argv.first == "calibrate" ? 300 : 60
            let run = try boundedReel(argv, in: work, timeout: bound, environment: env)
            let what = "seed \(fuzzSeed) run \(i): reel \(argv.debugDescription)"
            #expect(run.signal == nil, "\(what) died by signal \(run.signal ?? 0): \(run.stderr)")
            #expect(!run.timedOut, "\(what) still ran after \(Int(bound)) s")
            guard run.signal == nil, !run.timedOut else { continue }
            statuses[run.status, default: 0] += 1
            #expect(documented.contains(run.status), "\(what) exited \(run.status), which the exit-status table (docs/cli.md) does not document: \(run.stderr)")
            if run.status != 0 {
                // The addresses `--preview` and `--control-socket` print once they listen (docs/cli.md) may
                // come before the error: Deferred Start serves the preview before the pool is opened;
                // so may `reel: warning:` lines (the pool's announcement, drops, the pool outgrown).
                let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: true)
                    .filter { !$0.hasPrefix("preview: http://") && !$0.hasPrefix("control: ") }
                let errors = lines.filter { !$0.hasPrefix("reel: warning: ") }
                #expect(errors.count == 1 && errors[0].hasPrefix("reel: ") && lines.last == errors.first,
                        "\(what) exited \(run.status) with stderr \(run.stderr.debugDescription)")
            }
        }
        print("CLI fuzz (binary): exit statuses \(statuses.sorted { $0.key < $1.key })")
        #expect(statuses.count >= 3, "the runs should end in several ways: \(statuses)")
    }
}
