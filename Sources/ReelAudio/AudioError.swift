import ReelCore

/// Why sound cannot be recorded. Each says what the user can do; each has an exit status
/// (`docs/cli.md`) for the errors found before recording starts.
public enum AudioError: Error, Sendable, Equatable, UserFacingError, CustomStringConvertible {
    /// No such device (`snd_pcm_open`: ENOENT, ENODEV, or no such PCM in ALSA's configuration).
    case noDevice(String, detail: String)
    /// The device is in use by another program (EBUSY).
    case busy(String)
    /// Not allowed to open it (EACCES, EPERM): the user is not in the `audio` group.
    case permission(String)
    /// The device cannot give 16-bit samples at a usable rate and channel count.
    case unsupported(String, detail: String)
    /// The device failed while recording (`snd_pcm_readi`: EIO, ENODEV): sound stops there.
    case failed(String, detail: String)

    /// The one-line message (the CLI adds `reel: `).
    public var description: String {
        switch self {
        case .noDevice(let n, let d): return "audio device '\(n)': no such capture device (\(d)); `reel devices` lists them, `--audio none` records without sound"
        case .busy(let n): return "audio device '\(n)' is busy: another program is recording from it"
        case .permission(let n): return "audio device '\(n)': permission denied (is the user in the 'audio' group?)"
        case .unsupported(let n, let d): return "audio device '\(n)' cannot record 16-bit samples at 44.1 or 48 kHz (\(d))"
        case .failed(let n, let d): return "audio device '\(n)' failed while recording (\(d)); the video goes on without sound"
        }
    }

    /// 69 (EX_UNAVAILABLE) for a missing device or one that cannot record, 75 (EX_TEMPFAIL)
    /// for a busy one, 77 (EX_NOPERM) without permission, 74 (EX_IOERR) for a failure.
    public var exitStatus: Int32 {
        switch self {
        case .noDevice, .unsupported: return ExitStatus.unavailable
        case .busy: return ExitStatus.busy
        case .permission: return ExitStatus.permission
        case .failed: return ExitStatus.ioError
        }
    }
}
