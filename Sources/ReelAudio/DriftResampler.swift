/// Puts a device's sound on the session clock at the nominal rate: each output sample is read
/// from the device's samples at a position on them — cubic (Catmull-Rom) interpolation between
/// the four around it — that advances by `step` input frames per output frame.
///
/// The step is a Double, changed as often as wanted, so that a correction of a few ppm is as
/// fine as one of a thousand; a tone comes out clean (a 1 kHz tone at 48 kHz is interpolated
/// well below the 16-bit noise floor) and a click's mark keeps more than half its height at
/// any phase.
public struct DriftResampler: Sendable {
    /// Samples per frame.
    public let channels: Int
    /// Input frames per output frame (1: none added or removed).
    public var step: Double = 1
    /// Input samples from input frame `bufferStart` on (interleaved).
    private var buffer: [Float] = []
    private var bufferStart: Int64 = 0
    /// Where the next output frame is read, in input frames.
    public private(set) var position: Double = 0
    /// Input frames given.
    public private(set) var framesIn: Int64 = 0
    /// Output frames made.
    public private(set) var framesOut: Int64 = 0

    /// A resampler of `channels` interleaved channels at step 1.
    public init(channels: Int) { self.channels = channels }

    /// Takes `input` (interleaved) and returns the output frames it completes.
    public mutating func process(_ input: UnsafeBufferPointer<Int16>) -> [Int16] {
        buffer.reserveCapacity(buffer.count + input.count)
        for s in input { buffer.append(Float(s)) }
        framesIn += Int64(input.count / channels)
        var out: [Int16] = []
        out.reserveCapacity(Int(Double(input.count) / max(0.5, step)) + 8 * channels)
        // Output frame at `position` needs input frames ⌊position⌋ − 1 … ⌊position⌋ + 2.
        while position + 2 < Double(framesIn) {
            let i = Int64(position.rounded(.down))
            let f = Float(position - Double(i))
            for c in 0..<channels {
                func x(_ k: Int64) -> Float {
                    let idx = Int(max(k, bufferStart) - bufferStart)
                    return buffer[idx * channels + c]
                }
                let p0 = x(i - 1), p1 = x(i), p2 = x(i + 1), p3 = x(i + 2)
                let a = -0.5 * p0 + 1.5 * p1 - 1.5 * p2 + 0.5 * p3
                let b = p0 - 2.5 * p1 + 2 * p2 - 0.5 * p3
                let cc = -0.5 * p0 + 0.5 * p2
                let v = ((a * f + b) * f + cc) * f + p1
                out.append(Int16(max(-32768, min(32767, v.rounded()))))
            }
            framesOut += 1
            position += step
        }
        // Keep from the frame before the next read on.
        let keep = max(bufferStart, Int64(position.rounded(.down)) - 1)
        let drop = Int(min(keep - bufferStart, Int64(buffer.count / channels)))
        if drop > 0 {
            buffer.removeFirst(drop * channels)
            bufferStart += Int64(drop)
        }
        return out
    }
}
