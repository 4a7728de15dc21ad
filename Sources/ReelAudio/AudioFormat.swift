/// What an audio source delivers: signed 16-bit samples, interleaved, at `sampleRate` frames
/// per second of `channels` samples each (the format negotiated with an ALSA device, or the
/// synthetic source's).
public struct AudioFormat: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Sample frames per second (48,000 or 44,100).
    public var sampleRate: Int
    /// Samples per frame (1 or 2).
    public var channels: Int

    /// `channels` channels of 16-bit samples at `sampleRate` Hz.
    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate; self.channels = channels
    }

    /// The format Reel asks a device for, and the synthetic source's: 48 kHz stereo.
    public static let standard = AudioFormat(sampleRate: 48_000, channels: 2)

    /// `48000 Hz, 2 ch, s16`.
    public var description: String { "\(sampleRate) Hz, \(channels) ch, s16" }
}

/// Samples from a source: `frames` sample frames of `format.channels` interleaved 16-bit
/// samples, the first of them the stream's `firstFrame`-th (0 at the stream's start), so that
/// a gap in the stream shows as a jump in `firstFrame`.
public struct AudioChunk: Sendable {
    /// Index of the chunk's first sample frame in the stream.
    public let firstFrame: Int64
    /// Interleaved samples: `frames × channels`.
    public let samples: [Int16]
    /// Samples per frame.
    public let channels: Int

    /// A chunk of `samples` (interleaved, `channels` a frame) starting at stream frame `firstFrame`.
    public init(firstFrame: Int64, samples: [Int16], channels: Int) {
        precondition(channels > 0 && samples.count % channels == 0, "a chunk holds whole sample frames")
        self.firstFrame = firstFrame; self.samples = samples; self.channels = channels
    }

    /// Sample frames in the chunk.
    public var frames: Int { samples.count / channels }
    /// The stream frame after the chunk's last.
    public var endFrame: Int64 { firstFrame + Int64(frames) }
}

/// Where an audio stream's samples are on the session clock (the video frames' clock): sample
/// frame n at `originNs` + n × 10⁹ / `sampleRate` ns — exact rational arithmetic, so that a cut
/// at a frame's time picks the same sample wherever it is computed.
public struct AudioClock: Sendable, Hashable {
    /// Session-clock time of the stream's frame 0, in ns (negative: before the first video frame).
    public var originNs: Int64
    /// Nominal frames per second.
    public var sampleRate: Int
    /// The device's true rate against the monotonic clock, frames a second (a crystal some ppm
    /// off the nominal), as measured; nil for a source on the session clock itself (the
    /// synthetic one: exactly nominal). A writer resamples a device's sound to it.
    public var deviceRate: Double?

    /// Sample frame 0 at `originNs` on the session clock, `sampleRate` frames a second; a
    /// device's measured rate `deviceRate`.
    public init(originNs: Int64, sampleRate: Int, deviceRate: Double? = nil) {
        self.originNs = originNs; self.sampleRate = sampleRate; self.deviceRate = deviceRate
    }

    /// The first sample frame at or after `value / timescale` seconds of session time:
    /// ⌈(t − origin) × rate⌉, in 128-bit integers.
    public func firstFrame(atOrAfter value: Int64, timescale: Int32) -> Int64 {
        let num = (Int128(value) * 1_000_000_000 - Int128(originNs) * Int128(timescale)) * Int128(sampleRate)
        let den = Int128(timescale) * 1_000_000_000
        let q = num / den
        return Int64(num % den > 0 ? q + 1 : q)
    }

    /// Session-clock time of sample frame `n`, in seconds.
    public func seconds(ofFrame n: Int64) -> Double {
        Double(originNs) / 1e9 + Double(n) / Double(sampleRate)
    }
}
