import CLinux
import Foundation
import ReelCore

// MARK: Taking a deleted clip back as a slot (loop recording)

/// What became of a finished clip that loop recording let go.
public enum ClipDeletion: Sendable, Equatable {
    /// Unlinked.
    case unlinked
    /// Taken back into the pool as a free slot of this many bytes: its blocks stay allocated,
    /// zeroed without writing them (`StoragePool.reclaim`).
    case reclaimed(Int64)
    /// Not deleted: `unlink`'s errno (ENOENT: it was already gone).
    case failed(Int32)
}

extension StoragePool {
    /// Takes a finished clip that loop recording deletes back into the pool as a free slot,
    /// instead of unlinking it and filling a new slot with zeros later: a loop recording's disk
    /// footprint stays flat, and no zeros are written beside it (issue 25).
    ///
    /// Under the pool's lock, when the pool misses at least one slot: the file is moved into
    /// the pool (`renameat2` without replacing), sized to the slots it covers, rounded up (at
    /// most the ones missing: then it is cut), zeroed with
    /// `fallocate(FALLOC_FL_ZERO_RANGE)` — the blocks stay allocated and read as zeros, as a
    /// fresh slot's do, so recovery never finds the old clip's fragments in it — synced, and
    /// listed `free`. Like a slot a clip outgrew, its blocks are unwritten extents, not
    /// written zeros (`--prefill fallocate`'s slots).
    ///
    /// Returns nil, touching nothing, when the pool misses no slot, or the file is not a
    /// regular file of this user with one link on the pool's filesystem, or it cannot be
    /// moved: the caller unlinks it. Once moved, a failure to zero or sync it, or to write the
    /// manifest, removes it (the clip is deleted either way) and returns `.unlinked`.
    public func reclaim(_ file: String) -> ClipDeletion? {
        let fd = Glibc.open(file, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { if Glibc.close(fd) != 0 { /* nothing written through it unsynced: the sync below is checked */ } }
        var st = stat(), pool = stat()
        guard fstat(fd, &st) == 0, stat(slotsDirectory, &pool) == 0,
              st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid(), st.st_nlink == 1, st.st_dev == pool.st_dev
        else { return nil }
        var moved: String? = nil
        do {
            return try withManifest { m -> ClipDeletion? in
                let missing = Int((m.capacity - m.allocatedBytes) / m.slotSize)
                guard missing > 0 else { return nil }
                let covered = Int((Int64(st.st_size) + m.slotSize - 1) / m.slotSize)
                let slots = Int64(max(1, min(missing, covered)))
                let bytes = slots * m.slotSize
                let id = m.nextSlotID
                let slotFile = slotPath(id)
                guard CLinux_renameat2(AT_FDCWD, file, AT_FDCWD, slotFile, CLinux_RENAME_NOREPLACE) == 0 else { return nil }
                // In the pool now: from here on the clip is deleted, whatever follows.
                moved = slotFile
                guard ftruncate(fd, off_t(bytes)) == 0, CLinux_zero_range(fd, 0, bytes) == 0, fdatasync(fd) == 0 else {
                    throw SystemError.last("fallocate", path: slotFile)
                }
                m.slots.append(PoolManifest.Slot(id: id, state: .free, allocated: bytes))
                m.nextSlotID += 1
                return .reclaimed(bytes)
            }
        } catch {
            // Not listed in the manifest: the moved file goes (the clip is deleted either way).
            guard let moved else { return nil }
            return unlink(moved) == 0 ? .unlinked : .failed(errno)
        }
    }
}
