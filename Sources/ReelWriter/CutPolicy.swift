import ReelCore

/// Why a clip ends before a frame: the frame's ratio (or crop size) differs from the clip's
/// (a ratio seam), the frame is the first at or after a segment boundary, the clip would
/// grow past the segment size with it, or several at once (one cut).
public struct CutReasons: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: Int
    /// Reasons from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// The frame's ratio or crop size differs from the clip's: a ratio seam.
    public static let ratio = CutReasons(rawValue: 1)
    /// The frame is the first at or after a boundary of the segment grid.
    public static let segment = CutReasons(rawValue: 2)
    /// With this frame the clip would be larger than the segment size.
    public static let size = CutReasons(rawValue: 4)
}

/// The decision of where a clip ends, consulted by the writer for every frame it records, in
/// order: a new clip starts at a ratio change (a seam) and — with a segment duration — at
/// the first frame at or after every multiple of that duration of media time since the
/// recording's first frame (the segment grid).
///
/// The grid is exact: the duration is kept as a fraction of a second (to the microsecond)
/// and frame times as ticks of their clock, compared in integers, so that a boundary at
/// 2.1 s falls on frame 63 at 30 fps, however long the recording runs, and a fractional rate
/// (30000/1001) cuts at the first frame at or after each boundary. A ratio seam inside a
/// segment does not move the grid. A frame after a gap (drops) that passes several boundaries
/// makes one cut, and the grid goes on from the next boundary after it.
///
/// With a segment size, a new clip also starts at the frame that would take the clip past
/// that size (the writer's projection of the clip's file with the frame: `projectedBytes`).
/// Size cuts are not on the grid and do not move it.
///
/// A value type: the writer's encode thread owns it; tests drive it with plain timestamps.
public struct CutPolicy: Sendable {
    /// The segment duration as `numerator / denominator` seconds (reduced), nil without segments.
    private let duration: (numerator: Int64, denominator: Int64)?
    /// The recording's first frame on the session clock: the grid's origin.
    private var origin: Timestamp?
    /// The index (1, 2, …) of the next grid boundary a frame has not reached yet.
    private var nextBoundary: Int64 = 1
    /// The segment size in bytes, nil without one.
    public let segmentBytes: Int64?

    /// The smallest segment duration, in seconds: durations are kept to the microsecond.
    public static let smallestSegmentDuration = 0.001

    /// A policy that cuts at ratio changes and, when `segmentDuration` (seconds of media time)
    /// is given, at the segment grid. A duration that is not finite or is below
    /// `smallestSegmentDuration` means no segments (`Recording` and `reel record` refuse it
    /// before this point). With `segmentBytes`, a clip also ends before the frame that would
    /// take it past that many bytes.
    public init(segmentDuration: Double?, segmentBytes: Int64? = nil) {
        self.segmentBytes = segmentBytes.flatMap { $0 > 0 ? $0 : nil }
        if let d = segmentDuration, d.isFinite, d >= Self.smallestSegmentDuration, d <= 1e9 {
            var n = Int64((d * 1_000_000).rounded())
            var m: Int64 = 1_000_000
            let g = Self.gcd(n, m)
            n /= g; m /= g
            duration = (n, m)
        } else {
            duration = nil
        }
    }

    /// The segment duration in seconds, as kept (to the microsecond); nil without segments.
    public var segmentDuration: Double? { duration.map { Double($0.numerator) / Double($0.denominator) } }

    /// Media time (seconds since the recording's first frame) of segment boundary `k` (1, 2, …).
    public func boundarySeconds(_ k: Int64) -> Double? {
        duration.map { Double(k) * Double($0.numerator) / Double($0.denominator) }
    }

    /// A decision to start a new clip at a frame.
    public struct Cut: Sendable, Hashable {
        /// Why: a ratio seam, a segment boundary, or both (one cut).
        public var reasons: CutReasons
        /// The segment boundary the frame reached (1 for the first boundary after the
        /// recording's first frame), nil when the cut is not at a segment boundary.
        public var boundary: Int64?
        /// A cut for `reasons`, at segment boundary `boundary` (nil: not at one).
        public init(reasons: CutReasons, boundary: Int64?) { self.reasons = reasons; self.boundary = boundary }
    }

