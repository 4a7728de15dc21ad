import Foundation
import ReelCamera
import ReelBench
import ReelCore
import ReelStorage

/// `reel jitter …` and the hidden `reel _load KIND --dir D --seconds S` it starts.
enum JitterCommand {
    /// `reel jitter …` as options; no side effects.
    static func parse(_ argv: [String]) throws -> JitterInvocation {
        var j = JitterInvocation(options: JitterOptions(directory: ".", executable: selfExecutable), dir: nil, poolPath: nil,
                                 report: nil, scenarios: [[]], json: false)
        for (name, value) in try ScannedArguments(argv, spec: CommandTable.jitter).options {
            let v = value ?? ""
            switch name {
            case "--dir", "--pool":
                guard !v.isEmpty else { throw UsageError("\(name) needs a path") }
                if name == "--dir" { j.dir = v } else { j.poolPath = v }
            case "--rate": j.options.bytesPerSecond = try parseRate(v)
            case "--block": j.options.blockSize = Int(try parseSize(v, option: name, range: 4096...(64 << 20), multipleOf: 4096))
            case "--duration": j.options.seconds = try parseSeconds(v, option: name, range: 0.1...3600)
            case "--contention": j.scenarios = try parseContention(v)
            case "--arms":
                j.options.arms = try v.split(separator: ",", omittingEmptySubsequences: false).map {
                    guard let a = JitterArm(rawValue: String($0)) else {
                        throw UsageError("unknown arm '\(printable(String($0)))' (use \(JitterArm.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    return a
                }
            case "--ring": j.options.ringBytes = try parseSize(v, option: name, range: (1 << 20)...(1 << 30))
            case "--fps":
                guard let f = Double(v.trimmingCharacters(in: .whitespaces)), f.isFinite, f >= 1, f <= 1000 else {
                    throw UsageError("--fps: '\(printable(v))' is not a frame rate from 1 to 1000")
                }
                j.options.fps = f
            case "--rounds": j.options.rounds = try parseInt(v, option: name, range: 1...100)
            case "--no-floor": j.options.floor = false
            case "--report":
                guard !v.isEmpty else { throw UsageError("--report needs a directory") }
                j.report = v
            case "--json": j.json = true
            default: throw UsageError("jitter: unknown option '\(name)'")
            }
        }
        return j
    }

    static func run(_ j: JitterInvocation) throws -> Int32 {
        var o = j.options
        var dir = j.dir
        let poolPath = j.poolPath, report = j.report, json = j.json
        if let poolPath { dir = poolPath }   // the pool's filesystem is the one that matters
        o.directory = dir ?? StoragePool.defaultPath.components(separatedBy: "/").dropLast().joined(separator: "/")
        if o.directory.isEmpty { o.directory = "." }
        do { try FileManager.default.createDirectory(atPath: o.directory, withIntermediateDirectories: true) } catch {
            throw CommandError(status: ExitStatus.cantCreate, "cannot create the directory \(o.directory) to measure in")
        }
        let scenarios = j.scenarios
        if let report {
            guard canWriteInDirectory(report) else {
                throw JitterError.io("cannot write the report to \(report): not a writable directory")
            }
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

    /// `none`, one kind, `a,b`, or `all` (all kinds together); each comma-separated item is a scenario.
    static func parseContention(_ text: String) throws -> [[ContentionKind]] {
        try text.split(separator: ",", omittingEmptySubsequences: false).map { item -> [ContentionKind] in
            switch item {
            case "none": return []
            case "all": return ContentionKind.allCases
            default:
                guard let k = ContentionKind(rawValue: String(item)) else {
                    throw UsageError("unknown contention '\(printable(String(item)))' (use none, bulk, fsync, metadata, memory or all)")
                }
                return [k]
            }
        }
    }

    static func printTable(_ r: JitterReport) {
        print("\(r.filesystem) on \(r.device) (\(r.mountOptions)); \(fixed(r.rateMBps, 0)) MB/s in \(r.blockBytes / 1024) KiB writes, \(fixed(r.secondsPerArm, 0)) s per arm; latency from when each write was due")
        let head = ["round", "arm", "contention", "p50", "p90", "p99", "p99.9", "p99.99", "max", "over budget", "ring drops", "MB/s", "p99.9/floor", "PSI io some", "dirty peak"]
        print(head.map { $0.padding(toLength: $0 == "arm" || $0 == "contention" ? 28 : $0 == "round" ? 6 : 12, withPad: " ", startingAt: 0) }.joined())
        var rows = r.arms
        if let f = r.floor { rows.insert(f, at: 0) }
        for a in rows {
            let l = a.latencyMs
            let round: String = a.round.map { String($0) } ?? "-"
            let cells: [String] = [round.padding(toLength: 6, withPad: " ", startingAt: 0)] +
                [a.arm, a.contention].map { $0.padding(toLength: 28, withPad: " ", startingAt: 0) } +
                [l.p50, l.p90, l.p99, l.p999, l.p9999, l.max].map { fixed($0, 2).padding(toLength: 12, withPad: " ", startingAt: 0) } +
                [String(a.writesOverFrameBudget), String(a.framesDroppedByRing), fixed(a.throughputMBps, 0),
                 a.p999VsFloor.map { fixed($0, 1) + "x" } ?? "-", fixed(a.psiIoSomeMs, 0) + " ms", fixed(a.peakDirtyMiB, 0) + " MiB"]
                .map { $0.padding(toLength: 12, withPad: " ", startingAt: 0) }
            print(cells.joined())
        }
        for v in r.verdicts ?? [] { print("verdict over \(r.rounds ?? 1) round\(r.rounds == 1 ? "" : "s"), \(v.line)") }
        print("latencies in ms; over budget: writes later than 1/\(fixed(r.fps, 0)) s; ring drops: frames a \(((r.arms.first ?? r.floor)?.ringBytes ?? 0) >> 20) MiB capture ring would have dropped")
    }

    /// `reel _load bulk|fsync|metadata|memory --dir D --seconds S`: one contention load.
    static func parseLoad(_ argv: [String]) throws -> LoadInvocation {
        let scanned = try ScannedArguments(argv, spec: CommandTable.load)
        guard let k = scanned.operands.first.flatMap(ContentionKind.init(rawValue:)) else {
            throw UsageError("_load needs a kind (\(ContentionKind.allCases.map(\.rawValue).joined(separator: ", ")))")
        }
        var l = LoadInvocation(kind: k, directory: ".", seconds: 10)
        for (name, value) in scanned.options {
            let v = value ?? ""
            switch name {
            case "--dir":
                guard !v.isEmpty else { throw UsageError("--dir needs a path") }
                l.directory = v
            case "--seconds": l.seconds = try parseSeconds(v, option: name, range: 0.1...86_400)
            default: throw UsageError("_load: unknown option '\(name)'")
            }
        }
        return l
    }

    static func load(_ l: LoadInvocation) -> Int32 {
        runContention(l.kind, directory: l.directory, seconds: l.seconds)
        return 0
    }
}
