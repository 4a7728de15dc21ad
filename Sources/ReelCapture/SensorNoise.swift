import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// Read-out noise of the synthetic sensor's still path (`--sensor-noise SIGMA`): zero-mean,
/// roughly Gaussian luma noise of standard deviation `sigma` (8-bit levels), the same for a
/// given frame index every time it is read, independent between frames.
///
/// The noise is applied where a still is read out of a frame (the photo output calls
/// `apply` on its copy), not to the video path: the sensor's pool buffers keep their clean
/// background, so the noise never accumulates, and video outputs stay as they were.
public struct SensorNoise: Sendable, Hashable {
    /// The standard deviation of the noise, in 8-bit luma levels.
    public let sigma: Double
    /// The sigmas `--sensor-noise` accepts.
    public static let range = 0.1...50.0

    /// Noise of standard deviation `sigma`.
    public init(sigma: Double) { self.sigma = sigma }

    /// 4096 samples of N(0, 1) × 16 (fixed point), from the inverse of the normal CDF at
    /// evenly spaced probabilities: shared by every frame.
    private static let table: [Int32] = (0..<4096).map { i in
        let p = (Double(i) + 0.5) / 4096
        return Int32((inverseNormal(p) * 16).rounded())
    }

    /// Acklam's rational approximation of the standard normal quantile (|error| < 1.2e-9).
    private static func inverseNormal(_ p: Double) -> Double {
        let a = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00]
        let b = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01]
        let c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00]
        let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
        let low = 0.02425
        if p < low {
            let q = (-2 * log(p)).squareRoot()
            return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        }
        if p > 1 - low {
            let q = (-2 * log(1 - p)).squareRoot()
            return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        }
        let q = p - 0.5, r = q * q
        return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    }

    /// Adds the noise of frame `frameIndex` to a luma plane (`width`×`height`, `stride`
    /// bytes a row), saturating at 0 and 255.
    public func apply(luma: UnsafeMutablePointer<UInt8>, width: Int, height: Int, stride: Int, frameIndex: Int) {
        let scale = Int32((sigma * 1024).rounded())   // table × scale >> 14 = N(0,1) × sigma
        Self.table.withUnsafeBufferPointer { t in
            for row in 0..<height {
                // xorshift64*, seeded by frame and sensor row.
                var s = UInt64(truncatingIfNeeded: frameIndex) &* 0x9E37_79B9_7F4A_7C15 ^ UInt64(row) &* 0xD1B5_4A32_D192_ED03 | 1
                for _ in 0..<2 { s ^= s >> 12; s ^= s << 25; s ^= s >> 27 }
                let line = luma + row * stride
                for x in 0..<width {
                    s ^= s >> 12; s ^= s << 25; s ^= s >> 27
                    let r = Int((s &* 0x2545_F491_4F6C_DD1D) >> 52)
                    let v = Int32(line[x]) + ((t[r] &* scale) >> 14)
                    line[x] = UInt8(clamping: v)
                }
            }
        }
    }
}
