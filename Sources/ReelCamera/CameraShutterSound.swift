import Foundation
import ReelAudio
import ReelControl
import ReelCore
import ReelMedia

/// What `--shutter-sound` asks for: the sound a remote press plays when it captures
/// (`CaptureEvent.shouldPlaySound`), and where.
public struct ShutterSoundRequest: Sendable, Hashable {
    /// The sound.
    public enum Sound: Sendable, Hashable {
        /// The default tone (`ShutterSound.tone`).
        case tone
        /// A sound file, decoded by libavformat (WAV, FLAC, …; its first audio stream).
        case file(String)
    }
    /// The sound to play.
    public var sound: Sound
    /// The ALSA playback device (`default`).
    public var device: String

    /// `sound` on `device`.
    public init(sound: Sound, device: String = "default") { self.sound = sound; self.device = device }

    /// `--shutter-sound default|FILE|none`: nil for `none`.
    /// - Throws: `UsageError` for an empty value.
    public init?(parsing text: String) throws {
        switch text {
        case "": throw UsageError("--shutter-sound needs default, none or a sound file")
        case "none": return nil
        case "default": self.init(sound: .tone)
        default: self.init(sound: .file(text))
        }
    }
}

/// The camera's shutter sound: the sound loaded (a file: 66 when missing, 65 when it holds no
/// sound libavformat can decode), the playback device opened once (69, 75, 77 as `--audio`'s),
/// and the dispatcher told to play it when a remote press's capture fires.
enum CameraShutterSound {
    static func attach(_ request: ShutterSoundRequest, to dispatcher: CaptureEventDispatcher,
                       notice: @escaping @Sendable (String) -> Void) throws -> ShutterSoundPlayer {
        let sound = try load(request.sound)
        let player: ShutterSoundPlayer
        do { player = try ShutterSoundPlayer(device: request.device, sound: sound, notice: notice) } catch {
            throw CameraError(status: error.exitStatus, error.description)
        }
        dispatcher.setShutterSound { [player] _ in player.play() }
        return player
    }

    /// The samples of `sound`: the tone, or the file decoded (16-bit, at most 10 s kept).
    static func load(_ sound: ShutterSoundRequest.Sound) throws -> ShutterSound {
        guard case .file(let path) = sound else { return .tone }
        guard FileManager.default.fileExists(atPath: path) else {
            throw CameraError(status: ExitStatus.noInput, "--shutter-sound: \(path): no such file")
        }
        let decoded: DecodedAudio
        do { decoded = try AudioReader.decode(path) } catch {
            throw CameraError(status: ExitStatus.dataError, "--shutter-sound: \(path): no sound libavformat can decode (\(error))")
        }
        guard decoded.frames > 0, (1...2).contains(decoded.channels) else {
            throw CameraError(status: ExitStatus.dataError, "--shutter-sound: \(path): \(decoded.frames) frames in \(decoded.channels) channels (1 or 2 wanted)")
        }
        let kept = min(decoded.frames, decoded.sampleRate * 10) * decoded.channels
        return ShutterSound(samples: Array(decoded.samples.prefix(kept)), sampleRate: decoded.sampleRate,
                            channels: decoded.channels, name: path)
    }
}

/// How the shutter sound went: the summary's `shutterSound` key.
public struct ShutterSoundSummary: Sendable, Encodable {
    /// The ALSA playback device.
    public var device: String
    /// `tone` or the sound file.
    public var sound: String
    /// Sounds played, and sounds that could not be (the device went away).
    public var played: Int, failed: Int
    /// Why the last one failed, if one did.
    public var lastError: String?

    /// Every key written, `lastError` as `null` when none failed.
    /// - Throws: what `encoder` throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(device, forKey: .device)
        try c.encode(sound, forKey: .sound)
        try c.encode(played, forKey: .played)
        try c.encode(failed, forKey: .failed)
        try c.encode(lastError, forKey: .lastError)
    }
    enum CodingKeys: String, CodingKey { case device, sound, played, failed, lastError }
}