    /// Decides for the next frame recorded: nil to append it to the clip in progress, or the
    /// cut (its reasons) that starts a new clip at it. `clip`: the ratio and crop size of the clip in progress,
    /// nil when no clip is open (the first frame, or after a stop) — then the frame opens a
    /// clip whatever this answers, and the answer says only whether it also lies on a segment
    /// boundary. `projectedBytes`: the clip's file as the writer projects it with this frame
    /// appended (consulted with a segment size). Call it once per frame, in capture order: it
    /// moves along the grid.
    public mutating func cut(before pts: Timestamp, ratio: AspectRatio, size: Size,
                             clip: (ratio: AspectRatio, size: Size)?, projectedBytes: Int64? = nil) -> Cut? {
        var reasons: CutReasons = []
        var reached: Int64? = nil
        if let clip, clip.ratio != ratio || clip.size != size { reasons.insert(.ratio) }
        if clip != nil, let limit = segmentBytes, let projected = projectedBytes, projected > limit { reasons.insert(.size) }
        if let duration {
            if let origin {
                if reaches(pts, boundary: nextBoundary, origin: origin, duration: duration) {
                    reasons.insert(.segment)
                    reached = nextBoundary
                    // The next boundary after this frame (several, after a gap).
                    nextBoundary = boundaryIndexAfter(pts, origin: origin, duration: duration)
                }
            } else {
                origin = pts
            }
        }
        return reasons.isEmpty ? nil : Cut(reasons: reasons, boundary: reached)
    }

    /// Whether the frame at `pts` is at or after boundary `k`: (pts − origin) ≥ k · duration,
    /// compared exactly as `(pts − origin) · denominator · timescaleOrigin ≥ k · numerator · …`
    /// on 128-bit integers (the two timestamps may be on different clocks).
    private func reaches(_ pts: Timestamp, boundary k: Int64, origin: Timestamp,
                         duration: (numerator: Int64, denominator: Int64)) -> Bool {
        // Elapsed = pts.value/pts.ts − origin.value/origin.ts = e / (pts.ts · origin.ts).
        let ts = Int128(pts.timescale) * Int128(origin.timescale)
        let e = Int128(pts.value) * Int128(origin.timescale) - Int128(origin.value) * Int128(pts.timescale)
        return e * Int128(duration.denominator) >= Int128(k) * Int128(duration.numerator) * ts
    }

    /// The index of the first boundary after the frame at `pts`: floor(elapsed / duration) + 1.
    private func boundaryIndexAfter(_ pts: Timestamp, origin: Timestamp,
                                    duration: (numerator: Int64, denominator: Int64)) -> Int64 {
        let ts = Int128(pts.timescale) * Int128(origin.timescale)
        let e = Int128(pts.value) * Int128(origin.timescale) - Int128(origin.value) * Int128(pts.timescale)
        let q = (e * Int128(duration.denominator)) / (Int128(duration.numerator) * ts)
        return Int64(max(0, q)) + 1
    }

    private static func gcd(_ a: Int64, _ b: Int64) -> Int64 {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return max(1, a)
    }
}

/// A clip that starts at a segment boundary (`RecordOptions.segmentDuration`) or because the
/// clip before reached the segment size (`RecordOptions.segmentSize`), as listed in the
/// summary's `segments`: ratio seams are listed in `seams`, and a cut that is both is in both
/// lists (`ratioSeam` true here).
public struct SegmentCut: Sendable, Codable, Equatable {
    /// The first frame of the new clip: the first frame at or after the boundary.
    public var frameIndex: Int
    /// Session-clock time of that frame, in seconds.
    public var pts: Double
    /// The boundary it starts: media time since the recording's first frame, in seconds (a
    /// multiple of the segment duration); null for a cut by size alone.
    @EncodedNull public var boundarySeconds: Double?
    /// Why: `duration` (a boundary of the grid), `size` (the clip before would have grown past
    /// the segment size), or `duration+size` when both fell on this frame.
    public var reason: String
    /// The number of the clip it starts (the `0002` of `NAME-0002-16x9.mov`).
    public var clip: Int
    /// A ratio change fell on the same frame: one cut, also listed in `seams`.
    public var ratioSeam: Bool
}
