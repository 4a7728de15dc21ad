import Foundation
import ReelBench
import ReelCore
import ReelStorage

/// `reel jitter …` and the hidden `reel _load KIND --dir D --seconds S` it starts.
enum JitterCommand {
    static func run(_ args: inout Arguments) throws -> Int32 {
        var dir: String? = nil
        var poolPath: String? = nil
        var json = false
        var report: String? = nil
        var contention = "none"
        var o = JitterOptions(directory: ".", executable: selfExecutable)
        while let arg = args.next() {
            let (name, inline) = Arguments.split(arg)
            func value() throws -> String { try args.value(for: name, inline: inline) }
            switch name {
            case "--dir": dir = try value()
            case "--pool": poolPath = try value()
            case "--rate":
                let v = try value()
                guard let n = parseByteSize(v.hasSuffix("/s") ? String(v.dropLast(2)) : v).map({ decimalRate(v, $0) }), n > 0 else {
                    throw UsageError("--rate: '\(v)' is not a rate above 0 (like 150M)")
                }
                o.bytesPerSecond = n
            case "--block":
                let v = try value()
                guard let n = parseByteSize(v), n >= 4096, n % 4096 == 0, n <= 64 << 20 else { throw UsageError("--block: '\(v)' must be a multiple of 4K up to 64M") }
                o.blockSize = Int(n)
            case "--duration": o.seconds = try parseSeconds(try value(), option: name)
            case "--contention": contention = try value()
            case "--arms":
                let v = try value()
                o.arms = try v.split(separator: ",").map {
                    guard let a = JitterArm(rawValue: String($0)) else {
                        throw UsageError("unknown arm '\($0)' (use \(JitterArm.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    return a
                }
            case "--ring":
                let v = try value()
                guard let n = parseByteSize(v), n >= 1 << 20 else { throw UsageError("--ring: '\(v)' is not a size of at least 1M") }
                o.ringBytes = n
            case "--fps":
                let v = try value()
                guard let f = Double(v), f > 0, f <= 1000 else { throw UsageError("--fps: '\(v)' is not a frame rate") }
                o.fps = f
            case "--no-floor": o.floor = false
            case "--report": report = try value()
            case "--json": json = true
            default: throw UsageError("jitter: unknown option '\(arg)'")
            }
        }
        if let poolPath { dir = poolPath }   // the pool's filesystem is the one that matters
        o.directory = dir ?? StoragePool.defaultPath.components(separatedBy: "/").dropLast().joined(separator: "/")
        if o.directory.isEmpty { o.directory = "." }
        try FileManager.default.createDirectory(atPath: o.directory, withIntermediateDirectories: true)
        let scenarios = try parseContention(contention)
        if let report {
            do { try FileManager.default.createDirectory(atPath: report, withIntermediateDirectories: true) } catch {
                throw JitterError.io("cannot write the report to \(report): not a writable directory")
            }
            guard access(report, W_OK) == 0, FileManager.default.isWritableFile(atPath: report) else {
                throw JitterError.io("cannot write the report to \(report): not a writable directory")
            }
            // Root passes access(2): check by creating a file.
            let probe = report + "/.probe"
            guard FileManager.default.createFile(atPath: probe, contents: Data()) else {
                throw JitterError.io("cannot write the report to \(report): not a writable directory")
            }
            try? FileManager.default.removeItem(atPath: probe)
        }
        let result = try Jitter.run(o, scenarios: scenarios) { line in writeStderr("jitter: " + line + "\n") }
        if let report {
            let enc = JSONEncoder()
            enc.outputFormatting = [.prettyPrinted, .sortedKeys]
            try enc.encode(result).write(to: URL(fileURLWithPath: report + "/jitter.json"))
            try SVGReport.render(result).write(toFile: report + "/jitter.svg", atomically: true, encoding: .utf8)
        }
        if json { printJSON(result) } else { printTable(result) }
        return 0
    }

    /// `150M` means 150 000 000 bytes per second for a rate (disk rates are decimal).
    static func decimalRate(_ text: String, _ binary: Int64) -> Int64 {
        let t = text.uppercased()
        if t.hasSuffix("M") || t.hasSuffix("M/S") { return Int64((Double(t.prefix { $0.isNumber || $0 == "." }) ?? 0) * 1e6) }
        if t.hasSuffix("G") || t.hasSuffix("G/S") { return Int64((Double(t.prefix { $0.isNumber || $0 == "." }) ?? 0) * 1e9) }
        if t.hasSuffix("K") || t.hasSuffix("K/S") { return Int64((Double(t.prefix { $0.isNumber || $0 == "." }) ?? 0) * 1e3) }
        return binary
    }

    /// `none`, one kind, `a,b`, or `all` (all kinds together); each comma-separated item is a scenario.
    static func parseContention(_ text: String) throws -> [[ContentionKind]] {
        try text.split(separator: ",").map { item -> [ContentionKind] in
            switch item {
            case "none": return []
            case "all": return ContentionKind.allCases
            default:
                guard let k = ContentionKind(rawValue: String(item)) else {
                    throw UsageError("unknown contention '\(item)' (use none, bulk, fsync, metadata, memory or all)")
                }
                return [k]
            }
        }
    }

    static func printTable(_ r: JitterReport) {
        print("\(r.filesystem) on \(r.device) (\(r.mountOptions)); \(fixed(r.rateMBps, 0)) MB/s in \(r.blockBytes / 1024) KiB writes, \(fixed(r.secondsPerArm, 0)) s per arm; latency from when each write was due")
        let head = ["arm", "contention", "p50", "p90", "p99", "p99.9", "p99.99", "max", "over budget", "ring drops", "MB/s", "p99.9/floor", "PSI io some", "dirty peak"]
        print(head.map { $0.padding(toLength: $0 == "arm" || $0 == "contention" ? 28 : 12, withPad: " ", startingAt: 0) }.joined())
        var rows = r.arms
        if let f = r.floor { rows.insert(f, at: 0) }
        for a in rows {
            let l = a.latencyMs
            let cells = [a.arm, a.contention].map { $0.padding(toLength: 28, withPad: " ", startingAt: 0) } +
                [l.p50, l.p90, l.p99, l.p999, l.p9999, l.max].map { fixed($0, 2).padding(toLength: 12, withPad: " ", startingAt: 0) } +
                [String(a.writesOverFrameBudget), String(a.framesDroppedByRing), fixed(a.throughputMBps, 0),
                 a.p999VsFloor.map { fixed($0, 1) + "x" } ?? "-", fixed(a.psiIoSomeMs, 0) + " ms", fixed(a.peakDirtyMiB, 0) + " MiB"]
                .map { $0.padding(toLength: 12, withPad: " ", startingAt: 0) }
            print(cells.joined())
        }
        print("latencies in ms; over budget: writes later than 1/\(fixed(r.fps, 0)) s; ring drops: frames a \(((r.arms.first ?? r.floor)?.ringBytes ?? 0) >> 20) MiB capture ring would have dropped")
    }

    /// `reel _load bulk|fsync|metadata|memory --dir D --seconds S`: one contention load.
    static func load(_ args: inout Arguments) throws -> Int32 {
        guard let k = args.next().flatMap(ContentionKind.init(rawValue:)) else { throw UsageError("_load needs a kind") }
        var dir = ".", seconds = 10.0
        while let arg = args.next() {
            switch arg {
            case "--dir": dir = args.next() ?? "."
            case "--seconds": seconds = Double(args.next() ?? "") ?? 10
            default: throw UsageError("_load: unknown option '\(arg)'")
            }
        }
        runContention(k, directory: dir, seconds: seconds)
        return 0
    }
}
