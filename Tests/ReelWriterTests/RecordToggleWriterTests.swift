import Foundation
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelWriter

/// Start and stop on a running writer (`AssetWriter.standby`, `startRecording`,
/// `stopRecording`): takes, the frames each holds, and `verify` by take.
@Suite(.serialized) struct RecordToggleWriterTests {
    /// Standby: frames are not recorded (nor dropped) until a start; each start opens a take
    /// whose clip begins at the first frame offered after it and ends at the last before the
    /// stop; refused requests throw; each clip verifies on its own and the two together.
    @Test func standbyStartStopStartMakesOneClipPerTake() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir, codec: .h264, container: .mp4)
        writer.standby = true
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        writer.start()
        #expect(!writer.isRecording)
        #expect(throws: RecordToggleError.notRecording) { try writer.stopRecording(source: "test") }
        let batch = frames(40, from: source, ratio: .square)
        for f in batch[0..<5] { #expect(writer.offer(f, waiting: true) == .taken) }
        let start1 = try writer.startRecording(source: "test")
        #expect(start1.action == .start && start1.take == 1 && start1.frameIndex == nil && writer.isRecording)
        #expect(throws: RecordToggleError.alreadyRecording) { try writer.startRecording(source: "test") }
        for f in batch[5..<15] { #expect(writer.offer(f, waiting: true) == .taken) }
        let stop1 = try writer.stopRecording(source: "test")
        #expect(stop1.action == .stop && stop1.take == 1 && stop1.frameIndex == 14 && !writer.isRecording)
        for f in batch[15..<25] { #expect(writer.offer(f, waiting: true) == .taken) }
        #expect(try writer.toggleRecording(source: "other").action == .start)
        for f in batch[25..<40] { #expect(writer.offer(f, waiting: true) == .taken) }
        let result = writer.finishAndWait()
        #expect(result.error == nil)
        #expect(result.clips.map(\.firstFrameIndex) == [5, 25])
        #expect(result.clips.map(\.lastFrameIndex) == [14, 39])
        #expect(result.clips.map(\.take) == [1, 2])
        #expect(result.framesWritten == 25 && result.framesNotRecorded == 15 && result.drops.total == 0)
        #expect(result.toggles.map(\.frameIndex) == [5, 14, 25])
        #expect(result.toggles.map(\.source) == ["test", "test", "other"])
        #expect(result.clipsOpenedAhead == 1, "the stop did not open the next take's clip ahead")
        #expect(throws: RecordToggleError.notWriting) { try writer.startRecording(source: "late") }
        // Only the two clips are left (the clip opened ahead after the stop is thrown away).
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["w-0001-1x1.mp4", "w-0002-1x1.mp4"])
        for c in result.clips {
            #expect(try Inspector.probe(c.path, frames: true).frameIndices == Array(c.firstFrameIndex...c.lastFrameIndex))
            let one = try Inspector.verify([c.path])
            #expect(one.ok, "\(c.path): \(one.violation ?? "")")
        }
        let both = try Inspector.verify([dir])
        #expect(both.ok, "\(both.violation ?? "")")
    }

    /// A take's first frame is the first offered after its start: one that never reaches the
    /// clip (here it is not offered: as if dropped) makes `verify` fail, naming it.
    @Test func aTakeWithoutItsFirstFrameFailsVerify() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir, codec: .h264, container: .mp4)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        writer.start()
        #expect(writer.isRecording, "without standby the writer records from the first frame")
        let batch = frames(30, from: source, ratio: .square)
        for f in batch[0..<10] { #expect(writer.offer(f, waiting: true) == .taken) }
        try writer.stopRecording(source: "test")
        for f in batch[10..<20] { #expect(writer.offer(f, waiting: true) == .taken) }
        try writer.startRecording(source: "test")
        for f in batch[21..<30] { #expect(writer.offer(f, waiting: true) == .taken) }
        let result = writer.finishAndWait()
        #expect(result.clips.map(\.firstFrameIndex) == [0, 21] && result.clips.map(\.take) == [1, 2])
        #expect(try Inspector.verify([result.clips[0].path]).ok)
        let report = try Inspector.verify([dir])
        #expect(!report.ok && (report.violation ?? "").contains("frame index 20 missing"), "\(report.violation ?? "")")
    }
}
