import ReelCore

/// One face in a frame of the people scene (`SyntheticScene.people`): where the scene drew
/// it, the ground truth that detection, framing and their benchmarks are scored against.
public struct SceneFace: Sendable, Hashable {
    /// Which way a face looks.
    public enum Facing: String, Sendable, Hashable, Codable {
        /// Towards the camera: both eyes visible.
        case frontal
        /// Side on: one eye visible.
        case profile
    }
    /// The person (0, 1 or 2: `PeopleScene.cast`'s index).
    public let person: Int
    /// The face box in sensor pixels (chin to hairline, ear to ear), clipped to the sensor.
    public let box: CropRect
    /// Frontal or profile.
    public let facing: Facing
    /// Whether the whole face lies inside the sensor (a face entering or leaving is cut off).
    public let inside: Bool

    /// A face of `person` at `box`.
    public init(person: Int, box: CropRect, facing: Facing, inside: Bool) {
        self.person = person; self.box = box; self.facing = facing; self.inside = inside
    }

    /// Width times height, in pixels.
    public var area: Int { box.width * box.height }
}

extension CropRect {
    /// The share of the union of `self` and `other` that both cover (intersection over union).
    public func overlap(_ other: CropRect) -> Double {
        let x0 = max(x, other.x), y0 = max(y, other.y)
        let x1 = min(x + width, other.x + other.width), y1 = min(y + height, other.y + other.height)
        guard x1 > x0, y1 > y0 else { return 0 }
        let both = Double((x1 - x0) * (y1 - y0))
        return both / (Double(width * height + other.width * other.height) - both)
    }

    /// Whether `other` lies wholly inside `self`.
    public func contains(_ other: CropRect) -> Bool {
        other.x >= x && other.y >= y && other.x + other.width <= x + width && other.y + other.height <= y + height
    }
}
