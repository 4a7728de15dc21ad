import ReelCore
import ReelMedia

/// The synthetic sensor's realistic picture (`SyntheticScene.realistic`), drawn whole into
/// every frame: `SceneTexture` panned a few pixels a frame, plus `SceneNoise`'s temporal
/// noise, plus the per-frame parts of `TestPattern` (barcode, digits, LEDs) on quiet ground.
///
/// One pass per row does it all: each output row is the texture's row at the pan offset
/// (wrapping: the texture is periodic) plus a row of noise bytes, added eight at a time as
/// 64-bit words (the texture's bias makes a carry between bytes impossible). That is about
/// a memory copy's cost: the scene has no background to draw once and keep.
struct RealisticScene: Sendable {
    let sensor: Size
    /// Whether frames carry temporal noise (off: the texture and motion alone).
    let temporalNoise: Bool
    /// Draws the per-frame parts, in the same places as on the test pattern.
    let pattern: TestPattern
    /// The pan, in luma pixels a frame (even: the chroma planes move by whole samples).
    static let pan = (x: 4, y: 2)
    /// The margin of flat ground around the barcode, in pixels.
    static let quietMargin = 16

    init(sensor: Size, temporalNoise: Bool) {
        precondition(sensor.width <= SceneNoise.longestRow && sensor.width % 2 == 0 && sensor.height % 2 == 0)
        self.sensor = sensor
        self.temporalNoise = temporalNoise
        pattern = TestPattern(sensor: sensor)
    }

    /// The texture this sensor pans across (built on the first call in the process).
    var texture: SceneTexture {
        SceneTexture.shared(period: SceneTexture.period(forSensorSide: max(sensor.width, sensor.height)))
    }

    /// Builds what drawing needs (the texture, the noise streams) if the process has not yet:
    /// call it off the capture thread before the first frame, so the first frame costs what
    /// every other frame costs.
    func prepare() {
        _ = texture
        _ = SceneNoise.shared
    }

    /// Where frame `index` shows the texture: its top-left sample, in luma pixels (even),
    /// within one period.
    func panOffset(index: Int) -> (x: Int, y: Int) {
        let p = SceneTexture.period(forSensorSide: max(sensor.width, sensor.height))
        let i = index % p   // the offset repeats every `p` frames at the latest
        return ((Self.pan.x * i) & (p - 1), (Self.pan.y * i) & (p - 1))
    }

    /// Draws frame `index` into `buffer` (4:2:0 planar, the sensor's size): every sample.
    func draw(_ buffer: PixelBuffer, index: Int) {
        let texture = self.texture
        let noise = SceneNoise.shared
        let offset = panOffset(index: index)
        for plane in 0..<3 {
            let shift = plane == 0 ? 0 : 1
            let width = sensor.width >> shift, height = sensor.height >> shift
            let x0 = offset.x >> shift, y0 = offset.y >> shift
            let (out, stride) = buffer.plane(plane)
            let (tex, side) = texture.plane(plane)
            let wrap = side - 1
            for row in 0..<height {
                let texRow = tex + ((y0 + row) & wrap) * side
                let grain = temporalNoise ? noise.row(frame: index, row: row, plane: plane) : noise.flat(plane: plane)
                let line = out + row * stride
                var column = 0, x = x0
                while column < width {
                    let run = min(width - column, side - x)
                    addBytes(line + column, texRow + x, grain + column, count: run)
                    column += run
                    x = 0
                }
            }
        }
        drawParts(buffer, index: index)
    }

    /// The barcode on flat ground (so that lossy codecs leave its cells clean), then the
    /// digits (on their own panel) and the LEDs.
    private func drawParts(_ buffer: PixelBuffer, index: Int) {
        let m = Self.quietMargin
        pattern.fill(buffer, x: (pattern.cx - FrameBarcode.width / 2 - m) & ~1, y: (pattern.cy - FrameBarcode.height / 2 - m) & ~1,
                     width: FrameBarcode.width + 2 * m, height: FrameBarcode.height + 2 * m, luma: 110, u: 128, v: 128)
        pattern.drawFrame(buffer, index: index)
    }
}

/// `out[i] = a[i] + b[i]` for `count` bytes whose sums never exceed 255: eight bytes at a
/// time as 64-bit words (no byte can carry into the next), the rest one by one.
@inline(__always)
private func addBytes(_ out: UnsafeMutablePointer<UInt8>, _ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, count: Int) {
    let o = UnsafeMutableRawPointer(out), ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b)
    let words = count & ~7
    var i = 0
    while i < words {
        o.storeBytes(of: ra.loadUnaligned(fromByteOffset: i, as: UInt64.self) &+ rb.loadUnaligned(fromByteOffset: i, as: UInt64.self),
                     toByteOffset: i, as: UInt64.self)
        i += 8
    }
    while i < count {
        out[i] = a[i] &+ b[i]
        i += 1
    }
}
