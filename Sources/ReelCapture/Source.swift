import ReelCore
import ReelMedia

/// What a source produces: sensor size, pixel format, frame rate, clock timescale, and the
/// dynamic aspect ratios it supports (Apple's `supportedDynamicAspectRatios`).
public struct SourceFormat: Sendable, Hashable {
    /// The sensor's size: every frame is the whole sensor picture.
    public var size: Size
    /// The pixel format of the frames' buffers.
    public var pixelFormat: PixelFormat
    /// The nominal frame rate.
    public var rate: FrameRate
    /// Ticks per second of the timestamps the source stamps its frames with.
    public var timescale: Int32
    /// The ratios the session may crop this sensor to.
    public var supportedRatios: [AspectRatio]

    /// A format of `size` frames in `pixelFormat` at `rate`, stamped on `timescale`.
    public init(size: Size, pixelFormat: PixelFormat, rate: FrameRate, timescale: Int32, supportedRatios: [AspectRatio]) {
        self.size = size; self.pixelFormat = pixelFormat; self.rate = rate
        self.timescale = timescale; self.supportedRatios = supportedRatios
    }

    /// One nominal frame on `timescale`.
    public var frameDuration: Int64 {
        Int64((Double(timescale) * rate.interval).rounded())
    }
}

/// A frame as a source hands it to the session: the whole sensor picture.
public struct SourceFrame: Sendable {
    /// The frame's pixels: the buffer returns to the source's pool when the last holder lets go.
    public let lease: PixelBufferLease
    /// Index of the frame since the source started (gaps where frames were dropped).
    public let index: Int
    /// Capture time on the session clock (the source's `timescale`), 0 at the first frame.
    public let pts: Timestamp
    /// The rate the frame was captured at, when the source can change it while capturing
    /// (the frame's duration is one frame of it, the time until the next frame); nil: the
    /// format's rate.
    public var rate: FrameRate? = nil
    /// How the source reached `rate` when it changed it while capturing (`S_PARM` or
    /// `decimation` for a V4L2 camera; nil: its own clock). Copied into the session's
    /// `FrameRateChange.method` at the frame where the rate changes.
    public var rateMethod: String? = nil

    /// A frame of a source (or a test) holding `lease`, captured `index`-th at `pts` (at `rate`
    /// when the source can change its rate while capturing, reached by `rateMethod`).
    public init(lease: PixelBufferLease, index: Int, pts: Timestamp, rate: FrameRate? = nil, rateMethod: String? = nil) {
        self.lease = lease; self.index = index; self.pts = pts; self.rate = rate; self.rateMethod = rateMethod
    }
}

/// Receives frames from a source's capture thread.
public protocol SourceDelegate: AnyObject, Sendable {
    /// A frame; returns false when an output could not take it (the delegate counts that
    /// drop as `late` itself).
    @discardableResult
    func source(didCapture frame: SourceFrame) -> Bool
    /// Frames that never became `SourceFrame`s.
    func source(didDrop count: Int, reason: DropReason, at index: Int)
    /// Frames the source let go on purpose to run at a lower rate than its camera's (every
    /// k-th kept: decimation); neither captured nor dropped.
    func source(didDecimate count: Int)
}

extension SourceDelegate {
    /// Ignores decimated frames (a delegate that does not count them).
    public func source(didDecimate count: Int) {}
}

/// A camera: synthetic, or V4L2.
public protocol VideoSource: AnyObject, Sendable {
    /// What the source produces.
    var format: SourceFormat { get }
    /// Real-time pacing: frames come at the sensor's rate whether or not they are taken.
    var isRealtime: Bool { get }
    /// Runs the capture loop on the calling thread until `frameLimit` frames have been
    /// produced (or dropped), or `stop()` is called.
    /// - Throws: what the camera failed with (``CaptureError``, ``V4L2Error``); the synthetic source does not throw.
    func capture(frameLimit: Int?, delegate: any SourceDelegate) throws
    /// Ends `capture` after the frame in progress. Safe from any thread.
    func stop()
    /// Takes a new frame rate for the next `capture` (`CaptureSession.setFrameRate`); a source
    /// that can change its rate while capturing takes it from its next frame on then (and
    /// stamps its frames' `rate`).
    /// - Throws: `CaptureError.notConfigurable` (the default: the source's rate is fixed).
    func setFrameRate(_ rate: FrameRate) throws
    /// CLOCK_MONOTONIC time (ns) of the session clock's 0 — the first frame's capture time —
    /// once `capture` has begun; nil before, or for a source that cannot say. What places sound
    /// on the frames' clock.
    var sessionZeroNs: UInt64? { get }
}

extension VideoSource {
    /// Unknown: a source that does not say.
    public var sessionZeroNs: UInt64? { nil }

    /// A source with a fixed rate: accepts only its own rate.
    /// - Throws: `CaptureError.notConfigurable` for any other rate.
    public func setFrameRate(_ rate: FrameRate) throws {
        guard rate != format.rate else { return }
        throw CaptureError.notConfigurable("this source's frame rate is fixed at \(format.rate) fps")
    }
}
