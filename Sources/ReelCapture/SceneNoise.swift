/// The realistic scene's temporal sensor noise: a different grain every frame, the same for a
/// given frame index every time it is drawn, at the cost of one byte addition a sample.
///
/// Two precomputed streams of noise bytes (luma, and chroma: a quarter of a megabyte and
/// half that, small enough to stay in the cache) are built on first use. Each row of a frame
/// takes its noise from the stream at an offset hashed from the frame index, the row and the
/// plane — so rows and frames are independent, and drawing needs no random numbers.
///
/// A noise byte is `bias` + a roughly Gaussian value (σ `lumaSigma` or `chromaSigma`) clamped
/// to ±`bias`: always 0…2×bias. `SceneTexture` stores its samples less the bias, so the sum
/// is the picture plus zero-mean noise and never leaves a byte. Without noise, rows take a
/// stream of bias bytes (`flat`).
final class SceneNoise: @unchecked Sendable {   // immutable after init
    /// The largest luma noise magnitude and the bias of a luma noise byte.
    static let lumaBias: UInt8 = 8
    /// The largest chroma noise magnitude and the bias of a chroma noise byte.
    static let chromaBias: UInt8 = 6
    /// Standard deviations in 8-bit levels (before rounding and clamping): faint, because
    /// ProRes 422 HQ keeps every level of it (σ 0.3 alone on a flat picture costs 130 Mbit/s
    /// at 1080p30); more pushes prores_aw into its rate control band (289–372 Mbit/s).
    static let lumaSigma: Float = 0.25
    static let chromaSigma: Float = 0.2
    /// Distinct row offsets in each stream (powers of two).
    static let lumaSpan = 1 << 18
    static let chromaSpan = 1 << 17
    /// The longest row a stream serves (the largest sensor side).
    static let longestRow = SyntheticSource.sizeRange.upperBound

    /// The process's streams, built on first use (a few milliseconds).
    static let shared = SceneNoise()

    private let luma: UnsafeMutablePointer<UInt8>
    private let chroma: UnsafeMutablePointer<UInt8>
    private let flatLuma: UnsafeMutablePointer<UInt8>
    private let flatChroma: UnsafeMutablePointer<UInt8>

    private init() {
        var rng = SceneRandom(seed: 0x4E4F_4953_4500_0000)   // "NOISE"
        func stream(span: Int, sigma: Float, bias: UInt8) -> UnsafeMutablePointer<UInt8> {
            let count = span + Self.longestRow
            let s = UnsafeMutablePointer<UInt8>.allocate(capacity: count)
            let limit = Float(bias)
            for i in 0..<count {
                let n = min(max((sigma * rng.gaussian()).rounded(), -limit), limit)
                s[i] = UInt8(n + limit)
            }
            return s
        }
        luma = stream(span: Self.lumaSpan, sigma: Self.lumaSigma, bias: Self.lumaBias)
        chroma = stream(span: Self.chromaSpan, sigma: Self.chromaSigma, bias: Self.chromaBias)
        flatLuma = .allocate(capacity: Self.longestRow)
        flatLuma.initialize(repeating: Self.lumaBias, count: Self.longestRow)
        flatChroma = .allocate(capacity: Self.longestRow)
        flatChroma.initialize(repeating: Self.chromaBias, count: Self.longestRow)
    }

    deinit {
        luma.deallocate(); chroma.deallocate(); flatLuma.deallocate(); flatChroma.deallocate()
    }

    /// The noise bytes for `row` of `plane` (0 luma, 1 Cb, 2 Cr) of frame `frame`: at least
    /// `longestRow` of them.
    func row(frame: Int, row: Int, plane: Int) -> UnsafePointer<UInt8> {
        let key = UInt64(truncatingIfNeeded: frame) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: row << 2 | plane)
        let h = SceneRandom.mix(key)
        if plane == 0 { return UnsafePointer(luma + Int(h & UInt64(Self.lumaSpan - 1))) }
        return UnsafePointer(chroma + Int(h & UInt64(Self.chromaSpan - 1)))
    }

    /// Bias bytes only (no noise) for `plane`: at least `longestRow` of them.
    func flat(plane: Int) -> UnsafePointer<UInt8> {
        UnsafePointer(plane == 0 ? flatLuma : flatChroma)
    }
}
