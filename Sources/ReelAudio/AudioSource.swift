import ReelCore

/// Receives an audio source's samples on its capture thread.
public protocol AudioSourceDelegate: AnyObject, Sendable {
    /// The stream's place on the session clock, known once its first samples are read (and
    /// again whenever the source measures it anew).
    func audio(clock: AudioClock)
    /// Samples, in order; a jump in `firstFrame` is samples the device lost (an overrun).
    func audio(didCapture chunk: AudioChunk)
    /// The device failed: no more samples come. The recording goes on without sound.
    func audio(didFail error: AudioError)
}

/// A microphone: synthetic, or an ALSA capture device.
public protocol AudioSource: AnyObject, Sendable {
    /// What it delivers (for a device: what was negotiated with it).
    var format: AudioFormat { get }
    /// `synthetic`, or the ALSA device name (`default`, `hw:1,0`).
    var name: String { get }
    /// Captures on the calling thread until `stop()`: the session clock's 0 is monotonic time
    /// `sessionZeroNs` (the video source's first frame), which places the samples.
    /// - Throws: ``AudioError`` when the device cannot start (a failure later goes to the delegate).
    func capture(sessionZeroNs: UInt64, delegate: any AudioSourceDelegate) throws(AudioError)
    /// Ends `capture` once the samples up to session time `afterSessionNs` are delivered (nil:
    /// after the chunk in progress) — so a recording's sound reaches the end of its last frame. Any thread.
    func stop(afterSessionNs: Int64?)
}

extension AudioSource {
    /// Ends `capture` after the chunk in progress.
    public func stop() { stop(afterSessionNs: nil) }
}

/// Which microphone a recording uses (`--audio`): none (the default: a recording never takes a
/// microphone unasked), the synthetic test signal, or an ALSA capture device by name.
public enum AudioSelection: Sendable, Hashable, CustomStringConvertible {
    /// No sound.
    case none
    /// The synthetic test signal (``SyntheticAudioSource``).
    case synthetic
    /// An ALSA capture device by name (``ALSACaptureSource``).
    case device(String)

    /// `none`, `synthetic`, or any other text as an ALSA device name.
    public init(parsing text: String) {
        switch text {
        case "none": self = .none
        case "synthetic": self = .synthetic
        default: self = .device(text)
        }
    }

    /// What `--audio` takes for it.
    public var description: String {
        switch self {
        case .none: return "none"
        case .synthetic: return "synthetic"
        case .device(let n): return n
        }
    }

    /// Opens the source (a device is opened and its format negotiated now, so that a missing or
    /// busy device is refused before anything records); nil for `none`.
    /// - Throws: ``AudioError`` (`noDevice`, `busy`, `permission`, `unsupported`).
    public func open(format: AudioFormat = .standard) throws(AudioError) -> (any AudioSource)? {
        switch self {
        case .none: return nil
        case .synthetic: return SyntheticAudioSource(format: format)
        case .device(let name): return try ALSACaptureSource(device: name, asking: format)
        }
    }
}
