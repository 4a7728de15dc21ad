/// A point on a clock with a rational time base, like `CMTime`: `value / timescale` seconds.
///
/// The session clock of a source uses one timescale for all of its frames (the synthetic
/// source uses its frame rate, a V4L2 camera microseconds), so timestamps of one session
/// compare exactly, without rounding.
public struct Timestamp: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Ticks of `timescale` since the clock's origin.
    public var value: Int64
    /// Ticks per second (> 0).
    public var timescale: Int32

    /// `value / timescale` seconds; traps (precondition) when `timescale` is not positive.
    public init(value: Int64, timescale: Int32) {
        precondition(timescale > 0, "timescale must be positive")
        self.value = value
        self.timescale = timescale
    }

    /// Time 0 on `timescale`.
    public static func zero(timescale: Int32) -> Timestamp { Timestamp(value: 0, timescale: timescale) }

    /// The time in seconds (a Double: inexact for large values).
    public var seconds: Double { Double(value) / Double(timescale) }

    /// This timestamp on another timescale, rounded to the nearest tick.
    public func converted(to newScale: Int32) -> Timestamp {
        if newScale == timescale { return self }
        let scaled = (Double(value) * Double(newScale) / Double(timescale)).rounded()
        return Timestamp(value: Int64(scaled), timescale: newScale)
    }

    /// Exact comparison across timescales (128-bit cross-multiplication).
    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        // Cross-multiplication is exact for the timescales a session uses.
        a.value.multipliedFullWidth(by: Int64(b.timescale)) < b.value.multipliedFullWidth(by: Int64(a.timescale))
    }

    /// Exact equality across timescales: `1/2` equals `2/4`.
    public static func == (a: Timestamp, b: Timestamp) -> Bool {
        a.value.multipliedFullWidth(by: Int64(b.timescale)) == b.value.multipliedFullWidth(by: Int64(a.timescale))
    }

    /// Hashes the time in seconds, so that equal timestamps on different timescales hash alike.
    public func hash(into hasher: inout Hasher) { hasher.combine(seconds) }

    /// The sum on `a`'s timescale (`b` converted, rounded to the nearest tick).
    public static func + (a: Timestamp, b: Timestamp) -> Timestamp {
        let b2 = b.converted(to: a.timescale)
        return Timestamp(value: a.value + b2.value, timescale: a.timescale)
    }

    /// The difference on `a`'s timescale (`b` converted, rounded to the nearest tick).
    public static func - (a: Timestamp, b: Timestamp) -> Timestamp {
        let b2 = b.converted(to: a.timescale)
        return Timestamp(value: a.value - b2.value, timescale: a.timescale)
    }

    /// `value/timescale`, the form written into clip metadata.
    public var description: String { "\(value)/\(timescale)" }

    /// Parses the `value/timescale` form of `description`.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let v = Int64(parts[0]), let s = Int32(parts[1]), s > 0 else { return nil }
        self.init(value: v, timescale: s)
    }
}

/// A frame rate as a fraction of frames per second (`30/1`, `30000/1001`).
public struct FrameRate: Hashable, Sendable, CustomStringConvertible {
    /// The numerator: frames per `seconds` seconds (30000 for 29.97 fps).
    public let frames: Int32
    /// The denominator (1001 for 29.97 fps).
    public let seconds: Int32

    /// `frames` frames every `seconds` seconds; nil unless both are positive.
    public init?(frames: Int32, seconds: Int32 = 1) {
        guard frames > 0, seconds > 0 else { return nil }
        self.frames = frames
        self.seconds = seconds
    }

    /// Parses `30`, `29.97`, `30000/1001`.
    public init?(parsing text: String) {
        if let slash = text.firstIndex(of: "/") {
            guard let n = Int32(text[..<slash]), let d = Int32(text[text.index(after: slash)...]) else { return nil }
            self.init(frames: n, seconds: d)
        } else if let n = Int32(text) {
            self.init(frames: n)
        } else if let d = Double(text), d > 0, d <= 1000 {
            if abs(d - 29.97) < 0.005 { self.init(frames: 30000, seconds: 1001) }
            else if abs(d - 59.94) < 0.005 { self.init(frames: 60000, seconds: 1001) }
            else if abs(d - 23.976) < 0.005 { self.init(frames: 24000, seconds: 1001) }
            else { self.init(frames: Int32((d * 1000).rounded()), seconds: 1000) }
        } else {
            return nil
        }
    }

    /// Frames per second as a Double (29.97…).
    public var perSecond: Double { Double(frames) / Double(seconds) }
    /// Seconds per frame.
    public var interval: Double { Double(seconds) / Double(frames) }
    /// The timescale on which frame `i` falls at `i * frameDuration` exactly.
    public var timescale: Int32 { frames }
    /// One frame on `timescale`.
    public var frameDuration: Int64 { Int64(seconds) }
    /// `30` for whole rates, `30000/1001` otherwise (the form ``init(parsing:)`` takes).
    public var description: String { seconds == 1 ? "\(frames)" : "\(frames)/\(seconds)" }
}
