import CLinux
import Foundation
import ReelCore
import Synchronization

/// What `reel pool status` reports.
public struct PoolStatus: Sendable, Codable {
    public var path: String
    public var capacity: Int64
    public var remainingCapacity: Int64
    public var slotSize: Int64
    public var slotsFree: Int
    public var slotsActive: Int
    public var slotsPreparing: Int
    /// `adjustingCapacity`, `replenishing`, `capturing` (Apple's busy reasons).
    public var busyReasons: [String]
    /// Progress of background work, 0…1, by reason.
    public var progress: [String: Double]
    /// Who is doing that work: one entry per live process preparing slots.
    public var operations: [Operation]
    public var filesystem: String
    /// The alignment O_DIRECT needs here, or nil when the filesystem has no direct I/O.
    public var directIOAlignment: Int?
    public var writeMode: WriteMode
    /// `measured` (taken from `writeModeMeasurement`), `asked` (`--write-mode`), `only` (no
    /// direct I/O here, so buffered) or `default` (auto with no measurement of this filesystem yet).
    public var writeModeSource: String
    public var writeModeMeasurement: WriteModeMeasurement?
    public var prefill: String
    /// Why the last preparation of slots failed, if it did.
    public var lastError: String?
    public var manifestVersion: Int
}

extension PoolStatus {
    public struct Operation: Sendable, Codable, Equatable {
        public var reason: String
        public var pid: Int32
        public var progress: Double
    }
}

/// A clip recovered from a slot a dead recorder left active.
public struct RecoveredClip: Sendable, Codable {
    public var path: String
    public var bytes: Int64
    /// Complete fragments (MOV/MP4) or clusters (MKV) it holds.
    public var fragments: Int
}

/// A slot of a dead recorder that held no complete, decodable frame: nothing was published.
public struct DroppedClip: Sendable, Codable {
    /// The name the clip would have had.
    public var destination: String
    /// Bytes the slot held (headers, or an incomplete first fragment).
    public var bytes: Int64
    public var reason: String
}

/// A dead recorder's slot that recovery could not handle (an I/O error reading or publishing
/// it): it is left to the next open of the pool, which tries again.
public struct RecoveryFailure: Sendable, Codable {
    /// The slot's id in the manifest.
    public var slot: Int
    /// The name the clip would have had.
    public var destination: String?
    /// The error, in words.
    public var reason: String
}

/// The Linux counterpart of Pro Video Storage: a directory of preallocated slot files that
/// recordings overwrite in place (no allocation, no metadata change on the write path) and
/// that move to their final name when capture ends.
///
/// All shared state lives in the manifest on disk, read and written under an exclusive
/// `flock` on `POOL/lock`, so several processes can use one pool.
public final class StoragePool: Sendable {
    public let path: String
    private let replenishDone = Mutex<Bool>(true)
    private let recovered = Mutex<[RecoveredClip]>([])
    private let dropped = Mutex<[DroppedClip]>([])
    private let failures = Mutex<[RecoveryFailure]>([])

    /// What the last `recover()` (run by `open`) published.
    public var lastRecovery: [RecoveredClip] { recovered.withLock { $0 } }
    /// What recovery found in dead recorders' slots but did not publish, and why.
    public var lastDropped: [DroppedClip] { dropped.withLock { $0 } }
    /// Slots recovery could not handle (an I/O error): left for the next open to retry.
    public var lastRecoveryFailures: [RecoveryFailure] { failures.withLock { $0 } }
    public static let defaultCapacity: Int64 = 2 << 30
    public static let defaultSlotSize: Int64 = 256 << 20
    public static let blockSize = 1 << 20

    /// `$REEL_POOL`, else `$XDG_DATA_HOME/reel/pool`, else `~/.local/share/reel/pool`.
    public static var defaultPath: String {
        let env = ProcessInfo.processInfo.environment
        if let p = env["REEL_POOL"], !p.isEmpty { return p }
        if let x = env["XDG_DATA_HOME"], !x.isEmpty { return x + "/reel/pool" }
        return (env["HOME"] ?? "/tmp") + "/.local/share/reel/pool"
    }

    var manifestPath: String { path + "/manifest.json" }
    var slotsDirectory: String { path + "/slots" }
    func slotPath(_ id: Int) -> String { slotsDirectory + "/" + String(format: "slot-%06d.bin", id) }

    private init(path: String) { self.path = path }

    // MARK: Creating and opening

