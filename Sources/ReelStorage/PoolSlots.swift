import CLinux
import Foundation
import ReelCore

// MARK: Slots for recordings: claiming, growing, returning, releasing

extension StoragePool {
    /// Claims a free slot for a clip that will be published at `destination`.
    /// `whileAdjusting`: a free slot is claimed while the pool adjusts its capacity too.
    /// - Throws: `PoolError.busy` while the pool is adjusting its capacity, `.full` without a free slot.
    func claimSlot(destination: String, container: String, whileAdjusting: Bool = false) throws -> (id: Int, path: String, allocated: Int64, mode: WriteMode) {
        try withManifest { m in
            if !whileAdjusting, let op = m.operations.first(where: { $0.reason == "adjustingCapacity" && $0.isAlive }) {
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

    /// Bytes in free slots (0 when the manifest cannot be read).
    public var remainingCapacity: Int64 { (try? readManifest().freeBytes) ?? 0 }

}
