import Foundation
import Synchronization
import CALSA
import ReelCore

/// Why the shutter sound cannot play: found when the player is made (before recording), with
/// an exit status each, as `--audio`'s.
public enum ShutterSoundError: Error, Sendable, Equatable, UserFacingError, CustomStringConvertible {
    /// No such playback device (`snd_pcm_open`: ENOENT, ENODEV, or no such PCM).
    case noDevice(String, detail: String)
    /// Another program holds it (EBUSY).
    case busy(String)
    /// Not allowed to open it (EACCES, EPERM).
    case permission(String)
    /// It takes no 16-bit samples at the sound's rate and channels, even converted (`snd_pcm_set_params`).
    case unsupported(String, detail: String)

    /// The one-line message (the CLI adds `reel: `).
    public var description: String { "--shutter-sound: " + reason }

    /// What went wrong, without the option's name.
    public var reason: String {
        switch self {
        case .noDevice(let n, let d): return "audio device '\(n)': no such playback device (\(d)); `--shutter-sound none` plays nothing"
        case .busy(let n): return "audio device '\(n)' is busy: another program is playing on it"
        case .permission(let n): return "audio device '\(n)': permission denied (is the user in the 'audio' group?)"
        case .unsupported(let n, let d): return "audio device '\(n)' cannot play the sound (\(d))"
        }
    }

    /// 69 (EX_UNAVAILABLE) missing or unable, 75 (EX_TEMPFAIL) busy, 77 (EX_NOPERM) not allowed.
    public var exitStatus: Int32 {
        switch self {
        case .noDevice, .unsupported: return ExitStatus.unavailable
        case .busy: return ExitStatus.busy
        case .permission: return ExitStatus.permission
        }
    }
}

/// Plays a `ShutterSound` on an ALSA playback device through libasound, off every thread that
/// matters: `play()` returns at once and the sound is played on the player's own serial queue
/// (the device opened, `snd_pcm_set_params` — libasound converts the rate and channels when
/// the device needs it —, `snd_pcm_writei`, `snd_pcm_drain`, closed), so a device that is
/// slow or gone never holds up a press, a frame or a photo. The device is opened once when
/// the player is made, to refuse a missing one before recording, and again for each sound
/// (it is not held between sounds: other programs may play). Opens never wait for a device
/// another program holds (`SND_PCM_NONBLOCK`: EBUSY at once), and the probe commits no
/// settings (a hardware device is left as it was; ALSA's `file` plugin makes no file).
public final class ShutterSoundPlayer: Sendable {
    /// The ALSA device name (`default`, `hw:0,0`).
    public let device: String
    /// What it plays.
    public let sound: ShutterSound
    private let queue = DispatchQueue(label: "reel.shutter-sound")
    private let counts = Mutex<(played: Int, failed: Int, lastError: String?)>((0, 0, nil))
    private let notice: @Sendable (String) -> Void

    /// Opens `device` for playback of `sound` once, and closes it.
    /// - Parameter notice: told, once, when a sound could not be played later (the recording goes on).
    /// - Throws: ``ShutterSoundError``.
    public init(device: String = "default", sound: ShutterSound, notice: @escaping @Sendable (String) -> Void) throws(ShutterSoundError) {
        self.device = device; self.sound = sound; self.notice = notice
        CALSA_quiet()
        try Self.probe(device, sound)
    }

    private static func text(_ r: Int32) -> String { String(cString: snd_strerror(r)) }

    /// `snd_pcm_open` for playback without waiting for a held device (`SND_PCM_NONBLOCK`: EBUSY
    /// at once), then blocking again for writing.
    private static func openPCM(_ device: String) throws(ShutterSoundError) -> OpaquePointer {
        var handle: OpaquePointer? = nil
        let r = snd_pcm_open(&handle, device, CALSA_streamPlayback, CALSA_openNonblock)
        guard r >= 0, let pcm = handle else {
            switch -r {
            case EBUSY, EAGAIN: throw .busy(device)
            case EACCES, EPERM: throw .permission(device)
            default: throw .noDevice(device, detail: text(r))
            }
        }
        let b = snd_pcm_nonblock(pcm, 0)
        guard b >= 0 else {
            snd_pcm_close(pcm)
            throw .noDevice(device, detail: "snd_pcm_nonblock: \(text(b))")
        }
        return pcm
    }

