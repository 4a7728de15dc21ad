import Foundation
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelWriter

/// The index of what was recorded (docs/cli.md "The index", docs/json.md `PREFIX.index.json`):
/// its contents against the files decoded, a restarted loop recording, and `verify` with it.
@Suite struct SegmentIndexTests {

    /// A segmented recording of `frames` frames at 30 fps into `dir`, prefix `name`.
    func options(_ dir: String, name: String, frames: Int, segment: Double = 1, keep: LoopBudget? = nil) -> RecordOptions {
        var o = RecordOptions()
        o.scene = .pattern   // cheap frames: the scene is not this test's subject
        o.source = .synthetic(size: 1280)
        o.length = .frames(frames)
        o.codec = .h264
        o.realtime = false
        o.storage = .plain
        o.namePrefix = name
        o.outputDirectory = dir
        o.segmentDuration = segment
        o.loopBudget = keep
        return o
    }

    func size(_ path: String) throws -> Int64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? -1
    }

    /// ISO 8601 with milliseconds, in UTC, to seconds since the epoch.
    func epochSeconds(_ utc: String) -> Double? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        f.timeZone = TimeZone(identifier: "UTC")
        return f.date(from: utc)?.timeIntervalSince1970
    }

    /// Every clip is listed with what a decode of its file gives: frames, first frame, first
    /// pts, ratio, size; the wall-clock starts are the anchor plus the session clock.
    @Test func theIndexMatchesTheFilesDecoded() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let before = Date().timeIntervalSince1970
        let summary = try Recording(options: options(dir, name: "cam", frames: 95)).run()
        let after = Date().timeIntervalSince1970
        #expect(summary.error == nil)
        let path = dir + "/cam.index.json"
        #expect(summary.index?.path == path && summary.index?.run == 1 && summary.index?.error == nil)
        #expect(summary.index?.keptSegments == 4 && summary.index?.earlierSegments == 0)
        let index = try #require(try SegmentIndex.load(path: path))
        #expect(index.prefix == "cam" && index.schemaVersion == 1)
        #expect(index.segments.map(\.file) == ["cam-0001-16x9.mov", "cam-0002-16x9.mov", "cam-0003-16x9.mov", "cam-0004-16x9.mov"])
        #expect(index.segments.map(\.segment) == [1, 2, 3, 4])
        #expect(index.segments.map(\.frames) == [30, 30, 30, 5])
        for (e, clip) in zip(index.segments, summary.clips) {
            let probe = try Inspector.probe(dir + "/" + e.file, frames: true)
            #expect(probe.frameIndices?.count == e.frames)
            #expect(probe.frameIndices?.first == e.firstFrameIndex)
            #expect(probe.frameIndices == Array(e.firstFrameIndex..<(e.firstFrameIndex + e.frames)))
            #expect(probe.ratio == e.ratio && e.ratio == "16x9")
            #expect(try size(dir + "/" + e.file) == e.bytes)
            #expect(abs(probe.durationSeconds - e.durationSeconds) < 1e-6)
            // The first pts on the session clock, as the file stores it.
            let stored = try #require(probe.sessionStart.flatMap(Timestamp.init(parsing:)))
            #expect(abs(stored.seconds - e.firstPTS) < 1e-9 && e.firstPTS == clip.firstPTS)
            #expect(e.run == 1 && e.take == 1 && !e.deleted && e.deletedAfter == nil && !e.salvaged)
        }
        // Wall clock: the run's anchor, then each clip's session-clock offset from the first.
        let run = try #require(index.runs.first)
        #expect(index.runs.count == 1 && run.run == 1 && run.firstSegment == 1 && run.sessionZeroMonotonicNs != nil)
        let starts = index.segments.compactMap { epochSeconds($0.startUTC) }
        #expect(starts.count == 4)
        #expect(starts[0] >= before - 0.01 && starts[0] <= after + 0.01)
        for (k, e) in index.segments.enumerated() {
            #expect(abs((starts[k] - starts[0]) - e.firstPTS) <= 0.0015, "\(e.file) \(e.startUTC)")
        }
        #expect(try #require(epochSeconds(run.startUTC)) == Double(run.anchorRealtimeNs / 1_000_000) / 1000)
        // The keys docs/json.md lists.
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        #expect(Set(json.keys) == ["schemaVersion", "prefix", "runs", "segments"])
        #expect(Set(((json["runs"] as? [[String: Any]])?.first ?? [:]).keys) == ["run", "firstSegment", "anchorRealtimeNs", "anchorMonotonicNs", "sessionZeroMonotonicNs", "startUTC", "deletedSegments", "open"])
        #expect(Set(((json["segments"] as? [[String: Any]])?.first ?? [:]).keys) == [
            "file", "segment", "run", "take", "firstFrameIndex", "frames", "firstPTS", "durationSeconds", "ratio", "bytes",
            "startUTC", "salvaged", "deleted", "deletedAfter"])
        #expect(run.deletedSegments == 0 && run.open.isEmpty)
        // docs/json.md: the summary's `index`.
        let summaryJSON = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(summary)) as? [String: Any])
        #expect(Set((summaryJSON["index"] as? [String: Any] ?? [:]).keys) == ["path", "run", "earlierSegments", "keptSegments", "adopted", "discarded", "error"])
        // No temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == index.segments.map(\.file) + ["cam.index.json"])
        let report = try Inspector.verify([dir])
        #expect(report.ok && report.framesChecked == 95 && report.indexes == [path] && report.deletedClips == 0)
    }

    /// docs/cli.md: without `--segment-duration` or `--keep` there is no index (`index` is null)
    /// and a second recording with the same name still refuses to replace the first clip.
    @Test func aRecordingWithoutSegmentsOrBudgetHasNoIndex() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var o = options(dir, name: "one", frames: 5)
        o.segmentDuration = nil
        let summary = try Recording(options: o).run()
        #expect(summary.error == nil && summary.index == nil)
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(summary)) as? [String: Any])
        #expect(json["index"] is NSNull)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["one-0001-16x9.mov"])
        let again = try Recording(options: o).run()
        #expect(again.error?.contains("already exists") == true)
    }

    /// docs/cli.md: an index that cannot be written does not stop the recording; the first
    /// failure is in the summary's `index.error` (here its temporary file's name is taken by a
    /// directory, so `open` fails with EISDIR at every update).
    @Test func anIndexThatCannotBeWrittenIsReportedNotFatal() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/.w.index.json.tmp", withIntermediateDirectories: false)
        let summary = try Recording(options: options(dir, name: "w", frames: 65)).run()
        #expect(summary.error == nil && summary.clips.count == 3 && summary.framesWritten == 65)
        #expect(summary.index?.error == "open \(dir)/.w.index.json.tmp: Is a directory", "\(summary.index?.error ?? "nil")")
        #expect(!FileManager.default.fileExists(atPath: dir + "/w.index.json"))
    }

    /// A second run with `--keep` counts the first run's clips against the budget, deletes
    /// the oldest of them first, numbers its clips after every earlier file, and leaves files
    /// the index does not list alone, whatever their names.
    @Test func aRestartedLoopRecordingKeepsTheTotalInsideTheBudget() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let decoys = ["loop-0000-16x9.mov", "loop-0050-16x9.mov"]
        for d in decoys { #expect(FileManager.default.createFile(atPath: dir + "/" + d, contents: Data("not a clip".utf8))) }
        // Run 1: 95 frames in 1 s segments inside 3 s: clip 1 goes when clip 4 finishes.
        let first = try Recording(options: options(dir, name: "loop", frames: 95, keep: .seconds(3))).run()
        #expect(first.error == nil)
        #expect(first.clips.map { ($0.path as NSString).lastPathComponent } == ["loop-0051-16x9.mov", "loop-0052-16x9.mov", "loop-0053-16x9.mov", "loop-0054-16x9.mov"])
        #expect(first.loopDeletions.map { ($0.path as NSString).lastPathComponent } == ["loop-0051-16x9.mov"])
        // Run 2 (a restart): 65 frames; each of its first two clips pushes out the oldest earlier one.
        let second = try Recording(options: options(dir, name: "loop", frames: 65, keep: .seconds(3))).run()
        #expect(second.error == nil)
        #expect(second.index?.run == 2 && second.index?.earlierSegments == 3)
        #expect(second.clips.map { ($0.path as NSString).lastPathComponent } == ["loop-0055-16x9.mov", "loop-0056-16x9.mov", "loop-0057-16x9.mov"])
        #expect(second.segments.map(\.clip) == [56, 57])
        #expect(second.loopDeletions.map { ($0.path as NSString).lastPathComponent } == ["loop-0052-16x9.mov", "loop-0053-16x9.mov"])
        #expect(second.loopDeletions.map { ($0.after as NSString).lastPathComponent } == ["loop-0055-16x9.mov", "loop-0056-16x9.mov"])
        #expect(second.loopDeletions.map(\.firstFrameIndex) == [30, 60])
        #expect(second.loopDeletions.allSatisfy { $0.error == nil && $0.keptTotal <= 3 })
        let left = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        #expect(left == decoys + ["loop-0054-16x9.mov", "loop-0055-16x9.mov", "loop-0056-16x9.mov", "loop-0057-16x9.mov", "loop.index.json"])
        // The index: the kept clips of both runs; the deleted ones (run 1's oldest) are gone
        // from it and counted in their run. What is kept is inside the budget.
        let index = try #require(try SegmentIndex.load(path: dir + "/loop.index.json"))
        #expect(index.runs.map(\.run) == [1, 2] && index.runs.map(\.firstSegment) == [51, 55])
        #expect(index.runs.map(\.deletedSegments) == [3, 0])
        #expect(index.segments.map(\.segment) == [54, 55, 56, 57])
        #expect(index.segments.map(\.run) == [1, 2, 2, 2])
        #expect(index.segments.allSatisfy { !$0.deleted && $0.deletedAfter == nil })
        let kept = index.segments
        #expect(kept.reduce(0) { $0 + $1.durationSeconds } <= 3)
        for e in kept {
            let probe = try Inspector.probe(dir + "/" + e.file, frames: true)
            #expect(probe.frameIndices == Array(e.firstFrameIndex..<(e.firstFrameIndex + e.frames)), "\(e.file)")
        }
        // verify reads the index: run 1 resumes at frame 90 after its deleted clips, run 2 from 0;
        // the decoys are not read (as clips they would fail).
        let report = try Inspector.verify([dir])
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.framesChecked == 5 + 65 && report.deletedClips == 3)
        #expect(report.clips.map { ($0.path as NSString).lastPathComponent } == kept.map(\.file))
        for d in decoys { #expect(try size(dir + "/" + d) == 10) }
    }

    /// A clip that cannot be deleted (here a directory has taken its name: `unlink` fails with
    /// EISDIR) stays listed as kept, with the error in `loopDeletions`; the clips deleted after
    /// it stay listed too, marked `deleted`, since they are no longer their run's oldest.
    @Test func aClipThatCannotBeDeletedStaysListed() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try Recording(options: options(dir, name: "s", frames: 95, keep: .seconds(10))).run().loopDeletions.isEmpty)
        try FileManager.default.removeItem(atPath: dir + "/s-0001-16x9.mov")
        try FileManager.default.createDirectory(atPath: dir + "/s-0001-16x9.mov", withIntermediateDirectories: false)
        let second = try Recording(options: options(dir, name: "s", frames: 35, keep: .seconds(3))).run()
        #expect(second.loopDeletions.map { ($0.path as NSString).lastPathComponent } == ["s-0001-16x9.mov", "s-0002-16x9.mov"])
        #expect(second.loopDeletions.map { $0.error ?? "" } == ["Is a directory", ""])
        let index = try #require(try SegmentIndex.load(path: dir + "/s.index.json"))
        #expect(index.segments.map(\.segment) == [1, 2, 3, 4, 5, 6])
        #expect(index.segments.map(\.deleted) == [false, true, false, false, false, false])
        #expect(index.segments[1].deletedAfter == "s-0005-16x9.mov" && index.runs.map(\.deletedSegments) == [0, 0])
        let report = try Inspector.verify([dir])
        #expect(!report.ok && report.violation?.hasPrefix("s-0001-16x9.mov: ") == true, "\(report.violation ?? "")")
    }

    /// verify accepts a gap the index records as deleted clips, in the middle of a run too
    /// (a clip marked `deleted`), and checks continuity on both sides of it; the same gap
    /// without the mark is a missing listed file.
    @Test func verifyAcceptsTheGapOfClipsTheIndexMarksDeleted() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(try Recording(options: options(dir, name: "g", frames: 95)).run().error == nil)
        try FileManager.default.removeItem(atPath: dir + "/g-0002-16x9.mov")
        var report = try Inspector.verify([dir])
        #expect(!report.ok && report.violation == "g-0002-16x9.mov: listed in g.index.json but no such file or directory")
        var index = try #require(try SegmentIndex.load(path: dir + "/g.index.json"))
        index.segments[1].deleted = true
        index.segments[1].deletedAfter = "g-0003-16x9.mov"
        try JSONEncoder().encode(index).write(to: URL(fileURLWithPath: dir + "/g.index.json"))
        report = try Inspector.verify([dir])
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.framesChecked == 65 && report.deletedClips == 1 && report.clips.map(\.firstFrameIndex) == [0, 60, 90])
        // After the gap, the next clip must start where the index says: one listed as
        // starting elsewhere is a violation.
        index.segments[2].firstFrameIndex = 61
        try JSONEncoder().encode(index).write(to: URL(fileURLWithPath: dir + "/g.index.json"))
        report = try Inspector.verify([dir])
        #expect(!report.ok && report.violation == "g-0003-16x9.mov: decodes 30 frames from frame 60, g.index.json says 30 from frame 61")
    }

    /// verify against the index: a listed file removed, truncated, or whose frames differ
    /// from the index's, is a violation naming it; a damaged index is an error with status 65.
    @Test func verifyReportsFilesThatDoNotMatchTheIndex() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let summary = try Recording(options: options(dir, name: "v", frames: 65)).run()
        #expect(summary.error == nil && summary.clips.count == 3)
        #expect(try Inspector.verify([dir]).ok)
        let second = dir + "/v-0002-16x9.mov"
        let saved = try Data(contentsOf: URL(fileURLWithPath: second))
        // Truncated to half.
        try saved.prefix(saved.count / 2).write(to: URL(fileURLWithPath: second))
        var report = try Inspector.verify([dir])
        #expect(!report.ok && report.violation?.hasPrefix("v-0002-16x9.mov: \(saved.count / 2) bytes, v.index.json says \(saved.count)") == true, "\(report.violation ?? "")")
        // Removed.
        try FileManager.default.removeItem(atPath: second)
        report = try Inspector.verify([dir])
        #expect(!report.ok && report.violation == "v-0002-16x9.mov: listed in v.index.json but no such file or directory", "\(report.violation ?? "")")
        // Another clip of the same size in its place: its frames are not the index's.
        try FileManager.default.copyItem(atPath: dir + "/v-0001-16x9.mov", toPath: second)
        var index = try #require(try SegmentIndex.load(path: dir + "/v.index.json"))
        index.segments[1].bytes = try size(second)
        try JSONEncoder().encode(index).write(to: URL(fileURLWithPath: dir + "/v.index.json"))
        report = try Inspector.verify([dir])
        #expect(!report.ok && report.violation == "v-0002-16x9.mov: decodes 30 frames from frame 0, v.index.json says 30 from frame 30", "\(report.violation ?? "")")
        // A damaged index.
        try Data("{\"segments\": [".utf8).write(to: URL(fileURLWithPath: dir + "/v.index.json"))
        do {
            _ = try Inspector.verify([dir])
            Issue.record("a damaged index was accepted")
        } catch {
            #expect(error.exitStatus == 65 && error.description.contains("v.index.json is damaged"))
        }
        // And a recording into the directory refuses it (exit 65, one line), changing nothing.
        let before = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        do {
            _ = try Recording(options: options(dir, name: "v", frames: 10))
            Issue.record("a recording accepted a damaged index")
        } catch let e as SegmentIndexError {
            #expect(e.exitStatus == 65 && !e.description.contains("\n") && e.description.contains("v.index.json is damaged"))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == before)
    }
}
