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
    public var writeMode: String
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
    public var frames: Int?
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

    /// What the last `recover()` (run by `open`) published.
    public var lastRecovery: [RecoveredClip] { recovered.withLock { $0 } }
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
                              writeMode: String = "auto", measurement: WriteModeMeasurement? = nil,
                              prefill: String = "zero", preallocate: Bool = true,
                              progress: ((Double) -> Void)? = nil) throws -> StoragePool {
        guard slotSize >= 4 << 20, slotSize % Int64(blockSize) == 0 else {
            throw PoolError.badSize("slot size must be a whole number of MiB, at least 4 MiB (got \(formatBytes(slotSize)))")
        }
        guard capacity >= slotSize else {
            throw PoolError.badSize("capacity \(formatBytes(capacity)) is below one slot (\(formatBytes(slotSize)))")
        }
        guard ["auto", "buffered", "direct"].contains(writeMode) else { throw PoolError.badSize("write mode must be auto, buffered or direct") }
        guard ["zero", "fallocate"].contains(prefill) else { throw PoolError.badSize("prefill must be zero or fallocate") }
        try checkCanCreate(at: path)
        let fm = FileManager.default
        do {
            try fm.createDirectory(atPath: path + "/slots", withIntermediateDirectories: true)
        } catch {
            throw PoolError.io(SystemError("mkdir", path: path, errno: EACCES))
        }
        let pool = StoragePool(path: path)
        let alignment = pool.directIOAlignment()
        var mode = writeMode
        var source = "asked"
        var measured: WriteModeMeasurement? = nil
        if mode == "auto" && alignment == nil {
            mode = "buffered"
            source = "only"
        } else if mode == "auto" {
            // This filesystem's measurement (made now by the caller, or cached from an earlier
            // pool); without one, buffered with early writeback, which won on ext4 under a
            // competing writer (O_DIRECT p99.9 ≈ 210 ms against ≈ 12 ms).
            measured = measurement ?? WriteModeMeasurement.cached(for: path)
            mode = measured?.chosen ?? "buffered"
            source = measured == nil ? "default" : "measured"
        }
        if mode == "direct" && alignment == nil {
            throw PoolError.unsupportedFilesystem("\(Sys.filesystemName(path)) at \(path) has no direct I/O: use --write-mode buffered")
        }
        let count = Int(capacity / slotSize)
        var manifest = PoolManifest(capacity: capacity, slotSize: slotSize, writeMode: mode, prefill: prefill)
        manifest.writeModeSource = source
        manifest.writeModeMeasurement = measured
        try pool.writeManifest(manifest)
        try pool.withManifest { m in _ = pool.reserve(count, in: &m, reason: "adjustingCapacity") }
        if preallocate { try pool.fillReservedSlots(progress: progress) }
        return pool
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
        let fd = try Sys.open(tmp, O_WRONLY | O_CREAT | O_TRUNC)
        do {
            try data.withUnsafeBytes { try Sys.pwriteAll(fd, $0.baseAddress!, $0.count, at: 0, path: tmp) }
            try Sys.fdatasync(fd, path: tmp)
        } catch { close(fd); throw error }
        close(fd)
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

    /// Reads, changes and writes the manifest under the pool's lock.
    @discardableResult
    func withManifest<T>(_ body: (inout PoolManifest) throws -> T) throws -> T {
        let lockFD = try Sys.open(path + "/lock", O_RDWR | O_CREAT)
        defer { close(lockFD) }
        try lock(lockFD)
        defer { flock(lockFD, LOCK_UN) }
        var m = try readManifest()
        let before = m
        let result = try body(&m)
        if m != before { try writeManifest(m) }
        return result
    }

    // MARK: Slots

    /// Adds `count` slots to the manifest as `preparing`, owned by this process, and records
    /// the operation; called inside the caller's locked section, so that deciding how many
    /// slots are missing and reserving them is one step (two processes replenishing at once
    /// never both fill the same gap).
    private func reserve(_ count: Int, in m: inout PoolManifest, reason: String) -> [Int] {
        guard count > 0 else { return [] }
        let pid = getpid()
        var ids: [Int] = []
        for _ in 0..<count {
            ids.append(m.nextSlotID)
            m.slots.append(.init(id: m.nextSlotID, state: "preparing", allocated: m.slotSize, owner: pid))
            m.nextSlotID += 1
        }
        if let i = m.operations.firstIndex(where: { $0.pid == pid && $0.reason == reason }) {
            m.operations[i].total += Int64(count) * m.slotSize
        } else {
            m.operations.append(.init(reason: reason, pid: pid, done: 0, total: Int64(count) * m.slotSize))
        }
        return ids
    }

    /// Preallocates (and zero-fills when the pool's prefill is `zero`) every slot this process
    /// holds as `preparing`, syncs each, then marks it `free`, updating the operation's progress.
    /// A failure (no room) is kept in the manifest as `lastError` for `reel pool status`.
    public func fillReservedSlots(_ only: [Int]? = nil, progress: ((Double) -> Void)? = nil) throws {
        let pid = getpid()
        let (ids, slotSize, prefill) = try withManifest { m in
            (m.slots.filter { $0.state == "preparing" && $0.owner == pid && (only?.contains($0.id) ?? true) }.map(\.id), m.slotSize, m.prefill)
        }
        defer {
            try? withManifest { m in
                if !m.slots.contains(where: { $0.state == "preparing" && $0.owner == pid }) { m.operations.removeAll { $0.pid == pid } }
            }
        }
        do {
            for (k, id) in ids.enumerated() {
                try prefillSlot(slotPath(id), size: slotSize, zero: prefill == "zero")
                try withManifest { m in
                    if let i = m.slots.firstIndex(where: { $0.id == id }) { m.slots[i].state = "free"; m.slots[i].owner = nil }
                    for i in m.operations.indices where m.operations[i].pid == pid { m.operations[i].done += slotSize }
                    m.lastError = nil
                }
                progress?(Double(k + 1) / Double(ids.count))
            }
        } catch {
            let text = (error as? any UserFacingError)?.description ?? "\(error)"
            try? withManifest { m in
                // What could not be prepared is given up, so the pool is consistent and says why.
                let left = m.slots.filter { $0.state == "preparing" && $0.owner == pid && ids.contains($0.id) }.map(\.id)
                for id in left { unlink(slotPath(id)) }
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
        let me = getpid()
        return try withManifest { m in
            var n = 0
            for i in m.slots.indices where m.slots[i].state == "preparing" && m.slots[i].owner == pid {
                m.slots[i].owner = me
                n += 1
            }
            for i in m.operations.indices where m.operations[i].pid == pid { m.operations[i].pid = me }
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
        return m.operations.contains { $0.pid == pid } || m.slots.contains { $0.state == "preparing" && $0.owner == pid }
    }

    private func prefillSlot(_ file: String, size: Int64, zero: Bool) throws {
        let fd = try Sys.open(file, O_WRONLY | O_CREAT | O_TRUNC)
        defer { close(fd) }
        if CLinux_fallocate(fd, 0, size) != 0 {
            let e = SystemError.last("fallocate", path: file)
            if e.isOutOfSpace { throw PoolError.full("no room for the pool on this filesystem: \(e.text) while preallocating \(file)") }
            // tmpfs and others without fallocate: fall through to writing zeros.
            if e.errno != EOPNOTSUPP { throw PoolError.io(e) }
        }
        if zero {
            let chunk = StoragePool.blockSize
            let zeros = Sys.alignedAlloc(chunk)
            defer { free(zeros) }
            var off: Int64 = 0
            while off < size {
                do { try Sys.pwriteAll(fd, zeros, chunk, at: off, path: file) } catch let e as SystemError where e.isOutOfSpace {
                    throw PoolError.full("no room for the pool on this filesystem: \(e.text) while preallocating \(file)")
                }
                off += Int64(chunk)
            }
        }
        try Sys.fdatasync(fd, path: file)
    }

    /// The O_DIRECT alignment this filesystem accepts (512 or 4096), or nil without direct I/O.
    public func directIOAlignment() -> Int? {
        let probe = path + "/.dio-probe"
        defer { unlink(probe) }
        let fd = Glibc.open(probe, O_WRONLY | O_CREAT | O_TRUNC | CLinux_O_DIRECT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let buf = Sys.alignedAlloc(4096)
        defer { free(buf) }
        for align in [512, 4096] where pwrite(fd, buf, align, 0) == align { return align }
        return nil
    }

    // MARK: Status and maintenance

    public func status() throws -> PoolStatus {
        let m = try readManifest()
        var busy: [String] = []
        var progress: [String: Double] = [:]
        var operations: [PoolStatus.Operation] = []
        for op in m.operations where Sys.isAlive(op.pid) {
            if !busy.contains(op.reason) { busy.append(op.reason) }
            let fraction = op.total > 0 ? Double(op.done) / Double(op.total) : 0
            progress[op.reason] = min(progress[op.reason] ?? 1, fraction)
            operations.append(.init(reason: op.reason, pid: op.pid, progress: fraction))
        }
        let active = m.slots.filter { $0.state == "active" }
        if !active.isEmpty { busy.append("capturing") }
        return PoolStatus(path: path, capacity: m.capacity, remainingCapacity: m.freeBytes, slotSize: m.slotSize,
                          slotsFree: m.slots.filter { $0.state == "free" }.count, slotsActive: active.count,
                          slotsPreparing: m.slots.filter { $0.state == "preparing" }.count,
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
        let removed: [Int] = try withManifest { m in
            m.capacity = capacity
            var have = m.slots.count
            var gone: [Int] = []
            while have > wanted, let i = m.slots.lastIndex(where: { $0.state == "free" }) {
                gone.append(m.slots[i].id)
                m.slots.remove(at: i)
                have -= 1
            }
            return gone
        }
        for id in removed { unlink(slotPath(id)) }
        try replenish(reason: "adjustingCapacity", preallocate: preallocate, progress: progress)
    }

    /// Takes the write mode from a new measurement of this pool's filesystem; recordings that
    /// claim a slot from now on use it.
    public func adopt(_ measurement: WriteModeMeasurement) throws {
        let direct = directIOAlignment() != nil
        try withManifest { m in
            m.writeMode = measurement.chosen == "direct" && !direct ? "buffered" : measurement.chosen
            m.writeModeSource = "measured"
            m.writeModeMeasurement = measurement
        }
    }

    /// Prepares slots until the pool holds its capacity again.
    public func replenish(reason: String = "replenishing", preallocate: Bool = true, progress: ((Double) -> Void)? = nil) throws {
        let ids = try withManifest { m -> [Int] in
            // Slots a dead process left half-prepared are redone.
            let stale = m.slots.filter { $0.state == "preparing" && !($0.owner.map(Sys.isAlive) ?? false) }.map(\.id)
            m.slots.removeAll { stale.contains($0.id) }
            for id in stale { unlink(slotPath(id)) }
            m.operations.removeAll { !Sys.isAlive($0.pid) }
            let missing = max(0, Int((m.capacity - m.allocatedBytes) / m.slotSize))
            return reserve(missing, in: &m, reason: reason)
        }
        if preallocate && !ids.isEmpty { try fillReservedSlots(ids, progress: progress) }
    }

    /// Whether slots are missing (released, or left half-prepared by a dead process) and
    /// nobody alive is preparing them.
    public var needsReplenishing: Bool {
        guard let m = try? readManifest() else { return false }
        let live = m.slots.filter { $0.state != "preparing" || ($0.owner.map(Sys.isAlive) ?? false) }
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
    /// it or a live process is preparing slots.
    public func delete() throws {
        let m = try readManifest()
        if let op = m.operations.first(where: { Sys.isAlive($0.pid) }) {
            throw PoolError.busy("\(op.reason) (pid \(op.pid)); `reel pool wait` waits until it is done")
        }
        if let busy = m.slots.first(where: { $0.state == "active" && ($0.owner.map(Sys.isAlive) ?? false) }) {
            throw PoolError.busy("slot \(busy.id) is recording (pid \(busy.owner ?? 0))")
        }
        if m.slots.contains(where: { $0.state == "active" }) {
            _ = try recover()
        }
        for s in try readManifest().slots { unlink(slotPath(s.id)) }
        unlink(path + "/lock")
        unlink(manifestPath)
        rmdir(slotsDirectory)
        if rmdir(path) != 0 { throw PoolError.io(.last("rmdir", path: path)) }
    }

    // MARK: Recording into slots

    /// Claims a free slot for a clip that will be published at `destination`.
    /// - Throws: `PoolError.busy` while the pool is adjusting its capacity, `.full` without a free slot.
    func claimSlot(destination: String, container: String) throws -> (id: Int, path: String, allocated: Int64, mode: String) {
        try withManifest { m in
            if let op = m.operations.first(where: { $0.reason == "adjustingCapacity" && Sys.isAlive($0.pid) }) {
                let pct = op.total > 0 ? Int(100 * op.done / op.total) : 0
                throw PoolError.busy("adjusting capacity (\(pct)% done); `reel pool wait` waits until it is ready")
            }
            guard let i = m.slots.firstIndex(where: { $0.state == "free" }) else {
                throw PoolError.full("the storage pool at \(path) is full: no free slot (\(formatBytes(m.capacity)) capacity, \(m.slots.filter { $0.state == "active" }.count) slots recording)")
            }
            m.slots[i].state = "active"
            m.slots[i].owner = getpid()
            m.slots[i].destination = destination
            m.slots[i].container = container
            m.slots[i].startedAt = Date().timeIntervalSince1970
            return (m.slots[i].id, slotPath(m.slots[i].id), m.slots[i].allocated, m.writeMode)
        }
    }

    /// Gives an active slot the space of a free one (the clip outgrew its slot); returns the
    /// new allocation, or nil when no slot is free.
    func growSlot(_ id: Int) throws -> Int64? {
        try withManifest { m in
            guard let free = m.slots.firstIndex(where: { $0.state == "free" }) else { return nil }
            let freeID = m.slots[free].id
            let extra = m.slots[free].allocated
            m.slots.remove(at: free)
            unlink(slotPath(freeID))
            guard let i = m.slots.firstIndex(where: { $0.id == id }) else { return nil }
            m.slots[i].allocated += extra
            return m.slots[i].allocated
        }
    }

    /// A slot whose clip was copied out and whose used part was zeroed again: free for reuse.
    func returnSlot(_ id: Int) throws {
        try withManifest { m in
            guard let i = m.slots.firstIndex(where: { $0.id == id }) else { return }
            m.slots[i].state = "free"
            m.slots[i].owner = nil
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
    /// (MOV/MP4) or at the last written byte (MKV; slots are zero-filled), and frees them.
    public func recover() throws -> [RecoveredClip] {
        // Looking needs no lock (the manifest is replaced atomically); taking them does.
        func dead(_ s: PoolManifest.Slot) -> Bool { s.state == "active" && !(s.owner.map(Sys.isAlive) ?? false) }
        guard try readManifest().slots.contains(where: dead) else { return [] }
        let orphans = try withManifest { m -> [PoolManifest.Slot] in
            m.slots.filter { $0.state == "active" && !($0.owner.map(Sys.isAlive) ?? false) }
        }
        var out: [RecoveredClip] = []
        for slot in orphans {
            let file = slotPath(slot.id)
            var length = lastWrittenByte(file)
            if slot.container != "mkv", let playable = FragmentScanner.playableLength(of: file, limit: length) {
                length = min(length, playable)
            } else if slot.container != "mkv" {
                length = 0
            }
            if length > 0, let dest = slot.destination {
                let fd = try Sys.open(file, O_WRONLY)
                ftruncate(fd, off_t(length))
                try? Sys.fdatasync(fd, path: file)
                close(fd)
                let target = Sys.fileExists(dest) ? uniqueName(dest, tag: "recovered") : dest
                try? FileManager.default.createDirectory(atPath: parentDirectory(of: target), withIntermediateDirectories: true)
                let published = try publishFile(from: file, to: target, progress: nil)
                out.append(RecoveredClip(path: published, bytes: length, frames: nil))
            } else {
                unlink(file)
            }
            try releaseSlot(slot.id)
        }
        if !orphans.isEmpty {
            recovered.withLock { $0 += out }
            try replenish()
        }
        return out
    }

    /// The length of the file up to its last non-zero byte.
    private func lastWrittenByte(_ file: String) -> Int64 {
        let fd = Glibc.open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var st = stat()
        fstat(fd, &st)
        var end = Int64(st.st_size)
        let chunk = 1 << 20
        let buf = Sys.alignedAlloc(chunk)
        defer { free(buf) }
        while end > 0 {
            let start = max(0, end - Int64(chunk))
            let n = pread(fd, buf, Int(end - start), off_t(start))
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

/// `clip.mov` → `clip-recovered.mov`, `clip-recovered-2.mov`, … (whichever is free).
func uniqueName(_ path: String, tag: String) -> String {
    let dir = parentDirectory(of: path), name = fileName(of: path)
    let dot = name.lastIndex(of: ".") ?? name.endIndex
    let stem = String(name[..<dot]), ext = String(name[dot...])
    var k = 1
    while true {
        let candidate = dir + "/" + stem + "-" + tag + (k == 1 ? "" : "-\(k)") + ext
        if !Sys.fileExists(candidate) { return candidate }
        k += 1
    }
}

/// Copies the first `length` bytes of the open file `input` into a new file `destination`
/// (copy_file_range: in the kernel, a reflink where the filesystem has them), then syncs it.
func copyOut(_ input: Int32, length: Int64, from source: String, to destination: String,
             progress: ((Int64, Int64) -> Void)? = nil) throws {
    let output: Int32
    do { output = try Sys.open(destination, O_WRONLY | O_CREAT | O_EXCL) } catch let s as SystemError where s.errno == EEXIST {
        throw StorageError.exists(destination)
    }
    var ok = false
    defer { close(output); if !ok { unlink(destination) } }
    var off: Int64 = 0
    while off < length {
        let n = CLinux_copy_range(input, off, output, off, min(length - off, 64 << 20))
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
            let n = try retryingInterrupts("read", path: source) { pread(input, buf, Int(min(Int64(chunk), length - off)), off_t(off)) }
            if n == 0 { break }
            try Sys.pwriteAll(output, buf, n, at: off, path: destination)
            off += Int64(n)
            progress?(off, length)
        }
    }
    try Sys.fdatasync(output, path: destination)
    try Sys.fsyncDirectory(of: destination)
    ok = true
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
    let input = try Sys.open(source, O_RDONLY)
    defer { close(input) }
    var st = stat()
    fstat(input, &st)
    try copyOut(input, length: Int64(st.st_size), from: source, to: destination, progress: progress)
    unlink(source)
    return destination
}

private func formatSeconds(_ s: Double) -> String { s == s.rounded() && abs(s) < 1e15 ? "\(Int(s)) s" : String(format: "%.1f s", s) }
