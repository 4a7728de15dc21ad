import ReelCore
import ReelMedia

extension SensorOrientation {
    /// Quarter turns clockwise a viewer applies to show the read-out upright (portrait: 1,
    /// landscapeLeft: 2): a video's display matrix, as `exifOrientation` is a photo's.
    public var displayQuarterTurns: Int { (4 - readoutQuarterTurns) % 4 }
}

/// Turns the square `side`×`side` region at (`x`, `y`) of each plane of a 4:2:0 planar
/// buffer `turns` × 90° clockwise from `source` into the same region of `destination`
/// (same size and format; `x`, `y` and `side` even). A square region centred in a square
/// sensor turns onto itself: the synthetic sensor's mounting (`SyntheticSource(mounting:)`).
func rotateSquare(from source: PixelBuffer, into destination: PixelBuffer, x: Int, y: Int, side: Int, turns: Int) {
    let t = ((turns % 4) + 4) % 4
    for plane in 0..<3 {
        let shift = plane == 0 ? 0 : 1
        let n = side >> shift, ox = x >> shift, oy = y >> shift
        let (s, ss) = source.plane(plane), (d, ds) = destination.plane(plane)
        let src = s + oy * ss + ox, dst = d + oy * ds + ox
        switch t {
        case 0:
            for row in 0..<n { (dst + row * ds).update(from: src + row * ss, count: n) }
        case 1: // clockwise: (c, r) -> (n-1-r, c)
            for r in 0..<n {
                let line = src + r * ss, col = n - 1 - r
                for c in 0..<n { dst[c * ds + col] = line[c] }
            }
        case 2:
            for r in 0..<n {
                let line = src + r * ss, out = dst + (n - 1 - r) * ds
                for c in 0..<n { out[n - 1 - c] = line[c] }
            }
        default: // counter-clockwise: (c, r) -> (r, n-1-c)
            for r in 0..<n {
                let line = src + r * ss
                for c in 0..<n { dst[(n - 1 - c) * ds + r] = line[c] }
            }
        }
    }
}

/// Turns the rectangle `rect` (even corner and sizes) of each plane of a square 4:2:0 planar
/// buffer `turns` × 90° clockwise about the buffer's centre, from `source` into wherever it
/// lands in `destination` (same size and format): a frame's parts drawn upright, placed into a
/// mounted sensor's read-out without turning the whole picture.
func rotateRect(from source: PixelBuffer, into destination: PixelBuffer, _ rect: PixelRect, turns: Int) {
    let t = ((turns % 4) + 4) % 4
    for plane in 0..<3 {
        let shift = plane == 0 ? 0 : 1
        let n = source.size.width >> shift
        let x0 = max(0, rect.x >> shift), y0 = max(0, rect.y >> shift)
        let x1 = min(n, (rect.x + rect.width) >> shift), y1 = min(n, (rect.y + rect.height) >> shift)
        guard x1 > x0, y1 > y0 else { continue }
        let (s, ss) = source.plane(plane), (d, ds) = destination.plane(plane)
        for r in y0..<y1 {
            let line = s + r * ss
            switch t {
            case 0: (d + r * ds + x0).update(from: line + x0, count: x1 - x0)
            case 1: for c in x0..<x1 { d[c * ds + n - 1 - r] = line[c] }
            case 2: for c in x0..<x1 { d[(n - 1 - r) * ds + n - 1 - c] = line[c] }
            default: for c in x0..<x1 { d[(n - 1 - c) * ds + r] = line[c] }
            }
        }
    }
}
