/// An error the `reel` tool reports as one line and a documented exit status.
public protocol UserFacingError: Error, CustomStringConvertible {
    /// The process exit status (sysexits.h numbering, documented in the README).
    var exitStatus: Int32 { get }
}

/// A bad command line or option value: the message says which and what is allowed
/// (exit status 64, `ExitStatus.usage`). The one usage error of every target.
public struct UsageError: UserFacingError {
    /// The message, without the `reel: ` prefix.
    public let description: String
    /// A usage error saying `message`.
    public init(_ message: String) { description = message }
    /// Always ``ExitStatus/usage`` (64).
    public var exitStatus: Int32 { ExitStatus.usage }
}

/// Exit statuses of `reel` (sysexits.h).
public enum ExitStatus {
    /// EX_USAGE: a bad command line or option value.
    public static let usage: Int32 = 64
    /// EX_DATAERR: `verify` found a violation; a pool manifest is damaged or foreign.
    public static let dataError: Int32 = 65
    /// EX_NOINPUT: a file to read is missing or not media; no such video device; not a pool.
    public static let noInput: Int32 = 66
    /// EX_UNAVAILABLE: the encoder is missing; the camera is busy or not a capture device; no direct I/O for a pool.
    public static let unavailable: Int32 = 69
    /// EX_SOFTWARE: an encoder or muxer failed.
    public static let software: Int32 = 70
    /// EX_CANTCREAT: the output directory is not writable, a clip name exists, or a pool does not fit.
    public static let cantCreate: Int32 = 73
    /// EX_IOERR: disk or pool full, a write or writeback failed, or the camera was lost while recording.
    public static let ioError: Int32 = 74
    /// EX_TEMPFAIL: the pool is busy, or the preview port is in use; try again.
    public static let busy: Int32 = 75
    /// EX_NOPERM: permission denied (the video device, the preview port).
    public static let permission: Int32 = 77
    /// A second SIGINT while recording quits at once (128 + SIGINT).
    public static let interrupted: Int32 = 130

    /// Every status above by name (0, success, is not listed).
    public static let all: [String: Int32] = [
        "usage": usage, "dataError": dataError, "noInput": noInput, "unavailable": unavailable,
        "software": software, "cantCreate": cantCreate, "ioError": ioError, "busy": busy,
        "permission": permission, "interrupted": interrupted,
    ]
}
