import ReelCore

/// A framing the smart-framing monitor can recommend (Apple's `AVCaptureFraming`): an aspect
/// ratio and a zoom factor, applied in that order.
public struct Framing: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The aspect ratio (the session's dynamic ratio).
    public var ratio: AspectRatio
    /// The zoom factor (the zoom control's value, 1…4).
    public var zoom: Double

    /// A framing of `ratio` at `zoom`.
    public init(ratio: AspectRatio, zoom: Double) { self.ratio = ratio; self.zoom = zoom }

    /// `3x4@1.5`.
    public var description: String { "\(ratio.rawValue)@\(zoom.formatted2)" }

    /// Parses `3x4@1.5` (the zoom may be left out: 1).
    public init?(parsing text: String) {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count <= 2, let r = AspectRatio(parsing: String(parts[0])) else { return nil }
        let z = parts.count == 2 ? Double(parts[1]) : 1
        guard let z, z >= 1, z <= 4 else { return nil }
        self.init(ratio: r, zoom: z)
    }

    /// The zoom factors the monitor recommends from.
    public static let zoomSteps: [Double] = [1, 1.25, 1.5, 2]

    /// The framings a square sensor's photo format gives: each of its ratios at each of
    /// `zoomSteps`.
    public static func supported(ratios: [AspectRatio]) -> [Framing] {
        ratios.flatMap { r in zoomSteps.map { Framing(ratio: r, zoom: $0) } }
    }

    /// The part of a sensor of `sensor` this framing shows: the ratio's crop, then the
    /// centre 1/zoom of it (the session zooms the sensor picture, then crops the ratio).
    public func window(in sensor: Size) -> CropRect {
        let c = ratio.crop(in: sensor)
        let w = Double(c.width) / zoom, h = Double(c.height) / zoom
        return CropRect(x: Int((Double(sensor.width) - w) / 2), y: Int((Double(sensor.height) - h) / 2),
                        width: Int(w), height: Int(h))
    }
}

extension Double {
    /// At most two decimals, no trailing zeros: 1, 1.25, 1.5.
    var formatted2: String {
        let r = (self * 100).rounded() / 100
        return r == r.rounded() ? String(Int(r)) : String(r)
    }
}
