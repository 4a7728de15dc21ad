import ReelCore
import ReelMedia

/// The synthetic sensor's realistic picture (`SyntheticScene.realistic`), drawn whole into
/// every frame: `SceneTexture` panned a few pixels a frame, `SceneObjects`' discs moving
/// over it, `SceneNoise`'s temporal noise over both, and the per-frame parts of
/// `TestPattern` (barcode, digits, LEDs) on quiet ground.
///
/// One pass per row does it all: each output row is the texture's row at the pan offset
/// (wrapping: the texture is periodic) plus a row of noise bytes, added eight at a time as
/// 64-bit words (the texture's bias makes a carry between bytes impossible). That is about
/// a memory copy's cost: the scene has no background to draw once and keep. The discs are
/// drawn the same way over the rows they cover, with the same rows of noise.
struct RealisticScene: Sendable {
    let sensor: Size
    /// Whether frames carry temporal noise (off: the texture and motion alone).
    let temporalNoise: Bool
    /// Draws the per-frame parts, in the same places as on the test pattern.
    let pattern: TestPattern
    /// The moving discs.
    let objects: SceneObjects
    /// The people drawn over the texture (`SyntheticScene.people`), or nil.
    let people: PeopleScene?
    /// The camera shake that moves the world (texture, discs, people), none by default.
    let shake: SceneShake
    /// The pan, in luma pixels a frame (even: the chroma planes move by whole samples).
    static let pan = (x: 4, y: 2)
    /// The margin of flat ground around the barcode, in pixels.
    static let quietMargin = 16

    init(sensor: Size, temporalNoise: Bool, people: Bool = false, shake: SceneShake = SceneShake(amplitude: 0)) {
        precondition(sensor.width <= SceneNoise.longestRow && sensor.width % 2 == 0 && sensor.height % 2 == 0)
        self.sensor = sensor
        self.temporalNoise = temporalNoise
        pattern = TestPattern(sensor: sensor)
        objects = SceneObjects(sensor: sensor)
        self.people = people ? PeopleScene(sensor: sensor, shake: shake) : nil
        self.shake = shake
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
    /// within one period; the shake moves the world by its offset, so the texture is read
    /// from that much before.
    func panOffset(index: Int) -> (x: Int, y: Int) {
        let p = SceneTexture.period(forSensorSide: max(sensor.width, sensor.height))
        let i = index % p   // the offset repeats every `p` frames at the latest
        let s = shake.offset(index: index)
        return ((Self.pan.x * i - s.x) & (p - 1), (Self.pan.y * i - s.y) & (p - 1))
    }

    /// Draws frame `index` into `buffer` (4:2:0 planar, the sensor's size): every sample.
    func draw(_ buffer: PixelBuffer, index: Int) {
        drawScene(buffer, index: index)
        if let people {
            // The people stand in front of the LED ring, behind the barcode and the digits.
            pattern.drawLEDs(buffer, index: index)
            people.draw(buffer, index: index)
            drawParts(buffer, index: index, leds: false)
        } else {
            drawParts(buffer, index: index)
        }
    }

    /// Draws frame `index` for a sensor mounted turned (`turns` × 90° clockwise: its
    /// read-out): the scene, which has no up, straight into `buffer`; the per-frame parts
    /// upright into `scratch` (the same size), whence their rectangles are turned into place
    /// — a few percent of the samples, where turning the whole frame costs ~12 ms at 1920.
    func draw(_ buffer: PixelBuffer, index: Int, turns: Int, scratch: PixelBuffer) {
        drawScene(buffer, index: index)
        drawParts(scratch, index: index)
        for rect in [quietZone] + pattern.partRects { rotateRect(from: scratch, into: buffer, rect, turns: turns) }
    }

    /// The texture at the pan offset, the discs, and the noise over both.
    private func drawScene(_ buffer: PixelBuffer, index: Int) {
        let texture = self.texture
        let noise = SceneNoise.shared
        let offset = panOffset(index: index)
        let moved = shake.offset(index: index)
        for plane in 0..<3 {
            let shift = plane == 0 ? 0 : 1
            let width = sensor.width >> shift, height = sensor.height >> shift
            let x0 = offset.x >> shift, y0 = offset.y >> shift
            let (out, stride) = buffer.plane(plane)
            let (tex, side) = texture.plane(plane)
            let wrap = side - 1
            func grain(_ row: Int) -> UnsafePointer<UInt8> {
                temporalNoise ? noise.row(frame: index, row: row, plane: plane) : noise.flat(plane: plane)
            }
            for row in 0..<height {
                copyRun(out + row * stride, tex + ((y0 + row) & wrap) * side, side: side, from: x0, count: width, grain: grain(row))
            }
            for disc in objects.discs {
                let centre = disc.position(index: index)
                let cx = (centre.x + moved.x) >> shift, cy = (centre.y + moved.y) >> shift
                let spans = plane == 0 ? disc.lumaSpans : disc.chromaSpans
                let r = spans.count / 2
                let sx = disc.source.x >> shift, sy = disc.source.y >> shift
                for dy in -r...r {
                    let row = cy + dy
                    guard row >= 0, row < height else { continue }
                    let half = spans[dy + r]
                    let left = max(0, cx - half), right = min(width, cx + half + 1)
                    guard right > left else { continue }
                    copyRun(out + row * stride + left, tex + ((sy + dy) & wrap) * side, side: side,
                            from: (sx + left - cx) & wrap, count: right - left, grain: grain(row) + left)
                }
            }
        }
    }

    /// The flat ground around the barcode.
    private var quietZone: PixelRect {
        let m = Self.quietMargin
        return PixelRect(x: (pattern.cx - FrameBarcode.width / 2 - m) & ~1, y: (pattern.cy - FrameBarcode.height / 2 - m) & ~1,
                         width: FrameBarcode.width + 2 * m, height: FrameBarcode.height + 2 * m)
    }

    /// The barcode on flat ground (so that lossy codecs leave its cells clean), then the
    /// digits (on their own panel) and the LEDs.
    private func drawParts(_ buffer: PixelBuffer, index: Int, leds: Bool = true) {
        let q = quietZone
        pattern.fill(buffer, x: q.x, y: q.y, width: q.width, height: q.height, luma: 110, u: 128, v: 128)
        pattern.drawFrame(buffer, index: index, leds: leds)
    }
}

/// Writes `count` samples of the texture row `texRow` (`side` samples, periodic) from column
/// `x` on, each plus its byte of `grain`, to `line`.
@inline(__always)
private func copyRun(_ line: UnsafeMutablePointer<UInt8>, _ texRow: UnsafePointer<UInt8>, side: Int, from x: Int, count: Int,
                     grain: UnsafePointer<UInt8>) {
    var done = 0, x = x
    while done < count {
        let run = min(count - done, side - x)
        addBytes(line + done, texRow + x, grain + done, count: run)
        done += run
        x = 0
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
