import Foundation
import Synchronization
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelWriter

/// An output that asks the session for a new frame rate while it delivers frame `at`.
private final class RateSwitcher: FrameOutput, Sendable {
    private let session = Mutex<CaptureSession?>(nil)
    let at: Int
    let rate: FrameRate
    let error = Mutex<String?>(nil)
    init(at: Int, rate: FrameRate) { self.at = at; self.rate = rate }
    func attach(_ s: CaptureSession) { session.withLock { $0 = s } }
    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        if frame.index == at, let s = session.withLock({ $0 }) {
            do { try s.setFrameRate(rate) } catch { self.error.withLock { $0 = "\(error)" } }
        }
        return .taken
    }
}

/// A refusal a configuration check throws.
private struct TooExpensive: Error {}

/// Live frame-rate changes on a running session, the variable-frame-rate clips they make, and
/// `verify` on them.
@Suite(.serialized) struct FrameRateChangeTests {
    /// setFrameRate on a running session: the change applies at the next frame the sensor
    /// makes (frame 21 when asked during frame 20), is noted there, and the clip's timestamps
    /// are each frame's capture time — one frame of 30 fps up to frame 21, of 24 fps after it;
    /// the barcodes stay consecutive and `verify` accepts the clip, naming the change.
    @Test func aLiveRateChangeAppliesAtTheNextFrameAndTheClipVerifies() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40,
                                         liveRates: [FrameRate(frames: 24)!, FrameRate(frames: 15)!])
        #expect(source.format.timescale == 120, "a clock on which 30, 24 and 15 fps all fall on ticks")
        let session = try CaptureSession(source: source)
        let writer = try makeWriter(dir, codec: .h264, container: .mp4)
        let switcher = RateSwitcher(at: 20, rate: FrameRate(frames: 24)!)
        switcher.attach(session)
        try session.addOutput(writer)
        try session.addOutput(switcher)
        writer.start()
        let stats = try session.run(frameLimit: 60)
        let result = writer.finishAndWait()
        #expect(switcher.error.withLock { $0 } == nil)
        #expect(stats.frameRateChanges == [FrameRateChange(frameIndex: 21, pts: 21.0 / 30, from: 30, to: 24)])
        #expect(session.activeFrameRate == FrameRate(frames: 24)!)
        #expect(source.format.rate == thirty, "the configured rate stays: the next run starts at it")
        #expect(result.clips.count == 1 && result.framesWritten == 60)
        #expect(abs(result.clips[0].durationSeconds - (21.0 / 30 + 39.0 / 24)) < 1e-6, "\(result.clips[0].durationSeconds)")
        let probe = try Inspector.probe(result.clips[0].path, frames: true)
        #expect(probe.frameIndices == Array(0..<60))
        let pts = try #require(probe.framePTS)
        #expect(abs(pts[21] - 21.0 / 30) < 1e-4 && abs(pts[20] - 20.0 / 30) < 1e-4)
        #expect(abs(pts[22] - pts[21] - 1.0 / 24) < 1e-4 && abs(pts[59] - (21.0 / 30 + 38.0 / 24)) < 1e-4, "\(pts)")
        let report = try Inspector.verify([dir])
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.cadenceChanges == [CadenceChange(frameIndex: 21, framesPerSecond: 24)])
    }

    /// A sensor without live rates cannot switch while it captures (its clock has no tick for
    /// the new rate): the session refuses, and nothing changes.
    @Test func aSourceWithoutLiveRatesRefusesALiveChange() throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        let session = try CaptureSession(source: source)
        let switcher = RateSwitcher(at: 5, rate: FrameRate(frames: 24)!)
        switcher.attach(session)
        try session.addOutput(switcher)
        let stats = try session.run(frameLimit: 20)
        #expect(switcher.error.withLock { $0 }?.contains("24") == true)
        #expect(stats.frameRateChanges.isEmpty)
    }

    /// `verify` still catches a timestamp that jumps by a frame once (consecutive barcodes,
    /// the cadence back after it): that is no cadence change.
    @Test func verifyCatchesASingleTimestampJump() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir, codec: .h264, container: .mp4)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        writer.start()
        for f in frames(30, from: source, ratio: .landscape16x9) {
            let shifted = f.index >= 15 ? Timestamp(value: f.pts.value + 1, timescale: f.pts.timescale) : f.pts
            let g = CapturedFrame(lease: f.lease, index: f.index, pts: shifted, duration: 1, ratio: f.ratio, crop: f.crop)
            #expect(writer.offer(g, waiting: true) == .taken)
        }
        _ = writer.finishAndWait()
        let report = try Inspector.verify([dir])
        #expect(!report.ok)
        #expect(report.violation?.contains("timestamps jump") == true, "\(report.violation ?? "")")
    }

    /// The configuration check runs at the commit: a refusing check refuses the whole batch
    /// (the graph stays as it was); one that passes sees the rate the batch asks for.
    @Test func theConfigurationCheckRunsAtTheCommit() throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        session.beginConfiguration()
        try session.setConfigurationCheck { config in
            if config.format.rate.perSecond > 25 { throw TooExpensive() }
        }
        try session.setRatio(.square)
        #expect(throws: TooExpensive.self) { try session.commitConfiguration() }
        #expect(session.ratio == .landscape16x9, "a refused batch changes nothing")
        let seen = Mutex<Double?>(nil)
        session.beginConfiguration()
        try session.setConfigurationCheck { config in
            seen.withLock { $0 = config.format.rate.perSecond }
            if config.format.rate.perSecond > 25 { throw TooExpensive() }
        }
        try session.setFrameRate(FrameRate(frames: 24)!)
        try session.commitConfiguration()
        #expect(seen.withLock { $0 } == 24 && source.format.rate == FrameRate(frames: 24)!)
    }
}
