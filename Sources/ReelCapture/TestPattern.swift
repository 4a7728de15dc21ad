import ReelCore
import ReelMedia
#if canImport(Glibc)
import Glibc
#endif

/// The synthetic sensor's picture, drawn into 4:2:0 planar buffers: a static background
/// (drawn once per pool buffer) and, per frame, the frame-index barcode, the frame number
/// in large seven-segment digits and a ring of 30 "LEDs" that lights one per frame.
///
/// Everything per-frame lies inside the centre square that every ratio crop keeps.
struct TestPattern {
    let sensor: Size
    /// Side of the square every crop keeps (the short side of a 16x9 crop).
    let keep: Int
    static let ledCount = 30
    static let ledSize = 24
    static let digitWidth = 48
    static let digitHeight = 80
    static let digitStroke = 10
    static let digitCount = 7

    init(sensor: Size) {
        self.sensor = sensor
        let smallest = AspectRatio.allCases.map { $0.crop(in: sensor) }.flatMap { [$0.width, $0.height] }.min() ?? sensor.width
        keep = smallest
    }

    var cx: Int { sensor.width / 2 }
    var cy: Int { sensor.height / 2 }

    /// Background: a soft gradient, outlines of every ratio's crop, and a dark panel in the centre square.
    func drawBackground(_ buffer: PixelBuffer) {
        let (y, ys) = buffer.plane(0)
        let (u, us) = buffer.plane(1)
        let (v, vs) = buffer.plane(2)
        let w = sensor.width, h = sensor.height
        for row in 0..<h {
            let line = y + row * ys
            for col in 0..<w { line[col] = UInt8(70 + (col + row) * 90 / (w + h)) }
        }
        for row in 0..<(h / 2) {
            for col in 0..<(w / 2) {
                u[row * us + col] = UInt8(128 + (col * 2 - w / 2) * 50 / w)
                v[row * vs + col] = UInt8(128 + (row * 2 - h / 2) * 50 / h)
            }
        }
        for ratio in AspectRatio.allCases {
            let c = ratio.crop(in: sensor)
            outline(buffer, c, luma: 200, thickness: 4)
        }
        fill(buffer, x: cx - keep / 2 + 8, y: cy - keep / 2 + 8, width: keep - 16, height: keep - 16, luma: 40, u: 128, v: 128)
    }

    /// The per-frame parts.
    func drawFrame(_ buffer: PixelBuffer, index: Int, leds: Bool = true) {
        let (y, ys) = buffer.plane(0)
        FrameBarcode.draw(index: index, luma: y, stride: ys, centerX: cx, centerY: cy)
        drawDigits(buffer, index: index)
        if leds { drawLEDs(buffer, index: index) }
    }

    /// The LED ring alone, frame `index`'s LED lit.
    func drawLEDs(_ buffer: PixelBuffer, index: Int) { drawLEDs(buffer, lit: index % Self.ledCount) }

    /// Every rectangle `drawFrame` paints, each painted whole (the barcode, the digits'
    /// panel, the LEDs; even corners and sizes): copying them copies every per-frame part.
    var partRects: [PixelRect] {
        [PixelRect(x: cx - FrameBarcode.width / 2, y: cy - FrameBarcode.height / 2, width: FrameBarcode.width, height: FrameBarcode.height),
         digitPanel] + (0..<Self.ledCount).map(led)
    }

    /// Where LED `i` of the ring sits.
    private func led(_ i: Int) -> PixelRect {
        let radius = Double(keep) * 0.40
        let angle = Double(i) / Double(Self.ledCount) * 2 * Double.pi - Double.pi / 2
        let x = cx + Int((radius * cos(angle)).rounded()) - Self.ledSize / 2
        let y = cy + Int((radius * sin(angle)).rounded()) - Self.ledSize / 2
        return PixelRect(x: x & ~1, y: y & ~1, width: Self.ledSize, height: Self.ledSize)
    }

    private static let digitGap = 12

    /// The dark panel behind the digits (the digits start 8 pixels in).
    private var digitPanel: PixelRect {
        let n = Self.digitCount
        let total = n * Self.digitWidth + (n - 1) * Self.digitGap
        let x0 = (cx - total / 2) & ~1
        let y0 = (cy - FrameBarcode.height / 2 - 32 - Self.digitHeight) & ~1
        return PixelRect(x: x0 - 8, y: y0 - 8, width: total + 16, height: Self.digitHeight + 16)
    }

