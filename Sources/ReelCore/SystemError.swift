#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: its name, the path it worked on, and `errno`.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    /// The C call that failed (`pwrite`, `open`, …) or the ioctl request (`VIDIOC_DQBUF`).
    public let call: String
    /// The file or device it worked on, when there is one.
    public let path: String?
    /// The `errno` the call set.
    public let errno: Int32

    /// An error of `call` on `path` with `errno` (use ``last(_:path:)`` right after the call fails).
    public init(_ call: String, path: String? = nil, errno: Int32) {
        self.call = call; self.path = path; self.errno = errno
    }

    /// Captures the calling thread's `errno` after `call` failed.
    public static func last(_ call: String, path: String? = nil) -> SystemError {
        SystemError(call, path: path, errno: Glibc.errno)
    }

    /// `strerror(errno)`.
    public var text: String { String(cString: strerror(errno)) }

    /// The disk or quota is full, or the file hit its size limit.
    public var isOutOfSpace: Bool { errno == ENOSPC || errno == EDQUOT || errno == EFBIG }

    /// `CALL PATH: strerror` (`pwrite /pool/slot-0001: No space left on device`), or `CALL: strerror` without a path.
    public var description: String {
        if let path { return "\(call) \(path): \(text)" }
        return "\(call): \(text)"
    }
}

/// Runs a libc call that returns -1 and sets `errno` on failure, retrying on EINTR.
/// - Throws: ``SystemError`` named `call` (and `path`) with the call's `errno`.
@discardableResult
public func retryingInterrupts<T: FixedWidthInteger>(_ call: String, path: String? = nil, _ body: () -> T) throws -> T {
    while true {
        let r = body()
        if r != -1 { return r }
        if Glibc.errno == EINTR { continue }
        throw SystemError.last(call, path: path)
    }
}
