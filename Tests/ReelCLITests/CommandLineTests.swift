import Foundation
import Testing
import ReelCLI
import ReelCore
import ReelWriter

/// The repository's root (README.md, docs/, Sources/), from this file's path.
let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}()

/// The documentation's Markdown pages: README.md, then every `docs/*.md` sorted by name
/// (paths relative to the repository's root).
func documentationPages() throws -> [String] {
    let pages = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/docs")
        .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
    return ["README.md"] + pages
}

/// The documentation as one text: README.md followed by every `docs/*.md` page (sorted by
/// name), each after a newline. Every docs page starts with a `# Title` line, so a section
/// `readmeSection` finds ends at the end of its page at the latest
/// (`everyDocsPageStartsWithATitle`).
func readme() throws -> String {
    try documentationPages()
        .map { try String(contentsOfFile: repositoryRoot + "/" + $0, encoding: .utf8) }
        .joined(separator: "\n")
}

/// The lines of the documentation section that starts with `heading` (up to the next heading
/// of the same or a higher level; a page's `# Title` ends every section before it).
func readmeSection(_ heading: String, in text: String) -> [String] {
    let lines = text.components(separatedBy: "\n")
    guard let start = lines.firstIndex(of: heading) else { return [] }
    let level = heading.prefix { $0 == "#" }.count
    var out: [String] = []
    for line in lines[(start + 1)...] {
        let hashes = line.prefix { $0 == "#" }.count
        if hashes > 0 && hashes <= level && line.dropFirst(hashes).hasPrefix(" ") { break }
        out.append(line)
    }
    return out
}

/// `--name` tokens in a piece of text.
func optionNames(in text: String) -> Set<String> {
    let regex = try! NSRegularExpression(pattern: "--[a-z][a-z0-9-]*")
    let ns = text as NSString
    return Set(regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range) })
}

/// The usage block (the first code block under "## The command line", in docs/cli.md):
/// command (`record`, `pool create`, …) → options it shows.
func readmeSynopsis() throws -> [String: Set<String>] {
    let section = readmeSection("## The command line", in: try readme())
    guard let open = section.firstIndex(where: { $0.hasPrefix("```") }),
          let close = section[(open + 1)...].firstIndex(where: { $0.hasPrefix("```") }) else { return [:] }
    var result: [String: Set<String>] = [:]
    var current: [String] = []
    for line in section[(open + 1)..<close] {
        if line.hasPrefix("reel ") {
            let words = line.split(separator: " ").map(String.init)
            if words[1] == "pool" {
                current = words[2].split(separator: "|").map { "pool " + $0 }
            } else {
                current = [words[1]]
            }
            for c in current { result[c, default: []].formUnion(optionNames(in: line)) }
        } else {
            for c in current { result[c, default: []].formUnion(optionNames(in: line)) }
        }
    }
    return result
}

/// Rows (`| a | b |` → ["a", "b"]) of the first table after the line `after` in `lines`.
func tableRows(_ lines: [String], after marker: (String) -> Bool) -> [[String]] {
    guard let start = lines.firstIndex(where: marker) else { return [] }
    var rows: [[String]] = []
    var inTable = false
    for line in lines[start...] {
        if line.hasPrefix("|") {
            inTable = true
            // Split on | not escaped as \|.
            var cells: [String] = [], cell = "", previous: Character = " "
            for ch in line {
                if ch == "|" && previous != "\\" { cells.append(cell); cell = "" } else { cell.append(ch) }
                previous = ch
            }
            let trimmed = cells.dropFirst().map { $0.trimmingCharacters(in: .whitespaces) }
            if trimmed.first.map({ $0.allSatisfy { $0 == "-" } && !$0.isEmpty }) == true { continue }
            rows.append(Array(trimmed))
        } else if inTable {
            break
        }
    }
    return Array(rows.dropFirst())   // the header
}

/// A command line that `spec` accepts as it is, to which one more option can be added.
func minimalArguments(_ spec: CommandSpec) -> [String] {
    var argv = spec.name.split(separator: " ").map(String.init)
    switch spec.name {
    case "probe", "verify": argv.append("some-file")
    case "pool _prepare": argv.append("some-pool")
    case "_load": argv.append("bulk")
    case "control": argv.append("status")
    default: break
    }
    for o in spec.options where o.required { argv += [o.name, o.sample!] }
    return argv
}

