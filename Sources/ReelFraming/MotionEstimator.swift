import CMotion
import ReelCore

/// How far a whole picture moved from one frame to the next: OpenCV's phase correlation
/// (`cv::phaseCorrelate`, Debian's `libopencv-imgproc`) through the `CMotion` shim, on four
/// tiles — the picture's corners, each a fifth of its width and height, away from the
/// burned-in parts at its centre (the centre square of the short side) — shrunk by area averaging and windowed; the motion is the
/// median of the tiles' (an object moving across one tile does not carry the estimate).
/// Sub-pixel; one estimator is used by one thread at a time.
public final class MotionEstimator: @unchecked Sendable {
    /// One estimate: where the content moved (pixels of the full-size picture; positive: right
    /// and down) and the correlation peak's strength (0…1).
    public struct Motion: Sendable, Hashable {
        /// Across and down, in pixels.
        public var dx: Double, dy: Double
        /// The peak's strength: below about 0.05 the estimate is noise.
        public var response: Double
        /// A motion of (`dx`, `dy`) found with `response`.
        public init(dx: Double, dy: Double, response: Double) { self.dx = dx; self.dy = dy; self.response = response }
    }

    private let handles: [OpaquePointer]
    // Kept between frames (one thread uses the estimator): no allocation per frame.
    private var found: [Motion] = []
    private var error = [CChar](repeating: 0, count: 256)
    private let tiles: [(x: Int, y: Int)]
    /// The size of the pictures it compares.
    public let width: Int, height: Int

    /// An estimator for grey pictures of `width` x `height`, its tiles shrunk by `shrink`
    /// before they are compared.
    /// - Throws: `FramingError` (70) when the estimator cannot be made (no memory, or a
    ///   tile smaller than 8 samples a side once shrunk).
    public init(width: Int, height: Int, shrink: Int) throws {
        let tw = (width / 5) & ~1, th = (height / 5) & ~1
        var handles: [OpaquePointer] = []
        for _ in 0..<4 {
            guard let h = reel_motion_open(Int32(tw), Int32(th), Int32(shrink)) else {
                for h in handles { reel_motion_close(h) }
                throw FramingError("cannot make a motion estimator for \(width)x\(height) pictures shrunk by \(shrink)", status: ExitStatus.software)
            }
            handles.append(h)
        }
        self.handles = handles
        tiles = [(0, 0), (width - tw, 0), (0, height - th), (width - tw, height - th)]
        self.width = width; self.height = height
    }

    deinit { for h in handles { reel_motion_close(h) } }

    /// The motion since the picture given last (the first gives 0, 0, response 0).
    /// - Throws: `FramingError` (70) when OpenCV fails.
    public func next(_ gray: UnsafePointer<UInt8>, stride: Int) throws -> Motion {
        found.removeAll(keepingCapacity: true)
        for (h, t) in zip(handles, tiles) {
            var dx = 0.0, dy = 0.0, r = 0.0
            guard reel_motion_next(h, gray + t.y * stride + t.x, Int32(stride), &dx, &dy, &r, &error, error.count) == 0 else {
                throw FramingError("motion estimate failed: \(String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))", status: ExitStatus.software)
            }
            found.append(Motion(dx: dx, dy: dy, response: r))
        }
        return Self.median(found)
    }

    /// The median of the tiles' motions, axis by axis (of 4: the mean of the middle two); the
    /// response is the median of theirs.
    static func median(_ m: [Motion]) -> Motion {
        func mid(_ v: [Double]) -> Double {
            let s = v.sorted()
            return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
        }
        return Motion(dx: mid(m.map(\.dx)), dy: mid(m.map(\.dy)), response: mid(m.map(\.response)))
    }
}
