import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// A change of ratio, as the session applied it: the seam between two clips.
public struct Seam: Sendable, Hashable, Codable {
    /// The first frame at the new ratio.
    public let frameIndex: Int
    /// Session-clock time of the first frame at the new ratio, in seconds.
    public let pts: Double
    /// The ratio before the seam.
    public let from: AspectRatio
    /// The ratio after the seam.
    public let to: AspectRatio
}

/// A change of frame rate while the session ran (`setFrameRate` on a running session): the
/// clip goes on at a variable frame rate, each frame at its capture time.
public struct FrameRateChange: Sendable, Hashable, Codable {
    /// The first frame at the new rate: it is one frame of the old rate after the frame before
    /// it, and one frame of the new rate before the frame after it.
    public let frameIndex: Int
    /// Session-clock time of that frame, in seconds.
    public let pts: Double
    /// Frames per second before it.
    public let from: Double
    /// Frames per second from it on.
    public let to: Double
    /// How a V4L2 camera reached `to`: `S_PARM` (the driver changed its rate while streaming)
    /// or `decimation` (the driver refused, or has no frame-rate control: every k-th frame is
    /// kept); absent for the synthetic sensor, which changes its own clock.
    public var method: String? = nil

    /// A change at frame `frameIndex` (`pts` seconds on the session clock) from `from` to `to`
    /// fps, reached by `method` (nil: the source's own clock).
    public init(frameIndex: Int, pts: Double, from: Double, to: Double, method: String? = nil) {
        self.frameIndex = frameIndex; self.pts = pts; self.from = from; self.to = to; self.method = method
    }
}

/// The graph as a configuration check sees it: what the session would run with once the
/// batch is committed.
public struct CaptureConfiguration: Sendable {
    /// The source's format, at the frame rate the configuration asks for.
    public let format: SourceFormat
    /// The starting ratio.
    public let ratio: AspectRatio
    /// The outputs, in order.
    public let outputs: [any FrameOutput]
}

/// A replaceable check of a configuration before it runs (the hardware cost of the graph, say):
/// throwing refuses the configuration; the error reaches the caller of `commitConfiguration()`.
public typealias ConfigurationCheck = @Sendable (CaptureConfiguration) throws -> Void

/// When a scheduled ratio change takes effect.
public enum RatioTrigger: Sendable, Hashable {
    /// The first frame at or after this many seconds of media time.
    case seconds(Double)
    /// This frame index (or the first captured frame after it, if it was dropped).
    case frame(Int)
}

/// Counters of one run of a session.
public struct CaptureStats: Sendable {
    /// Every frame the sensor produced: delivered to the outputs or dropped.
    public var framesCaptured = 0
    /// Frames every output took.
    public var framesDelivered = 0
    /// Frames dropped before the outputs, by reason.
    public var drops = DropCounts()
    /// The ratio changes applied, in order.
    public var seams: [Seam] = []
    /// The frame-rate changes applied while running, in order.
    public var frameRateChanges: [FrameRateChange] = []
    /// Frames a V4L2 camera sent that were let go on purpose to run at a lower rate
    /// (decimation): not captured, not dropped.
    public var framesDecimated = 0
    /// The first frame's timestamp (nil before it).
    public var startPTS: Timestamp?
    /// The newest frame's timestamp (nil before the first).
    public var lastPTS: Timestamp?
}

/// Told when the session runs Deferred Start (`AVCaptureSessionDeferredStartDelegate`).
/// Both are called on the session's deferred-start thread ("reel.deferred").
public protocol CaptureSessionDelegate: AnyObject, Sendable {
    /// Deferred Start begins: the first frame went to the outputs that are not deferred.
    func sessionWillRunDeferredStart(_ session: CaptureSession)
    /// Every deferred output has initialised (each `runDeferredStart` returned).
    func sessionDidRunDeferredStart(_ session: CaptureSession)
}

extension CaptureSessionDelegate {
    /// Does nothing by default.
    public func sessionWillRunDeferredStart(_ session: CaptureSession) {}
    /// Does nothing by default.
    public func sessionDidRunDeferredStart(_ session: CaptureSession) {}
}
