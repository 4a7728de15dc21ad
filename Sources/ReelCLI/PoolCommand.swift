import Foundation
import ReelBench
import ReelCore
import ReelStorage

/// `reel pool VERB …` as parsed.
public struct PoolInvocation: Sendable {
    /// The verb: `create`, `status`, `resize`, `wait`, `calibrate`, `recover`, `delete` (or the
    /// hidden `_prepare`).
    public var verb: String
    /// The pool's path (nil: the default pool).
    public var path: String?
    /// `--capacity` and `--slot`, in bytes (nil: not given).
    public var capacity: Int64? = nil, slot: Int64? = nil
    /// `--json`; `--background` (prepare the slots in a detached process).
    public var json = false, background = false
    /// nil: `auto` (the filesystem's measurement decides).
    public var writeMode: WriteMode? = nil
    /// `--prefill`: how slots are prepared (`zero` by default, or `fallocate`).
    public var prefill: Prefill = .zero
    /// `--seconds` (per write mode of the measurement) and `--timeout` (of `wait`), nil: not given.
    public var seconds: Double? = nil, timeout: Double? = nil
    /// `--from`: the process that reserved the slots (`pool _prepare`).
    public var from: Int32? = nil
    /// `--idle` (`pool _prepare`): prepare at the idle I/O class and `PreparationPace.beside`.
    public var idle = false
}

/// `reel pool create|status|resize|wait|calibrate|recover|delete [PATH]` (PATH defaults to
/// the default pool).
enum PoolCommand {
    static let verbs = "create, status, resize, wait, calibrate, recover or delete"

    /// `reel pool VERB …` as options; no side effects.
    static func parse(_ argv: [String]) throws -> PoolInvocation {
        guard let verb = argv.first else { throw UsageError("pool needs a command: \(verbs)") }
        guard let spec = CommandTable.spec("pool " + verb), spec.name.hasPrefix("pool ") else {
            throw UsageError("unknown pool command '\(printable(verb))' (use \(verbs))")
        }
        let scanned = try ScannedArguments(Array(argv.dropFirst()), spec: spec)
        var p = PoolInvocation(verb: verb, path: scanned.operands.first)
        if let path = p.path, path.isEmpty { throw UsageError("pool \(verb): PATH is empty") }
        for (name, value) in scanned.options {
            let v = value ?? ""
            switch name {
            case "--capacity": p.capacity = try parseSize(v, option: name, range: (4 << 20)...(64 << 40))
            case "--slot": p.slot = try parseSize(v, option: name, range: (4 << 20)...(64 << 30), multipleOf: 1 << 20)
            case "--write-mode":
                guard ["auto", "buffered", "direct"].contains(v) else { throw UsageError("--write-mode: '\(printable(v))' is not auto, buffered or direct") }
                p.writeMode = v == "auto" ? nil : WriteMode(rawValue: v)
            case "--prefill":
                guard Prefill.all.contains(Prefill(rawValue: v)) else { throw UsageError("--prefill: '\(printable(v))' is not zero or fallocate") }
                p.prefill = Prefill(rawValue: v)
            case "--background": p.background = true
            case "--seconds": p.seconds = try parseSeconds(v, option: name, range: 0.5...600)
            case "--timeout": p.timeout = try parseSeconds(v, option: name, range: 0.1...86_400)
            case "--from": p.from = Int32(try parseInt(v, option: name, range: 1...Int(Int32.max)))
            case "--json": p.json = true
            case "--idle": p.idle = true
            default: throw UsageError("pool \(verb): unknown option '\(name)'")
            }
        }
        switch verb {
        case "create":
            guard let capacity = p.capacity else { throw UsageError("pool create needs --capacity SIZE (like 4G)") }
            let slot = p.slot ?? StoragePool.defaultSlotSize
            guard capacity / slot <= maxSlots else {
                throw UsageError("--capacity \(formatBytes(capacity)) in \(formatBytes(slot)) slots is \(capacity / slot) slots, more than \(maxSlots) (use a bigger --slot)")
            }
        case "resize":
            guard p.capacity != nil else { throw UsageError("pool resize needs --capacity SIZE") }
        case "_prepare":
            guard p.path != nil else { throw UsageError("pool _prepare needs the pool's PATH") }
        default: break
        }
        return p
    }

    /// A pool has at most this many slots (the manifest lists each).
    static let maxSlots: Int64 = 65_536

