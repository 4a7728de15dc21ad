import Foundation
import ReelStorage
import Testing

/// The pool's manifest under concurrent use, through the library (the CLI tests cover the rest).
@Suite struct StoragePoolTests {
    func temporaryDirectory() -> String {
        let d = NSTemporaryDirectory() + "reel-pool-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    /// A slot state this version does not know (a newer Reel wrote it) survives a decode and
    /// an encode of the manifest unchanged; the known ones decode to their names.
    @Test func unknownSlotStateSurvivesAManifestRoundTrip() throws {
        let json = #"{"capacity":8388608,"format":"reel-pool","nextSlotID":3,"operations":[],"prefill":"zero","#
            + #""slotSize":4194304,"slots":[{"allocated":4194304,"id":1,"state":"free"},"#
            + #"{"allocated":4194304,"id":2,"state":"migrating"}],"version":1,"writeMode":"buffered"}"#
        let m = try JSONDecoder().decode(PoolManifest.self, from: Data(json.utf8))
        #expect(m.slots.map(\.state) == [.free, SlotState(rawValue: "migrating")])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(m), as: UTF8.self) == json)
    }

    /// Slots left the pool (as published clips do); edits the manifest the way `releaseSlot` does.
    func removeFreeSlots(_ pool: String, count: Int) throws {
        let url = URL(fileURLWithPath: pool + "/manifest.json")
        var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var slots = try #require(object["slots"] as? [[String: Any]])
        for _ in 0..<count {
            let s = slots.removeLast()
            unlink(pool + "/slots/" + String(format: "slot-%06d.bin", s["id"] as! Int))
        }
        object["slots"] = slots
        try JSONSerialization.data(withJSONObject: object).write(to: url)
    }

    func manifest(_ pool: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: pool + "/manifest.json"))) as? [String: Any])
    }

    @Test func replenishersRacingFillTheGapExactlyOnce() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/pool"
        _ = try StoragePool.create(at: path, capacity: 32 << 20, slotSize: 4 << 20, writeMode: .buffered, prefill: .fallocate)
        for round in 0..<5 {
            try removeFreeSlots(path, count: 4)
            // Each thread opens its own pool object (its own lock descriptor), as processes do.
            let pools = try (0..<6).map { _ in try StoragePool.open(at: path) }
            // All start at once (released together), so their locked sections interleave.
            let gate = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for p in pools {
                done.enter()
                Thread {
                    gate.wait()
                    #expect(throws: Never.self) { try p.replenish() }
                    done.leave()
                }.start()
            }
            usleep(50_000)
            for _ in pools { gate.signal() }
            done.wait()
            let slots = try #require(try manifest(path)["slots"] as? [[String: Any]])
            #expect(slots.count == 8, "round \(round): \(slots.count) slots")
            #expect(slots.allSatisfy { $0["state"] as? String == "free" })
            let files = try FileManager.default.contentsOfDirectory(atPath: path + "/slots")
            #expect(files.count == 8, "round \(round): \(files.count) slot files")
        }
        let s = try StoragePool.open(at: path).status()
        #expect(s.slotsFree == 8 && s.remainingCapacity == 32 << 20 && s.busyReasons.isEmpty)
    }

    @Test func aReservationIsHandedOverAndFilled() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/pool"
        let pool = try StoragePool.create(at: path, capacity: 16 << 20, slotSize: 4 << 20, writeMode: .buffered, preallocate: false)
        let reserved = try pool.status()
        #expect(reserved.slotsPreparing == 4 && reserved.slotsFree == 0)
        #expect(reserved.busyReasons == ["adjustingCapacity"] && reserved.progress["adjustingCapacity"] == 0)
        #expect(pool.holdsPreparation(getpid()))
        try pool.fillReservedSlots()
        let ready = try pool.status()
        #expect(ready.slotsFree == 4 && ready.slotsPreparing == 0 && ready.busyReasons.isEmpty && ready.lastError == nil)
        #expect(!pool.holdsPreparation(getpid()))
    }

    @Test func theChoiceFollowsTheFigures() {
        typealias M = WriteModeMeasurement.Mode
        func mode(_ n: String, _ p999: Double, drops: Int = 0) -> M { M(name: n, p50Ms: 1, p99Ms: p999 / 2, p999Ms: p999, maxMs: p999, ringDrops: drops) }
        #expect(WriteModeMeasurement.choose([mode("buffered", 12), mode("direct", 210)]).0 == "buffered")
        #expect(WriteModeMeasurement.choose([mode("buffered", 210), mode("direct", 12)]).0 == "direct")
        // Within 10 %: buffered is kept.
        #expect(WriteModeMeasurement.choose([mode("buffered", 10.5), mode("direct", 10)]).0 == "buffered")
        // Fewer ring drops beat a better p99.9.
        #expect(WriteModeMeasurement.choose([mode("buffered", 5, drops: 3), mode("direct", 300)]).0 == "direct")
        #expect(WriteModeMeasurement.choose([mode("buffered", 5)]).1.contains("only mode"))
    }
}
