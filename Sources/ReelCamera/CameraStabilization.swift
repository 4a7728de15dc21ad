import Foundation
import ReelCapture
import ReelControl
import ReelCore
import ReelFraming
import ReelMedia
import ReelWriter
import Synchronization

/// The camera's video stabilisation (`--stabilization`). The motion of the sensor's picture
/// since the frame before is measured on every frame (`MotionEstimator` on four corner tiles
/// of the luma, away from the burned-in parts at the centre, shrunk to about 960 samples
/// across) and the crop moved by a correction: a zoom of `zoom` × the user's zoom, shifted — so
/// the movie, the preview and photos all show the steadied picture.
///
/// - `lowLatency` and `baseline`: on the capture thread, before each frame is processed (the
///   session's sensor tap), the causal path (`StabilizationPath`) gives that frame's
///   correction: no frame of delay.
/// - `cinematic`: the session's frame delay (`CinematicDelay`) holds frames back
///   `CinematicPath.lookAhead` frames, so each frame's correction looks at the frames either
///   side of it.
final class CameraStabilization: Sendable {
    /// The zoom stabilisation adds, for the margin it moves the crop in: 1.1 leaves 4.5 % of
    /// the sensor's side each way (87 pixels at 1920).
    static let zoom = 1.1

    let mode: StabilizationMode
    private let stats: StabilizationStats
    private let session: CaptureSession

    private init(mode: StabilizationMode, stats: StabilizationStats, session: CaptureSession) {
        self.mode = mode; self.stats = stats; self.session = session
    }

    /// Starts stabilisation on `recording`'s session.
    /// - Throws: `FramingError` (64) for a sensor format whose luma is not a plane of its own
    ///   (YUYV), (70) when the estimator cannot be made; `MediaError` when the adjustments' or
    ///   the look-ahead's buffers cannot be allocated.
    static func attach(_ mode: StabilizationMode, to recording: Recording) throws -> CameraStabilization {
        let session = recording.session
        let format = session.source.format
        guard format.pixelFormat == .yuv420p || format.pixelFormat == .nv12 else {
            throw FramingError("--stabilization needs a sensor format with a luma plane (yuv420p or NV12); this one is \(format.pixelFormat)", status: ExitStatus.usage)
        }
        let shrink = max(1, format.size.width / 960)
        let estimator = try MotionEstimator(width: format.size.width, height: format.size.height, shrink: shrink)
        // The adjustments' buffers, allocated here, off the capture thread.
        try session.adjustments.change(format: format, timeout: 0) { $0.marginZoom = zoom }
        // The zoom the crop is at: the user's, smart framing's or Center Stage's (as the frame
        // before left it: this tap runs first), times the margin's.
        let totalZoom: @Sendable () -> Double = { [adjustments = session.adjustments] in adjustments.settings.croppingZoom }
        let stats = StabilizationStats()
        if mode == .cinematic {
            let delay = try CinematicDelay(format: format, estimator: estimator, adjustments: session.adjustments, stats: stats, zoom: totalZoom)
            session.setFrameDelay(delay)
            return CameraStabilization(mode: mode, stats: stats, session: session)
        }
        let path = Mutex(StabilizationPath(mode: mode, margin: StabilizationPath.margin(zoom: zoom, sensor: format.size)))
        session.setSensorTap(.stabilization) { [stats, session] frame in
            let motion = stats.measure(frame, with: estimator)
            let z = totalZoom()
            let shift = path.withLock { p -> PicturePoint in
                p = StabilizationPath(continuing: p, margin: StabilizationPath.margin(zoom: z, sensor: format.size))
                return p.next(motion)
            }
            stats.applied(shift)
            stats.remember(shift, frame: frame.index)
            session.adjustments.set { $0.marginZoom = zoom; $0.shift = shift }
        }
        return CameraStabilization(mode: mode, stats: stats, session: session)
    }