    /// Creates a pool and preallocates its slots; other processes see the busy reason
    /// `adjustingCapacity` and its progress while that runs. With `preallocate: false` the
    /// slots are only reserved (as `preparing`, owned by this process): `fillReservedSlots()`
    /// here, or `adoptPreparation(from:)` then `fillReservedSlots()` in another process, does
    /// the work, which is how `reel pool create --background` runs.
    public static func create(at path: String, capacity: Int64, slotSize: Int64 = StoragePool.defaultSlotSize,
                              writeMode: WriteMode? = nil, measurement: WriteModeMeasurement? = nil,
                              prefill: String = "zero", preallocate: Bool = true,
                              progress: ((Double) -> Void)? = nil) throws -> StoragePool {
        guard slotSize >= 4 << 20, slotSize % Int64(blockSize) == 0 else {
            throw PoolError.badSize("slot size must be a whole number of MiB, at least 4 MiB (got \(formatBytes(slotSize)))")
        }
        guard capacity >= slotSize else {
            throw PoolError.badSize("capacity \(formatBytes(capacity)) is below one slot (\(formatBytes(slotSize)))")
        }
        guard ["zero", "fallocate"].contains(prefill) else { throw PoolError.badSize("prefill must be zero or fallocate") }
        try checkCanCreate(at: path)
        let count = Int(capacity / slotSize)
        try checkFreeSpace(at: path, capacity: capacity, slotSize: slotSize)
        let fm = FileManager.default
        let existed = fm.fileExists(atPath: path)
        do {
            try fm.createDirectory(atPath: path + "/slots", withIntermediateDirectories: true)
        } catch {
            throw PoolError.io(SystemError("mkdir", path: path, errno: EACCES))
        }
        let pool = StoragePool(path: path)
        do {
            try pool.setUp(count: count, capacity: capacity, slotSize: slotSize, writeMode: writeMode,
                           measurement: measurement, prefill: prefill, preallocate: preallocate, progress: progress)
        } catch {
            // A pool that failed while being made (no room, an I/O error) is taken away again,
            // so the next attempt starts afresh instead of finding a pool with no slots.
            pool.removeFiles(keepDirectory: existed)
            throw error
        }
        return pool
    }

    private func setUp(count: Int, capacity: Int64, slotSize: Int64, writeMode: WriteMode?, measurement: WriteModeMeasurement?,
                       prefill: String, preallocate: Bool, progress: ((Double) -> Void)?) throws {
        let pool = self
        let alignment = pool.directIOAlignment()
        var mode = writeMode ?? .buffered
        var source = "asked"
        var measured: WriteModeMeasurement? = nil
        if writeMode == nil && alignment == nil {
            mode = .buffered
            source = "only"
        } else if writeMode == nil {
            // This filesystem's measurement (made by the caller — `reel pool create` runs it —
            // or cached from an earlier pool); this function does not measure. Without one,
            // buffered with early writeback, which won on this machine's ext4 under a competing
            // writer (README, "Write mode by measurement": p99.9 6.4 ms against 5.1 s direct).
            measured = measurement ?? WriteModeMeasurement.cached(for: path)
            mode = measured.map { WriteMode(rawValue: $0.chosen) } ?? .buffered
            source = measured == nil ? "default" : "measured"
        }
        if mode == .direct && alignment == nil {
            throw PoolError.unsupportedFilesystem("\(Sys.filesystemName(path)) at \(path) has no direct I/O: use --write-mode buffered")
        }
        var manifest = PoolManifest(capacity: capacity, slotSize: slotSize, writeMode: mode, prefill: prefill)
        manifest.writeModeSource = source
        manifest.writeModeMeasurement = measured
        try pool.writeManifest(manifest)
        try pool.withManifest { m in _ = pool.reserve(count, in: &m, reason: "adjustingCapacity") }
        if preallocate { try pool.fillReservedSlots(progress: progress) }
    }

    /// Refuses (`PoolError.noRoom`, exit 73) a pool of `capacity` in `slotSize` slots at
    /// `path` where the filesystem has less free than its slots need.
    public static func checkFreeSpace(at path: String, capacity: Int64, slotSize: Int64) throws {
        guard slotSize > 0 else { return }
        try checkFreeSpace(at: path, needed: capacity / slotSize * slotSize, what: "a pool of \(formatBytes(capacity))")
    }

    /// Refuses, before anything is written, to make `needed` bytes of slots where the
    /// filesystem has less free.
    static func checkFreeSpace(at path: String, needed: Int64, what: String) throws {
        let space: Int64?
        do { space = try Sys.freeSpace(at: path) } catch let e as SystemError { throw PoolError.io(e) }
        guard let free = space else { return }   // no size to check against (ramfs)
        guard needed <= free else {
            throw PoolError.noRoom("not enough free space for \(what) at \(path): it needs \(formatBytes(needed)), the filesystem has \(formatBytes(free)) free")
        }
    }

    /// Removes the pool's files (slots, manifest, lock) and its directories; an error
    /// removing one is not fatal (the pool is being given up) but the rest goes on.
    private func removeFiles(keepDirectory: Bool) {
        let fm = FileManager.default
        var files = ((try? fm.contentsOfDirectory(atPath: slotsDirectory)) ?? []).filter { $0.hasPrefix("slot-") }.map { slotsDirectory + "/" + $0 }
        files += ["manifest.json", "manifest.json.tmp", "lock", ".dio-probe"].map { path + "/" + $0 }
        for file in files {
            // Giving up a failed pool: what cannot be removed stays, and the error that made
            // us give up is the one reported.
            do { try Sys.unlinkIfPresent(file) } catch { continue }
        }
        Sys.removeDirectoryIfEmpty(slotsDirectory)
        if !keepDirectory { Sys.removeDirectoryIfEmpty(path) }
    }

    /// A pool can be made at `path`: nothing is there, or an empty directory.
    public static func checkCanCreate(at path: String) throws {
        let fm = FileManager.default
        if fm.fileExists(atPath: path) {
            let contents = (try? fm.contentsOfDirectory(atPath: path)) ?? ["?"]
            guard contents.isEmpty else { throw PoolError.exists(path) }
        }
    }

