import CPeople
import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// One person of the people scene: a head-and-shoulders portrait (`Fixtures/people`, built
/// into `CPeople`) scaled to a height in pixels, with an elliptical outline, and where its
/// face is in it. Scaled once per kind and height in the process (`shared`), bilinear.
struct PersonSprite: Sendable {
    /// The portraits.
    enum Kind: Sendable, Hashable {
        /// Eileen Collins (NASA, public domain): frontal.
        case astronaut
        /// The same, mirrored left to right: a second frontal face.
        case astronautMirrored
        /// The cameraman (CC0): his face in profile.
        case cameraman

        /// The portrait's size, its face box in it, and its planes (4:2:0).
        var source: (size: Size, face: CropRect, facing: SceneFace.Facing, bytes: UnsafeBufferPointer<UInt8>) {
            switch self {
            case .astronaut, .astronautMirrored:
                let face = self == .astronaut ? CropRect(x: 73, y: 66, width: 98, height: 120) : CropRect(x: 240 - 73 - 98, y: 66, width: 98, height: 120)
                return (Size(width: 240, height: 300), face, .frontal,
                        portraitBytes(reel_people_astronaut))
            case .cameraman:
                return (Size(width: 220, height: 220), CropRect(x: 58, y: 42, width: 80, height: 110), .profile,
                        portraitBytes(reel_people_cameraman))
            }
        }
    }

    /// The scaled portrait's size (even).
    let size: Size
    /// Its face box, in its own pixels.
    let face: CropRect
    let facing: SceneFace.Facing
    /// Planes: luma (`size`), then U and V (half each way).
    let planes: [[UInt8]]
    /// Each luma row's span inside the outline: (first column, end column).
    let spans: [(Int, Int)]

    private static let cache = Mutex<[String: PersonSprite]>([:])

    /// The portrait `kind` scaled to `height` pixels (made on the first call).
    static func shared(_ kind: Kind, height: Int) -> PersonSprite {
        let key = "\(kind)-\(height)"
        if let s = cache.withLock({ $0[key] }) { return s }
        let s = PersonSprite(kind, height: height)
        cache.withLock { $0[key] = s }
        return s
    }

    private init(_ kind: Kind, height: Int) {
        let src = kind.source
        let scale = Double(height) / Double(src.size.height)
        let w = Int((Double(src.size.width) * scale).rounded()) & ~1, h = height & ~1
        size = Size(width: w, height: h)
        face = CropRect(x: Int((Double(src.face.x) * scale).rounded()), y: Int((Double(src.face.y) * scale).rounded()),
                        width: Int((Double(src.face.width) * scale).rounded()), height: Int((Double(src.face.height) * scale).rounded()))
        facing = src.facing
        let mirrored = kind == .astronautMirrored
        let sw = src.size.width, sh = src.size.height
        let luma = sw * sh, chroma = (sw / 2) * (sh / 2)
        func plane(_ offset: Int, _ pw: Int, _ ph: Int, _ ow: Int, _ oh: Int) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: ow * oh)
            for y in 0..<oh {
                let fy = min(Double(ph - 1), max(0, (Double(y) + 0.5) * Double(ph) / Double(oh) - 0.5))
                let y0 = Int(fy), y1 = min(ph - 1, y0 + 1), ty = fy - Double(y0)
                for x in 0..<ow {
                    var fx = min(Double(pw - 1), max(0, (Double(x) + 0.5) * Double(pw) / Double(ow) - 0.5))
                    if mirrored { fx = Double(pw - 1) - fx }
                    let x0 = Int(fx), x1 = min(pw - 1, x0 + 1), tx = fx - Double(x0)
                    func at(_ xx: Int, _ yy: Int) -> Double { Double(src.bytes[offset + yy * pw + xx]) }
                    let v = (at(x0, y0) * (1 - tx) + at(x1, y0) * tx) * (1 - ty) + (at(x0, y1) * (1 - tx) + at(x1, y1) * tx) * ty
                    out[y * ow + x] = UInt8(min(255, max(0, v.rounded())))
                }
            }
            return out
        }
        planes = [plane(0, sw, sh, w, h), plane(luma, sw / 2, sh / 2, w / 2, h / 2), plane(luma + chroma, sw / 2, sh / 2, w / 2, h / 2)]
        // The outline: the ellipse inscribed in the portrait, rows of even pairs (so chroma
        // rows follow luma rows exactly).
        let rx = Double(w) / 2, ry = Double(h) / 2
        spans = (0..<h).map { y in
            let dy = (Double(y & ~1) + 1 - ry) / ry
            let half = dy * dy >= 1 ? 0 : Int((rx * (1 - dy * dy).squareRoot()).rounded()) & ~1
            return (w / 2 - half, w / 2 + half)
        }
    }

    /// Copies the portrait inside its outline into `buffer` with its top-left at (`x`, `y`)
    /// (even), clipped to the buffer.
    func draw(into buffer: PixelBuffer, x: Int, y: Int) {
        let bw = buffer.size.width, bh = buffer.size.height
        for p in 0..<3 {
            let shift = p == 0 ? 0 : 1
            let (out, stride) = buffer.plane(p)
            let pw = size.width >> shift, ox = x >> shift, oy = y >> shift
            let rows = size.height >> shift, limitX = bw >> shift, limitY = bh >> shift
            planes[p].withUnsafeBufferPointer { src in
                for r in 0..<rows {
                    let row = oy + r
                    guard row >= 0, row < limitY else { continue }
                    let span = spans[r << shift]
                    let a = max(span.0 >> shift, -ox), b = min(span.1 >> shift, limitX - ox)
                    guard b > a else { continue }
                    (out + row * stride + ox + a).update(from: src.baseAddress! + r * pw + a, count: b - a)
                }
            }
        }
    }
}

/// A portrait's bytes, as `CPeople` gives them (static data: valid for the process).
private func portraitBytes(_ get: (UnsafeMutablePointer<Int>) -> UnsafePointer<UInt8>?) -> UnsafeBufferPointer<UInt8> {
    var count = 0
    return UnsafeBufferPointer(start: get(&count), count: count)
}
