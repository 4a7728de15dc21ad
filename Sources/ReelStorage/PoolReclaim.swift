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
    /// The file must be a regular file of this user with one link on the pool's filesystem,
    /// and nobody else may have it open (a write lease is granted only then, and holds off
    /// anyone opening it meanwhile: a preview download, a player). It is zeroed in place with
    /// `fallocate(FALLOC_FL_ZERO_RANGE)` — its blocks stay allocated and read as zeros, as a
    /// fresh slot's do, so recovery never finds the old clip's fragments in it; on ext4 they
    /// become unwritten extents, like the part of a slot a growing clip absorbs — and synced,
    /// before the pool's lock is taken (a clip outgrowing its slot waits for that lock on the
    /// muxer's thread). Then, under the lock and only when the pool misses a slot, it is moved
    /// into the pool (`renameat2` without replacing; the name moved is checked to be the file
    /// checked), sized to the slots it covers, rounded up (a published clip took that many
    /// out), or cut to the slots missing, and listed `free`.
    ///
    /// Returns nil when it is not taken (the pool misses no slot, or a condition above does
    /// not hold, or a call fails before the move): the caller unlinks it. Once moved, a failure
    /// removes it (the clip is deleted either way) and returns `.unlinked`.
    public func reclaim(_ file: String) -> ClipDeletion? {
        let fd = Glibc.open(file, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        // Closing also gives the lease up; only synced bytes were written through it.
        defer { if Glibc.close(fd) != 0 { /* the sync below is what is checked */ } }
        var st = stat(), pool = stat()
        guard fstat(fd, &st) == 0, stat(slotsDirectory, &pool) == 0,
              st.st_mode & S_IFMT == S_IFREG, st.st_uid == geteuid(), st.st_nlink == 1, st.st_dev == pool.st_dev,
              CLinux_take_write_lease(fd) == 0,
              CLinux_zero_range(fd, 0, Int64(st.st_size)) == 0, fdatasync(fd) == 0
        else { return nil }
        var moved: String? = nil
        var listed = false
        do {
            let done = try withManifest { m -> ClipDeletion? in
                let missing = Int((m.capacity - m.allocatedBytes) / m.slotSize)
                guard missing > 0 else { return nil }
                let covered = Int((Int64(st.st_size) + m.slotSize - 1) / m.slotSize)
                let bytes = Int64(max(1, min(missing, covered))) * m.slotSize
                let id = m.nextSlotID
                let slotFile = slotPath(id)
                guard CLinux_renameat2(AT_FDCWD, file, AT_FDCWD, slotFile, CLinux_RENAME_NOREPLACE) == 0 else { return nil }
                moved = slotFile
                // The name moved is the file checked, not one put in its place meanwhile.
                var now = stat()
                guard fstatat(AT_FDCWD, slotFile, &now, AT_SYMLINK_NOFOLLOW) == 0,
                      now.st_dev == st.st_dev, now.st_ino == st.st_ino, now.st_nlink == 1 else {
                    if CLinux_renameat2(AT_FDCWD, slotFile, AT_FDCWD, file, CLinux_RENAME_NOREPLACE) == 0 { moved = nil }
                    throw PoolError.busy("\(file) changed while it was taken back")
                }
                guard ftruncate(fd, off_t(bytes)) == 0 else { throw SystemError.last("ftruncate", path: slotFile) }
                if bytes > Int64(st.st_size) {
                    guard CLinux_fallocate(fd, 0, bytes) == 0 else { throw SystemError.last("fallocate", path: slotFile) }
                }
                m.slots.append(PoolManifest.Slot(id: id, state: .free, allocated: bytes))
                m.nextSlotID += 1
                listed = true
                return .reclaimed(bytes)
            }
            // The size change made durable; should it fail, the slot is listed all the same and
            // the clip written into it is synced as every clip is.
            if done != nil && fdatasync(fd) != 0 { /* see above */ }
            return done
        } catch {
            guard let moved else { return nil }
            // Listed, but the manifest's write failed: the file stays (a slot file the manifest
            // does not list is truncated by the next reservation of its id).
            if listed { return .unlinked }
            return unlink(moved) == 0 ? .unlinked : .failed(errno)
        }
    }
}