    private func drawLEDs(_ buffer: PixelBuffer, lit: Int) {
        for i in 0..<Self.ledCount {
            let r = led(i)
            if i == lit {
                fill(buffer, x: r.x, y: r.y, width: r.width, height: r.height, luma: 200, u: 90, v: 230)
            } else {
                fill(buffer, x: r.x, y: r.y, width: r.width, height: r.height, luma: 60, u: 120, v: 140)
            }
        }
    }

    private func drawDigits(_ buffer: PixelBuffer, index: Int) {
        let n = Self.digitCount
        let gap = Self.digitGap
        let panel = digitPanel
        let x0 = panel.x + 8, y0 = panel.y + 8
        fill(buffer, x: panel.x, y: panel.y, width: panel.width, height: panel.height, luma: 30, u: 128, v: 128)
        var value = index
        for pos in stride(from: n - 1, through: 0, by: -1) {
            let digit = value % 10
            value /= 10
            if value == 0 && digit == 0 && pos < n - 1 { continue }   // no leading zeros
            drawDigit(buffer, digit, x: x0 + pos * (Self.digitWidth + gap), y: y0)
        }
    }

    /// Segments a–g of a seven-segment digit.
    private static let segments: [[Bool]] = [
        [true, true, true, true, true, true, false], [false, true, true, false, false, false, false],
        [true, true, false, true, true, false, true], [true, true, true, true, false, false, true],
        [false, true, true, false, false, true, true], [true, false, true, true, false, true, true],
        [true, false, true, true, true, true, true], [true, true, true, false, false, false, false],
        [true, true, true, true, true, true, true], [true, true, true, true, false, true, true],
    ]

    private func drawDigit(_ buffer: PixelBuffer, _ digit: Int, x: Int, y: Int) {
        let w = Self.digitWidth, h = Self.digitHeight, t = Self.digitStroke
        let half = h / 2
        let rects = [
            (x, y, w, t), (x + w - t, y, t, half), (x + w - t, y + half, t, half - 0),
            (x, y + h - t, w, t), (x, y + half, t, half), (x, y, t, half), (x, y + half - t / 2, w, t),
        ]
        for (i, on) in Self.segments[digit].enumerated() where on {
            let r = rects[i]
            fill(buffer, x: r.0, y: r.1, width: r.2, height: r.3, luma: 235, u: 128, v: 128)
        }
    }

    func fill(_ buffer: PixelBuffer, x: Int, y: Int, width: Int, height: Int, luma: UInt8, u: UInt8, v: UInt8) {
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(sensor.width, x + width), y1 = min(sensor.height, y + height)
        guard x1 > x0, y1 > y0 else { return }
        let (py, ys) = buffer.plane(0)
        for row in y0..<y1 { (py + row * ys + x0).update(repeating: luma, count: x1 - x0) }
        let (pu, us) = buffer.plane(1)
        let (pv, vs) = buffer.plane(2)
        let cx0 = x0 / 2, cx1 = (x1 + 1) / 2
        for row in (y0 / 2)..<((y1 + 1) / 2) {
            (pu + row * us + cx0).update(repeating: u, count: cx1 - cx0)
            (pv + row * vs + cx0).update(repeating: v, count: cx1 - cx0)
        }
    }

    private func outline(_ buffer: PixelBuffer, _ c: CropRect, luma: UInt8, thickness t: Int) {
        let (py, ys) = buffer.plane(0)
        func hline(_ row: Int) {
            guard row >= 0, row < sensor.height else { return }
            (py + row * ys + c.x).update(repeating: luma, count: c.width)
        }
        func vline(_ col: Int) {
            guard col >= 0, col < sensor.width else { return }
            for row in c.y..<(c.y + c.height) { py[row * ys + col] = luma }
        }
        for k in 0..<t {
            hline(c.y + k); hline(c.y + c.height - 1 - k)
            vline(c.x + k); vline(c.x + c.width - 1 - k)
        }
    }
}

/// A rectangle of a sensor's picture, in pixels.
struct PixelRect: Sendable {
    var x: Int, y: Int, width: Int, height: Int
}
