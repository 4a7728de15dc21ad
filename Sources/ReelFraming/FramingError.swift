import ReelCore

/// Why smart framing, Center Stage or face detection cannot run: one line and an exit status.
public struct FramingError: UserFacingError {
    /// The message, without the `reel: ` prefix.
    public let description: String
    /// `ExitStatus.unavailable` (69: the detector's data is missing) or `usage` (64: a
    /// configuration the monitor does not take).
    public let exitStatus: Int32
    /// An error saying `message`, ending the command with `status`.
    public init(_ message: String, status: Int32) { description = message; exitStatus = status }
}
