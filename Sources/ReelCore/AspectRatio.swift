/// A frame size in pixels.
public struct Size: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// A size of `width` × `height` pixels.
    public init(width: Int, height: Int) { self.width = width; self.height = height }
    /// `WIDTHxHEIGHT` (`1920x1080`), as `--source` spells a sensor size.
    public var description: String { "\(width)x\(height)" }
}

/// A rectangle inside a sensor frame, in pixels.
public struct CropRect: Hashable, Sendable, CustomStringConvertible {
    /// Offset of the left edge from the sensor's left edge.
    public var x: Int
    /// Offset of the top edge from the sensor's top edge.
    public var y: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// The rectangle `width` × `height` whose top-left corner is at (`x`, `y`).
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
    /// Width and height, without the offsets.
    public var size: Size { Size(width: width, height: height) }
    /// `WxH+X+Y` (X11 geometry form: `1080x1080+420+0`).
    public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

/// The dynamic aspect ratios a session can crop out of its sensor (Apple's
/// `AVCaptureAspectRatio`): the largest centred rectangle of that shape.
public enum AspectRatio: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    /// 1:1.
    case square = "1x1"
    /// 4:3, wider than tall.
    case landscape4x3 = "4x3"
    /// 3:4, taller than wide.
    case portrait3x4 = "3x4"
    /// 16:9, wider than tall.
    case landscape16x9 = "16x9"
    /// 9:16, taller than wide.
    case portrait9x16 = "9x16"

    /// Accepts `16x9`, `16:9` and `16/9`.
    public init?(parsing text: String) {
        let normal = String(text.lowercased().map { $0 == ":" || $0 == "/" ? "x" : $0 })
        self.init(rawValue: normal)
    }

    /// The raw value: `16x9`, `1x1`, …
    public var description: String { rawValue }

    /// Width and height of the ratio (16 and 9 for 16x9).
    public var components: (width: Int, height: Int) {
        switch self {
        case .square: return (1, 1)
        case .landscape4x3: return (4, 3)
        case .portrait3x4: return (3, 4)
        case .landscape16x9: return (16, 9)
        case .portrait9x16: return (9, 16)
        }
    }

    /// The order keys 1–5 select ratios in when recording live.
    public static let keyOrder: [AspectRatio] = [.landscape16x9, .portrait9x16, .square, .landscape4x3, .portrait3x4]

    /// The largest rectangle of this ratio inside `sensor`, centred, with even size and even
    /// offsets (so 4:2:0 chroma planes crop by whole samples). Where the exact ratio cannot be
    /// met with even offsets, the cropped side is a few pixels smaller, never larger.
    public func crop(in sensor: Size) -> CropRect {
        let (a, b) = components
        var w = sensor.width
        var h = sensor.height
        if sensor.width * b >= sensor.height * a {
            w = sensor.height * a / b   // sensor is wider than the ratio: keep the full height
        } else {
            h = sensor.width * b / a    // sensor is taller: keep the full width
        }
        w = Self.fit(w, within: sensor.width)
        h = Self.fit(h, within: sensor.height)
        return CropRect(x: (sensor.width - w) / 2, y: (sensor.height - h) / 2, width: w, height: h)
    }

    /// This ratio's crop of `sensor` (`crop(in:)`'s size) placed at `pan`: shares of the room
    /// it leaves each way (0.5, 0.5: centred, as `crop(in:)`), offsets even.
    public func crop(in sensor: Size, pan: (x: Double, y: Double)) -> CropRect {
        var c = crop(in: sensor)
        if pan.x == 0.5 && pan.y == 0.5 { return c }
        func place(_ room: Int, _ share: Double) -> Int { Int((Double(room) * min(1, max(0, share))).rounded()) & ~1 }
        c.x = place(sensor.width - c.width, pan.x)
        c.y = place(sensor.height - c.height, pan.y)
        return c
    }

    /// This ratio's crop of `sensor` (`crop(in:)`'s size) centred on `frame`'s centre as far as
    /// the sensor allows, offsets even: a photo of another ratio than the video's, taken where
    /// the video's crop was moved to (Center Stage's pan).
    public func crop(in sensor: Size, centredOn frame: CropRect) -> CropRect {
        var c = crop(in: sensor)
        let cx = frame.x + frame.width / 2, cy = frame.y + frame.height / 2
        c.x = min(max(0, cx - c.width / 2), sensor.width - c.width) & ~1
        c.y = min(max(0, cy - c.height / 2), sensor.height - c.height) & ~1
        return c
    }

    /// Rounds `length` down so that `(full - length)` is a multiple of 4: the length is even
    /// and the centred offset `(full - length) / 2` is even too.
    private static func fit(_ length: Int, within full: Int) -> Int {
        let margin = full - length
        let rounded = (margin + 3) / 4 * 4
        return full - rounded
    }
}