    /// Opens `device` and checks, without committing anything, that it takes the sound:
    /// interleaved 16-bit at its rate (resampled by libasound if need be) and channels.
    private static func probe(_ device: String, _ sound: ShutterSound) throws(ShutterSoundError) {
        let pcm = try openPCM(device)
        defer { snd_pcm_close(pcm) }
        var hw: OpaquePointer? = nil
        guard snd_pcm_hw_params_malloc(&hw) >= 0, let hw else { throw .unsupported(device, detail: "out of memory") }
        defer { snd_pcm_hw_params_free(hw) }
        func step(_ what: String, _ r: Int32) throws(ShutterSoundError) {
            if r < 0 { throw .unsupported(device, detail: "\(what): \(text(r))") }
        }
        try step("snd_pcm_hw_params_any", snd_pcm_hw_params_any(pcm, hw))
        try step("resampling", snd_pcm_hw_params_set_rate_resample(pcm, hw, 1))
        try step("interleaved access", snd_pcm_hw_params_set_access(pcm, hw, CALSA_accessRWInterleaved))
        try step("16-bit samples", snd_pcm_hw_params_set_format(pcm, hw, CALSA_formatS16LE))
        try step("\(sound.channels) channel(s)", snd_pcm_hw_params_set_channels(pcm, hw, UInt32(sound.channels)))
        try step("\(sound.sampleRate) Hz", snd_pcm_hw_params_set_rate(pcm, hw, UInt32(sound.sampleRate), 0))
    }

    /// `openPCM`, then `snd_pcm_set_params` (interleaved 16-bit, the sound's rate and channels,
    /// resampled by libasound if need be, 100 ms of latency).
    private static func open(_ device: String, _ sound: ShutterSound) throws(ShutterSoundError) -> OpaquePointer {
        let pcm = try openPCM(device)
        let s = snd_pcm_set_params(pcm, CALSA_formatS16LE, CALSA_accessRWInterleaved, UInt32(sound.channels),
                                   UInt32(sound.sampleRate), 1, 100_000)
        guard s >= 0 else {
            snd_pcm_close(pcm)
            throw .unsupported(device, detail: "\(sound.sampleRate) Hz, \(sound.channels) channel(s): \(text(s))")
        }
        return pcm
    }

    /// Plays the sound once, on the player's queue; returns at once.
    public func play() {
        queue.async { [self] in
            let failure: String?
            do throws(ShutterSoundError) {
                let pcm = try Self.open(device, sound)
                failure = Self.write(pcm, sound)
                snd_pcm_close(pcm)
            } catch {
                failure = error.reason
            }
            let first = counts.withLock { c -> Bool in
                if let failure { c.failed += 1; c.lastError = failure; return c.failed == 1 }
                c.played += 1
                return false
            }
            if first, let failure { notice("shutter sound: \(failure); the camera goes on without it") }
        }
    }

    /// Writes every frame (`snd_pcm_writei`, recovering once from an underrun) and drains.
    /// Nil, or why it failed.
    private static func write(_ pcm: OpaquePointer, _ sound: ShutterSound) -> String? {
        var done = 0, recovered = false
        let frames = sound.frames, channels = sound.channels
        while done < frames {
            let n = sound.samples.withUnsafeBufferPointer { b in
                snd_pcm_writei(pcm, b.baseAddress! + done * channels, snd_pcm_uframes_t(frames - done))
            }
            if n >= 0 { done += Int(n); continue }
            if !recovered, snd_pcm_recover(pcm, Int32(n), 1) >= 0 { recovered = true; continue }
            return "snd_pcm_writei: \(text(Int32(n)))"
        }
        let d = snd_pcm_drain(pcm)
        return d < 0 ? "snd_pcm_drain: \(text(d))" : nil
    }

    /// Waits until every sound asked for so far has played (or failed), at most `timeout`
    /// seconds (a device that hangs does not hold the camera's end); false when it timed out.
    @discardableResult
    public func drain(timeout: Double = 2) -> Bool {
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        return done.wait(timeout: .now() + timeout) == .success
    }

    /// Sounds played, sounds that failed, and the last failure.
    public var played: (count: Int, failed: Int, lastError: String?) {
        counts.withLock { ($0.played, $0.failed, $0.lastError) }
    }
}
