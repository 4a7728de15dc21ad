import Foundation

/// The confirmation sound a remote press plays (issue 28 item 6; the seed's AirPods remote
/// capture, `AVCaptureEventInteraction`'s `shouldPlaySound`): 16-bit samples at a rate,
/// interleaved. `tone` is the default; an app gives its own (`--shutter-sound FILE`).
public struct ShutterSound: Sendable, Equatable {
    /// Interleaved 16-bit samples.
    public var samples: [Int16]
    /// Samples a second, per channel.
    public var sampleRate: Int
    /// 1 or 2.
    public var channels: Int
    /// What it is, as the summary says: `tone`, or the file it came from.
    public var name: String

    /// A sound of `samples` (interleaved, `channels` of them) at `sampleRate`.
    public init(samples: [Int16], sampleRate: Int, channels: Int, name: String) {
        self.samples = samples; self.sampleRate = sampleRate; self.channels = channels; self.name = name
    }

    /// Frames (samples per channel).
    public var frames: Int { samples.count / max(1, channels) }

    /// The default tone's frequency, Hz.
    public static let toneFrequency = 2_000.0
    /// The default tone's length, seconds.
    public static let toneSeconds = 0.08
    /// The default tone's amplitude, of full scale.
    public static let toneLevel = 0.5

    /// The default sound: 80 ms of a 2 kHz sine at half of full scale, mono, 48 kHz, with
    /// 5 ms raised-cosine ramps at each end so that it starts and stops without a click.
    public static let tone: ShutterSound = {
        let rate = 48_000, count = Int(Double(rate) * toneSeconds), ramp = rate / 200
        let samples = (0..<count).map { n -> Int16 in
            let edge = min(n, count - 1 - n)
            let gain = edge >= ramp ? 1 : 0.5 - 0.5 * cos(Double.pi * Double(edge) / Double(ramp))
            return Int16((toneLevel * gain * sin(2 * Double.pi * toneFrequency * Double(n) / Double(rate)) * 32767).rounded())
        }
        return ShutterSound(samples: samples, sampleRate: rate, channels: 1, name: "tone")
    }()
}
