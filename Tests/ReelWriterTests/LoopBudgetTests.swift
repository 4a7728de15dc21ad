import Foundation
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelWriter

/// Loop recording (docs/cli.md `--keep`, docs/json.md `loopDeletions`).
@Suite struct LoopBudgetTests {

    @Test func theOldestFinishedClipsGoOnceTheTotalIsOver() {
        var k = LoopKeeper(budget: .bytes(250))
        #expect(k.finished("/r/c-1", bytes: 100, seconds: 1).isEmpty)
        #expect(k.finished("/r/c-2", bytes: 100, seconds: 1).isEmpty)
        let a = k.finished("/r/c-3", bytes: 100, seconds: 1)
        #expect(a.map(\.path) == ["/r/c-1"] && a.map(\.keptTotal) == [200])
        // A big clip pushes out several.
        let b = k.finished("/r/c-4", bytes: 200, seconds: 1)
        #expect(b.map(\.path) == ["/r/c-2", "/r/c-3"] && k.keptTotal == 200)
    }

    @Test func theNewestFinishedClipIsAlwaysKept() {
        var k = LoopKeeper(budget: .seconds(0.5))
        #expect(k.finished("/r/c-1", bytes: 1, seconds: 1).isEmpty)
        #expect(k.finished("/r/c-2", bytes: 1, seconds: 1).map(\.path) == ["/r/c-1"])
        #expect(k.keptTotal == 1)
    }

    /// 95 frames in 1 s segments inside 1.5 s: clips 1 and 2 go (after clips 2 and 3 finish);
    /// clips 3 and 4 stay and decode; a file the recording did not make stays.
    @Test func aRecordingStaysInsideItsBudget() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let decoy = dir + "/seg-0000-16x9.mov"
        #expect(FileManager.default.createFile(atPath: decoy, contents: Data("not a clip".utf8)))
        var options = RecordOptions()
        options.scene = .pattern   // cheap frames: the scene is not this test's subject
        options.source = .synthetic(size: 1280)
        options.length = .frames(95)
        options.codec = .h264
        options.realtime = false
        options.storage = .plain
        options.namePrefix = "seg"
        options.outputDirectory = dir
        options.segmentDuration = 1
        options.loopBudget = .seconds(1.5)
        let summary = try Recording(options: options).run()
        #expect(summary.error == nil)
        #expect(summary.clips.count == 4)
        #expect(summary.loopDeletions.map(\.firstFrameIndex) == [0, 30])
        #expect(summary.loopDeletions.map { ($0.after as NSString).lastPathComponent } == ["seg-0002-16x9.mov", "seg-0003-16x9.mov"])
        #expect(summary.loopDeletions.allSatisfy { $0.error == nil && $0.keptTotal <= 1.5 })
        for d in summary.loopDeletions { #expect(!FileManager.default.fileExists(atPath: d.path)) }
        #expect(FileManager.default.fileExists(atPath: decoy))
        let left = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(left == ["seg-0000-16x9.mov", "seg-0003-16x9.mov", "seg-0004-16x9.mov", "seg.index.json"])
        let third = try Inspector.probe(dir + "/seg-0003-16x9.mov", frames: true)
        let fourth = try Inspector.probe(dir + "/seg-0004-16x9.mov", frames: true)
        #expect(third.frameIndices == Array(60..<90))
        #expect(fourth.frameIndices == Array(90..<95))
        #expect(try keyframes(dir + "/seg-0003-16x9.mov").first == 0)
        // docs/json.md: the keys of `loopDeletions`.
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(summary)) as? [String: Any]
        let first = (json?["loopDeletions"] as? [[String: Any]])?.first
        #expect(Set(first?.keys.map { $0 } ?? []) == ["path", "firstFrameIndex", "frames", "bytes", "durationSeconds", "after", "keptTotal", "error", "reclaimedBytes"])
        // A plain recording unlinks.
        #expect(summary.loopDeletions.allSatisfy { $0.reclaimedBytes == nil })
    }

    /// Through a pool, the deleted clips go back into it as free slots (`reclaimedBytes`), their
    /// blocks zeroed in place: the pool ends whole, its slot files read as zeros, and its
    /// allocated bytes never went over its capacity; the kept clips decode whole.
    @Test func throughAPoolTheDeletedClipsBecomeItsSlotsAgain() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let poolPath = dir + "/pool"
        let slot: Int64 = 4 << 20   // the smallest a pool takes
        let pool = try StoragePool.create(at: poolPath, capacity: 16 * slot, slotSize: slot, writeMode: .buffered, prefill: .zero)
        var options = RecordOptions()
        options.scene = .pattern   // cheap frames: the scene is not this test's subject
        options.source = .synthetic(size: 1920)
        options.length = .frames(95)
        options.codec = .prores(.hq)   // about 7 MB a second of 1080p here: each 1 s clip outgrows its slot
        options.realtime = false
        options.storage = .pool(poolPath)
        options.namePrefix = "seg"
        options.outputDirectory = dir + "/out"
        options.segmentDuration = 1
        options.loopBudget = .seconds(1.5)
        let summary = try Recording(options: options).run()
        #expect(summary.error == nil)
        #expect(summary.clips.map(\.frames) == [30, 30, 30, 5])
        #expect(summary.clips.prefix(2).allSatisfy { $0.bytes > slot }, "\(summary.clips.map(\.bytes))")
        #expect(summary.loopDeletions.map(\.firstFrameIndex) == [0, 30])
        for d in summary.loopDeletions {
            let reclaimed = try #require(d.reclaimedBytes, "\(d.path) was unlinked")
            #expect(reclaimed > 0 && reclaimed % slot == 0 && reclaimed <= (d.bytes + slot - 1) / slot * slot, "\(reclaimed) of \(d.bytes)")
            #expect(d.error == nil && !FileManager.default.fileExists(atPath: d.path))
        }
        #expect(try Inspector.probe(dir + "/out/seg-0003-16x9.mov", frames: true).frameIndices == Array(60..<90))
        #expect(try Inspector.probe(dir + "/out/seg-0004-16x9.mov", frames: true).frameIndices == Array(90..<95))
        // Whatever the recording's replenishing left missing is prepared here; the pool is whole.
        _ = try pool.waitUntilReady(timeout: 60) { _ in }
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: poolPath + "/manifest.json"))) as? [String: Any])
        let allocated = (manifest["slots"] as? [[String: Any]] ?? []).reduce(0) { $0 + ($1["allocated"] as? Int ?? 0) }
        #expect(Int64(allocated) > 15 * slot && Int64(allocated) <= 16 * slot, "\(allocated)")
        for file in try FileManager.default.contentsOfDirectory(atPath: poolPath + "/slots") {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: poolPath + "/slots/" + file))
            #expect(!bytes.contains { $0 != 0 }, "\(file) holds an old clip's bytes")
        }
    }

    @Test func aBudgetThatIsNotPositiveIsAUsageError() {
        var options = RecordOptions()
        options.scene = .pattern   // cheap frames: the scene is not this test's subject
        options.storage = .plain
        options.outputDirectory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: options.outputDirectory) }
        for b in [LoopBudget.bytes(0), .seconds(0), .seconds(-1), .seconds(.nan), .seconds(.infinity)] {
            options.loopBudget = b
            #expect(throws: UsageError.self, "\(b)") { try Recording(options: options) }
        }
    }
}
