import CLinux
import Foundation
import ReelCore
import Synchronization

/// The Linux counterpart of Pro Video Storage: a directory of preallocated slot files that
/// recordings overwrite in place (no allocation, no metadata change on the write path) and
/// that move to their final name when capture ends.
///
/// All shared state lives in the manifest on disk, read and written under an exclusive
/// `flock` on `POOL/lock`, so several processes can use one pool.
public final class StoragePool: Sendable {
    /// The pool's directory.
    public let path: String
    let replenishDone = Mutex<Bool>(true)
    /// `handReplenishingOver(to:)`'s command.
    let replenishCommand = Mutex<[String]?>(nil)
    let recovered = Mutex<[RecoveredClip]>([])
    let dropped = Mutex<[DroppedClip]>([])
    let failures = Mutex<[RecoveryFailure]>([])

    /// What the last `recover()` (run by `open`) published.
    public var lastRecovery: [RecoveredClip] { recovered.withLock { $0 } }
    /// What recovery found in dead recorders' slots but did not publish, and why.
    public var lastDropped: [DroppedClip] { dropped.withLock { $0 } }
    /// Slots recovery could not handle (an I/O error): left for the next open to retry.
    public var lastRecoveryFailures: [RecoveryFailure] { failures.withLock { $0 } }
    /// The default slot size (256 MiB).
    public static let defaultSlotSize: Int64 = 256 << 20
    /// The unit slots and ring blocks are sized in (1 MiB).
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
    /// - Throws: `UsageError` for a slot size or capacity that cannot be, `PoolError.exists`,
    ///   `PoolError.noRoom`, `PoolError.full` (no room while preallocating),
    ///   `PoolError.io`/`SystemError` for a failed file call.
    public static func create(at path: String, capacity: Int64, slotSize: Int64 = StoragePool.defaultSlotSize,
                              writeMode: WriteMode? = nil, measurement: WriteModeMeasurement? = nil,
                              prefill: Prefill = .zero, preallocate: Bool = true,
                              progress: ((Double) -> Void)? = nil) throws -> StoragePool {
        try create(at: path, capacity: capacity, slotSize: slotSize, writeMode: writeMode, measurement: measurement,
                   prefill: prefill, preallocate: preallocate, measuring: true, progress: progress)
    }

    /// `create`; with `measuring: false`, write mode nil takes a cached measurement or the
    /// default (buffered) and measures nothing (the default pool, made on first use).
    static func create(at path: String, capacity: Int64, slotSize: Int64, writeMode: WriteMode?, measurement: WriteModeMeasurement?,
                       prefill: Prefill, preallocate: Bool, measuring: Bool, progress: ((Double) -> Void)?) throws -> StoragePool {
        guard slotSize >= 4 << 20, slotSize % Int64(blockSize) == 0 else {
            throw UsageError("slot size must be a whole number of MiB, at least 4 MiB (got \(formatBytes(slotSize)))")
        }
        guard capacity >= slotSize else {
            throw UsageError("capacity \(formatBytes(capacity)) is below one slot (\(formatBytes(slotSize)))")
        }
        guard Prefill.all.contains(prefill) else { throw UsageError("prefill must be zero or fallocate") }
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
                           measurement: measurement, prefill: prefill, preallocate: preallocate, measuring: measuring, progress: progress)
        } catch {
            // A pool that failed while being made (no room, an I/O error) is taken away again,
            // so the next attempt starts afresh instead of finding a pool with no slots.
            pool.removeFiles(keepDirectory: existed)
            throw error
        }
        return pool
    }

    private func setUp(count: Int, capacity: Int64, slotSize: Int64, writeMode: WriteMode?, measurement: WriteModeMeasurement?,
                       prefill: Prefill, preallocate: Bool, measuring: Bool, progress: ((Double) -> Void)?) throws {
        let pool = self
        let alignment = pool.directIOAlignment()
        var mode = writeMode ?? .buffered
        var source = "asked"
        var measured: WriteModeMeasurement? = nil
        if writeMode == nil && alignment == nil {
            mode = .buffered
            source = "only"
        } else if writeMode == nil {
            // This filesystem's measurement: the caller's (`reel pool create` measures beside a
            // competing process), else the cached one, else one made now (`WriteModeCalibration`,
            // beside a competing thread) and cached. Not measuring (the default pool), buffered
            // with early writeback, which won on this machine's ext4 under a competing writer
            // (README, "Write mode by measurement": p99.9 6.4 ms against 5.1 s direct).
            measured = try measurement ?? (measuring ? WriteModeCalibration.cachedOrMeasured(for: path) : WriteModeMeasurement.cached(for: path))
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
    /// - Throws: `PoolError.noRoom`; `PoolError.io` when the filesystem's free space cannot be
    ///   read.
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
    /// - Throws: `PoolError.exists` when something else is there.
    public static func checkCanCreate(at path: String) throws {
        let fm = FileManager.default
        if fm.fileExists(atPath: path) {
            let contents = (try? fm.contentsOfDirectory(atPath: path)) ?? ["?"]
            guard contents.isEmpty else { throw PoolError.exists(path) }
        }
    }

    /// Opens an existing pool, checking its manifest, and recovers what dead recorders left.
    /// - Throws: the manifest's `PoolError`s (`notAPool`, `damagedManifest`, `foreignManifest`,
    ///   `unsupportedVersion`, `busy` on a held lock) and what `recover` throws.
    public static func open(at path: String) throws -> StoragePool {
        let pool = StoragePool(path: path)
        _ = try pool.readManifest()
        _ = try pool.recover()
        return pool
    }

    /// Deletes the pool: its slots, manifest and directory. Refuses while a live recorder uses
    /// it or a live process is preparing slots. What dead recorders left is recovered first;
    /// the check and the removal are one locked step, so a recorder that claims a slot
    /// meanwhile either makes this refuse or finds no pool.
    /// - Throws: `PoolError.busy` while it is in use or holds an unrecovered clip; the manifest's
    ///   `PoolError`s; `SystemError` (`unlink`, `rmdir`).
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
        // A recorder that checked for the pool just before it went may still create `lock`
        // and, finding no manifest once it holds it, remove it again: wait for that (≤ 2 s).
        for attempt in 0..<200 {
            do { try Sys.removeDirectory(path); return } catch let e as SystemError where e.errno == ENOTEMPTY && attempt < 199 {
                usleep(10_000)
            }
        }
    }
}
