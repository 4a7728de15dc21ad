import CLinux
import Foundation
import ReelCore
import Synchronization

/// A clip recovered from a slot a dead recorder left active.
public struct RecoveredClip: Sendable, Codable {
    /// Where it was published.
    public var path: String
    /// Its length, cut at the last complete fragment.
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
    /// Why nothing was published.
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

// MARK: Recovering what dead recorders left

extension StoragePool {
    /// Publishes what active slots of dead recorders hold, cut at the last complete fragment
    /// (MOV/MP4) or cluster (MKV), and frees them. A slot with no complete fragment holds no
    /// decodable frame: it is dropped (`lastDropped` says so), never published.
    ///
    /// The orphans are claimed under the lock (state `recovering`, owned by this process)
    /// before any is touched, so processes opening the pool at once recover each exactly once;
    /// a recovery whose process dies is taken up again by the next.
    /// - Throws: the manifest's `PoolError`s (`notAPool`, `damagedManifest`, `busy` on a held
    ///   lock), `SystemError` for a failed file call, and what `replenish` throws.
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
