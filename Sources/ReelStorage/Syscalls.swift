import CLinux
import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// Small wrappers over the file calls the pool makes, each turning -1 into a `SystemError`.
enum Sys {
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644) throws -> Int32 {
        try retryingInterrupts("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    static func pwriteAll(_ fd: Int32, _ base: UnsafeRawPointer, _ count: Int, at offset: Int64, path: String) throws {
        var done = 0
        while done < count {
            let n = try retryingInterrupts("pwrite", path: path) { pwrite(fd, base + done, count - done, off_t(offset) + off_t(done)) }
            if n == 0 { throw SystemError("pwrite", path: path, errno: EIO) }
            done += n
        }
    }

    static func fdatasync(_ fd: Int32, path: String) throws {
        try retryingInterrupts("fdatasync", path: path) { Glibc.fdatasync(fd) }
    }

    static func fsyncDirectory(of path: String) throws {
        let dir = parentDirectory(of: path)
        let fd = try open(dir, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        try retryingInterrupts("fsync", path: dir) { fsync(fd) }
    }

    static func fileExists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    /// Whether process `pid` exists and is not a zombie (a worker whose parent is gone may
    /// wait unreaped where PID 1 does not reap).
    static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
        return state != "Z" && state != "X"
    }

    static func filesystemName(_ path: String) -> String {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "unknown" }
        defer { close(fd) }
        return String(cString: CLinux_filesystem_name(fd))
    }

    /// 4096-byte aligned memory.
    static func alignedAlloc(_ size: Int) -> UnsafeMutableRawPointer {
        var p: UnsafeMutableRawPointer? = nil
        precondition(posix_memalign(&p, 4096, size) == 0 && p != nil, "out of memory for I/O buffers")
        memset(p!, 0, size)
        return p!
    }
}

/// The directory part of a path ("." for a bare name).
func parentDirectory(of path: String) -> String {
    guard let i = path.lastIndex(of: "/") else { return "." }
    return i == path.startIndex ? "/" : String(path[..<i])
}

/// The last component of a path.
func fileName(of path: String) -> String {
    guard let i = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: i)...])
}