/// The exit statuses the exit-status table (docs/cli.md) documents.
func documentedStatuses() throws -> Set<Int32> {
    let rows = tableRows(readmeSection("### Exit status", in: try readme()), after: { $0.hasPrefix("| status") })
    return Set(rows.compactMap { Int32($0[0]) })
}

/// Range texts (`0.001–86400`, `4M–64T`) in a piece of text.
func ranges(in text: String) -> Set<String> {
    let regex = try! NSRegularExpression(pattern: "[0-9][0-9.]*[KMGT]?–[0-9][0-9.]*[KMGT]?")
    let ns = text as NSString
    return Set(regex.matches(in: text, range: NSRange(location: 0, length: ns.length)).map { ns.substring(with: $0.range) })
}

@Suite struct ReadmeMatchesTheCommandLineTests {
    /// Every option of every subcommand's table is in the usage block (docs/cli.md), and every
    /// option the usage block shows is one that subcommand's table (so its parser) has.
    @Test func usageBlockListsExactlyTheOptionsEachParserAccepts() throws {
        let documented = try readmeSynopsis()
        for spec in CommandTable.all where !spec.hidden {
            let accepted = Set(spec.options.filter { !$0.hidden }.map(\.name))
            let shown = documented[spec.name] ?? []
            #expect(documented[spec.name] != nil, "docs/cli.md's usage block has no line for reel \(spec.name)")
            #expect(accepted.subtracting(shown).isEmpty, "reel \(spec.name) accepts \(accepted.subtracting(shown).sorted()) but docs/cli.md's usage does not show them")
            #expect(shown.subtracting(accepted).isEmpty, "docs/cli.md shows \(shown.subtracting(accepted).sorted()) for reel \(spec.name), which its parser refuses")
        }
        let commands = Set(CommandTable.all.filter { !$0.hidden }.map(\.name) + ["help"])
        #expect(Set(documented.keys).subtracting(commands).isEmpty, "docs/cli.md documents unknown commands \(Set(documented.keys).subtracting(commands))")
    }

    /// Each documented option, given its sample value, parses (the parser is the table's).
    @Test func everyDocumentedOptionParses() throws {
        for (command, options) in try readmeSynopsis() where command != "help" {
            let spec = try #require(CommandTable.spec(command), "reel \(command)")
            for name in options {
                let o = try #require(spec.option(name), "\(command) \(name)")
                var argv = minimalArguments(spec) + [name]
                if let sample = o.sample { argv.append(sample) }
                #expect(throws: Never.self, "reel \(argv.joined(separator: " "))") { _ = try ReelCLI.parse(argv) }
                // The --name=value form too.
                if let sample = o.sample {
                    let inline = minimalArguments(spec) + ["\(name)=\(sample)"]
                    #expect(throws: Never.self, "reel \(inline.joined(separator: " "))") { _ = try ReelCLI.parse(inline) }
                }
            }
        }
    }

