/// An error the `reel` tool reports as one line and a documented exit status.
public protocol UserFacingError: Error, CustomStringConvertible {
    /// The process exit status (sysexits.h numbering, documented in the README).
    var exitStatus: Int32 { get }
}

/// A bad command line or option value: the message says which and what is allowed
/// (exit status 64, `ExitStatus.usage`). The one usage error of every target.
public struct UsageError: UserFacingError {
    public let description: String
    public init(_ message: String) { description = message }
    public var exitStatus: Int32 { ExitStatus.usage }
}

/// Exit statuses of `reel` (sysexits.h).
public enum ExitStatus {
    public static let usage: Int32 = 64        // EX_USAGE: bad command line
    public static let dataError: Int32 = 65    // EX_DATAERR: verify found a violation; damaged manifest
    public static let noInput: Int32 = 66      // EX_NOINPUT: a file to read is missing or unreadable
    public static let unavailable: Int32 = 69  // EX_UNAVAILABLE: device busy or not a capture device
    public static let software: Int32 = 70     // EX_SOFTWARE: an encoder or muxer failed
    public static let cantCreate: Int32 = 73   // EX_CANTCREAT: output directory not writable
    public static let ioError: Int32 = 74      // EX_IOERR: disk full or device lost while recording
    public static let busy: Int32 = 75         // EX_TEMPFAIL: the pool is busy; try again
    public static let permission: Int32 = 77   // EX_NOPERM
    /// A second SIGINT while recording quits at once (128 + SIGINT).
    public static let interrupted: Int32 = 130

    /// Every status above by name (0, success, is not listed).
    public static let all: [String: Int32] = [
        "usage": usage, "dataError": dataError, "noInput": noInput, "unavailable": unavailable,
        "software": software, "cantCreate": cantCreate, "ioError": ioError, "busy": busy,
        "permission": permission, "interrupted": interrupted,
    ]
}
