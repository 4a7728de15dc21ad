import Foundation
import ReelCapture
import ReelCore

/// The path cinematic stabilisation follows (`--stabilization cinematic`): it looks ahead.
/// Each frame's correction comes from the picture's positions over `lookAhead` frames either
/// side of it, weighted by a Gaussian of `sigma` frames — so the frame leaves `lookAhead`
/// frames late, a steady pan passes whole (the window is centred), and a sway as slow as 1 Hz
/// is taken out where a causal path must let part of it through.
public struct CinematicPath: Sendable {
    /// Frames looked ahead (and behind): the delay, 0.67 s at 30 fps.
    public static let lookAhead = 20
    /// The Gaussian's width, in frames.
    public static let sigma = 7.0
    /// The most the crop may move each way, in sensor pixels.
    public private(set) var margin: (x: Double, y: Double)

    private var positions: [(x: Double, y: Double)] = []
    /// The frame number (from 0) of `positions[0]`.
    private var first = 0
    private var last = (x: 0.0, y: 0.0)
    private static let weights: [Double] = (-lookAhead...lookAhead).map { k in
        let z = Double(k) / sigma
        return Foundation.exp(-0.5 * z * z)
    }

    /// A path with `margin` pixels of room each way.
    public init(margin: (x: Double, y: Double)) { self.margin = margin }

    /// Frames taken so far.
    public var count: Int { first + positions.count }

    /// Takes the next frame's motion (the content's, since the frame before; a weak estimate
    /// is taken as the motion before it).
    public mutating func add(_ motion: MotionEstimator.Motion) {
        if motion.response >= StabilizationPath.weakestResponse || count == 0 { last = (motion.dx, motion.dy) }
        let p = positions.last ?? (0, 0)
        positions.append(count == 0 ? (0, 0) : (p.x + last.x, p.y + last.y))
        // Only the window around the oldest frame still to go out is kept.
        let keep = 2 * Self.lookAhead + 1
        if positions.count > keep {
            let total = count
            positions.removeFirst(positions.count - keep)
            first = total - keep
        }
    }

    /// The correction for frame `n` (taken already): the picture's position less the path's
    /// there — a straight line fitted to the positions around it, each weighted by the
    /// Gaussian (by least squares), evaluated at `n`. With every frame either side present it
    /// is the Gaussian-weighted mean; near the ends, where frames are missing on one side, a
    /// steady pan still passes whole. Clamped to the margin.
    public func correction(frame n: Int) -> PicturePoint {
        precondition(n >= first && n < count, "frame \(n) is not in the window \(first)..<\(count)")
        var sw = 0.0, sx = 0.0, sxx = 0.0, sy = (x: 0.0, y: 0.0), sxy = (x: 0.0, y: 0.0)
        for k in -Self.lookAhead...Self.lookAhead {
            let j = n + k - first
            guard j >= 0 && j < positions.count else { continue }
            let w = Self.weights[k + Self.lookAhead], x = Double(k), p = positions[j]
            sw += w; sx += w * x; sxx += w * x * x
            sy.x += w * p.x; sy.y += w * p.y
            sxy.x += w * x * p.x; sxy.y += w * x * p.y
        }
        let det = sw * sxx - sx * sx
        func at0(_ y: Double, _ xy: Double) -> Double { det > 1e-9 ? (sxx * y - sx * xy) / det : y / sw }
        let p = positions[n - first]
        let c = (x: p.x - at0(sy.x, sxy.x), y: p.y - at0(sy.y, sxy.y))
        return PicturePoint(x: min(margin.x, max(-margin.x, c.x)), y: min(margin.y, max(-margin.y, c.y)))
    }

    /// The path carried on with a new margin (the user zoomed: the room changed).
    public mutating func setMargin(_ m: (x: Double, y: Double)) { margin = m }
}
