import CLinux
import Foundation
import ReelCore
import ReelMetrics


/// Clips written into a storage pool's slots, then moved to `destination`; a clip that finds
/// no free slot (the pool still being prepared, or every slot in use) is written as a plain
/// file in `destination` instead, at once: a pool never holds a recording up or ends it.
public struct PoolStorage: ClipStorage {
    /// The pool the slots come from.
    public let pool: StoragePool
    /// The directory clips are published in.
    public let destination: String
    /// The ring between the muxer and each clip's writer thread.
    public let ringBytes: Int
    /// Slots are claimed while the pool is adjusting its capacity too (the default pool being
    /// prepared on first use hands out each slot as it is ready).
    public let claimWhileAdjusting: Bool
    /// Loop recording: the pool is replenished once the finished clips loop recording deletes
    /// have been taken back as slots (`finishedClipSettled`), not as each clip is published.
    public let reclaimsDeletedClips: Bool
    private let plain: FileStorage

    /// - Parameters:
    ///   - ringBytes: the bounded ring between the muxer and the writer thread.
    ///   - claimWhileAdjusting: claim the slots already prepared while the pool adjusts its capacity.
    ///   - reclaimsDeletedClips: loop recording (see `reclaimsDeletedClips`).
    /// - Throws: `StorageError.outputDirectory` when `directory` cannot be made or written.
    public init(pool: StoragePool, directory: String, ringBytes: Int = 64 << 20, claimWhileAdjusting: Bool = false,
                reclaimsDeletedClips: Bool = false) throws {
        self.pool = pool
        self.destination = directory
        self.ringBytes = ringBytes
        self.claimWhileAdjusting = claimWhileAdjusting
        self.reclaimsDeletedClips = reclaimsDeletedClips
        plain = try FileStorage(directory: directory)
        // A clip being written, the one opened ahead, one being closed: their threads are made
        // now, not when the pool's first slot is ready minutes into a newcomer's recording.
        PoolSlotFile.prestartThreads(clips: 3)
    }

    /// Claims a free slot for `destination/name` and opens it; with no slot free, creates
    /// the plain file `destination/name` instead (`PlainFile`).
    /// - Throws: `StorageError.exists`, `PoolError.busy` (adjusting capacity, unless
    ///   `claimWhileAdjusting`; the lock held), `.notAPool`, ``SystemError`` for `open`.
    public func createClip(named name: String) throws -> any ClipFile {
        let dest = destination + "/" + name
        if Sys.fileExists(dest) { throw StorageError.exists(dest) }
        let container = name.split(separator: ".").last.map(String.init) ?? "mov"
        let slot: (id: Int, path: String, allocated: Int64, mode: WriteMode)
        do {
            slot = try pool.claimSlot(destination: dest, container: container, whileAdjusting: claimWhileAdjusting)
        } catch PoolError.full {
            return try plain.createClip(named: name)
        }
        do {
            return try PoolSlotFile(pool: pool, slotID: slot.id, slotPath: slot.path, allocated: slot.allocated,
                                    destination: dest, mode: slot.mode, ringBytes: ringBytes,
                                    replenishesOnPublish: !reclaimsDeletedClips)
        } catch {
            // The slot is untouched: give it back. Should that fail, it stays active under this
            // process and is recovered (as nothing) once the process is gone.
            do { try pool.returnSlot(slot.id) } catch {}
            throw error
        }
    }

    /// Takes the clip back into the pool as a free slot where the pool misses one, else
    /// unlinks it.
    public func deleteFinishedClip(_ path: String) -> ClipDeletion {
        if reclaimsDeletedClips, let done = pool.reclaim(path) { return done }
        return unlink(path) == 0 ? .unlinked : .failed(errno)
    }

    /// Replenishes the slots still missing (in the background), when loop recording held it back.
    public func finishedClipSettled() {
        if reclaimsDeletedClips { pool.replenishInBackground() }
    }
}
