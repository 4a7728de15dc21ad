import Foundation
import ReelCore
import ReelMedia

/// A frame as the session hands it to its outputs: the sensor picture, the crop of the
/// ratio in force when it was captured, and its place on the session clock.
public struct CapturedFrame: Sendable {
    /// The sensor buffer, on loan from the source's pool until every output lets go of it.
    public let lease: PixelBufferLease
    /// The source's frame index (gaps are drops), the number the synthetic sensor burns in.
    public let index: Int
    /// Presentation time on the session clock.
    public let pts: Timestamp
    /// Nominal frame duration on `pts.timescale`.
    public let duration: Int64
    /// The ratio in force when the frame was captured (the clip it belongs to).
    public let ratio: AspectRatio
    /// The ratio's rectangle inside the sensor buffer (zero-copy: the encoder reads it in place).
    public let crop: CropRect

    /// The whole sensor picture (read the ratio's part through `crop`).
    public var buffer: PixelBuffer { lease.buffer }

    /// A frame as a source or a test hands it to the session's outputs.
    public init(lease: PixelBufferLease, index: Int, pts: Timestamp, duration: Int64, ratio: AspectRatio, crop: CropRect) {
        self.lease = lease; self.index = index; self.pts = pts
        self.duration = duration; self.ratio = ratio; self.crop = crop
    }
}

/// What an output did with an offered frame.
public enum OfferResult: Sendable, Equatable {
    /// The output keeps the frame (it holds the lease until it is done with it).
    case taken
    /// No room (real time): the frame is dropped as `late`.
    case full
    /// The output could not take the frame for this reason (`outOfBuffers`: an output that is
    /// still initialising under Deferred Start and whose hold ring is full).
    case dropped(DropReason)
    /// The output has finished or failed and takes no more frames: the session stops.
    case closed
}

/// Where a session sends frames: an asset writer, a preview, a data callback, a still-capture ring.
///
/// **Deferred Start.** An output whose `deferredStartEnabled` is true is not made ready before
/// the source starts: the session calls `runDeferredStart` once the first frame has gone to
/// the outputs that are not deferred (the preview), on a thread of its own, and keeps offering
/// frames meanwhile (a deferred output holds them until it is ready). Outputs that are not
/// deferred get `prepare` before the source starts, as an eager session does for all.
public protocol FrameOutput: AnyObject, Sendable {
    /// Takes the frame or refuses it. `waiting`: block until there is room (not real time).
    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult
    /// Called before the source starts, with the ratio, crop size and clock of the first
    /// frames: the output gets ready now (opens its first clip), so that no frame waits for it.
    func prepare(ratio: AspectRatio, size: Size, timescale: Int32)
    /// A ratio the session will switch to, after those announced before (scheduled changes
    /// when a run starts, live requests when they are made): the output may get ready ahead.
    func expect(ratio: AspectRatio, size: Size, timescale: Int32)
    /// Whether the session initialises this output after the first preview frame rather than
    /// before the source starts (`AVCaptureOutput.deferredStartEnabled`). Default: false.
    var deferredStartEnabled: Bool { get }
    /// Deferred Start: the output initialises now (the session calls it once per run, off the
    /// capture thread, after the first frame went to the outputs that are not deferred) for
    /// frames of `ratio` cropped to `size` on `timescale`. Returns when it is ready.
    /// The default calls `prepare`.
    func runDeferredStart(ratio: AspectRatio, size: Size, timescale: Int32)
}

extension FrameOutput {
    /// Nothing to get ready by default.
    public func prepare(ratio: AspectRatio, size: Size, timescale: Int32) {}
    /// Ignores announced ratios by default.
    public func expect(ratio: AspectRatio, size: Size, timescale: Int32) {}
    /// Not deferred by default: made ready before the source starts.
    public var deferredStartEnabled: Bool { false }
    /// Calls `prepare` by default.
    public func runDeferredStart(ratio: AspectRatio, size: Size, timescale: Int32) {
        prepare(ratio: ratio, size: size, timescale: timescale)
    }
}

/// Hands frames to a library callback (`AVCaptureVideoDataOutput`), on a delivery thread of
/// its own so that a slow callback never holds capture back: while the callback runs, the
/// newest frame waits and an older waiting one is discarded (`alwaysDiscardsLateVideoFrames`),
/// counted in `framesDiscarded`. The frame's sensor buffer is the callback's until it returns.
public final class DataOutput: FrameOutput, @unchecked Sendable {
    // Everything below is guarded by `condition`.
    private let condition = NSCondition()
    private var pending: CapturedFrame?
    private var stopped = false
    private var started = false
    private var delivered = 0
    private var discarded = 0
    private var deferred = false
    private let callback: @Sendable (CapturedFrame) -> Void

    /// - Parameter callback: called with each frame on the output's delivery thread ("reel.data").
    public init(deferredStartEnabled: Bool = false, _ callback: @escaping @Sendable (CapturedFrame) -> Void) {
        self.callback = callback
        self.deferred = deferredStartEnabled
    }

    /// Whether the delivery thread starts after the first preview frame (default false).
    public var deferredStartEnabled: Bool {
        get { condition.lock(); defer { condition.unlock() }; return deferred }
        set { condition.lock(); deferred = newValue; condition.unlock() }
    }

    /// Frames the callback received, and frames replaced by a newer one before it could.
    public var counters: (delivered: Int, discarded: Int) {
        condition.lock(); defer { condition.unlock() }
        return (delivered, discarded)
    }

    /// Starts the delivery thread (once); offering a frame starts it too.
    public func prepare(ratio: AspectRatio, size: Size, timescale: Int32) { startThread() }

    private func startThread() {
        condition.lock()
        guard !started else { condition.unlock(); return }
        started = true
        condition.unlock()
        let t = Thread { [self] in deliver() }
        t.name = "reel.data"
        t.start()
    }

    /// Replaces the waiting frame with this one (the older is counted as discarded) and
    /// wakes the delivery thread; `.closed` after `stop()`. Never blocks on the callback.
    public func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        startThread()
        condition.lock()
        guard !stopped else { condition.unlock(); return .closed }
        let replaced = pending
        if replaced != nil { discarded += 1 }
        pending = frame
        condition.signal()
        condition.unlock()
        _ = replaced   // its lease ends here, outside the lock
        return .taken
    }

    /// Delivers the frame waiting, if any, then ends the delivery thread; later offers are refused.
    public func stop() {
        condition.lock(); stopped = true; condition.broadcast(); condition.unlock()
    }

    private func deliver() {
        while true {
            condition.lock()
            while pending == nil && !stopped { condition.wait() }
            guard let frame = pending else { condition.unlock(); return }
            pending = nil
            condition.unlock()
            callback(frame)
            condition.lock(); delivered += 1; condition.broadcast(); condition.unlock()
        }
    }
}
