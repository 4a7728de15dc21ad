#if canImport(Glibc)
import Glibc
#endif

/// An open file descriptor and the path it was opened on (named in its errors), in the spirit
/// of swift-system's `FileDescriptor`. A value, not an owner: whoever opened it closes it once.
///
/// Every call goes through ``retryingInterrupts(_:path:_:)``: EINTR is retried and -1 becomes
/// a ``SystemError`` naming the C call and the path.
public struct FileDescriptor: Sendable, Hashable {
    /// The C descriptor.
    public let rawValue: Int32
    /// The path it was opened on, for error messages.
    public let path: String

    /// Wraps a descriptor opened elsewhere.
    public init(rawValue: Int32, path: String) {
        self.rawValue = rawValue; self.path = path
    }

    /// Opens `path` with `open(2)`, always adding `O_CLOEXEC`.
    /// - Throws: ``SystemError`` for `open`.
    public static func open(_ path: String, _ flags: Int32, permissions: mode_t = 0o644) throws -> FileDescriptor {
        let fd = try retryingInterrupts("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, permissions) }
        return FileDescriptor(rawValue: fd, path: path)
    }

    /// Writes all of `buffer` at `offset` with `pwrite(2)`, looping over short writes.
    /// - Throws: ``SystemError`` for `pwrite` (EIO when a write makes no progress).
    public func writeAll(_ buffer: UnsafeRawBufferPointer, toAbsoluteOffset offset: Int64) throws {
        guard let base = buffer.baseAddress else { return }
        var done = 0
        while done < buffer.count {
            let n = try retryingInterrupts("pwrite", path: path) {
                pwrite(rawValue, base + done, buffer.count - done, off_t(offset) + off_t(done))
            }
            if n == 0 { throw SystemError("pwrite", path: path, errno: EIO) }
            done += n
        }
    }

    /// Writes `count` bytes from `base` at `offset` (see ``writeAll(_:toAbsoluteOffset:)``).
    /// - Throws: ``SystemError`` for `pwrite`.
    public func writeAll(_ base: UnsafeRawPointer, count: Int, toAbsoluteOffset offset: Int64) throws {
        try writeAll(UnsafeRawBufferPointer(start: base, count: count), toAbsoluteOffset: offset)
    }

    /// Writes zeros over bytes `0..<length`, `zeros.count` bytes at a time (the last write
    /// shorter). `zeros` must hold zeros.
    /// - Throws: ``SystemError`` for `pwrite`.
    public func writeZeros(upTo length: Int64, from zeros: UnsafeRawBufferPointer) throws {
        var offset: Int64 = 0
        while offset < length {
            let n = Int(min(Int64(zeros.count), length - offset))
            try writeAll(UnsafeRawBufferPointer(rebasing: zeros[..<n]), toAbsoluteOffset: offset)
            offset += Int64(n)
        }
    }

    /// Reads up to `buffer.count` bytes at `offset` with `pread(2)`; 0 at the end of the file.
    /// - Throws: ``SystemError`` for `pread` (its `call` reads `read`).
    public func read(into buffer: UnsafeMutableRawBufferPointer, fromAbsoluteOffset offset: Int64) throws -> Int {
        try retryingInterrupts("read", path: path) { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// `fsync(2)`: data and metadata to disk.
    /// - Throws: ``SystemError`` for `fsync` (a writeback error: data may be lost).
    public func sync() throws {
        try retryingInterrupts("fsync", path: path) { fsync(rawValue) }
    }

    /// `fdatasync(2)`: data (and the metadata needed to read it) to disk.
    /// - Throws: ``SystemError`` for `fdatasync` (a writeback error: data may be lost).
    public func dataSync() throws {
        try retryingInterrupts("fdatasync", path: path) { fdatasync(rawValue) }
    }

    /// `ftruncate(2)` to `length` bytes.
    /// - Throws: ``SystemError`` for `ftruncate`.
    public func truncate(to length: Int64) throws {
        try retryingInterrupts("ftruncate", path: path) { ftruncate(rawValue, off_t(length)) }
    }

    /// `close(2)`, reporting a failure (after a write, close can report a writeback error).
    /// EINTR is not retried: the descriptor is released whatever close returned.
    /// - Throws: ``SystemError`` for `close`.
    public func close() throws {
        if Glibc.close(rawValue) != 0 && errno != EINTR { throw SystemError.last("close", path: path) }
    }

    /// `close(2)` of a descriptor only read from, or given up after an error already
    /// reported: nothing its result could add.
    public func closeQuietly() {
        if Glibc.close(rawValue) != 0 { return }
    }
}