    /// `reel record`'s option table in docs/cli.md has a row for each option and no more;
    /// the ranges the parser enforces are the ones docs/cli.md states.
    @Test func recordOptionTableMatchesTheParserAndItsRanges() throws {
        let rows = tableRows(readmeSection("## The command line", in: try readme()), after: { $0.hasPrefix("| option | meaning") })
        var documented: [String: String] = [:]   // option → its rows' text
        for row in rows { for name in optionNames(in: row[0]) { documented[name, default: ""] += " " + row.joined(separator: " ") } }
        let accepted = Set(CommandTable.record.options.map(\.name))
        #expect(Set(documented.keys) == accepted,
                "undocumented: \(accepted.subtracting(documented.keys).sorted()); not accepted: \(Set(documented.keys).subtracting(accepted).sorted())")
        for o in CommandTable.record.options {
            let missing = ranges(in: o.help).subtracting(ranges(in: documented[o.name] ?? ""))
            #expect(missing.isEmpty, "docs/cli.md's row for \(o.name) lacks the range \(missing.sorted())")
        }
    }

    /// The pool and jitter options that take numbers are in docs/cli.md's range table, with
    /// the parser's ranges.
    @Test func poolAndJitterRangesAreDocumented() throws {
        let rows = tableRows(readmeSection("## The command line", in: try readme()), after: { $0.hasPrefix("| option | range") })
        var documented: [String: String] = [:]   // "pool create --capacity" → range text
        for row in rows {
            let regex = try NSRegularExpression(pattern: "`((?:pool [a-z]+|jitter) --[a-z-]+)")
            let ns = row[0] as NSString
            for m in regex.matches(in: row[0], range: NSRange(location: 0, length: ns.length)) {
                documented[ns.substring(with: m.range(at: 1))] = row[1]
            }
        }
        for spec in CommandTable.all where !spec.hidden && (spec.name.hasPrefix("pool") || spec.name == "jitter") {
            for o in spec.options where !ranges(in: o.help).isEmpty {
                let key = "\(spec.name) \(o.name)"
                let row = try #require(documented[key], "docs/cli.md's range table has no row for \(key)")
                #expect(ranges(in: o.help).isSubset(of: ranges(in: row)), "\(key): parser \(ranges(in: o.help).sorted()), docs/cli.md \(row)")
            }
        }
        for key in documented.keys {
            let words = key.split(separator: " ")
            let spec = CommandTable.spec(words.dropLast().joined(separator: " "))
            #expect(spec?.option(String(words.last!)) != nil, "docs/cli.md's range table lists \(key), which the parser refuses")
        }
    }

    /// Every status in the exit-status table (docs/cli.md) is one the code returns, and every
    /// status the code returns (named constants, literal returns, `_exit`) is documented.
    @Test func exitStatusTableMatchesTheCode() throws {
        var returned: Set<Int32> = [0]
        let sources = repositoryRoot + "/Sources"
        let files = FileManager.default.enumerator(atPath: sources)!.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        #expect(files.count > 20)
        let named = try NSRegularExpression(pattern: "ExitStatus\\.([a-zA-Z]+)")
        let literal = try NSRegularExpression(pattern: "(?:_exit|\\bexit)\\(([0-9]+)\\)|return ([0-9]{2,3})\\b")
        for f in files {
            let text = try String(contentsOfFile: sources + "/" + f, encoding: .utf8)
            let ns = text as NSString
            for m in named.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
                let name = ns.substring(with: m.range(at: 1))
                if name == "all" { continue }
                let value = try #require(ExitStatus.all[name], "ExitStatus.\(name) in \(f)")
                returned.insert(value)
            }
            for m in literal.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
                for g in 1...2 where m.range(at: g).location != NSNotFound {
                    if let v = Int32(ns.substring(with: m.range(at: g))), v >= 64 { returned.insert(v) }
                }
            }
        }
        let documented = try documentedStatuses()
        #expect(returned.subtracting(documented).isEmpty, "returned but undocumented: \(returned.subtracting(documented).sorted())")
        #expect(documented.subtracting(returned).isEmpty, "documented but never returned: \(documented.subtracting(returned).sorted())")
        #expect(Set(ExitStatus.all.values).isSubset(of: documented))
    }

    /// The causes of 66 and 73 that pools add are in the exit-status table's rows for them (docs/cli.md).
    @Test func poolCausesOfStatusesAreDocumented() throws {
        let rows = tableRows(readmeSection("### Exit status", in: try readme()), after: { $0.hasPrefix("| status") })
        func row(_ status: String) -> String { rows.first { $0[0] == status }?.joined(separator: " ") ?? "" }
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let notAPool = try reel(["pool", "status", dir])
        #expect(notAPool.status == 66 && row("66").contains("not a pool"), "\(notAPool.stderr)")
        try Data("x".utf8).write(to: URL(fileURLWithPath: dir + "/something"))
        let nonEmpty = try reel(["pool", "create", dir, "--capacity", "16M", "--slot", "4M", "--write-mode", "buffered"])
        #expect(nonEmpty.status == 73 && row("73").contains("`pool create` into a non-empty directory"), "\(nonEmpty.stderr)")
        #expect(row("130").contains("second SIGINT"))
    }

    /// `reel help` prints each visible option with its range; `reel` alone is a one-line
    /// usage error.
    @Test func helpShowsTheTables() throws {
        let help = try reel(["help"])
        #expect(help.status == 0)
        for spec in CommandTable.all where !spec.hidden {
            #expect(help.stdout.contains("reel \(spec.name)"), "\(spec.name)")
            for o in spec.options where !o.hidden { #expect(help.stdout.contains(o.name)) }
        }
        #expect(help.stdout.contains("0.001–86400"))
        let bare = try reel([])
        #expect(bare.status == 64 && bare.stderr.hasPrefix("reel: no command") && bare.stderr.split(separator: "\n").count == 1, "\(bare.stderr)")
    }
}

