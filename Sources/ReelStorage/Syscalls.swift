import CLinux
import Foundation
import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// Small wrappers over the path and process calls the pool makes (calls on an open file are
/// `FileDescriptor`'s).
enum Sys {
    /// fsync(2) of the directory holding `path`, so a rename or a new name in it is durable.
    static func fsyncDirectory(of path: String) throws {
        let dir = parentDirectory(of: path)
        let fd = try FileDescriptor.open(dir, O_RDONLY | O_DIRECTORY)
        defer { fd.closeQuietly() }
        try fd.sync()
    }

    /// Starts `path` with `arguments` detached (`CLinux_spawn_detached`): a session of its
    /// own, /dev/null for its standard streams, no other descriptor, and no child of this
    /// process left behind. Returns the worker's pid.
    /// - Throws: `PoolError.io` with the failed call (fork, pipe2, waitpid).
    static func spawnDetached(_ path: String, arguments: [String]) throws -> pid_t {
        let argv = ([path] + arguments).map { strdup($0) }
        defer { for a in argv { free(a) } }
        let pid = (argv + [nil]).withUnsafeBufferPointer { CLinux_spawn_detached(path, $0.baseAddress) }
        guard pid > 0 else { throw PoolError.io(SystemError.last("fork", path: path)) }
        return pid
    }

    /// unlink(2); a file already gone is fine.
    static func unlinkIfPresent(_ path: String) throws {
        if Glibc.unlink(path) != 0 && errno != ENOENT { throw SystemError.last("unlink", path: path) }
    }

    /// rmdir(2); a directory already gone is fine.
    static func removeDirectory(_ path: String) throws {
        if Glibc.rmdir(path) != 0 && errno != ENOENT { throw SystemError.last("rmdir", path: path) }
    }

    /// rmdir(2) of a directory that may still hold files (then it stays).
    static func removeDirectoryIfEmpty(_ path: String) {
        if Glibc.rmdir(path) != 0 { return }
    }

    static func fileExists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    /// Whether process `pid` exists and is not a zombie (a worker whose parent is gone may
    /// wait unreaped where PID 1 does not reap).
    static func isAlive(_ pid: Int32) -> Bool {
        guard pid > 0, kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let fields = procStatFields(pid) else { return true }
        let state = fields.first
        return state != "Z" && state != "X"
    }

    /// Whether the process `owner` names is alive: the same pid, and — where the manifest
    /// recorded them — the same start time and boot. A pid reused after a reboot or a wrap is
    /// another process, so its slots are dead.
    static func isAlive(_ owner: ProcessIdentity) -> Bool {
        if let boot = owner.boot, let now = ProcessIdentity.currentBoot, boot != now { return false }
        guard isAlive(owner.pid) else { return false }
        if let start = owner.start, let now = processStartTime(owner.pid), now != start { return false }
        return true
    }

    /// The fields of `/proc/PID/stat` after the command name (which may hold spaces and
    /// parentheses, hence after the last ')'): the first is the state (field 3).
    static func procStatFields(_ pid: Int32) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
    }

    /// Field 22 of `/proc/PID/stat`: when the process started, in clock ticks since boot.
    static func processStartTime(_ pid: Int32) -> UInt64? {
        guard let f = procStatFields(pid), f.count > 19 else { return nil }
        return UInt64(f[19])
    }

    /// Bytes an unprivileged writer can still allocate on the filesystem holding `path` (or
    /// its nearest existing parent): `f_bavail × f_frsize`; nil for a filesystem with no size
    /// (ramfs reports 0 blocks in all: it grows until memory runs out).
    /// Puts the calling thread in the idle I/O class (`ioprio_set`, `IOPRIO_CLASS_IDLE`): its
    /// I/O is served when nothing else wants the disk (schedulers without priorities, such as
    /// `none` and `mq-deadline`, ignore it). False when the kernel refused.
    static func lowerToIdleIOPriority() -> Bool { CLinux_set_io_priority(3, 0) == 0 }

    /// Puts the calling thread — a recording's writer (`level` 0) or syncer (4) — in the
    /// best-effort I/O class; with `REEL_IO_CLASS=realtime` in the environment (for measuring:
    /// `reel jitter`), in the real-time class instead where the kernel allows it (root), else
    /// best-effort. False when the kernel refused both.
    static func setRecordingIOPriority(level: Int32) -> Bool {
        if ProcessInfo.processInfo.environment["REEL_IO_CLASS"] == "realtime", CLinux_set_io_priority(1, level) == 0 { return true }
        return CLinux_set_io_priority(2, level) == 0
    }

    /// Gives the calling thread the lowest CPU priority (`setpriority`, nice 19; on Linux
    /// `PRIO_PROCESS` with 0 is the calling thread). False when the kernel refused.
    static func lowerToLowestCPUPriority() -> Bool { setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) == 0 }

    static func freeSpace(at path: String) throws -> Int64? {
        var p = path
        while true {
            var s = statvfs()
            if statvfs(p, &s) == 0 {
                guard s.f_blocks > 0 else { return nil }
                let (bytes, overflow) = UInt64(s.f_bavail).multipliedReportingOverflow(by: UInt64(s.f_frsize))
                return overflow ? .max : Int64(clamping: bytes)
            }
            let e = errno
            guard e == ENOENT, p != "/", p != "." else { throw SystemError("statvfs", path: p, errno: e) }
            p = parentDirectory(of: p)
        }
    }

    static func filesystemName(_ path: String) -> String {
        guard let fd = try? FileDescriptor.open(path, O_RDONLY) else { return "unknown" }
        defer { fd.closeQuietly() }
        return String(cString: CLinux_filesystem_name(fd.rawValue))
    }

    /// `size` bytes of private anonymous memory (page-aligned, zero-filled as it is touched),
    /// its own mapping: `unmapAnonymous` gives it back to the kernel at once.
    static func mapAnonymous(_ size: Int) -> UnsafeMutableRawPointer {
        let p = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        precondition(p != MAP_FAILED && p != nil, "out of memory for I/O buffers: mmap: \(String(cString: strerror(errno)))")
        return p!
    }

    /// Gives the pages of `size` bytes at `p` (from `mapAnonymous`) back to the kernel, keeping
    /// the mapping (`madvise(MADV_DONTNEED)`): they read as zeros when next touched, and cost
    /// no memory until then. False when madvise failed.
    static func discardPages(_ p: UnsafeMutableRawPointer, _ size: Int) -> Bool {
        madvise(p, size, MADV_DONTNEED) == 0
    }

    /// Unmaps what `mapAnonymous(size)` returned.
    static func unmapAnonymous(_ p: UnsafeMutableRawPointer, _ size: Int) {
        precondition(munmap(p, size) == 0, "munmap of an I/O buffer failed: \(String(cString: strerror(errno)))")
    }

    /// 4096-byte aligned memory.
    static func alignedAlloc(_ size: Int) -> UnsafeMutableRawPointer {
        var p: UnsafeMutableRawPointer? = nil
        precondition(posix_memalign(&p, 4096, size) == 0 && p != nil, "out of memory for I/O buffers")
        memset(p!, 0, size)
        return p!
    }
}