    static func run(_ inv: PoolInvocation) throws -> Int32 {
        let p = inv.path ?? StoragePool.defaultPath
        switch inv.verb {
        case "create": try create(inv, at: p)
        case "status":
            let pool = try StoragePool.open(at: p)
            if !inv.json { printRecovery(pool, path: nil) }
            try report(try pool.status(), json: inv.json)
        case "resize": try resize(inv, at: p)
        case "wait":
            let pool = try StoragePool.open(at: p)
            let showProgress = isatty(STDERR_FILENO) == 1
            let s = try pool.waitUntilReady(timeout: inv.timeout) { s in
                if showProgress { writeStderr("\r\u{1B}[K" + busyText(s)) }
            }
            if showProgress { writeStderr("\n") }
            try report(s, json: inv.json)
        case "calibrate": try calibrate(inv, at: p)
        case "_prepare":
            // The detached half of --background: take over what the parent reserved, prepare it.
            setsid()
            let pool = try StoragePool.open(at: p)
            if let from = inv.from { _ = try pool.adoptPreparation(from: from) }
            if inv.idle && !StoragePool.lowerToIdlePriority() {
                // No say over I/O priority here: the pace alone keeps the preparation gentle.
            }
            try pool.fillReservedSlots(pace: inv.idle ? .beside : nil)
        case "recover": return try recover(inv, at: p)
        case "delete":
            try StoragePool.open(at: p).delete()
            if !inv.json { print("deleted the pool at \(p)") } else { printJSON(["deleted": p]) }
        default:
            throw UsageError("unknown pool command '\(printable(inv.verb))' (use \(verbs))")
        }
        return 0
    }

    /// The preallocation progress line, on a terminal only.
    static var preallocationProgress: ((Double) -> Void)? {
        isatty(STDERR_FILENO) == 1 ? { f in writeStderr("\r\u{1B}[Kpreallocating: \(Int(saturating: f * 100))%") } : nil
    }

    /// `reel pool create`: checks first, measures the write modes when `auto` needs it, makes the pool.
    static func create(_ inv: PoolInvocation, at p: String) throws {
        guard let capacity = inv.capacity else { throw UsageError("pool create needs --capacity SIZE (like 4G)") }
        let slot = inv.slot ?? StoragePool.defaultSlotSize
        try StoragePool.checkCanCreate(at: p)
        try StoragePool.checkFreeSpace(at: p, capacity: capacity, slotSize: slot)
        let measurement = inv.writeMode == nil ? try measureIfNeeded(p, seconds: inv.seconds) : nil
        let progress = preallocationProgress
        let pool = try StoragePool.create(at: p, capacity: capacity, slotSize: slot, writeMode: inv.writeMode,
                                          measurement: measurement, prefill: inv.prefill,
                                          preallocate: !inv.background, progress: progress)
        try done(pool, background: inv.background, json: inv.json, endProgressLine: progress != nil)
    }

    /// `reel pool resize`.
    static func resize(_ inv: PoolInvocation, at p: String) throws {
        guard let capacity = inv.capacity else { throw UsageError("pool resize needs --capacity SIZE") }
        let pool = try StoragePool.open(at: p)
        let slotSize = try pool.status().slotSize
        guard slotSize > 0, capacity / slotSize <= maxSlots else {
            throw UsageError("--capacity \(formatBytes(capacity)) in this pool's \(formatBytes(slotSize)) slots is more than \(maxSlots) slots")
        }
        let progress = preallocationProgress
        try pool.resize(capacity: capacity, preallocate: !inv.background, progress: progress)
        try done(pool, background: inv.background, json: inv.json, endProgressLine: progress != nil)
    }

    /// `reel pool calibrate`: measures again and adopts the result.
    static func calibrate(_ inv: PoolInvocation, at p: String) throws {
        let pool = try StoragePool.open(at: p)
        let before = try pool.status()
        if before.slotsActive > 0 { throw PoolError.busy("\(before.slotsActive) recording(s) would compete with the measurement") }
        let m = try WriteModeCalibration.measure(directory: p, seconds: inv.seconds ?? WriteModeCalibration.defaultSeconds,
                                                 load: .bulkProcess(executable: selfExecutable)) {
            if !inv.json { writeStderr("  " + $0 + "\n") }
        }
        m.remember()
        try pool.adopt(m)
        try report(try pool.status(), json: inv.json)
    }

