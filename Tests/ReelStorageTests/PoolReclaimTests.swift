import Foundation
import ReelStorage
import Testing

/// Loop recording's deleted clips taken back as pool slots (issue 25: "deleted segments are
/// recycled into the pool's slots, not refilled with zeros").
@Suite struct PoolReclaimTests {
    let helper = StoragePoolTests()

    /// A file of `bytes` bytes of 0xAB at `path`.
    func clip(_ path: String, bytes: Int) throws {
        try Data(repeating: 0xAB, count: bytes).write(to: URL(fileURLWithPath: path))
    }

    func slots(_ pool: String) throws -> [[String: Any]] {
        try #require(try helper.manifest(pool)["slots"] as? [[String: Any]])
    }

    /// The bytes the manifest's slots hold, in all.
    func allocated(_ pool: String) throws -> Int {
        try slots(pool).reduce(0) { $0 + ($1["allocated"] as! Int) }
    }

    /// A 9 MiB clip covers three 4 MiB slots: it becomes one free slot of 12 MiB whose blocks
    /// stay allocated and read as zeros, and its name is gone from its directory. A smaller
    /// clip becomes one slot; with nothing missing a clip is left for the caller to unlink;
    /// with fewer slots missing than it covers, it is cut to them.
    @Test func aDeletedClipBecomesAFreeSlotOfTheSlotsItCovers() throws {
        let dir = helper.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/pool"
        let pool = try StoragePool.create(at: path, capacity: 32 << 20, slotSize: 4 << 20, writeMode: .buffered, prefill: .zero)
        try helper.removeFreeSlots(path, count: 4)
        try clip(dir + "/seg-0001.mov", bytes: 9 << 20)

        #expect(pool.reclaim(dir + "/seg-0001.mov") == .reclaimed(12 << 20))
        #expect(!FileManager.default.fileExists(atPath: dir + "/seg-0001.mov"))
        let all = try slots(path)
        #expect(try all.count == 5 && allocated(path) == 28 << 20)
        let taken = try #require(all.first { $0["allocated"] as? Int == 12 << 20 })
        #expect(taken["state"] as? String == "free")
        let file = path + "/slots/" + String(format: "slot-%06d.bin", taken["id"] as! Int)
        var st = stat()
        #expect(stat(file, &st) == 0 && st.st_size == 12 << 20 && Int(st.st_blocks) * 512 >= 12 << 20)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(bytes.count == 12 << 20 && !bytes.contains { $0 != 0 })

        try clip(dir + "/seg-0002.mov", bytes: 100_000)
        #expect(pool.reclaim(dir + "/seg-0002.mov") == .reclaimed(4 << 20))
        #expect(try allocated(path) == 32 << 20)

        try clip(dir + "/seg-0003.mov", bytes: 5 << 20)
        #expect(pool.reclaim(dir + "/seg-0003.mov") == nil)
        #expect(FileManager.default.fileExists(atPath: dir + "/seg-0003.mov"))

        try helper.removeFreeSlots(path, count: 1)
        let missing = 32 - (try allocated(path) >> 20)
        #expect(pool.reclaim(dir + "/seg-0003.mov") == .reclaimed(Int64(missing) << 20))
        #expect(try allocated(path) == 32 << 20)
    }

    /// A file with another name (a hard link), one open elsewhere, a symbolic link, or one on
    /// another filesystem is never taken: the caller unlinks the name, and the other name (the
    /// other reader) keeps its bytes.
    @Test func aFileThatIsNotOnlyTheClipsIsLeftAlone() throws {
        let dir = helper.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/pool"
        let pool = try StoragePool.create(at: path, capacity: 16 << 20, slotSize: 4 << 20, writeMode: .buffered, prefill: .fallocate)
        try helper.removeFreeSlots(path, count: 2)

        try clip(dir + "/linked.mov", bytes: 5 << 20)
        #expect(link(dir + "/linked.mov", dir + "/other-name.mov") == 0)
        #expect(pool.reclaim(dir + "/linked.mov") == nil)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/other-name.mov")).first == 0xAB)

        // Open elsewhere (a download, a player): its reader keeps the bytes it opened.
        try clip(dir + "/open.mov", bytes: 5 << 20)
        let reader = try #require(FileHandle(forReadingAtPath: dir + "/open.mov"))
        #expect(pool.reclaim(dir + "/open.mov") == nil)
        #expect(try reader.read(upToCount: 1)?.first == 0xAB)
        try reader.close()

        #expect(symlink(dir + "/other-name.mov", dir + "/symlink.mov") == 0)
        #expect(pool.reclaim(dir + "/symlink.mov") == nil)

        let shm = "/dev/shm/reel-reclaim-\(getpid()).mov"
        try clip(shm, bytes: 5 << 20)
        defer { unlink(shm) }
        #expect(pool.reclaim(shm) == nil)
        #expect(FileManager.default.fileExists(atPath: shm))
        #expect(try slots(path).count == 2)
    }
}