    /// Opens an existing pool, checking its manifest, and recovers what dead recorders left.
    public static func open(at path: String) throws -> StoragePool {
        let pool = StoragePool(path: path)
        _ = try pool.readManifest()
        _ = try pool.recover()
        return pool
    }

    /// The default pool, created with the default capacity on first use. `created` says so.
    public static func openDefault() throws -> (StoragePool, created: Bool) {
        let p = defaultPath
        if FileManager.default.fileExists(atPath: p + "/manifest.json") { return (try open(at: p), false) }
        return (try create(at: p, capacity: defaultCapacity), true)
    }

    // MARK: The manifest

    func readManifest() throws -> PoolManifest {
        guard let data = FileManager.default.contents(atPath: manifestPath) else {
            if FileManager.default.fileExists(atPath: manifestPath) { throw PoolError.io(SystemError("read", path: manifestPath, errno: EACCES)) }
            throw PoolError.notAPool(path)
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw PoolError.damagedManifest(path, "not JSON")
        }
        guard let format = object["format"] as? String, format == PoolManifest.formatName else {
            throw PoolError.foreignManifest(path, (object["format"] as? String) ?? "none")
        }
        if let v = object["version"] as? Int, v > PoolManifest.currentVersion { throw PoolError.unsupportedVersion(path, v) }
        do { return try JSONDecoder().decode(PoolManifest.self, from: data) } catch {
            throw PoolError.damagedManifest(path, "fields missing or of the wrong type")
        }
    }

