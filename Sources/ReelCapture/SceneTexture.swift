import Synchronization

/// The realistic scene's still picture: a tileable (periodic) photographic-like texture that
/// `RealisticScene` pans across, built once per process and period, on first use.
///
/// It is a "dead leaves" picture, whose statistics are close to a photograph's (a 1/f
/// spectrum, sharp occluding edges at every scale): a ground of multi-octave noise (luma and
/// both chroma planes: light, shade and colour down to 16-pixel cells) and over it discs of
/// power-law sizes, each with its own colour and shading. Every value comes from
/// `SceneRandom` with a fixed seed: the texture is the same on every machine.
///
/// Calibration (`SyntheticScene.realistic`): at 1920×1080 30 fps ProRes 422 HQ (Reel's
/// prores_aw) writes about 245 Mbit/s of the texture alone; finer ground octaves or more
/// discs push it into prores_aw's rate control band (289–372 Mbit/s), where it no longer
/// follows the picture.
///
/// The planes are stored ready for `RealisticScene`'s one-pass copy: each sample is its
/// value less the noise's bias (`SceneNoise.lumaBias`, `chromaBias`), values kept within
/// 16…235 (luma) and 16…240 (chroma), so that adding a noise byte (0…2×bias) can never
/// carry out of a byte.
final class SceneTexture: @unchecked Sendable {   // immutable after init
    /// Side of the luma plane (a power of two); the chroma planes' side is half of it.
    let period: Int
    /// Luma, `period`² samples, rows `period` apart.
    let luma: UnsafeMutablePointer<UInt8>
    /// Cb and Cr, (`period`/2)² samples each.
    let cb: UnsafeMutablePointer<UInt8>
    let cr: UnsafeMutablePointer<UInt8>

    /// Ground noise amplitudes by cell size (luma pixels) — the large-scale light and shade.
    static let lumaGround: [(cell: Int, amplitude: Float)] = [(512, 50), (256, 35), (128, 25), (64, 16), (32, 8), (16, 4)]
    /// Ground colour amplitudes by cell size in chroma pixels.
    static let chromaGround: [(cell: Int, amplitude: Float)] = [(256, 14), (128, 10), (64, 7), (32, 4)]
    /// Discs per million luma pixels, and their radii (power law r⁻³ between the two).
    static let leavesPerMegapixel: Float = 150
    static let leafRadii: (min: Float, max: Float) = (4, 200)
    static let seed: UInt64 = 0x5245_454C_5343_454E   // "REELSCEN"

    /// The period for a sensor of side `side`: the smallest power of two of at least 2048
    /// that covers it, so that a frame never shows the same texel twice along a row.
    static func period(forSensorSide side: Int) -> Int {
        var p = 2048
        while p < side { p *= 2 }
        return p
    }

    private static let cache = Mutex<[Int: SceneTexture]>([:])

    /// The texture of `period`, built on the first call (on the caller's thread; callers for
    /// the same period wait for it) and kept for the life of the process.
    static func shared(period: Int) -> SceneTexture {
        cache.withLock { textures in
            if let t = textures[period] { return t }
            let t = SceneTexture(period: period)
            textures[period] = t
            return t
        }
    }

    /// Builds the texture (50–80 ms at 2048, about 0.2 s at 4096 in a release build).
    init(period p: Int) {
        precondition(p >= 64 && p & (p - 1) == 0, "the period is a power of two")
        period = p
        let c = p / 2
        var rng = SceneRandom(seed: Self.seed)
        var y = periodicNoise(side: p, octaves: Self.lumaGround, rng: &rng)
        var u = periodicNoise(side: c, octaves: Self.chromaGround, rng: &rng)
        var v = periodicNoise(side: c, octaves: Self.chromaGround, rng: &rng)
        for i in y.indices { y[i] += 125 }
        let leaves = Int(Self.leavesPerMegapixel * Float(p * p) / 1_000_000)
        let (rmin, rmax) = Self.leafRadii
        let inverseSquares = (low: 1 / (rmin * rmin), high: 1 / (rmax * rmax))
        for _ in 0..<leaves {
            let radius = 1 / (inverseSquares.low + rng.unit() * (inverseSquares.high - inverseSquares.low)).squareRoot()
            let x = Int(rng.next() % UInt64(p)), yc = Int(rng.next() % UInt64(p))
            let level = 30 + 190 * rng.unit()
            let slope = (x: 0.2 * rng.gaussian(), y: 0.2 * rng.gaussian())
            let tint = (u: 12 * rng.gaussian(), v: 12 * rng.gaussian())
            paintDisc(&y, side: p, x: x, y: yc, radius: radius, level: level, slope: slope)
            paintDisc(&u, side: c, x: x / 2, y: yc / 2, radius: radius / 2, level: tint.u, slope: (0, 0))
            paintDisc(&v, side: c, x: x / 2, y: yc / 2, radius: radius / 2, level: tint.v, slope: (0, 0))
        }
        luma = quantise(y, offset: 0, range: 16...235, bias: SceneNoise.lumaBias)
        cb = quantise(u, offset: 128, range: 16...240, bias: SceneNoise.chromaBias)
        cr = quantise(v, offset: 128, range: 16...240, bias: SceneNoise.chromaBias)
    }

