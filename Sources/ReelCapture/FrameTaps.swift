/// A stage between the sensor and processing that holds frames back
/// (`CaptureSession.setFrameDelay`): cinematic stabilisation holds a second or so of frames so
/// that each frame's correction can look ahead.
public protocol FrameDelay: AnyObject, Sendable {
    /// Takes the sensor's next frame (after the session's tap saw it) and returns the frames to
    /// go on now, oldest first: none while it fills, then usually one. It must not wait.
    func take(_ frame: SourceFrame) -> [DelayedFrame]
    /// Returns the frames still held, oldest first, once capture has ended.
    func drain() -> [DelayedFrame]
}

/// A frame a `FrameDelay` lets go, with what to do just before the session processes it (set
/// the picture's adjustments for that frame).
public struct DelayedFrame: Sendable {
    /// The frame, with its own index and capture time.
    public var frame: SourceFrame
    /// Called on the capture thread just before `frame` is processed.
    public var prepare: @Sendable () -> Void
    /// `frame`, preceded by `prepare`.
    public init(frame: SourceFrame, prepare: @escaping @Sendable () -> Void) { self.frame = frame; self.prepare = prepare }
}

/// Who taps the session's sensor frames (`CaptureSession.setSensorTap`), in the order the taps
/// run on each frame.
public enum SensorTapKind: Int, Sendable, Hashable, CaseIterable, Comparable {
    /// Stabilisation's motion estimate and correction (first: the faces framing finds in the
    /// same frame are put in its coordinates).
    case stabilization
    /// Face detection, and the crop window smart framing or Center Stage sets.
    case framing

    /// The order the taps run in.
    public static func < (a: SensorTapKind, b: SensorTapKind) -> Bool { a.rawValue < b.rawValue }
}