    func writeManifest(_ m: PoolManifest) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(m)
        let tmp = manifestPath + ".tmp"
        let fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC)
        do {
            try data.withUnsafeBytes { try fd.writeAll($0, toAbsoluteOffset: 0) }
            try fd.dataSync()
        } catch { fd.closeQuietly(); throw error }
        try fd.close()
        try retryingInterrupts("rename", path: manifestPath) { rename(tmp, manifestPath) }
        try Sys.fsyncDirectory(of: manifestPath)
    }

    /// Takes the pool's lock; a holder that keeps it for `lockPatience` seconds (a stopped
    /// process, say) makes this a clear error instead of a hang.
    private func lock(_ fd: Int32) throws {
        let deadline = MonotonicClock.now() + UInt64(StoragePool.lockPatience * 1e9)
        var pause: UInt32 = 100
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            guard e == EWOULDBLOCK || e == EINTR else { throw PoolError.io(SystemError("flock", path: path + "/lock", errno: e)) }
            if MonotonicClock.now() > deadline {
                throw PoolError.busy("another process has held the pool's lock (\(path)/lock) for \(Int(StoragePool.lockPatience)) s; is one stopped?")
            }
            usleep(pause)
            pause = min(pause * 2, 5_000)
        }
    }
    static let lockPatience: Double = 10

    /// Runs `body` holding the pool's lock (not re-entrant: `body` must not take it again).
    ///
    /// The lock file is made only while the manifest exists (`delete` removes the manifest,
    /// then the lock): a process that finds the pool deleted under it gets `notAPool` and
    /// leaves nothing behind, so the deleting process's final rmdir finds the directory empty.
    func withLock<T>(_ body: () throws -> T) throws -> T {
        let lockPath = path + "/lock"
        let lockFD: FileDescriptor
        do { lockFD = try FileDescriptor.open(lockPath, O_RDWR) } catch let e as SystemError where e.errno == ENOENT {
            guard Sys.fileExists(manifestPath) else { throw PoolError.notAPool(path) }
            lockFD = try FileDescriptor.open(lockPath, O_RDWR | O_CREAT)
        }
        // Closing the descriptor releases the lock; it was only read from, nothing to report.
        defer { lockFD.closeQuietly() }
        try lock(lockFD.rawValue)
        return try body()
    }

    /// Reads, changes and writes the manifest under the pool's lock.
    @discardableResult
    func withManifest<T>(_ body: (inout PoolManifest) throws -> T) throws -> T {
        try withLock {
            var m = try readManifest()
            let before = m
            let result = try body(&m)
            if m != before { try writeManifest(m) }
            return result
        }
    }

    // MARK: Slots

    /// Adds `count` slots to the manifest as `preparing`, owned by this process, and records
    /// the operation; called inside the caller's locked section, so that deciding how many
    /// slots are missing and reserving them is one step (two processes replenishing at once
    /// never both fill the same gap).
    private func reserve(_ count: Int, in m: inout PoolManifest, reason: String) -> [Int] {
        guard count > 0 else { return [] }
        let me = ProcessIdentity.current
        var ids: [Int] = []
        for _ in 0..<count {
            ids.append(m.nextSlotID)
            var slot = PoolManifest.Slot(id: m.nextSlotID, state: .preparing, allocated: m.slotSize)
            slot.setOwner(me)
            m.slots.append(slot)
            m.nextSlotID += 1
        }
        if let i = m.operations.firstIndex(where: { $0.identity.isCurrent && $0.reason == reason }) {
            m.operations[i].total += Int64(count) * m.slotSize
        } else {
            var op = PoolManifest.Operation(reason: reason, pid: me.pid, done: 0, total: Int64(count) * m.slotSize)
            op.setWorker(me)
            m.operations.append(op)
        }
        return ids
    }

    /// Preallocates (and zero-fills when the pool's prefill is `zero`) every slot this process
    /// holds as `preparing`, syncs each, then marks it `free`, updating the operation's progress.
    /// A failure (no room) is kept in the manifest as `lastError` for `reel pool status`.
    public func fillReservedSlots(_ only: [Int]? = nil, progress: ((Double) -> Void)? = nil) throws {
        let (ids, slotSize, prefill) = try withManifest { m in
            (m.slots.filter { $0.state == .preparing && $0.isMine && (only?.contains($0.id) ?? true) }.map(\.id), m.slotSize, m.prefill)
        }
        defer {
            // Ending the operation; should this fail, the next open drops it (this process is gone).
            try? withManifest { m in
                if !m.slots.contains(where: { $0.state == .preparing && $0.isMine }) { m.operations.removeAll { $0.identity.isCurrent } }
            }
        }
        do {
            for (k, id) in ids.enumerated() {
                try prefillSlot(slotPath(id), size: slotSize, zero: prefill == "zero")
                try withManifest { m in
                    if let i = m.slots.firstIndex(where: { $0.id == id }) { m.slots[i].state = .free; m.slots[i].setOwner(nil) }
                    for i in m.operations.indices where m.operations[i].identity.isCurrent { m.operations[i].done += slotSize }
                    m.lastError = nil
                }
                progress?(Double(k + 1) / Double(ids.count))
            }
        } catch {
            let text = (error as? any UserFacingError)?.description ?? "\(error)"
            // Recording why; should the manifest itself fail now, the error below says why
            // anyway, and the slots left `preparing` are redone once this process is gone.
            try? withManifest { m in
                // What could not be prepared is given up, so the pool is consistent and says why.
                let left = m.slots.filter { $0.state == .preparing && $0.isMine && ids.contains($0.id) }.map(\.id)
                for id in left { try Sys.unlinkIfPresent(slotPath(id)) }
                m.slots.removeAll { left.contains($0.id) }
                m.lastError = text
            }
            throw error
        }
    }

    /// Takes over the slots and operations that process `pid` reserved (a foreground
    /// `reel pool create --background` hands its work to a detached process this way).
    /// Returns how many slots were taken over.
    public func adoptPreparation(from pid: Int32) throws -> Int {
        let me = ProcessIdentity.current
        return try withManifest { m in
            var n = 0
            for i in m.slots.indices where m.slots[i].state == .preparing && m.slots[i].owner == pid {
                m.slots[i].setOwner(me)
                n += 1
            }
            for i in m.operations.indices where m.operations[i].pid == pid { m.operations[i].setWorker(me) }
            return n
        }
    }

    /// Hands the slots this process reserved to a detached process that prepares them, and
    /// returns its pid once it has taken them over (so the pool never looks idle meanwhile).
    /// `command` runs `adoptPreparation(from: getpid())` then `fillReservedSlots()`, as
    /// `reel pool _prepare PATH --from PID` does.
    public func prepareInBackground(command: [String]) throws -> Int32? {
        let me = getpid()
        guard holdsPreparation(me), let exe = command.first else { return nil }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: exe)
        p.arguments = Array(command.dropFirst())
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch {
            throw PoolError.io(SystemError("posix_spawn", path: exe, errno: ENOENT))
        }
        let deadline = MonotonicClock.now() + 10_000_000_000
        while holdsPreparation(me) {
            if !p.isRunning || MonotonicClock.now() > deadline {
                if p.isRunning { p.terminate() }
                throw PoolError.busy("the background preparation (\(exe)) did not start; the slots stay reserved until this process ends")
            }
            usleep(5_000)
        }
        return p.processIdentifier
    }

    /// Whether process `pid` still holds reserved work (it has not been adopted yet).
    public func holdsPreparation(_ pid: Int32) -> Bool {
        guard let m = try? readManifest() else { return false }
        return m.operations.contains { $0.pid == pid } || m.slots.contains { $0.state == .preparing && $0.owner == pid }
    }

    private func prefillSlot(_ file: String, size: Int64, zero: Bool) throws {
        do { try prepareSlotFile(file, size: size, zero: zero, chunk: StoragePool.blockSize) } catch let e as SystemError {
            if e.isOutOfSpace && (e.call == "fallocate" || e.call == "pwrite") {
                throw PoolError.full("no room for the pool on this filesystem: \(e.text) while preallocating \(file)")
            }
            throw PoolError.io(e)
        }
    }

    /// The O_DIRECT alignment this filesystem accepts (512 or 4096), or nil without direct I/O.
    public func directIOAlignment() -> Int? {
        ReelStorage.directIOAlignment(inDirectory: path, probeName: ".dio-probe")
    }

    // MARK: Status and maintenance

    public func status() throws -> PoolStatus {
        let m = try readManifest()
        var busy: [String] = []
        var progress: [String: Double] = [:]
        var operations: [PoolStatus.Operation] = []
        for op in m.operations where op.isAlive {
            if !busy.contains(op.reason) { busy.append(op.reason) }
            let fraction = op.total > 0 ? Double(op.done) / Double(op.total) : 0
            progress[op.reason] = min(progress[op.reason] ?? 1, fraction)
            operations.append(.init(reason: op.reason, pid: op.pid, progress: fraction))
        }
        let active = m.slots.filter { $0.state == .active }
        if !active.isEmpty { busy.append("capturing") }
        return PoolStatus(path: path, capacity: m.capacity, remainingCapacity: m.freeBytes, slotSize: m.slotSize,
                          slotsFree: m.slots.filter { $0.state == .free }.count, slotsActive: active.count,
                          slotsPreparing: m.slots.filter { $0.state == .preparing }.count,
                          busyReasons: busy, progress: progress, operations: operations, filesystem: Sys.filesystemName(path),
                          directIOAlignment: directIOAlignment(), writeMode: m.writeMode,
                          writeModeSource: m.writeModeSource ?? "asked", writeModeMeasurement: m.writeModeMeasurement,
                          prefill: m.prefill, lastError: m.lastError, manifestVersion: m.version)
    }

    /// Grows (new slots, preallocated) or shrinks (free slots deleted) the pool. With
    /// `preallocate: false` new slots are only reserved, as in `create`.
    public func resize(capacity: Int64, preallocate: Bool = true, progress: ((Double) -> Void)? = nil) throws {
        let m = try readManifest()
        guard capacity >= m.slotSize else {
            throw PoolError.badSize("capacity \(formatBytes(capacity)) is below one slot (\(formatBytes(m.slotSize)))")
        }
        let wanted = Int(capacity / m.slotSize)
        if wanted > m.slots.count {
            let needed = Int64(wanted - m.slots.count) * m.slotSize
            try StoragePool.checkFreeSpace(at: path, needed: needed, what: "\(wanted - m.slots.count) more slot(s) of \(formatBytes(m.slotSize))")
        }
        let removed: [Int] = try withManifest { m in
            m.capacity = capacity
            var have = m.slots.count
            var gone: [Int] = []
            while have > wanted, let i = m.slots.lastIndex(where: { $0.state == .free }) {
                gone.append(m.slots[i].id)
                m.slots.remove(at: i)
                have -= 1
            }
            return gone
        }
        for id in removed { try Sys.unlinkIfPresent(slotPath(id)) }
        try replenish(reason: "adjustingCapacity", preallocate: preallocate, progress: progress)
    }

    /// Takes the write mode from a new measurement of this pool's filesystem; recordings that
    /// claim a slot from now on use it.
    public func adopt(_ measurement: WriteModeMeasurement) throws {
        let direct = directIOAlignment() != nil
        try withManifest { m in
            let chosen = WriteMode(rawValue: measurement.chosen)
            m.writeMode = chosen == .direct && !direct ? .buffered : chosen
            m.writeModeSource = "measured"
            m.writeModeMeasurement = measurement
        }
    }

    /// Prepares slots until the pool holds its capacity again.
    public func replenish(reason: String = "replenishing", preallocate: Bool = true, progress: ((Double) -> Void)? = nil) throws {
        let ids = try withManifest { m -> [Int] in
            // Slots a dead process left half-prepared are redone.
            let stale = m.slots.filter { $0.state == .preparing && !$0.ownerIsAlive }.map(\.id)
            m.slots.removeAll { stale.contains($0.id) }
            for id in stale { try Sys.unlinkIfPresent(slotPath(id)) }
            m.operations.removeAll { !$0.isAlive }
            let missing = max(0, Int((m.capacity - m.allocatedBytes) / m.slotSize))
            return reserve(missing, in: &m, reason: reason)
        }
        if preallocate && !ids.isEmpty { try fillReservedSlots(ids, progress: progress) }
    }

    /// Whether slots are missing (released, or left half-prepared by a dead process) and
    /// nobody alive is preparing them.
    public var needsReplenishing: Bool {
        guard let m = try? readManifest() else { return false }
        let live = m.slots.filter { $0.state != .preparing || $0.ownerIsAlive }
        return m.capacity - live.reduce(0) { $0 + $1.allocated } >= m.slotSize
    }

    /// Starts replenishing on a background thread unless one is already at it.
    public func replenishInBackground() {
        let start = replenishDone.withLock { done -> Bool in
            guard done else { return false }
            done = false
            return true
        }
        guard start else { return }
        let t = Thread { [self] in
            // Slots released while this ran are picked up by another round; a failure
            // (filesystem full) ends it, and the next open of the pool tries again.
            while (try? replenish()) != nil && needsReplenishing {}
            replenishDone.withLock { $0 = true }
        }
        t.name = "reel.replenish"
        t.start()
    }

    /// Waits until no live process is adjusting the capacity or replenishing, then prepares
    /// here whatever is still missing (slots of a worker that died); `progress` sees the
    /// status about five times a second meanwhile.
    /// - Throws: `PoolError.busy` after `timeout` seconds; `.full` when there is no room for
    ///   the missing slots.
    public func waitUntilReady(timeout: Double?, progress: (PoolStatus) -> Void) throws -> PoolStatus {
        let deadline = timeout.map { MonotonicClock.now() + UInt64(saturating: $0 * 1e9) }
        while true {
            let s = try status()
            let working = s.busyReasons.filter { $0 == "adjustingCapacity" || $0 == "replenishing" }
            if working.isEmpty {
                // Nobody alive is at it but slots are missing (a worker died, or failed for
                // want of room): prepare them here, and let a failure say why.
                guard needsReplenishing else { return s }
                try withoutActuallyEscaping(progress) { show in
                    try replenish(reason: "replenishing") { _ in if let s = try? self.status() { show(s) } }
                }
                continue
            }
            if let deadline, MonotonicClock.now() > deadline {
                let pct = Int(saturating: 100 * (s.progress[working[0]] ?? 0))
                throw PoolError.busy("still \(working[0]) (\(pct)% done) after \(formatSeconds(timeout ?? 0))")
            }
            progress(s)
            usleep(200_000)
        }
    }

    /// Waits until background replenishing has finished.
    public func waitForReplenishing() {
        while !replenishDone.withLock({ $0 }) { usleep(20_000) }
    }

    /// Deletes the pool: its slots, manifest and directory. Refuses while a live recorder uses
    /// it or a live process is preparing slots. What dead recorders left is recovered first;
    /// the check and the removal are one locked step, so a recorder that claims a slot
    /// meanwhile either makes this refuse or finds no pool.
    public func delete() throws {
        func refuseIfBusy(_ m: PoolManifest) throws {
            if let op = m.operations.first(where: { $0.isAlive }) {
                throw PoolError.busy("\(op.reason) (pid \(op.pid)); `reel pool wait` waits until it is done")
            }
            if let busy = m.slots.first(where: { ($0.state == .active || $0.state == .recovering) && $0.ownerIsAlive }) {
                let doing = busy.state == .active ? "is recording" : "is being recovered"
                throw PoolError.busy("slot \(busy.id) \(doing) (pid \(busy.owner ?? 0))")
            }
        }
        try refuseIfBusy(try readManifest())
        _ = try recover()
        try withLock {
            let m = try readManifest()
            try refuseIfBusy(m)
            if let left = m.slots.first(where: { $0.state == .active || $0.state == .recovering }) {
                throw PoolError.busy("slot \(left.id) still holds a dead recorder's clip; `reel pool recover` publishes it")
            }
            for s in m.slots { try Sys.unlinkIfPresent(slotPath(s.id)) }
            try Sys.unlinkIfPresent(manifestPath)
            try Sys.unlinkIfPresent(path + "/lock")
        }
        try Sys.removeDirectory(slotsDirectory)
        try Sys.removeDirectory(path)
    }

    // MARK: Recording into slots

    /// Claims a free slot for a clip that will be published at `destination`.
    /// - Throws: `PoolError.busy` while the pool is adjusting its capacity, `.full` without a free slot.
    func claimSlot(destination: String, container: String) throws -> (id: Int, path: String, allocated: Int64, mode: WriteMode) {
        try withManifest { m in
            if let op = m.operations.first(where: { $0.reason == "adjustingCapacity" && $0.isAlive }) {
                let pct = op.total > 0 ? Int(100 * op.done / op.total) : 0
                throw PoolError.busy("adjusting capacity (\(pct)% done); `reel pool wait` waits until it is ready")
            }
            guard let i = m.slots.firstIndex(where: { $0.state == .free }) else {
                throw PoolError.full("the storage pool at \(path) is full: no free slot (\(formatBytes(m.capacity)) capacity, \(m.slots.filter { $0.state == .active }.count) slots recording)")
            }
            m.slots[i].state = .active
            m.slots[i].setOwner(ProcessIdentity.current)
            m.slots[i].destination = destination
            m.slots[i].container = container
            m.slots[i].startedAt = Date().timeIntervalSince1970
            return (m.slots[i].id, slotPath(m.slots[i].id), m.slots[i].allocated, m.writeMode)
        }
    }

    /// Gives the active slot `id` the space of a free one (the clip outgrew its slot): under
    /// the lock, the free slot's file is removed and `allocate` extends the active one to the
    /// new size (fallocate). Returns the new allocation, or nil when no slot is free.
    ///
    /// The manifest stays true on every path: nothing changes when `id` is not an active slot
    /// or the free file cannot be removed; once it is removed, the free slot leaves the
    /// manifest, and the active one's allocation grows only when `allocate` succeeds (else the
    /// error is thrown and the pool replenishes the slot it lost).
    func growSlot(_ id: Int, allocate: (Int64) throws -> Void) throws -> Int64? {
        let outcome = try withManifest { m -> Result<Int64?, any Error> in
            guard m.slots.contains(where: { $0.id == id && $0.state == .active }),
                  let free = m.slots.firstIndex(where: { $0.state == .free }) else { return .success(nil) }
            let freeSlot = m.slots[free]
            do { try Sys.unlinkIfPresent(slotPath(freeSlot.id)) } catch { return .failure(error) }
            m.slots.remove(at: free)
            let i = m.slots.firstIndex { $0.id == id }!
            let grown = m.slots[i].allocated + freeSlot.allocated
            do { try allocate(grown) } catch { return .failure(error) }
            m.slots[i].allocated = grown
            return .success(grown)
        }
        return try outcome.get()
    }

    /// A slot whose clip was copied out and whose used part was zeroed again: free for reuse.
    func returnSlot(_ id: Int) throws {
        try withManifest { m in
            guard let i = m.slots.firstIndex(where: { $0.id == id }) else { return }
            m.slots[i].state = .free
            m.slots[i].setOwner(nil)
            m.slots[i].destination = nil
            m.slots[i].container = nil
            m.slots[i].startedAt = nil
        }
    }

    /// The slot's file has left the pool (published or discarded).
    func releaseSlot(_ id: Int) throws {
        try withManifest { m in m.slots.removeAll { $0.id == id } }
    }

    public var remainingCapacity: Int64 { (try? readManifest().freeBytes) ?? 0 }

    /// Publishes what active slots of dead recorders hold, cut at the last complete fragment
    /// (MOV/MP4) or cluster (MKV), and frees them. A slot with no complete fragment holds no
    /// decodable frame: it is dropped (`lastDropped` says so), never published.
    ///
    /// The orphans are claimed under the lock (state `recovering`, owned by this process)
    /// before any is touched, so processes opening the pool at once recover each exactly once;
    /// a recovery whose process dies is taken up again by the next.
    public func recover() throws -> [RecoveredClip] {
        // Looking needs no lock (the manifest is replaced atomically); taking them does.
        func orphan(_ s: PoolManifest.Slot) -> Bool { (s.state == .active || s.state == .recovering) && !s.ownerIsAlive }
        guard try readManifest().slots.contains(where: orphan) else { return [] }
        let me = ProcessIdentity.current
        let orphans = try withManifest { m -> [PoolManifest.Slot] in
            var taken: [PoolManifest.Slot] = []
            for i in m.slots.indices where orphan(m.slots[i]) {
                taken.append(m.slots[i])
                m.slots[i].state = .recovering
                m.slots[i].setOwner(me)
            }
            return taken
        }
        guard !orphans.isEmpty else { return [] }
        var out: [RecoveredClip] = []
        var gone: [DroppedClip] = []
        var failed: [RecoveryFailure] = []
        for slot in orphans {
            // One slot that cannot be recovered (an I/O error) is reported and handed back as
            // an orphan for the next open to retry; the others are recovered all the same.
            do {
                switch try recoverSlot(slot) {
                case .published(let clip): out.append(clip)
                case .dropped(let clip?): gone.append(clip)
                case .dropped(nil): break
                }
            } catch {
                failed.append(RecoveryFailure(slot: slot.id, destination: slot.destination,
                                              reason: (error as? any UserFacingError)?.description ?? "\(error)"))
                do {
                    try withManifest { m in
                        if let i = m.slots.firstIndex(where: { $0.id == slot.id }) { m.slots[i].state = .active; m.slots[i].setOwner(nil) }
                    }
                } catch {
                    // The slot stays `recovering` under this process: once it is gone, the
                    // next open takes it up again.
                }
            }
        }
        recovered.withLock { $0 += out }
        dropped.withLock { $0 += gone }
        failures.withLock { $0 += failed }
        try replenish()
        return out
    }

    private enum SlotRecovery { case published(RecoveredClip), dropped(DroppedClip?) }

    /// Publishes (or drops) what one orphaned slot holds and releases it.
    private func recoverSlot(_ slot: PoolManifest.Slot) throws -> SlotRecovery {
        let file = slotPath(slot.id)
        let written = try lastWrittenByte(file)
        let found = slot.container == "mkv"
            ? FragmentScanner.completeClusters(of: file, limit: written)
            : FragmentScanner.completeFragments(of: file, limit: written)
        if let found, found.count > 0, let dest = slot.destination {
            let fd = try FileDescriptor.open(file, O_WRONLY)
            do {
                try fd.truncate(to: found.length)
                try fd.dataSync()
            } catch { fd.closeQuietly(); throw error }
            try fd.close()
            try FileStorage.makeDirectories(parentDirectory(of: dest))
            let published = try publishFile(from: file, toFreeNameLike: dest, tag: "recovered")
            try releaseSlot(slot.id)
            return .published(RecoveredClip(path: published, bytes: found.length, fragments: found.count))
        }
        var clip: DroppedClip? = nil
        if let dest = slot.destination {
            let what = slot.container == "mkv" ? "cluster" : "fragment"
            let reason = written == 0 ? "nothing written, so no decodable frame"
                : "no complete \(what), so no decodable frame (\(formatBytes(written)) of headers or an unfinished \(what))"
            clip = DroppedClip(destination: dest, bytes: written, reason: reason)
        }
        try Sys.unlinkIfPresent(file)
        try releaseSlot(slot.id)
        return .dropped(clip)
    }

    /// The length of the file up to its last non-zero byte (0 when it is gone).
    private func lastWrittenByte(_ file: String) throws -> Int64 {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(file, O_RDONLY) } catch let e as SystemError where e.errno == ENOENT { return 0 }
        defer { fd.closeQuietly() }
        var st = stat()
        try retryingInterrupts("fstat", path: file) { fstat(fd.rawValue, &st) }
        var end = Int64(st.st_size)
        let chunk = 1 << 20
        let buf = Sys.alignedAlloc(chunk)
        defer { free(buf) }
        while end > 0 {
            let start = max(0, end - Int64(chunk))
            let n = try fd.read(into: UnsafeMutableRawBufferPointer(start: buf, count: Int(end - start)), fromAbsoluteOffset: start)
            guard n > 0 else { return 0 }
            let bytes = buf.assumingMemoryBound(to: UInt8.self)
            var i = n - 1
            while i >= 0 && bytes[i] == 0 { i -= 1 }
            if i >= 0 { return start + Int64(i) + 1 }
            end = start
        }
        return 0
    }
}
/// `clip.mov` → `clip-recovered.mov`, `clip-recovered-2.mov`, … (whichever is free); with no
/// tag, `clip-2.mov`, `clip-3.mov`, ….
func uniqueName(_ path: String, tag: String?) -> String {
    let dir = parentDirectory(of: path), name = fileName(of: path)
    let dot = name.lastIndex(of: ".") ?? name.endIndex
    let stem = String(name[..<dot]), ext = String(name[dot...])
    var k = tag == nil ? 2 : 1
    while true {
        let candidate = dir + "/" + stem + (tag.map { "-" + $0 } ?? "") + (k == 1 ? "" : "-\(k)") + ext
        if !Sys.fileExists(candidate) { return candidate }
        k += 1
    }
}

