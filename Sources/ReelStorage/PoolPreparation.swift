import CLinux
import Foundation
import ReelCore
import Synchronization

// MARK: Preparing slots: reserving, filling, replenishing, resizing

extension StoragePool {
    /// Adds `count` slots to the manifest as `preparing`, owned by this process, and records
    /// the operation; called inside the caller's locked section, so that deciding how many
    /// slots are missing and reserving them is one step (two processes replenishing at once
    /// never both fill the same gap).
    func reserve(_ count: Int, in m: inout PoolManifest, reason: String) -> [Int] {
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
    /// - Throws: `PoolError.full` when the filesystem has no room, `PoolError.io`/`SystemError` for
    ///   a failed file call, and the manifest's `PoolError`s (`notAPool`, `damagedManifest`, `busy`
    ///   on a held lock).
    /// With `pace`, the slots are written no faster than it says and synced as it says (a
    /// preparation beside a recording).
    public func fillReservedSlots(_ only: [Int]? = nil, pace: PreparationPace? = nil, progress: ((Double) -> Void)? = nil) throws {
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
                try prefillSlot(slotPath(id), size: slotSize, zero: prefill == .zero, pace: pace)
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
    /// - Throws: the manifest's `PoolError`s (`notAPool`, `damagedManifest`, `busy` on a held lock)
    ///   or `SystemError` when it cannot be written.
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
    /// - Throws: `PoolError.io` when the process cannot be started, `PoolError.busy` when it does
    ///   not take the slots over, and the manifest's `PoolError`s.
    public func prepareInBackground(command: [String]) throws -> Int32? {
        let me = getpid()
        guard holdsPreparation(me), let exe = command.first else { return nil }
        // Detached (a session of its own, re-parented at once): this process keeps no child,
        // descriptor or thread for it, so an hours-long recording's counts stay as they were.
        let worker = try Sys.spawnDetached(exe, arguments: Array(command.dropFirst()))
        let deadline = MonotonicClock.now() + 10_000_000_000
        while holdsPreparation(me) {
            // kill(pid, 0): ESRCH once the worker is gone (its exit is reaped by its new parent).
            if kill(worker, 0) != 0 || MonotonicClock.now() > deadline {
                _ = kill(worker, SIGTERM)
                throw PoolError.busy("the background preparation (\(exe)) did not start; the slots stay reserved until this process ends")
            }
            usleep(5_000)
        }
        return worker
    }

    /// Whether process `pid` still holds reserved work (it has not been adopted yet).
    public func holdsPreparation(_ pid: Int32) -> Bool {
        guard let m = try? readManifest() else { return false }
        return m.operations.contains { $0.pid == pid } || m.slots.contains { $0.state == .preparing && $0.owner == pid }
    }

    private func prefillSlot(_ file: String, size: Int64, zero: Bool, pace: PreparationPace?) throws {
        do {
            if let pace {
                try prepareSlotFilePaced(file, size: size, zero: zero, pace: pace)
            } else {
                try prepareSlotFile(file, size: size, zero: zero, chunk: StoragePool.blockSize)
            }
        } catch let e as SystemError {
            if e.isOutOfSpace && (e.call == "fallocate" || e.call == "pwrite") {
                throw PoolError.full("no room for the pool on this filesystem: \(e.text) while preallocating \(file)")
            }
            throw PoolError.io(e)
        }
    }

    /// `prepareSlotFile` at `pace`: 1 MiB writes of zeros, each no sooner than the pace allows,
    /// with an fdatasync every `pace.syncEvery` bytes.
    private func prepareSlotFilePaced(_ file: String, size: Int64, zero: Bool, pace: PreparationPace) throws {
        let fd = try FileDescriptor.open(file, O_WRONLY | O_CREAT | O_TRUNC)
        defer { fd.closeQuietly() }
        do { try fd.allocate(upTo: size) } catch let e as SystemError where e.errno == EOPNOTSUPP {
            // tmpfs and others without fallocate: the zeros below (if any) allocate the file.
        }
        if zero {
            let chunk = StoragePool.blockSize
            let zeros = Sys.alignedAlloc(chunk)
            defer { free(zeros) }
            memset(zeros, 0, chunk)
            let start = MonotonicClock.now()
            var offset: Int64 = 0, unsynced: Int64 = 0
            while offset < size {
                let n = Int(min(Int64(chunk), size - offset))
                try fd.writeAll(UnsafeRawBufferPointer(start: zeros, count: n), toAbsoluteOffset: offset)
                offset += Int64(n); unsynced += Int64(n)
                if unsynced >= pace.syncEvery { try fd.dataSync(); unsynced = 0 }
                // Not ahead of the pace: offset bytes take offset / rate seconds.
                let due = start + UInt64(Double(offset) / Double(max(1, pace.bytesPerSecond)) * 1e9)
                let now = MonotonicClock.now()
                if due > now { usleep(UInt32(min(1_000_000, (due - now) / 1000))) }
            }
        }
        try fd.dataSync()
    }

    /// Grows (new slots, preallocated) or shrinks (free slots deleted) the pool. With
    /// `preallocate: false` new slots are only reserved, as in `create`.
    /// - Throws: `UsageError` for a capacity below one slot, `PoolError.noRoom` when growing needs
    ///   more than the filesystem has free, and what `replenish` throws.
    public func resize(capacity: Int64, preallocate: Bool = true, progress: ((Double) -> Void)? = nil) throws {
        let m = try readManifest()
        guard capacity >= m.slotSize else {
            throw UsageError("capacity \(formatBytes(capacity)) is below one slot (\(formatBytes(m.slotSize)))")
        }
        // In bytes: a slot loop recording took back from a deleted clip may span several
        // slot sizes (`reclaim`).
        let wanted = capacity / m.slotSize * m.slotSize
        if wanted > m.allocatedBytes {
            let needed = (wanted - m.allocatedBytes) / m.slotSize * m.slotSize
            if needed > 0 {
                try StoragePool.checkFreeSpace(at: path, needed: needed, what: "\(needed / m.slotSize) more slot(s) of \(formatBytes(m.slotSize))")
            }
        }
        let removed: [Int] = try withManifest { m in
            m.capacity = capacity
            var gone: [Int] = []
            while m.allocatedBytes > wanted, let i = m.slots.lastIndex(where: { $0.state == .free }) {
                gone.append(m.slots[i].id)
                m.slots.remove(at: i)
            }
            return gone
        }
        for id in removed { try Sys.unlinkIfPresent(slotPath(id)) }
        try replenish(reason: "adjustingCapacity", preallocate: preallocate, progress: progress)
    }

    /// Prepares slots until the pool holds its capacity again.
    /// - Throws: what `fillReservedSlots` throws; `SystemError` when a stale slot cannot be
    ///   removed.
    /// Returns the slots it reserved.
    @discardableResult
    public func replenish(reason: String = "replenishing", preallocate: Bool = true, progress: ((Double) -> Void)? = nil) throws -> [Int] {
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
        return ids
    }

    /// Whether slots are missing (released, or left half-prepared by a dead process) and
    /// nobody alive is preparing them.
    public var needsReplenishing: Bool {
        guard let m = try? readManifest() else { return false }
        let live = m.slots.filter { $0.state != .preparing || $0.ownerIsAlive }
        return m.capacity - live.reduce(0) { $0 + $1.allocated } >= m.slotSize
    }

    /// Starts replenishing on a background thread unless one is already at it. With a
    /// preparation command (`handReplenishingOver(to:)`), the missing slots are reserved here
    /// and handed to a detached process instead (`prepareInBackground`): this process opens
    /// no slot file and starts no thread for them, so a recording's descriptors and threads
    /// are the same after it published a clip as before; should the hand-over fail, a thread
    /// prepares them as without one.
    public func replenishInBackground() {
        let start = replenishDone.withLock { done -> Bool in
            guard done else { return false }
            done = false
            return true
        }
        guard start else { return }
        var reserved: [Int] = []
        if let command = replenishCommand.withLock({ $0 }) {
            var handedOver = false
            do {
                reserved = try replenish(reason: "replenishing", preallocate: false)
                handedOver = try prepareInBackground(command: command + [path, "--from", String(getpid())]) != nil || !holdsPreparation(getpid())
            } catch {}
            if handedOver {
                replenishDone.withLock { $0 = true }
                return
            }
        }
        let t = Thread { [self, reserved] in
            // Slots reserved for a hand-over that failed are this process's to prepare.
            if !reserved.isEmpty { _ = try? fillReservedSlots(reserved) }
            // Slots released while this ran are picked up by another round; a failure
            // (filesystem full) ends it, and the next open of the pool tries again.
            var succeeded = true
            while true {
                succeeded = (try? replenish()) != nil
                if !succeeded || !needsReplenishing { break }
            }
            replenishDone.withLock { $0 = true }
            // A request that came while this thread was deciding to end was not taken: look
            // again (not after a failure, which the next open of the pool retries).
            if succeeded && needsReplenishing { replenishInBackground() }
        }
        t.name = "reel.replenish"
        t.start()
    }

    /// Replenishing (`replenishInBackground`) hands its work to a detached process running
    /// `command` (`reel pool _prepare --idle`, to which PATH, `--from PID` are added); nil:
    /// a thread of this process does it.
    public func handReplenishingOver(to command: [String]?) {
        replenishCommand.withLock { $0 = command }
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
                _ = try withoutActuallyEscaping(progress) { show in
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

}
private func formatSeconds(_ s: Double) -> String { s == s.rounded() && abs(s) < 1e15 ? "\(Int(s)) s" : String(format: "%.1f s", s) }
