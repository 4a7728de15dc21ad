import ReelCore

/// A camera that could not be made or operated, with the exit status `reel` gives it: a photo
/// directory that cannot be written (73), a lock the camera cannot take (69), a preview port
/// in use (75) or refused (77).
public struct CameraError: UserFacingError {
    /// The message, without the `reel: ` prefix.
    public let description: String
    /// The status (sysexits.h, `ExitStatus`).
    public let exitStatus: Int32
    /// An error saying `message`, with `status`.
    public init(status: Int32, _ message: String) {
        exitStatus = status
        description = message
    }
}
