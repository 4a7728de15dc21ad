import ReelCapacity
import ReelFraming

/// What a camera tells its observer while it is made and while it runs. `reel record` prints
/// each on stderr; a program may log them, or read them from `Camera.events`.
public enum CameraEvent: Sendable, Equatable {
    /// Something the user should know that does not stop the camera (`reel: warning: …`):
    /// the default pool being created, a recording that dropped frames.
    case warning(String)
    /// Something that went wrong and that the camera survived (`reel: …`): a control the
    /// camera refused, a photo that could not be taken, an input device that went away.
    case notice(String)
    /// The control socket listens at this path.
    case controlSocket(String)
    /// The preview page is served at this URL (with its token).
    case preview(String)
    /// The session's first frame (its index) went to the outputs: the picture is there.
    case firstFrame(Int)
    /// The system-pressure level changed (the handler has acted on it).
    case pressure(PressureLevel)
    /// The smart-framing monitor recommended a framing (applied after this, with `--smart-framing zoom|rotate`).
    case framing(FramingRecommendation)
}

extension CameraEvent {
    /// Whether the event is a line for the user (a warning, a notice, an address), not a state change.
    public var isMessage: Bool {
        switch self {
        case .warning, .notice, .controlSocket, .preview: return true
        case .firstFrame, .pressure, .framing: return false
        }
    }
}