    deinit {
        luma.deallocate(); cb.deallocate(); cr.deallocate()
    }

    /// Plane `index` (0 luma, 1 Cb, 2 Cr): its first sample and its side (also its stride).
    func plane(_ index: Int) -> (base: UnsafePointer<UInt8>, side: Int) {
        switch index {
        case 0: return (UnsafePointer(luma), period)
        case 1: return (UnsafePointer(cb), period / 2)
        default: return (UnsafePointer(cr), period / 2)
        }
    }
}

/// A periodic `side`×`side` field (side a power of two) of multi-octave noise: random values
/// on the coarsest grid, doubled in resolution by linear interpolation level by level, each
/// level adding its own random values of `octaves`' amplitude for its cell size.
private func periodicNoise(side: Int, octaves: [(cell: Int, amplitude: Float)], rng: inout SceneRandom) -> [Float] {
    let coarsest = octaves.map(\.cell).max() ?? 1
    var n = max(1, side / coarsest)
    var field = [Float](repeating: 0, count: n * n)
    while true {
        let cell = side / n
        if let amplitude = octaves.first(where: { $0.cell == cell })?.amplitude {
            field.withUnsafeMutableBufferPointer { f in
                for i in 0..<f.count { f[i] += amplitude * rng.signed() }
            }
        }
        if n == side { return field }
        field = doubled(field, side: n)
        n *= 2
    }
}

/// `field` (periodic, `side`² values) at twice the resolution, by linear interpolation.
private func doubled(_ field: [Float], side n: Int) -> [Float] {
    let m = 2 * n, wrap = n - 1
    var out = [Float](repeating: 0, count: m * m)
    field.withUnsafeBufferPointer { s in
        out.withUnsafeMutableBufferPointer { o in
            let src = s.baseAddress!, dst = o.baseAddress!
            for r in 0..<n {
                let from = src + r * n, to = dst + 2 * r * m
                for c in 0..<n {
                    let a = from[c], b = from[(c + 1) & wrap]
                    to[2 * c] = a
                    to[2 * c + 1] = (a + b) * 0.5
                }
            }
            for r in 0..<n {
                let above = dst + 2 * r * m, below = dst + 2 * ((r + 1) & wrap) * m, mid = dst + (2 * r + 1) * m
                for x in 0..<m { mid[x] = (above[x] + below[x]) * 0.5 }
            }
        }
    }
    return out
}

/// Paints a disc of `radius` centred on (`x`, `y`), wrapping at the field's edges: `level`
/// at its centre, shaded along `slope` (per pixel).
private func paintDisc(_ field: inout [Float], side: Int, x: Int, y: Int, radius: Float, level: Float, slope: (x: Float, y: Float)) {
    let r = Int(radius), wrap = side - 1
    guard r > 0 else { return }
    field.withUnsafeMutableBufferPointer { f in
        let base = f.baseAddress!
        for dy in -r...r {
            let half = Int((radius * radius - Float(dy * dy)).squareRoot())
            let row = base + ((y + dy) & wrap) * side
            let rowLevel = level + slope.y * Float(dy)
            for dx in -half...half { row[(x + dx) & wrap] = rowLevel + slope.x * Float(dx) }
        }
    }
}

/// Rounds `field` + `offset` into bytes clamped to `range`, less `bias` (see `SceneTexture`).
private func quantise(_ field: [Float], offset: Float, range: ClosedRange<UInt8>, bias: UInt8) -> UnsafeMutablePointer<UInt8> {
    let out = UnsafeMutablePointer<UInt8>.allocate(capacity: field.count)
    let low = Float(range.lowerBound), high = Float(range.upperBound)
    field.withUnsafeBufferPointer { f in
        for i in 0..<f.count {
            let v = min(max((f[i] + offset).rounded(), low), high)
            out[i] = UInt8(v) - bias
        }
    }
    return out
}
