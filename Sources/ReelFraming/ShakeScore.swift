import Foundation
import ReelCore
import ReelMedia

/// How much a video shakes, measured from its decoded frames alone, so that any tool's output
/// is scored the same way: the motion between each frame and the next (`MotionEstimator`: phase
/// correlation on four tiles away from the burned-in parts at the centre, shrunk by 2, their
/// median), less the mean motion of the whole clip (a steady pan is intended, not shake).
/// `jitter` is the root mean square of what is left, in the video's pixels: 0 for a picture
/// that moves only at its steady pan.
public struct ShakeScore: Sendable, Hashable, Codable {
    /// Frames decoded, and pairs of frames measured.
    public var frames: Int, pairs: Int
    /// The mean motion a frame (the intended pan), across and down, in pixels.
    public var meanX: Double, meanY: Double
    /// The root mean square of each pair's motion less the mean, in pixels (both axes).
    public var jitter: Double
    /// The same across and down.
    public var jitterX: Double, jitterY: Double
    /// The largest single deviation, in pixels.
    public var largest: Double
    /// Pairs whose correlation peak was too weak to believe (counted in, as measured).
    public var weak: Int

    /// Scores the video of `path`, skipping its first `skip` frames (a stabiliser settling), and
    /// those from `until` on (nil: none).
    /// - Throws: `MediaError` when the file cannot be read; `FramingError` (70) when the
    ///   estimator fails or the picture is too small (under 64 rows).
    public static func measure(path: String, skip: Int = 0, until: Int? = nil) throws -> ShakeScore {
        let reader = try MediaReader(path: path)
        var estimator: MotionEstimator? = nil
        var motions: [MotionEstimator.Motion] = []
        var index = 0
        try reader.forEachFrame { picture in
            defer { index += 1 }
            guard index >= skip, index < (until ?? Int.max) else { return }
            let plane = picture.luma
            guard plane.depth == 8 else { throw FramingError("shake is measured on 8-bit video only", status: ExitStatus.software) }
            // The estimator's tiles (a fifth of each side, shrunk by 2) need 8 samples a side.
            guard plane.height >= 80 && plane.width >= 80 else { throw FramingError("the picture is too small to measure its shake (\(plane.width)x\(plane.height))", status: ExitStatus.software) }
            if estimator == nil { estimator = try MotionEstimator(width: plane.width, height: plane.height, shrink: 2) }
            let m = try estimator!.next(plane.base.assumingMemoryBound(to: UInt8.self), stride: plane.stride)
            if index > skip { motions.append(m) }
        }
        return score(motions, frames: max(0, min(index, until ?? Int.max) - skip))
    }

    /// The score of measured motions (one per pair of frames).
    public static func score(_ motions: [MotionEstimator.Motion], frames: Int) -> ShakeScore {
        let n = Double(max(1, motions.count))
        var mx = 0.0, my = 0.0
        for m in motions { mx += m.dx; my += m.dy }
        mx /= n; my /= n
        var ex = 0.0, ey = 0.0, largest = 0.0
        for m in motions {
            let x = m.dx - mx, y = m.dy - my
            ex += x * x; ey += y * y
            largest = max(largest, (x * x + y * y).squareRoot())
        }
        ex /= n; ey /= n
        func r(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
        let weak = motions.filter { $0.response < StabilizationPath.weakestResponse }.count
        return ShakeScore(frames: frames, pairs: motions.count, meanX: r(mx), meanY: r(my), jitter: r((ex + ey).squareRoot()),
                          jitterX: r(ex.squareRoot()), jitterY: r(ey.squareRoot()), largest: r(largest),
                          weak: weak)
    }
}
