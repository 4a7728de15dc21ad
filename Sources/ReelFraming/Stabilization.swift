import ReelCapture
import ReelCore

/// Video stabilisation (`--stabilization`; Apple's `AVCaptureVideoStabilizationMode`): the
/// picture's motion measured on every sensor frame (`MotionEstimator`), a smooth path through
/// it, and the crop moved by the difference, within the margin a zoom of `zoom` leaves on the
/// square sensor — so the shake goes and a pan stays.
public enum StabilizationMode: String, Sendable, Hashable, CaseIterable {
    /// No stabilisation (the default).
    case off
    /// Causal: each frame's correction comes from that frame and the ones before, so the
    /// picture leaves with no frame of delay (Apple's `lowLatency`, for calls and preview).
    case lowLatency
    /// Looks ahead: each frame leaves `CinematicPath.lookAhead` frames late, its correction
    /// smoothed over the frames either side (Apple's `cinematic`, for recordings).
    case cinematic
    /// The benchmark's plain causal baseline: the picture's position smoothed by one
    /// exponential average (no velocity), what a follow-the-path loop does.
    case baseline
}

/// The path a stabilised picture follows, one frame at a time (causal: no look-ahead).
///
/// `lowLatency` smooths the measured motion — two exponential averages in a row, each taking
/// 1/10 of the new value a frame, so a steady pan passes whole and a tremor of 1–6 Hz is
/// damped — and integrates it into the path; a leak of 1/100 a frame pulls the path back
/// towards the picture so the correction stays inside the margin. `baseline` smooths the
/// position itself (1/16 a frame: its best on the shaken scene), which lags a pan. Either way
/// the correction (picture minus path) is clamped to the margin; where it would leave it, the
/// path is moved so the picture follows.
public struct StabilizationPath: Sendable {
    /// The mode: `lowLatency` or `baseline`.
    public let mode: StabilizationMode
    /// The most the crop may move each way, in sensor pixels.
    public private(set) var margin: (x: Double, y: Double)
    /// Estimates weaker than this are not believed: the motion is taken to continue as smoothed.
    public static let weakestResponse = 0.05

    private var position = (x: 0.0, y: 0.0)
    private var path = (x: 0.0, y: 0.0)
    private var velocity = (x: 0.0, y: 0.0)
    private var smoothed = (x: 0.0, y: 0.0)
    private var started = false

    /// A path for `mode` with `margin` pixels of room each way.
    public init(mode: StabilizationMode, margin: (x: Double, y: Double)) {
        self.mode = mode; self.margin = margin
    }

    /// `path` carried on with a new margin (the user zoomed: the room changed).
    public init(continuing path: StabilizationPath, margin: (x: Double, y: Double)) {
        self = path
        self.margin = margin
    }

    /// The margin a zoom of `zoom` leaves each way on a sensor of `sensor`.
    public static func margin(zoom: Double, sensor: Size) -> (x: Double, y: Double) {
        let z = max(1, zoom)
        return ((Double(sensor.width) - Double(sensor.width) / z) / 2, (Double(sensor.height) - Double(sensor.height) / z) / 2)
    }

    /// Takes the next frame's motion (the content's, since the frame before) and returns the
    /// crop's correction for this frame: where to move the crop, in sensor pixels.
    public mutating func next(_ motion: MotionEstimator.Motion) -> PicturePoint {
        let believed = motion.response >= Self.weakestResponse
        let m = believed ? (x: motion.dx, y: motion.dy) : smoothed
        if !started && believed {
            // The first motion measured: the pan is taken to be that, so a steady pan does not
            // build up a correction while the averages learn it.
            started = true
            velocity = m; smoothed = m
        }
        position.x += m.x; position.y += m.y
        switch mode {
        case .off, .cinematic:
            path = position
        case .lowLatency:
            let k = 0.1
            velocity.x += k * (m.x - velocity.x); velocity.y += k * (m.y - velocity.y)
            smoothed.x += k * (velocity.x - smoothed.x); smoothed.y += k * (velocity.y - smoothed.y)
            path.x += smoothed.x; path.y += smoothed.y
            path.x += 0.01 * (position.x - path.x); path.y += 0.01 * (position.y - path.y)
        case .baseline:
            let k = 1.0 / 16
            smoothed = m
            path.x += k * (position.x - path.x); path.y += k * (position.y - path.y)
        }
        var c = (x: position.x - path.x, y: position.y - path.y)
        if abs(c.x) > margin.x { c.x = c.x < 0 ? -margin.x : margin.x; path.x = position.x - c.x }
        if abs(c.y) > margin.y { c.y = c.y < 0 ? -margin.y : margin.y; path.y = position.y - c.y }
        return PicturePoint(x: c.x, y: c.y)
    }
}