/// Copies the first `length` bytes of the open file `input` into a new file `destination`
/// (copy_file_range: in the kernel, a reflink where the filesystem has them), then syncs it.
func copyOut(_ input: FileDescriptor, length: Int64, to destination: String,
             progress: ((Int64, Int64) -> Void)? = nil) throws {
    let output: FileDescriptor
    do { output = try FileDescriptor.open(destination, O_WRONLY | O_CREAT | O_EXCL) } catch let s as SystemError where s.errno == EEXIST {
        throw StorageError.exists(destination)
    }
    var ok = false
    defer {
        output.closeQuietly()
        // Our own half-made copy (O_EXCL made it); a failure to remove it leaves a file
        // named as the clip that the error already says is incomplete.
        if !ok { do { try Sys.unlinkIfPresent(destination) } catch {} }
    }
    var off: Int64 = 0
    while off < length {
        let n = CLinux_copy_range(input.rawValue, off, output.rawValue, off, min(length - off, 64 << 20))
        if n < 0 {
            if errno == EINTR { continue }
            if errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL { break }
            throw StorageError.io(.last("copy_file_range", path: destination))
        }
        if n == 0 { break }
        off += n
        progress?(off, length)
    }
    if off < length {
        // No in-kernel copy between these files: read and write.
        let chunk = 4 << 20
        let buf = Sys.alignedAlloc(chunk)
        defer { free(buf) }
        while off < length {
            let n = try input.read(into: UnsafeMutableRawBufferPointer(start: buf, count: Int(min(Int64(chunk), length - off))), fromAbsoluteOffset: off)
            if n == 0 { break }
            try output.writeAll(buf, count: n, toAbsoluteOffset: off)
            off += Int64(n)
            progress?(off, length)
        }
    }
    try output.dataSync()
    try Sys.fsyncDirectory(of: destination)
    ok = true
}

