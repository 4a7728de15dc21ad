import ReelCore

/// Errors of capture sources and sessions.
public enum CaptureError: UserFacingError {
    /// A synthetic sensor size that is odd or out of range (exit status 64); the message says which.
    case invalidSensorSize(String)
    /// The session was asked for a ratio its source does not support (exit status 64).
    case unsupportedRatio(AspectRatio, supported: [AspectRatio], format: String)
    /// The camera stopped sending or was lost (exit status 74); the message says which.
    case sourceFailed(String)
    /// A configuration the session or source cannot take (now, or at all).
    case notConfigurable(String)

    /// 64 for bad settings, 74 for a failed source.
    public var exitStatus: Int32 {
        switch self {
        case .invalidSensorSize, .unsupportedRatio, .notConfigurable: return ExitStatus.usage
        case .sourceFailed: return ExitStatus.ioError
        }
    }

    /// One line saying what went wrong.
    public var description: String {
        switch self {
        case .invalidSensorSize(let why): return why
        case .unsupportedRatio(let r, let supported, let format):
            return "ratio \(r) is not supported by \(format) (supported: \(supported.map(\.rawValue).joined(separator: ", ")))"
        case .sourceFailed(let why): return why
        case .notConfigurable(let why): return why
        }
    }
}