/// Numbers outside an option's range: exit 64 with one line, never a crash.
@Suite struct OptionRangeTests {
    /// The cases of issue 9 through the real binary (each bounded: on the old parser some of
    /// these ran for minutes or died by SIGILL).
    @Test(arguments: [
        ["record", "--duration", "1e300"], ["record", "--fragment", "1e300"], ["record", "--duration", "nan"],
        ["record", "--duration", "-inf"], ["record", "--ratio-at", "1e300:9x16"], ["record", "--ratio-at", "#99999999999999999999:1x1"],
        ["record", "--source", "v4l2:/dev/video0:99999999999x1"], ["record", "--source", "v4l2:/dev/video0:@9999999999999"],
        ["pool", "wait", "--timeout", "1e300"], ["pool", "wait", "--timeout", "-1"],
        ["pool", "create", "POOL", "--capacity", "8000000T"], ["pool", "create", "POOL", "--capacity", "16T", "--slot", "4M"],
        ["pool", "create", "POOL", "--capacity", "1G", "--slot", "1e300M"], ["pool", "create", "POOL", "--capacity", "1G", "--seconds", "1e300"],
        ["pool", "calibrate", "POOL", "--seconds", "inf"], ["pool", "resize", "POOL", "--capacity", "65T"],
        ["jitter", "--duration", "1e300"], ["jitter", "--rate", "8e12M"], ["jitter", "--rate", "1e300"],
        ["jitter", "--ring", "1e300"], ["jitter", "--ring", "8000000T"], ["jitter", "--fps", "inf"], ["jitter", "--block", "1e300"],
        ["_load", "bulk", "--seconds", "1e300"], ["_load", "fsync", "--seconds", "-5"],
    ])
    func outOfRangeIsAUsageError(args: [String]) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let argv = args.map { $0 == "POOL" ? dir + "/pool" : $0 }
        let run = try boundedReel(argv, in: dir, timeout: 30, environment: ["REEL_POOL": dir + "/default-pool", "XDG_CACHE_HOME": dir + "/cache"])
        #expect(run.signal == nil, "reel \(argv.joined(separator: " ")) died by signal \(run.signal ?? 0)")
        #expect(!run.timedOut, "reel \(argv.joined(separator: " ")) was still running after 30 s")
        #expect(run.status == 64, "reel \(argv.joined(separator: " ")): \(run.status) \(run.stderr)")
        let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.isEmpty }
        #expect(lines.count == 1 && lines[0].hasPrefix("reel: "), "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/pool"), "a refused pool create left a directory")
    }

    /// Each range's ends are accepted and the numbers just outside refused (in-process).
    @Test func rangeEndsInProcess() throws {
        let cases: [(argv: [String], ok: [String], refused: [String])] = [
            (["record", "--duration"], ["0.001", "86400"], ["0", "86400.5", "1e300", "nan", "inf", "-1", ""]),
            (["record", "--frames"], ["1", "10000000"], ["0", "10000001", "99999999999999999999", "1.5", "-1"]),
            (["record", "--fragment"], ["0.1", "600"], ["0.09", "601", "1e300"]),
            (["record", "--fps"], ["1", "240", "29.97", "30000/1001"], ["0", "241", "1e300", "nan", "1/0"]),
            (["record", "--ratio-at"], ["0:1x1", "86400:1x1", "#0:1x1", "#2147483647:1x1"], ["86401:1x1", "-1:1x1", "#2147483648:1x1", "nan:1x1"]),
            (["record", "--source"], ["v4l2:/dev/video0:16384x16384@240", "v4l2:/dev/video0:1x1@1"], ["v4l2:/dev/video0:16385x10", "v4l2:/dev/video0:@241", "v4l2:/dev/video0:@0"]),
            (["pool", "create", "p", "--slot", "4M", "--capacity"], ["4M", "256G"], ["4095K", "257G", "64.1T", "8000000T"]),
            (["pool", "create", "p", "--capacity", "64T", "--slot"], ["1G", "64G"], ["4M", "3M", "65G", "4.5M"]),
            (["pool", "create", "p", "--capacity", "1G", "--seconds"], ["0.5", "600"], ["0.4", "601"]),
            (["pool", "wait", "--timeout"], ["0.1", "86400"], ["0", "86401", "-1"]),
            (["jitter", "--rate"], ["1M", "10G", "150M/s", "1000000"], ["999999", "10.1G", "0", "-5M", "1e300M"]),
            (["jitter", "--block"], ["4K", "64M", "8K"], ["6K", "2K", "68M", "0"]),
            (["jitter", "--duration"], ["0.1", "3600"], ["0.09", "3601"]),
            (["jitter", "--ring"], ["1M", "1G"], ["1023K", "1.5G"]),
            (["jitter", "--fps"], ["1", "1000"], ["0.5", "1001", "nan"]),
            (["_load", "bulk", "--seconds"], ["0.1", "86400"], ["0", "1e300"]),
            (["pool", "_prepare", "p", "--from"], ["1", "2147483647"], ["0", "2147483648", "-1"]),
        ]
        for c in cases {
            for v in c.ok {
                #expect(throws: Never.self, "\(c.argv) \(v)") { _ = try ReelCLI.parse(c.argv + [v]) }
            }
            for v in c.refused {
                do {
                    _ = try ReelCLI.parse(c.argv + [v])
                    Issue.record("\(c.argv) \(v) was accepted")
                } catch {
                    let (line, status) = ReelCLI.report(error)
                    #expect(status == 64 && !line.isEmpty, "\(c.argv) \(v): \(status) \(line)")
                }
            }
        }
    }

    @Test func parsingGivesTheTypedOptions() throws {
        guard case .record(let configuration, let json, _) = try ReelCLI.parse(["record", "--frames=7", "--fps", "25", "--plain", "--json", "--realtime", "--no-realtime"]) else {
            Issue.record("not a record command"); return
        }
        let o = configuration.recording
        #expect(o.length == .frames(7) && o.rate.perSecond == 25 && o.storage == .plain && json && !o.realtime)
        guard case .pool(let p) = try ReelCLI.parse(["pool", "create", "x", "--capacity", "64M", "--slot", "4M", "--background"]) else {
            Issue.record("not a pool command"); return
        }
        #expect(p.verb == "create" && p.path == "x" && p.capacity == 64 << 20 && p.slot == 4 << 20 && p.background)
        guard case .jitter(let j) = try ReelCLI.parse(["jitter", "--rate", "20M", "--block=8K", "--contention", "bulk,all"]) else {
            Issue.record("not jitter"); return
        }
        #expect(j.options.bytesPerSecond == 20_000_000 && j.options.blockSize == 8192 && j.scenarios.count == 2)
        // Options of one pool verb are not options of another.
        #expect(throws: (any Error).self) { _ = try ReelCLI.parse(["pool", "status", "--capacity", "4G"]) }
        #expect(throws: (any Error).self) { _ = try ReelCLI.parse(["pool", "status", "a", "b"]) }
    }
}

/// The output of a `reel` process that may be killed: its status, or the signal that ended it.
struct BoundedRun {
    let status: Int32
    let signal: Int32?
    let timedOut: Bool
    let stdout: String
    let stderr: String
}

/// Runs `reel args…`, killing it (SIGKILL) after `timeout` seconds.
func boundedReel(_ args: [String], in directory: String? = nil, timeout: Double, environment: [String: String] = [:]) throws -> BoundedRun {
    let l = try launch(args, in: directory, environment: environment)
    let killed = Flag()
    let pid = l.process.processIdentifier
    let timer = DispatchWorkItem {
        if l.process.isRunning { killed.set(); kill(pid, SIGKILL) }
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: timer)
    let run = l.wait()
    timer.cancel()
    let bySignal = l.process.terminationReason == .uncaughtSignal
    return BoundedRun(status: bySignal ? -1 : run.status, signal: bySignal ? run.status : nil, timedOut: killed.isSet,
                      stdout: run.stdout, stderr: run.stderr)
}

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var flag = false
    func set() { lock.lock(); flag = true; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return flag }
}
