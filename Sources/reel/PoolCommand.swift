import Foundation
import ReelCore
import ReelStorage

/// `reel pool create|status|resize|recover|delete [PATH]` (PATH defaults to the default pool).
enum PoolCommand {
    static func run(_ args: inout Arguments) throws -> Int32 {
        guard let verb = args.next() else { throw UsageError("pool needs a command: create, status, resize, recover or delete") }
        var path: String? = nil
        var capacity: Int64? = nil, slot: Int64? = nil
        var json = false
        var writeMode = "auto", prefill = "zero"
        while let arg = args.next() {
            let (name, inline) = Arguments.split(arg)
            switch name {
            case "--capacity": capacity = try size(try args.value(for: name, inline: inline), name)
            case "--slot": slot = try size(try args.value(for: name, inline: inline), name)
            case "--write-mode": writeMode = try args.value(for: name, inline: inline)
            case "--prefill": prefill = try args.value(for: name, inline: inline)
            case "--json": json = true
            default:
                if arg.hasPrefix("--") { throw UsageError("pool \(verb): unknown option '\(arg)'") }
                guard path == nil else { throw UsageError("pool \(verb): one PATH only") }
                path = arg
            }
        }
        let p = path ?? StoragePool.defaultPath
        let showProgress = isatty(STDERR_FILENO) == 1
        let progress: ((Double) -> Void)? = showProgress ? { f in writeStderr("\r\u{1B}[Kpreallocating: \(Int(f * 100))%") } : nil
        switch verb {
        case "create":
            guard let capacity else { throw UsageError("pool create needs --capacity SIZE (like 4G)") }
            let pool = try StoragePool.create(at: p, capacity: capacity, slotSize: slot ?? StoragePool.defaultSlotSize,
                                              writeMode: writeMode, prefill: prefill, progress: progress)
            if showProgress { writeStderr("\n") }
            try report(try pool.status(), json: json)
        case "status":
            let pool = try StoragePool.open(at: p)
            if !json { for r in pool.lastRecovery { print("recovered \(r.path) (\(formatBytes(r.bytes)))") } }
            try report(try pool.status(), json: json)
        case "resize":
            guard let capacity else { throw UsageError("pool resize needs --capacity SIZE") }
            let pool = try StoragePool.open(at: p)
            try pool.resize(capacity: capacity, progress: progress)
            if showProgress { writeStderr("\n") }
            try report(try pool.status(), json: json)
        case "recover":
            // Opening a pool recovers; say what it found.
            let found = try StoragePool.open(at: p).lastRecovery
            if json { printJSON(["recovered": found]) } else {
                if found.isEmpty { print("nothing to recover in \(p)") }
                for r in found { print("recovered \(r.path) (\(formatBytes(r.bytes)))") }
            }
        case "delete":
            try StoragePool.open(at: p).delete()
            if !json { print("deleted the pool at \(p)") } else { printJSON(["deleted": p]) }
        default:
            throw UsageError("unknown pool command '\(verb)' (use create, status, resize, recover or delete)")
        }
        return 0
    }

    static func size(_ text: String, _ option: String) throws -> Int64 {
        guard let n = parseByteSize(text) else { throw UsageError("\(option): '\(text)' is not a size (like 4G, 512M)") }
        return n
    }

    static func report(_ s: PoolStatus, json: Bool) throws {
        if json { printJSON(s); return }
        print("pool \(s.path): \(formatBytes(s.remainingCapacity)) of \(formatBytes(s.capacity)) free, slots \(s.slotsFree) free / \(s.slotsActive) active / \(s.slotsPreparing) preparing (\(formatBytes(s.slotSize)) each)")
        print("  filesystem \(s.filesystem), direct I/O \(s.directIOAlignment.map { "aligned to \($0) bytes" } ?? "not available"), write mode \(s.writeMode), prefill \(s.prefill)")
        print("  busy: " + (s.busyReasons.isEmpty ? "no" : s.busyReasons.map { r in s.progress[r].map { "\(r) \(Int($0 * 100))%" } ?? r }.joined(separator: ", ")))
    }
}
