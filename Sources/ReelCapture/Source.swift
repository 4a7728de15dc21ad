import ReelCore
import ReelMedia

/// What a source produces: sensor size, pixel format, frame rate, clock timescale, and the
/// dynamic aspect ratios it supports (Apple's `supportedDynamicAspectRatios`).
public struct SourceFormat: Sendable, Hashable {
    public var size: Size
    public var pixelFormat: PixelFormat
    public var rate: FrameRate
    /// Ticks per second of the timestamps the source stamps its frames with.
    public var timescale: Int32
    public var supportedRatios: [AspectRatio]

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
    public let lease: PixelBufferLease
    /// Index of the frame since the source started (gaps where frames were dropped).
    public let index: Int
    public let pts: Timestamp
}

/// Receives frames from a source's capture thread.
public protocol SourceDelegate: AnyObject, Sendable {
    /// A frame; returns false when an output could not take it (the delegate counts that
    /// drop as `late` itself).
    @discardableResult
    func source(didCapture frame: SourceFrame) -> Bool
    /// Frames that never became `SourceFrame`s.
    func source(didDrop count: Int, reason: DropReason, at index: Int)
}

/// A camera: synthetic, or V4L2.
public protocol VideoSource: AnyObject, Sendable {
    var format: SourceFormat { get }
    /// Real-time pacing: frames come at the sensor's rate whether or not they are taken.
    var isRealtime: Bool { get }
    /// Runs the capture loop on the calling thread until `frameLimit` frames have been
    /// produced (or dropped), or `stop()` is called.
    func capture(frameLimit: Int?, delegate: any SourceDelegate) throws
    /// Ends `capture` after the frame in progress. Safe from any thread.
    func stop()
    /// Takes a new frame rate for the next `capture` (`CaptureSession.setFrameRate`).
    /// - Throws: `CaptureError.notConfigurable` (the default: the source's rate is fixed).
    func setFrameRate(_ rate: FrameRate) throws
}

extension VideoSource {
    public func setFrameRate(_ rate: FrameRate) throws {
        guard rate != format.rate else { return }
        throw CaptureError.notConfigurable("this source's frame rate is fixed at \(format.rate) fps")
    }
}
