/// The realistic scene's random numbers: SplitMix64, so that the texture and the noise are
/// the same on every machine and every run (`SceneTexture`, `SceneNoise`).
struct SceneRandom {
    private var state: UInt64

    /// A generator whose sequence depends only on `seed`.
    init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Float { Float(next() >> 40) * (1 / 16_777_216) }

    /// Uniform in [-1, 1).
    mutating func signed() -> Float { unit() * 2 - 1 }

    /// Roughly N(0, 1): the sum of four uniforms, centred and scaled (an Irwin–Hall bell,
    /// bounded at ±3.46, which is what the scene wants: no rare huge values).
    mutating func gaussian() -> Float { (unit() + unit() + unit() + unit() - 2) * 1.732_050_8 }

    /// SplitMix64's finaliser: a well-mixed hash of `z` (frame and row numbers into noise offsets).
    static func mix(_ z: UInt64) -> UInt64 {
        var z = z
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