/// A process as the manifest names it: pid, start time (`/proc/PID/stat` field 22, clock
/// ticks since boot) and boot id (`/proc/sys/kernel/random/boot_id`). Manifests written
/// before these were recorded have only the pid; such owners are judged by pid alone.
public struct ProcessIdentity: Sendable, Equatable {
    /// The pid.
    public var pid: Int32
    /// Its start time (clock ticks since boot), where recorded.
    public var start: UInt64?
    /// The boot it ran in, where recorded.
    public var boot: String?

    /// This process.
    static let current = ProcessIdentity(pid: getpid(), start: Sys.processStartTime(getpid()), boot: currentBoot)

    /// This boot's id, or nil where /proc does not give it.
    static let currentBoot: String? = {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }()

    /// Whether `self` (from a manifest) names this very process.
    var isCurrent: Bool {
        let me = ProcessIdentity.current
        return pid == me.pid && (start == nil || me.start == nil || start == me.start)
            && (boot == nil || me.boot == nil || boot == me.boot)
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

extension FileDescriptor {
    /// Reserves bytes `0..<length` with `fallocate(2)` (mode 0: the file grows to `length`).
    /// - Throws: ``SystemError`` for `fallocate` (EOPNOTSUPP where the filesystem has none).
    func allocate(upTo length: Int64) throws {
        try retryingInterrupts("fallocate", path: path) { CLinux_fallocate(rawValue, 0, length) }
    }
}

/// Creates (or empties) `file` and prepares `size` bytes: preallocated with fallocate (where
/// the filesystem has it), written with zeros `chunk` bytes at a time when `zero`, then synced.
/// What a pool slot is made of; `reel jitter` prepares its files the same way.
/// - Throws: ``SystemError`` for `open`, `fallocate`, `pwrite` or `fdatasync`.
public func prepareSlotFile(_ file: String, size: Int64, zero: Bool, chunk: Int) throws {
    let fd = try FileDescriptor.open(file, O_WRONLY | O_CREAT | O_TRUNC)
    defer { fd.closeQuietly() }
    do { try fd.allocate(upTo: size) } catch let e as SystemError where e.errno == EOPNOTSUPP {
        // tmpfs and others without fallocate: the zeros below (if any) allocate the file.
    }
    if zero {
        let zeros = Sys.alignedAlloc(chunk)
        defer { free(zeros) }
        try fd.writeZeros(upTo: size, from: UnsafeRawBufferPointer(start: zeros, count: chunk))
    }
    try fd.dataSync()
}

/// The O_DIRECT alignment the filesystem holding `directory` accepts (512 or 4096), or nil
/// without direct I/O: opens `directory/probeName` with O_DIRECT and writes one block of each
/// size; the probe file is removed.
public func directIOAlignment(inDirectory directory: String, probeName: String) -> Int? {
    let probe = directory + "/" + probeName
    // A probe file left behind is harmless (pool delete removes it).
    defer { do { try Sys.unlinkIfPresent(probe) } catch {} }
    guard let fd = try? FileDescriptor.open(probe, O_WRONLY | O_CREAT | O_TRUNC | CLinux_O_DIRECT) else { return nil }
    defer { fd.closeQuietly() }
    let buf = Sys.alignedAlloc(4096)
    defer { free(buf) }
    for align in [512, 4096] where (try? fd.writeAll(buf, count: align, toAbsoluteOffset: 0)) != nil { return align }
    return nil
}
