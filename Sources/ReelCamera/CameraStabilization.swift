import Foundation
import ReelCapture
import ReelControl
import ReelCore
import ReelFraming
import ReelWriter
import Synchronization

/// The camera's video stabilisation (`--stabilization`): on the capture thread, before each
/// frame is processed, the motion of the sensor's picture since the frame before is measured
/// (`MotionEstimator` on four tiles of the luma, away from the burned-in parts at the
/// centre, shrunk to about 960 samples across the picture), the path takes it (`StabilizationPath`), and
/// the crop is moved by the correction: a zoom of `zoom` × the user's zoom, shifted — so the
/// movie, the preview and photos all show the steadied picture, with no frame of delay.
final class CameraStabilization: Sendable {
    /// The zoom stabilisation adds, for the margin it moves the crop in: 1.1 leaves 4.5 % of
    /// the sensor's side each way (87 pixels at 1920).
    static let zoom = 1.1

    private struct State {
        var path: StabilizationPath
        var frames = 0, weak = 0
        var cpuSeconds = 0.0
        var largest = 0.0
        var failed: String? = nil
    }
    let mode: StabilizationMode
    private let state: Mutex<State>
    private let estimator: MotionEstimator
    private let session: CaptureSession

    private init(mode: StabilizationMode, path: StabilizationPath, estimator: MotionEstimator, session: CaptureSession) {
        self.mode = mode; state = Mutex(State(path: path)); self.estimator = estimator; self.session = session
    }

    /// Starts stabilisation on `recording`'s session.
    /// - Throws: `FramingError` (64) for a sensor format whose luma is not a plane of its own
    ///   (YUYV), (70) when the estimator cannot be made; `MediaError` when the adjustments'
    ///   buffers cannot be allocated.
    static func attach(_ mode: StabilizationMode, to recording: Recording, controls: CameraControls) throws -> CameraStabilization {
        let session = recording.session
        let format = session.source.format
        guard format.pixelFormat == .yuv420p || format.pixelFormat == .nv12 else {
            throw FramingError("--stabilization needs a sensor format with a luma plane (yuv420p or NV12); this one is \(format.pixelFormat)", status: ExitStatus.usage)
        }
        let side = format.size.width
        let shrink = max(1, side / 960)
        let estimator = try MotionEstimator(width: format.size.width, height: format.size.height, shrink: shrink)
        // The adjustments' buffers, allocated here, off the capture thread.
        try session.adjustments.change(format: format, timeout: 0) { $0.zoom = zoom }
        let path = StabilizationPath(mode: mode, margin: StabilizationPath.margin(zoom: zoom, sensor: format.size))
        let stabilization = CameraStabilization(mode: mode, path: path, estimator: estimator, session: session)
        let zoomControl = controls.controls.control("zoom") as? SystemSlider
        session.setSensorTap { [stabilization] frame in
            let user = zoomControl?.value.value ?? 1
            stabilization.step(frame, zoom: min(4, user * zoom), sensor: format.size)
        }
        return stabilization
    }

    /// One frame: measure, smooth, move the crop.
    private func step(_ frame: SourceFrame, zoom: Double, sensor: Size) {
        let (luma, stride) = frame.lease.buffer.plane(0)
        let cpu0 = threadCPUTime()
        let motion: MotionEstimator.Motion
        do {
            motion = try estimator.next(UnsafePointer(luma), stride: stride)
        } catch {
            state.withLock { if $0.failed == nil { $0.failed = "\(error)" } }
            return
        }
        let cpu = threadCPUTime() - cpu0
        let shift = state.withLock { s -> PicturePoint in
            s.path = StabilizationPath(continuing: s.path, margin: StabilizationPath.margin(zoom: zoom, sensor: sensor))
            let c = s.path.next(motion)
            s.frames += 1
            if motion.response < StabilizationPath.weakestResponse && s.frames > 1 { s.weak += 1 }
            s.cpuSeconds += cpu
            s.largest = max(s.largest, abs(c.x), abs(c.y))
            return c
        }
        session.adjustments.set { $0.zoom = zoom; $0.shift = shift }
    }

    /// Takes the tap away (the crop in force stays).
    func stop() { session.setSensorTap(nil) }

    /// The summary's `stabilization`.
    var summary: StabilizationSummary {
        let s = state.withLock { $0 }
        let perFrame: Double = s.frames > 0 ? s.cpuSeconds * 1000 / Double(s.frames) : 0
        let largest: Double = (s.largest * 10).rounded() / 10
        return StabilizationSummary(mode: mode.rawValue, zoom: Self.zoom, frames: s.frames, weakEstimates: s.weak,
                                    estimateCpuMs: perFrame, largestShift: largest, error: s.failed)
    }
}

/// This thread's CPU time, in seconds.
private func threadCPUTime() -> Double {
    var t = timespec()
    guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 else { return 0 }
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// How stabilisation ran: the summary's `stabilization` key.
public struct StabilizationSummary: Sendable, Encodable {
    /// `lowLatency` or `baseline`.
    public var mode: String
    /// The zoom it added for its margin.
    public var zoom: Double
    /// Frames measured, and of them those whose estimate was too weak to believe.
    public var frames: Int, weakEstimates: Int
    /// Mean CPU time of one frame's motion estimate (ms).
    public var estimateCpuMs: Double
    /// The largest correction applied, in sensor pixels.
    public var largestShift: Double
    /// Why estimation stopped, when OpenCV failed (the crop then stays where it was).
    public var error: String?
}