    /// The correction applied to frame `index` (sensor pixels), while it is among the last
    /// `StabilizationStats.remembered` frames; nil otherwise (or for cinematic).
    func shift(atFrame index: Int) -> PicturePoint? { stats.shift(atFrame: index) }

    /// Takes the tap away (the crop in force stays; the frame delay stays until the run drained it).
    func stop() { session.setSensorTap(.stabilization, nil) }

    /// The summary's `stabilization`.
    var summary: StabilizationSummary {
        let s = stats.snapshot
        let perFrame: Double = s.frames > 0 ? s.cpuSeconds * 1000 / Double(s.frames) : 0
        let largest: Double = (s.largest * 10).rounded() / 10
        return StabilizationSummary(mode: mode.rawValue, zoom: Self.zoom, delayFrames: mode == .cinematic ? CinematicPath.lookAhead : 0,
                                    frames: s.frames, weakEstimates: s.weak, estimateCpuMs: perFrame, largestShift: largest, error: s.failed)
    }
}

/// What stabilisation measured and did, shared by the capture thread and the summary.
final class StabilizationStats: Sendable {
    struct Figures {
        var frames = 0, weak = 0
        var cpuSeconds = 0.0
        var largest = 0.0
        var failed: String? = nil
    }
    private let figures = Mutex(Figures())
    /// How many frames' corrections are kept (`shift(atFrame:)`): 4 s at 30 fps, longer than a
    /// face detection takes.
    static let remembered = 120
    private let recent = Mutex<[(frame: Int, shift: PicturePoint)]>([])

    /// Measures `frame`'s motion with `estimator` (an OpenCV failure is kept, once, and gives
    /// a motion too weak to believe), counting its CPU time.
    func measure(_ frame: SourceFrame, with estimator: MotionEstimator) -> MotionEstimator.Motion {
        let (luma, stride) = frame.lease.buffer.plane(0)
        let cpu0 = threadCPUSeconds()
        var failure: String? = nil
        let motion: MotionEstimator.Motion
        do {
            motion = try estimator.next(UnsafePointer(luma), stride: stride)
        } catch {
            failure = "\(error)"
            motion = MotionEstimator.Motion(dx: 0, dy: 0, response: 0)
        }
        let cpu = threadCPUSeconds() - cpu0
        figures.withLock { f in
            f.frames += 1
            if motion.response < StabilizationPath.weakestResponse && f.frames > 1 { f.weak += 1 }
            f.cpuSeconds += cpu
            if f.failed == nil { f.failed = failure }
        }
        return motion
    }

    /// Counts a correction applied.
    func applied(_ c: PicturePoint) {
        figures.withLock { $0.largest = max($0.largest, abs(c.x), abs(c.y)) }
    }

    var snapshot: Figures { figures.withLock { $0 } }

    /// Keeps `shift` as frame `frame`'s correction.
    func remember(_ shift: PicturePoint, frame: Int) {
        recent.withLock { r in
            r.append((frame, shift))
            if r.count > Self.remembered { r.removeFirst(r.count - Self.remembered) }
        }
    }

    /// Frame `index`'s correction, if kept.
    func shift(atFrame index: Int) -> PicturePoint? {
        recent.withLock { r in r.last { $0.frame == index }?.shift }
    }
}

/// How stabilisation ran: the summary's `stabilization` key.
public struct StabilizationSummary: Sendable, Encodable {
    /// `lowLatency`, `cinematic` or `baseline`.
    public var mode: String
    /// The zoom it added for its margin.
    public var zoom: Double
    /// Frames each frame was held back (cinematic's look-ahead; 0: none).
    public var delayFrames: Int
    /// Frames measured, and of them those whose estimate was too weak to believe.
    public var frames: Int, weakEstimates: Int
    /// Mean CPU time of one frame's motion estimate (ms).
    public var estimateCpuMs: Double
    /// The largest correction applied, in sensor pixels.
    public var largestShift: Double
    /// Why estimation failed, when OpenCV failed (that frame's motion then not believed).
    public var error: String?
}
