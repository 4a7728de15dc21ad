import Foundation
import Testing
import ReelCapture
import ReelCore
import ReelWriter

/// `verify` on a clip from a camera that kept one frame in 2 for a while (the pressure
/// handler's decimation on a V4L2 camera): the camera's sequence numbers (the barcodes) go up
/// by 2 there, each frame 2 of the camera's periods after the last.
@Suite(.serialized) struct VerifyDecimationTests {
    /// Frames 0–63 of a 30 fps sensor, those `keep` says, each at its capture time.
    func record(_ dir: String, keep: (Int) -> Bool, restamp: Bool = false) throws {
        let writer = try makeWriter(dir, codec: .h264, container: .mp4)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 70)
        writer.start()
        var kept = 0
        for f in frames(64, from: source, ratio: .landscape16x9) where keep(f.index) {
            // `restamp`: a camera that numbers frames with gaps but stamps them one period apart.
            let pts = restamp ? Timestamp(value: Int64(kept), timescale: f.pts.timescale) : f.pts
            let g = CapturedFrame(lease: f.lease, index: f.index, pts: pts, duration: 1, ratio: f.ratio, crop: f.crop)
            #expect(writer.offer(g, waiting: true) == .taken)
            kept += 1
        }
        _ = writer.finishAndWait()
    }

    /// One frame in 2 kept from frame 16 to frame 48: accepted, listed as two cadence changes,
    /// the first keeping one frame in 2.
    @Test func aDecimatedStretchVerifies() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try record(dir) { $0 < 16 || $0 >= 48 || $0 % 2 == 0 }
        let report = try Inspector.verify([dir])
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.cadenceChanges == [CadenceChange(frameIndex: 16, framesPerSecond: 15, keepsOneFrameIn: 2),
                                          CadenceChange(frameIndex: 48, framesPerSecond: 30)], "\(report.cadenceChanges)")
    }

    /// A frame missing inside the decimated stretch (gap 4 where 2 holds) is still a violation.
    @Test func aFrameMissingInsideTheStretchIsCaught() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try record(dir) { ($0 < 16 || $0 >= 48 || $0 % 2 == 0) && $0 != 30 }
        let report = try Inspector.verify([dir])
        #expect(!report.ok)
        #expect(report.violation?.contains("frame index 30 missing") == true, "\(report.violation ?? "")")
    }

    /// Gaps in the barcodes whose timestamps do not match (one period apart, not two) are
    /// missing frames, not decimation.
    @Test func gapsTheTimestampsDoNotShowAreMissingFrames() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try record(dir, keep: { $0 < 16 || $0 >= 48 || $0 % 2 == 0 }, restamp: true)
        let report = try Inspector.verify([dir])
        #expect(!report.ok)
        #expect(report.violation?.contains("frame index 17 missing") == true, "\(report.violation ?? "")")
    }
}
