import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import ReelPhoto
import Testing

@Suite struct PhotoOutputTests {
    @Test func aPressTakesTheRingFrameNearestItsTime() throws {
        let dir = try photoDirectory("reel-photo-unit-1")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let frames = try HandFrames()
        let output = try PhotoOutput(settings: handPhotoSettings(dir, format: frames.format))
        for i in 0..<10 { try frames.offer(i, to: output) }
        let a = try output.capture(pressTime: 9.4 / 30)
        #expect(a.frameIndex == 9 && a.pressedFrameIndex == 9 && a.lagFrames == 0)
        let b = try output.capture(pressTime: 8.4 / 30)
        #expect(b.frameIndex == 8 && b.lagFrames == 0)
        // Older than the ring (frames 7, 8, 9): the oldest kept frame, two frames late.
        let c = try output.capture(pressTime: 5.0 / 30)
        #expect(c.frameIndex == 7 && c.pressedFrameIndex == 5 && c.lagFrames == 2)
        #expect(a.buffered && b.buffered && c.buffered, "pressed before the output was initialised")
        try output.initialise()
        #expect(output.finish(timeout: 60))
        let photos = output.photos
        #expect(photos.map(\.frameIndex).sorted() == [7, 8, 9])
        #expect(output.errors.isEmpty)
        for p in photos {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: p.path))
            #expect(Array(bytes.prefix(4)) == [0xFF, 0xD8, 0xFF, 0xE1], "SOI, then the EXIF APP1 segment")
            #expect(p.width == 1280 && p.height == 960 && p.buffered)
        }
    }

    /// A press is refused only when the copies waiting for the encoder exceed the budget.
    @Test func pressesBeyondTheMemoryBudgetAreRefusedAndTheRestDelivered() throws {
        let dir = try photoDirectory("reel-photo-unit-2")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let frames = try HandFrames()
        var s = handPhotoSettings(dir, format: frames.format)
        s.memoryBudget = 2 * (1280 * 960 * 3 / 2)
        let output = try PhotoOutput(settings: s)
        for i in 0..<3 { try frames.offer(i, to: output) }
        _ = try output.capture(pressTime: 0)
        _ = try output.capture(pressTime: 1.0 / 30)
        #expect(throws: PhotoError.self) { try output.capture(pressTime: 2.0 / 30) }
        #expect(output.refusedPresses == 1)
        try output.initialise()
        #expect(output.finish(timeout: 60))
        #expect(output.photos.map(\.frameIndex).sorted() == [0, 1])
    }

    @Test func aRatioThePhotoFormatLacksIsAUsageError() throws {
        var s = PhotoSettings()
        s.ratio = .landscape16x9
        do {
            _ = try PhotoOutput(settings: s)
            Issue.record("16x9 accepted on the 4032 photo format")
        } catch let e as CaptureError {
            #expect(e.exitStatus == 64)
            #expect(e.description.contains("not supported by the 4032x4032 photo format"))
        }
    }
}

/// The photo output as an output of the session graph: deferred by default (the session's
/// Deferred Start initialises it after the first frame, and a press made before then is
/// buffered and delivered), eager with `.inPrepare` (ready before the first frame).
@Suite struct PhotoOutputDeferredStartTests {
    /// Whether the output was ready when the session's Deferred Start began (nil: it never ran).
    final class Watch: CaptureSessionDelegate, @unchecked Sendable {   // written on the deferred thread before run returns
        let output: PhotoOutput
        var readyAtDeferredStart: Bool?
        init(_ output: PhotoOutput) { self.output = output }
        func sessionWillRunDeferredStart(_ session: CaptureSession) { readyAtDeferredStart = output.isReady }
    }

    func run(_ initialisation: PhotoInitialisation, tag: String) throws -> (output: PhotoOutput, session: CaptureSession, watch: Watch, readyAtFirstFrame: Bool) {
        let dir = try photoDirectory("reel-photo-deferred-\(tag)")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var s = handPhotoSettings(dir, format: SensorPhotoFormat(size: Size(width: 1280, height: 1280), supportedRatios: [.landscape4x3, .portrait3x4]))
        s.initialisation = initialisation
        let output = try PhotoOutput(settings: s)
        let source = try SyntheticSource(size: 1280, rate: FrameRate(frames: 30)!, realtime: true, buffers: 12)
        let session = try CaptureSession(source: source, ratio: .landscape4x3)
        let watch = Watch(output)
        session.delegate = watch
        final class Seen: @unchecked Sendable { var ready: Bool? }   // written by the data thread before run returns
        let seen = Seen()
        // Not deferred: gets the first frame before the photo output's Deferred Start begins.
        let first = DataOutput { _ in if seen.ready == nil { seen.ready = output.isReady } }
        try session.addOutput(first)
        try session.addOutput(output)
        let pressed = Thread {
            while output.sessionTime() == nil { usleep(1000) }
            do { _ = try output.capture() } catch { Issue.record("press refused: \(error)") }
        }
        pressed.start()
        _ = try session.run(frameLimit: 30)
        first.stop()
        #expect(output.finish(timeout: 60))
        return (output, session, watch, seen.ready ?? false)
    }

    @Test func aDeferredPhotoOutputIsInitialisedByTheSessionsDeferredStart() throws {
        let (output, session, watch, _) = try run(.afterFirstFrame, tag: "d")
        #expect(output.deferredStartEnabled)
        #expect(session.deferredStartsRun == 1)
        #expect(watch.readyAtDeferredStart == false, "not initialised before the session's Deferred Start")
        #expect(output.isReady)
        #expect(output.photos.count == 1 && output.errors.isEmpty, "the press made meanwhile is delivered")
    }

    @Test func anEagerPhotoOutputIsReadyBeforeTheFirstFrame() throws {
        let (output, session, watch, readyAtFirst) = try run(.inPrepare, tag: "e")
        #expect(!output.deferredStartEnabled)
        #expect(session.deferredStartsRun == 0 && watch.readyAtDeferredStart == nil)
        #expect(readyAtFirst, "prepared before the source started")
        #expect(output.photos.count == 1 && output.photos.allSatisfy { !$0.buffered })
    }
}
