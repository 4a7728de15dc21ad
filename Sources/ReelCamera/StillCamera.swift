import Foundation
import ReelCapture
import ReelCore
import ReelPhoto

/// A still camera: the synthetic sensor at its photo format with a photo output, pressed a
/// number of times at an interval from the first frame (`reel photo`). The deferred photos an
/// earlier run left in the directory are finished beside the run.
public enum StillCamera {
    /// What one run took.
    public struct Result: Sendable {
        /// The photos saved, in press order.
        public var photos: [Photo]
        /// Presses refused by the output's budget (`overBudget`).
        public var refused: Int
        /// Presses refused while the shutter was busy (`busy`).
        public var blocked: Int
        /// Photos pressed for that could not be saved.
        public var failed: Int
        /// How long the output took to initialise, in milliseconds.
        public var initialisationMilliseconds: Double
        /// The session's counters (frames captured, drops by reason).
        public var stats: CaptureStats
        /// Deferred photos of an earlier run finished beside this one.
        public var pendingFinished: [FinishedPhoto]
        /// What ended the run early or failed it: the session's error, a refused press, the
        /// first photo not saved, or `PhotoError.noFrame` when no frame came within 10 s.
        public var failure: (any Error & Sendable)?
    }

    /// Runs the sensor at `fps`, showing `scene`, with a photo output of `settings`, presses `count` times
    /// `interval` seconds apart from the first frame, waits for the photos, stops.
    /// - Throws: `PhotoError` and `MediaError` when the output cannot be made; the sensor's
    ///   errors (`CaptureError`) when it cannot be opened. A failure while running is in the
    ///   result's `failure`.
    public static func shoot(settings: PhotoSettings, count: Int, interval: Double, fps: Int,
                             scene: SyntheticScene = .realistic) throws -> Result {
        let output = try PhotoOutput(settings: settings)
        // Deferred photos an earlier run left here are finished beside this run.
        final class Pending: @unchecked Sendable { var finished: [FinishedPhoto] = [] } // written before `pendingDone`
        let pending = Pending()
        let pendingDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            pending.finished = PhotoOutput.finishPending(directory: settings.directory).finished
            pendingDone.signal()
        }
        // A fresh session on the sensor's photo format; the ring and the copies hold a few
        // buffers, so the sensor gets that many more than a recording's.
        let rate = FrameRate(frames: Int32(max(1, min(fps, 240))))!
        let source = try SyntheticSource(size: settings.photoFormat.size.width, rate: rate, realtime: true,
                                         buffers: settings.ringSize + 8, scene: scene)
        let session = try CaptureSession(source: source, ratio: settings.ratio)
        try session.addOutput(output)
        final class Box: @unchecked Sendable { var error: (any Error & Sendable)? } // written by the capture thread before `done`
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let capture = Thread {
            do { _ = try session.run(frameLimit: nil) } catch { box.error = error }
            done.signal()
        }
        capture.name = "reel-photo-capture"
        capture.start()

        // Preview-first launch: the first press goes out with the first frame; the output
        // (deferred unless prepared in advance) may still be initialising, so the press is buffered.
        var firstFrame: UInt64? = nil
        let waitStart = MonotonicClock.now()
        while output.sessionTime() == nil && MonotonicClock.seconds(since: waitStart) < 10 && box.error == nil {
            MonotonicClock.sleep(until: MonotonicClock.now() + 1_000_000)
        }
        if output.sessionTime() != nil { firstFrame = MonotonicClock.now() }
        var pressError: PhotoError? = nil
        var refused = 0, blocked = 0
        if let firstFrame {
            for i in 0..<count {
                MonotonicClock.sleep(until: firstFrame + UInt64(Double(i) * interval * 1e9))
                do { _ = try output.capture() } catch .overBudget { refused += 1 } catch .busy { blocked += 1 } catch { pressError = error; break }
            }
        }
        output.finish()
        session.stopRunning()
        done.wait()
        pendingDone.wait()
        let failure: (any Error & Sendable)? = box.error ?? pressError ?? output.errors.first ?? (firstFrame == nil ? PhotoError.noFrame : nil)
        return Result(photos: output.photos.sorted { $0.pressTime < $1.pressTime }, refused: refused, blocked: blocked,
                      failed: output.errors.count, initialisationMilliseconds: output.initialisationMilliseconds,
                      stats: session.stats, pendingFinished: pending.finished, failure: failure)
    }
}