/// Publishes `source` at `destination`, or — when another file has that name — at the first
/// free `NAME-TAG.EXT`, `NAME-TAG-2.EXT`, …; never replaces a file. Returns the path used.
func publishFile(from source: String, toFreeNameLike destination: String, tag: String?,
                 progress: ((Int64, Int64) -> Void)? = nil) throws -> String {
    var target = destination
    for _ in 0..<1000 {
        do { return try publishFile(from: source, to: target, progress: progress) } catch StorageError.exists {
            target = uniqueName(destination, tag: tag)
        }
    }
    throw StorageError.exists(target)
}

/// Moves `source` to `destination` without replacing anything (renameat2 RENAME_NOREPLACE),
/// syncing the destination directory; across filesystems, copies (with progress), syncs and
/// removes the source. Returns the path written.
func publishFile(from source: String, to destination: String, progress: ((Int64, Int64) -> Void)?) throws -> String {
    if CLinux_renameat2(AT_FDCWD, source, AT_FDCWD, destination, CLinux_RENAME_NOREPLACE) == 0 {
        try Sys.fsyncDirectory(of: destination)
        return destination
    }
    let e = SystemError.last("renameat2", path: destination)
    if e.errno == EEXIST { throw StorageError.exists(destination) }
    guard e.errno == EXDEV || e.errno == EINVAL || e.errno == ENOSYS else { throw StorageError.io(e) }
    // Another filesystem (or no renameat2): copy, then sync, then drop the source.
    let input = try FileDescriptor.open(source, O_RDONLY)
    defer { input.closeQuietly() }
    var st = stat()
    try retryingInterrupts("fstat", path: source) { fstat(input.rawValue, &st) }
    try copyOut(input, length: Int64(st.st_size), to: destination, progress: progress)
    try Sys.unlinkIfPresent(source)
    return destination
}

private func formatSeconds(_ s: Double) -> String { s == s.rounded() && abs(s) < 1e15 ? "\(Int(s)) s" : String(format: "%.1f s", s) }
