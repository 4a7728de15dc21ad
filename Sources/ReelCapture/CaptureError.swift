import ReelCore

/// Errors of capture sources and sessions.
public enum CaptureError: UserFacingError {
    case invalidSensorSize(String)
    case unsupportedRatio(AspectRatio, supported: [AspectRatio], format: String)
    case sourceFailed(String)
    case sessionNotRunning
    /// A configuration the session or source cannot take (now, or at all).
    case notConfigurable(String)

    public var exitStatus: Int32 {
        switch self {
        case .invalidSensorSize, .unsupportedRatio, .notConfigurable: return ExitStatus.usage
        case .sourceFailed: return ExitStatus.ioError
        case .sessionNotRunning: return ExitStatus.software
        }
    }

    public var description: String {
        switch self {
        case .invalidSensorSize(let why): return why
        case .unsupportedRatio(let r, let supported, let format):
            return "ratio \(r) is not supported by \(format) (supported: \(supported.map(\.rawValue).joined(separator: ", ")))"
        case .sourceFailed(let why): return why
        case .sessionNotRunning: return "the capture session is not running"
        case .notConfigurable(let why): return why
        }
    }
}
