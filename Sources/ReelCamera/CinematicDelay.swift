import ReelCapture
import ReelCore
import ReelFraming
import ReelMedia
import Synchronization

/// Cinematic stabilisation's look-ahead (`--stabilization cinematic`), the session's
/// `FrameDelay`: each sensor frame's motion is measured as it comes, the frame is copied into a
/// buffer of its own pool (so the sensor's buffer goes back at once) and held; once
/// `CinematicPath.lookAhead` frames have come after it, it goes on, with the crop moved by the
/// correction the frames either side of it give. At the end of capture the frames still held
/// go on with the frames there are. Memory: `lookAhead` + 4 sensor-sized buffers (about 133 MB
/// at 1920², 585 MB at 4032²). The frames leave `lookAhead` frames late, so a recording's start
/// and stop (which apply to the frames that reach the writer) land on frames captured that much
/// before the press.
final class CinematicDelay: FrameDelay {
    private struct State {
        var path: CinematicPath
        var held: [SourceFrame] = []
    }
    private let state: Mutex<State>
    private let pool: PixelBufferPool
    private let estimator: MotionEstimator
    private let adjustments: ImageAdjustments
    private let stats: StabilizationStats
    private let zoom: @Sendable () -> Double
    private let sensor: Size

    /// A delay for frames of `format`, measuring with `estimator`, setting `adjustments` (a
    /// zoom of `zoom()` and the correction) before each frame leaves.
    /// - Throws: `MediaError` when its buffers cannot be allocated.
    init(format: SourceFormat, estimator: MotionEstimator, adjustments: ImageAdjustments, stats: StabilizationStats,
         zoom: @escaping @Sendable () -> Double) throws {
        pool = try PixelBufferPool(count: CinematicPath.lookAhead + 4, size: format.size, format: format.pixelFormat)
        self.estimator = estimator; self.adjustments = adjustments; self.stats = stats; self.zoom = zoom
        sensor = format.size
        state = Mutex(State(path: CinematicPath(margin: StabilizationPath.margin(zoom: zoom(), sensor: format.size))))
    }

    func take(_ frame: SourceFrame) -> [DelayedFrame] {
        let motion = stats.measure(frame, with: estimator)
        let z = zoom()
        guard let lease = pool.lease() else {
            // Every buffer held (the outputs keep copies longer than the look-ahead): what is
            // held goes on now, with the frames there are, and this frame after it — none lost,
            // none out of order.
            return state.withLock { s in
                s.path.add(motion)
                s.path.setMargin(StabilizationPath.margin(zoom: z, sensor: sensor))
                let all = s.held + [frame]
                s.held = []
                return release(all, path: s.path, zoom: z)
            }
        }
        copyPicture(frame.lease.buffer, into: lease.buffer)
        let copy = SourceFrame(lease: lease, index: frame.index, pts: frame.pts, rate: frame.rate, rateMethod: frame.rateMethod)
        return state.withLock { s in
            s.path.add(motion)
            s.path.setMargin(StabilizationPath.margin(zoom: z, sensor: sensor))
            s.held.append(copy)
            guard s.held.count > CinematicPath.lookAhead else { return [] }
            let out = s.held.removeFirst()
            return release([out], path: s.path, zoom: z, endingBefore: s.held.count)
        }
    }

    func drain() -> [DelayedFrame] {
        state.withLock { s in
            let all = s.held
            s.held = []
            return release(all, path: s.path, zoom: zoom())
        }
    }

    /// `frames`, the last of which is `endingBefore` frames before the newest taken, each with
    /// its correction set just before it is processed.
    private func release(_ frames: [SourceFrame], path: CinematicPath, zoom z: Double, endingBefore after: Int = 0) -> [DelayedFrame] {
        let firstNumber = path.count - after - frames.count
        return frames.enumerated().map { i, f in
            let c = path.correction(frame: firstNumber + i)
            stats.applied(c)
            return DelayedFrame(frame: f) { [adjustments] in adjustments.set { $0.marginZoom = CameraStabilization.zoom; $0.shift = c } }
        }
    }
}

/// Copies the picture of `from` into `to` (the same size and format: planar 4:2:0 or NV12).
private func copyPicture(_ from: PixelBuffer, into to: PixelBuffer) {
    let w = from.size.width, h = from.size.height
    let planes: [(rows: Int, bytes: Int)] = from.format == .nv12 ? [(h, w), (h / 2, w)] : [(h, w), (h / 2, w / 2), (h / 2, w / 2)]
    for (p, plane) in planes.enumerated() {
        let (s, ss) = from.plane(p), (d, ds) = to.plane(p)
        for r in 0..<plane.rows { (d + r * ds).update(from: s + r * ss, count: plane.bytes) }
    }
}
