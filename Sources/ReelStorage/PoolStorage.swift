import CLinux
import Foundation
import ReelCore
import ReelMetrics


/// Clips written into a storage pool's slots, then moved to `destination`.
public struct PoolStorage: ClipStorage {
    /// The pool the slots come from.
    public let pool: StoragePool
    /// The directory clips are published in.
    public let destination: String
    /// The ring between the muxer and each clip's writer thread.
    public let ringBytes: Int

    /// - Parameter ringBytes: the bounded ring between the muxer and the writer thread.
    public init(pool: StoragePool, directory: String, ringBytes: Int = 64 << 20) throws {
        self.pool = pool
        self.destination = directory
        self.ringBytes = ringBytes
        try FileStorage.makeWritableDirectory(directory)
    }

    /// Claims a slot; when none is free but one is on its way — clips of this process still
    /// closing (a burst of seams), or slots being prepared by a live process (replenishing) —
    /// waits for it (up to 30 s) rather than failing.
    private func claimWaitingForOwnClips(destination: String, container: String) throws -> (id: Int, path: String, allocated: Int64, mode: WriteMode) {
        let deadline = MonotonicClock.now() + 30_000_000_000
        while true {
            do {
                return try pool.claimSlot(destination: destination, container: container)
            } catch PoolError.full(let why) {
                let coming = (try? pool.readManifest().slots.contains {
                    ($0.state == .active && $0.isMine) || ($0.state == .preparing && $0.ownerIsAlive)
                }) ?? false
                guard coming, MonotonicClock.now() < deadline else { throw PoolError.full(why) }
                usleep(2_000)
            }
        }
    }

    /// Claims a slot for `destination/name` and opens it.
    /// - Throws: `StorageError.exists`, `PoolError.full` (no slot within 30 s), `.busy`, `.notAPool`, or ``SystemError`` for `open`.
    public func createClip(named name: String) throws -> any ClipFile {
        let dest = destination + "/" + name
        if Sys.fileExists(dest) { throw StorageError.exists(dest) }
        let container = name.split(separator: ".").last.map(String.init) ?? "mov"
        let slot = try claimWaitingForOwnClips(destination: dest, container: container)
        do {
            return try PoolSlotFile(pool: pool, slotID: slot.id, slotPath: slot.path, allocated: slot.allocated,
                                    destination: dest, mode: slot.mode, ringBytes: ringBytes)
        } catch {
            // The slot is untouched: give it back. Should that fail, it stays active under this
            // process and is recovered (as nothing) once the process is gone.
            do { try pool.returnSlot(slot.id) } catch {}
            throw error
        }
    }
}
