import Foundation
import ReelStorage
import Testing

/// What the pool's slots hold after clips were salvaged, thrown away or grown, through the
/// library's own write path (`PoolStorage` and its `PoolSlotFile`s).
@Suite struct PoolSlotTests {
    func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "reel-slots-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    /// Every slot the manifest lists as free, with its stated size and its file's length.
    func freeSlots(_ pool: String) throws -> [(id: Int, allocated: Int64, length: Int64)] {
        let data = try Data(contentsOf: URL(fileURLWithPath: pool + "/manifest.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let slots = try #require(object["slots"] as? [[String: Any]])
        return try slots.filter { $0["state"] as? String == "free" }.map { s in
            let id = try #require(s["id"] as? Int)
            let attributes = try FileManager.default.attributesOfItem(atPath: pool + "/slots/" + String(format: "slot-%06d.bin", id))
            return (id, try #require((s["allocated"] as? NSNumber)?.int64Value), try #require((attributes[.size] as? NSNumber)?.int64Value))
        }
    }

    /// A clip salvaged (cut back after a failure) and then thrown away leaves no short slot
    /// behind: every free slot's file is as long as the manifest says, and the pool is whole.
    @Test(arguments: [Prefill.zero, .fallocate])
    func aSalvagedThenDiscardedClipLeavesNoShortFreeSlot(prefill: Prefill) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/pool"
        let pool = try StoragePool.create(at: path, capacity: 16 << 20, slotSize: 4 << 20, writeMode: .buffered, prefill: prefill)
        let storage = try PoolStorage(pool: pool, directory: dir + "/out")
        let clip = try storage.createClip(named: "s.mov")
        let bytes = [UInt8](repeating: 0x5a, count: 300_000)
        try bytes.withUnsafeBytes { try clip.write($0) }
        try clip.truncate(to: 100_000)
        clip.discard()
        pool.waitForReplenishing()
        let free = try freeSlots(path)
        #expect(free.count == 4, "\(free)")
        for s in free { #expect(s.length == s.allocated && s.allocated == 4 << 20, "slot \(s.id): \(s.length) bytes, stated \(s.allocated)") }
        #expect(try pool.status().remainingCapacity == 16 << 20)
        #expect(!FileManager.default.fileExists(atPath: dir + "/out/s.mov"))
    }

    /// A short clip thrown away without a salvage still gives its slot back for reuse (zeroed),
    /// as before.
    @Test func aDiscardedShortClipIsReusedInPlace() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/pool"
        let pool = try StoragePool.create(at: path, capacity: 8 << 20, slotSize: 4 << 20, writeMode: .buffered)
        let before = Set(try freeSlots(path).map(\.id))
        let clip = try PoolStorage(pool: pool, directory: dir + "/out").createClip(named: "d.mov")
        let bytes = [UInt8](repeating: 0x5a, count: 300_000)
        try bytes.withUnsafeBytes { try clip.write($0) }
        clip.discard()
        pool.waitForReplenishing()
        let after = try freeSlots(path)
        #expect(Set(after.map(\.id)) == before)
        for s in after { #expect(s.length == s.allocated, "slot \(s.id): \(s.length) bytes, stated \(s.allocated)") }
    }
}