    /// `reel pool recover`: opening the pool recovers; says what it found, and fails (74)
    /// when a slot could not be recovered (it is left for the next open).
    static func recover(_ inv: PoolInvocation, at p: String) throws -> Int32 {
        let pool = try StoragePool.open(at: p)
        if inv.json {
            printJSON(RecoveryReport(recovered: pool.lastRecovery, dropped: pool.lastDropped, failed: pool.lastRecoveryFailures))
        } else {
            printRecovery(pool, path: p)
        }
        for f in pool.lastRecoveryFailures {
            writeStderr("reel: slot \(f.slot)\(f.destination.map { " (\($0))" } ?? "") could not be recovered: \(f.reason); the next open of the pool tries again\n")
        }
        return pool.lastRecoveryFailures.isEmpty ? 0 : ExitStatus.ioError
    }

    /// What opening the pool recovered and dropped; with `path`, also when it found nothing.
    static func printRecovery(_ pool: StoragePool, path: String?) {
        if let path, pool.lastRecovery.isEmpty && pool.lastDropped.isEmpty { print("nothing to recover in \(path)") }
        for r in pool.lastRecovery { print("recovered \(r.path) (\(formatBytes(r.bytes)), \(r.fragments) fragment\(r.fragments == 1 ? "" : "s"))") }
        for d in pool.lastDropped { print("dropped \(d.destination): \(d.reason)") }
    }

    /// `reel pool recover --json`: what was published, dropped, and could not be recovered
    /// (those slots are left for the next open; the command exits 74).
    struct RecoveryReport: Encodable {
        let recovered: [RecoveredClip]
        let dropped: [DroppedClip]
        let failed: [RecoveryFailure]
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
        let m = try WriteModeCalibration.measure(directory: p, seconds: seconds ?? WriteModeCalibration.defaultSeconds,
                                                 load: .bulkProcess(executable: selfExecutable)) {
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
        "busy: " + (s.busyReasons.isEmpty ? "no" : s.busyReasons.map { r in s.progress[r].map { "\(r) \(Int(saturating: $0 * 100))%" } ?? r }.joined(separator: ", "))
    }

    /// The slot sizes in `reel pool status`'s first line: `256.0 MiB each`, or, once a loop
    /// recording's deleted clips came back as larger free slots, `256.0 MiB each, free ones up to 768.0 MiB`.
    static func slotSizesText(_ s: PoolStatus) -> String {
        guard let largest = s.largestFreeSlot, largest > s.slotSize else { return "\(formatBytes(s.slotSize)) each" }
        return "\(formatBytes(s.slotSize)) each, free ones up to \(formatBytes(largest))"
    }

    static func report(_ s: PoolStatus, json: Bool) throws {
        if json { printJSON(s); return }
        print("pool \(s.path): \(formatBytes(s.remainingCapacity)) of \(formatBytes(s.capacity)) free (\(clock(s.remainingSeconds)) at \(Int((s.bitrate / 1e6).rounded())) Mbit/s), slots \(s.slotsFree) free / \(s.slotsActive) active / \(s.slotsPreparing) preparing (\(slotSizesText(s)))")
        print("  filesystem \(s.filesystem), direct I/O \(s.directIOAlignment.map { "aligned to \($0) bytes" } ?? "not available"), prefill \(s.prefill)")
        switch (s.writeModeSource, s.writeModeMeasurement) {
        case ("measured", let m?):
            let when = Date(timeIntervalSince1970: m.measuredAt).formatted(.iso8601)
            let figures = m.modes.map { String(format: "%@ p99.9 %.1f ms (max %.1f)", $0.name, $0.p999Ms, $0.maxMs) }.joined(separator: ", ")
            print("  write mode \(s.writeMode), measured \(when) at \(Int(saturating: m.rateMBps)) MB/s beside \(m.load): \(figures)")
        case ("asked", _): print("  write mode \(s.writeMode), as asked (--write-mode)")
        case ("only", _): print("  write mode \(s.writeMode), the only one here (no direct I/O on \(s.filesystem))")
        default: print("  write mode \(s.writeMode), not measured on this filesystem yet (`reel pool calibrate` measures)")
        }
        print("  " + busyText(s))
        if let e = s.lastError { print("  last preparation failed: \(e)") }
    }
}
