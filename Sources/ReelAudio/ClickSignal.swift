import Foundation

/// The test signal Reel's synthetic audio source makes and the emulated ALSA device
/// (`scripts/fake-alsa`) makes too, so that one reader checks a recording from either:
/// - a 1 kHz tone at 0.1 of full scale;
/// - at the first sample at or after every whole `periodNs` of the stream's clock (the session
///   clock for the synthetic source: a click at every whole second is at video frame
///   second × fps), a click: one sample at +0.99, then the click's number — the time divided by
///   the period, 32 bits, most significant first — as 4 samples a bit at +0.5 (1) or −0.5 (0).
///
/// Positions are computed in whole nanoseconds and samples, as in the device's C code.
public struct ClickSignal: Sendable, Hashable {
    /// Sample frames per second.
    public let sampleRate: Int
    /// Time between clicks, in ns (1 s).
    public let periodNs: Int64
    /// The clock's time at sample frame 0, in ns (0 for the synthetic source: the session clock).
    public let startNs: Int64

    /// Samples a click takes: its mark and 32 bits of 4 samples.
    public static let clickLength = 1 + 32 * 4
    /// The mark's value, of full scale.
    public static let markLevel = 0.99
    /// The tone's amplitude, of full scale.
    public static let toneLevel = 0.1

    /// A signal at `sampleRate` whose sample 0 is at `startNs` on its clock, clicking every `periodNs`.
    public init(sampleRate: Int, periodNs: Int64 = 1_000_000_000, startNs: Int64 = 0) {
        precondition(sampleRate > 0 && periodNs > 0)
        self.sampleRate = sampleRate; self.periodNs = periodNs; self.startNs = startNs
    }

    /// The first sample frame at or after clock time `t` ns.
    public func firstSample(atOrAfter t: Int128) -> Int128 {
        let a = (t - Int128(startNs)) * Int128(sampleRate)
        let b: Int128 = 1_000_000_000
        return a >= 0 ? (a + b - 1) / b : -((-a) / b)
    }

    /// Where click `k` is: the first sample at or after k × period.
    public func clickFrame(_ k: Int64) -> Int64 { Int64(firstSample(atOrAfter: Int128(k) * Int128(periodNs))) }

    /// The signal at sample frame `n`, in [−1, 1].
    public func value(at n: Int64) -> Double {
        let period = Int128(periodNs)
        let t = Int128(startNs) + Int128(n) * 1_000_000_000 / Int128(sampleRate)
        var k = t / period
        while firstSample(atOrAfter: (k + 1) * period) <= Int128(n) { k += 1 }
        while k > 0 && firstSample(atOrAfter: k * period) > Int128(n) { k -= 1 }
        let within = Int128(n) - firstSample(atOrAfter: k * period)
        if k * period >= Int128(startNs) && within >= 0 && within < Int128(Self.clickLength) {
            if within == 0 { return Self.markLevel }
            let bit = Int((within - 1) / 4)
            return (UInt64(truncatingIfNeeded: k) >> UInt64(31 - bit)) & 1 == 1 ? 0.5 : -0.5
        }
        return Self.toneLevel * sin(2 * Double.pi * 1000 * Double(n) / Double(sampleRate))
    }

    /// Fills `samples` (interleaved, `channels` a frame) with frames `first`, `first + 1`, … as
    /// 16-bit values, every channel alike.
    public func fill(_ samples: inout [Int16], from first: Int64, channels: Int) {
        let frames = samples.count / channels
        for i in 0..<frames {
            let v = Int16((value(at: first + Int64(i)) * 32767).rounded())
            for c in 0..<channels { samples[i * channels + c] = v }
        }
    }
}

/// A click found in recorded samples: where it starts and the number it carries.
public struct FoundClick: Sendable, Hashable {
    /// Sample frame of the click's mark in the samples read.
    public let frame: Int64
    /// The click's number (its time over the period).
    public let number: UInt32

    /// A click at sample frame `frame` carrying `number`.
    public init(frame: Int64, number: UInt32) { self.frame = frame; self.number = number }
}

extension ClickSignal {
    /// The clicks in `samples` (interleaved, `channels` a frame; the first channel is read).
    /// A mark is the largest sample of the first four above 0.4 of full scale — the tone never
    /// passes 0.1, and a lossy codec (AAC, Opus) or a resampler that puts the mark between two
    /// samples rounds the 0.99 mark off — after four samples of tone, and each of the 32 bits after it is the sign of the sum of its middle two
    /// samples, which must be clearly ±0.5. A click cut off by the end, or blurred past that, is not reported.
    public static func findClicks(in samples: UnsafeBufferPointer<Int16>, channels: Int) -> [FoundClick] {
        let frames = samples.count / channels
        var found: [FoundClick] = []
        var i = 0
        let threshold = Int16(0.4 * 32767)
        while i < frames {
            guard samples[i * channels] > threshold else { i += 1; continue }
            var mark = i
            for j in i..<min(frames, i + 4) where samples[j * channels] > samples[mark * channels] { mark = j }
            guard mark + clickLength <= frames else { break }
            // A mark follows the tone (below 0.35 of full scale) — but for the sample just
            // before it, which holds part of a mark that falls between two samples (resampled
            // sound) — and each bit holds ±0.5: the bits' own peaks are not marks.
            let quietBefore = (max(0, mark - 5)..<max(0, mark - 1)).allSatisfy { abs(Int(samples[$0 * channels])) < 11_468 }
            var k: UInt32 = 0
            var clear = quietBefore
            for bit in 0..<32 where clear {
                // The middle two of its four samples: the mark's own tail (a resampled or
                // lossy mark spreads to the next sample) and the next bit's edge stay out.
                let sum = Int(samples[(mark + 2 + bit * 4) * channels]) + Int(samples[(mark + 3 + bit * 4) * channels])
                if abs(sum) < 2 * 8_192 { clear = false }
                k = (k << 1) | (sum > 0 ? 1 : 0)
            }
            guard clear else { i = mark + 1; continue }
            found.append(FoundClick(frame: Int64(mark), number: k))
            i = mark + clickLength
        }
        return found
    }
}
