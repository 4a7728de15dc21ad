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
