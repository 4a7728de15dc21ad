import Foundation
import ReelBench
import ReelCore
import ReelStorage

/// `reel pool create|status|resize|wait|calibrate|recover|delete [PATH]` (PATH defaults to
/// the default pool).
enum PoolCommand {
    static let verbs = "create, status, resize, wait, calibrate, recover or delete"

    static func run(_ args: inout Arguments) throws -> Int32 {
        guard let verb = args.next() else { throw UsageError("pool needs a command: \(verbs)") }
        var path: String? = nil
        var capacity: Int64? = nil, slot: Int64? = nil
        var json = false, background = false
        var writeMode = "auto", prefill = "zero"
        var seconds: Double? = nil, timeout: Double? = nil
        var from: Int32? = nil
        while let arg = args.next() {
            let (name, inline) = Arguments.split(arg)
            switch name {
            case "--capacity": capacity = try size(try args.value(for: name, inline: inline), name)
            case "--slot": slot = try size(try args.value(for: name, inline: inline), name)
            case "--write-mode": writeMode = try args.value(for: name, inline: inline)
            case "--prefill": prefill = try args.value(for: name, inline: inline)
            case "--background": background = true
            case "--seconds", "--timeout":
                let text = try args.value(for: name, inline: inline)
                guard let v = Double(text), v > 0, v.isFinite else { throw UsageError("\(name): '\(text)' is not a number of seconds") }
                if name == "--seconds" { seconds = v } else { timeout = v }
            case "--from":
                let text = try args.value(for: name, inline: inline)
                guard let v = Int32(text) else { throw UsageError("--from: '\(text)' is not a process id") }
                from = v
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
            try StoragePool.checkCanCreate(at: p)
            try StoragePool.checkFreeSpace(at: p, capacity: capacity, slotSize: slot ?? StoragePool.defaultSlotSize)
            let measurement = writeMode == "auto" ? try measureIfNeeded(p, seconds: seconds) : nil
            let pool = try StoragePool.create(at: p, capacity: capacity, slotSize: slot ?? StoragePool.defaultSlotSize,
                                              writeMode: writeMode, measurement: measurement, prefill: prefill,
                                              preallocate: !background, progress: progress)
            try done(pool, background: background, json: json, endProgressLine: showProgress)
        case "status":
            let pool = try StoragePool.open(at: p)
            if !json { printRecovery(pool, path: nil) }
            try report(try pool.status(), json: json)
        case "resize":
            guard let capacity else { throw UsageError("pool resize needs --capacity SIZE") }
            let pool = try StoragePool.open(at: p)
            try pool.resize(capacity: capacity, preallocate: !background, progress: progress)
            try done(pool, background: background, json: json, endProgressLine: showProgress)
        case "wait":
            let pool = try StoragePool.open(at: p)
            let s = try pool.waitUntilReady(timeout: timeout) { s in
                if showProgress { writeStderr("\r\u{1B}[K" + busyText(s)) }
            }
            if showProgress { writeStderr("\n") }
            try report(s, json: json)
        case "calibrate":
            let pool = try StoragePool.open(at: p)
            let before = try pool.status()
            if before.slotsActive > 0 { throw PoolError.busy("\(before.slotsActive) recording(s) would compete with the measurement") }
            let m = try WriteModeCalibration.measure(directory: p, executable: selfExecutable, seconds: seconds ?? WriteModeCalibration.defaultSeconds) {
                if !json { writeStderr("  " + $0 + "\n") }
            }
            m.remember()
            try pool.adopt(m)
            try report(try pool.status(), json: json)
        case "_prepare":
            // The detached half of --background: take over what the parent reserved, prepare it.
            setsid()
            let pool = try StoragePool.open(at: p)
            if let from { _ = try pool.adoptPreparation(from: from) }
            try pool.fillReservedSlots()
        case "recover":
            // Opening a pool recovers; say what it found.
            let pool = try StoragePool.open(at: p)
            if json { printJSON(RecoveryReport(recovered: pool.lastRecovery, dropped: pool.lastDropped)) } else {
                printRecovery(pool, path: p)
            }
        case "delete":
            try StoragePool.open(at: p).delete()
            if !json { print("deleted the pool at \(p)") } else { printJSON(["deleted": p]) }
        default:
            throw UsageError("unknown pool command '\(verb)' (use \(verbs))")
        }
        return 0
    }

    /// What opening the pool recovered and dropped; with `path`, also when it found nothing.
    static func printRecovery(_ pool: StoragePool, path: String?) {
        if let path, pool.lastRecovery.isEmpty && pool.lastDropped.isEmpty { print("nothing to recover in \(path)") }
        for r in pool.lastRecovery { print("recovered \(r.path) (\(formatBytes(r.bytes)), \(r.fragments) fragment\(r.fragments == 1 ? "" : "s"))") }
        for d in pool.lastDropped { print("dropped \(d.destination): \(d.reason)") }
    }

    struct RecoveryReport: Encodable {
        let recovered: [RecoveredClip]
        let dropped: [DroppedClip]
    }

    static func size(_ text: String, _ option: String) throws -> Int64 {
        guard let n = parseByteSize(text) else { throw UsageError("\(option): '\(text)' is not a size (like 4G, 512M)") }
        return n
    }

    /// Once per filesystem with direct I/O: measures the write modes in the pool's own
    /// directory, says so, and caches the result.
    static func measureIfNeeded(_ p: String, seconds: Double?) throws -> WriteModeMeasurement? {
        guard WriteModeMeasurement.cached(for: p) == nil else { return nil }
        let made = !FileManager.default.fileExists(atPath: p)
        try? FileManager.default.createDirectory(atPath: p, withIntermediateDirectories: true)
        var measured: WriteModeMeasurement? = nil
        defer { if made && measured == nil { rmdir(p) } }
        guard WriteModeCalibration.needed(for: p) else { return nil }
        writeStderr("measuring the write modes of \(WriteModeMeasurement.filesystemKey(p)) (once per filesystem; --write-mode buffered|direct skips this)\n")
        let m = try WriteModeCalibration.measure(directory: p, executable: selfExecutable, seconds: seconds ?? WriteModeCalibration.defaultSeconds) {
            writeStderr("  " + $0 + "\n")
        }
        m.remember()
        measured = m
        return m
    }

    /// After create or resize: hands the reserved slots to a detached worker, or reports
    /// the pool the foreground preparation left.
    static func done(_ pool: StoragePool, background: Bool, json: Bool, endProgressLine: Bool) throws {
        if background { return try prepareInBackground(pool, json: json) }
        if endProgressLine { writeStderr("\n") }
        try report(try pool.status(), json: json)
    }

    /// Starts the detached preparation and says how to follow it.
    static func prepareInBackground(_ pool: StoragePool, json: Bool) throws {
        let pid = try pool.prepareInBackground(command: [selfExecutable, "pool", "_prepare", pool.path, "--from", String(getpid())])
        let s = try pool.status()
        if json { printJSON(s); return }
        try report(s, json: false)
        if let pid {
            print("preparing \(s.slotsPreparing) slot(s) in the background (pid \(pid)); `reel pool wait \(pool.path)` waits for it")
        }
    }

    static func busyText(_ s: PoolStatus) -> String {
        "busy: " + (s.busyReasons.isEmpty ? "no" : s.busyReasons.map { r in s.progress[r].map { "\(r) \(Int($0 * 100))%" } ?? r }.joined(separator: ", "))
    }

    static func report(_ s: PoolStatus, json: Bool) throws {
        if json { printJSON(s); return }
        print("pool \(s.path): \(formatBytes(s.remainingCapacity)) of \(formatBytes(s.capacity)) free, slots \(s.slotsFree) free / \(s.slotsActive) active / \(s.slotsPreparing) preparing (\(formatBytes(s.slotSize)) each)")
        print("  filesystem \(s.filesystem), direct I/O \(s.directIOAlignment.map { "aligned to \($0) bytes" } ?? "not available"), prefill \(s.prefill)")
        switch (s.writeModeSource, s.writeModeMeasurement) {
        case ("measured", let m?):
            let when = Date(timeIntervalSince1970: m.measuredAt).formatted(.iso8601)
            let figures = m.modes.map { String(format: "%@ p99.9 %.1f ms (max %.1f)", $0.name, $0.p999Ms, $0.maxMs) }.joined(separator: ", ")
            print("  write mode \(s.writeMode), measured \(when) at \(Int(m.rateMBps)) MB/s beside \(m.load): \(figures)")
        case ("asked", _): print("  write mode \(s.writeMode), as asked (--write-mode)")
        case ("only", _): print("  write mode \(s.writeMode), the only one here (no direct I/O on \(s.filesystem))")
        default: print("  write mode \(s.writeMode), not measured on this filesystem yet (`reel pool calibrate` measures)")
        }
        print("  " + busyText(s))
        if let e = s.lastError { print("  last preparation failed: \(e)") }
    }
}
