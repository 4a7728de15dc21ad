import Foundation
import ReelCore

/// A live Reel recording as the registry holds it: who (pid, start time, boot id, so a reused
/// pid never counts) and what it takes.
public struct RegisteredSession: Codable, Sendable, Equatable {
    /// The recording's process id.
    public var pid: Int32
    /// `/proc/PID/stat` field 22 (clock ticks since boot).
    public var start: UInt64?
    /// `/proc/sys/kernel/random/boot_id`.
    public var boot: String?
    /// The recording's shares of this machine.
    public var shares: SessionShares
    /// Seconds since 1970 when it registered.
    public var registeredAt: Double

    /// A record of process `pid` (its start time and boot id, when known) taking `shares`.
    public init(pid: Int32, start: UInt64?, boot: String?, shares: SessionShares, registeredAt: Double) {
        self.pid = pid; self.start = start; self.boot = boot; self.shares = shares; self.registeredAt = registeredAt
    }

    /// The identity of the live process `pid` as the registry records it (nil if it is gone).
    public static func identity(of pid: Int32) -> (start: UInt64?, boot: String?)? {
        guard SessionRegistry.isAlive(pid: pid, start: nil, boot: nil) else { return nil }
        return (SessionRegistry.startTime(pid), SessionRegistry.bootID)
    }
}

/// The other Reel recordings on this machine: one file per live recorder
/// (`RUNTIME/reel/sessions/PID.json`, RUNTIME = `$XDG_RUNTIME_DIR`, else `/tmp/reel-UID`).
/// Entries whose process is gone (or whose pid now names another process) are ignored and
/// removed by whoever reads them; admission (read, decide, write) holds `lock` with `flock`,
/// so two recorders starting at once cannot both take the last share.
///
/// Another local user must not plant or forge entries (every recording would be refused), so
/// the registry's directories, from `root` down (`/tmp/reel-UID` and its `sessions`), are made
/// 0700 and checked before use with `lstat` (no symlink followed): a directory, owned by this
/// user (`geteuid`), no group or other permission bits. Files are opened with `O_NOFOLLOW`
/// (the temporary entry with `O_EXCL` too). Otherwise `RegistryError.unsafe` (exit 77).
public struct SessionRegistry: Sendable {
    /// Where the records are, one file per recording.
    public let directory: String
    /// The registry's own top directory (`directory` itself or one of its parents): it and
    /// every directory below it down to `directory` are made and checked.
    public let root: String

    /// The registry in `directory`, checking the directories from `root` (default: `directory`
    /// alone) down to it.
    public init(directory: String, root: String? = nil) {
        self.directory = directory
        // A root that is not `directory` or one of its parents is ignored.
        if let root, directory == root || directory.hasPrefix(root + "/") { self.root = root } else { self.root = directory }
    }

    /// The registry at its default place (`defaultLocation` in this process's environment).
    public init() {
        let (root, directory) = Self.defaultLocation(environment: ProcessInfo.processInfo.environment, uid: geteuid())
        self.init(directory: directory, root: root)
    }

    /// `$XDG_RUNTIME_DIR/reel/sessions` (root `$XDG_RUNTIME_DIR/reel`), else
    /// `/tmp/reel-UID/sessions` (root `/tmp/reel-UID`).
    public static func defaultLocation(environment: [String: String], uid: uid_t) -> (root: String, directory: String) {
        if let r = environment["XDG_RUNTIME_DIR"], !r.isEmpty { return (r + "/reel", r + "/reel/sessions") }
        return ("/tmp/reel-\(uid)", "/tmp/reel-\(uid)/sessions")
    }

    /// Makes (mode 0700) and checks the directories from `root` down to `directory`: each must
    /// be a directory, not a symlink (`lstat`), owned by `geteuid()`, with no group or other bits.
    /// - Throws: `RegistryError.unsafe` when one is not; `SystemError` when one cannot be made.
    public func prepare() throws {
        var paths = [root]
        for part in directory.dropFirst(root.count).split(separator: "/") { paths.append(paths[paths.count - 1] + "/" + part) }
        for path in paths {
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                guard errno == ENOENT, path == root else { throw SystemError("mkdir", path: path, errno: errno) }
                // The root's parent (a runtime directory) is missing: made as the runtime's would be.
                try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                        withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                guard mkdir(path, 0o700) == 0 || errno == EEXIST else { throw SystemError("mkdir", path: path, errno: errno) }
            }
            try check(path)
        }
    }

    /// `path` is a real directory of this user, closed to others. One that others may read but
    /// not write (an older Reel made it 0755: nobody else could have planted entries in it) is
    /// closed to 0700 through a descriptor opened without following symlinks. Throws
    /// `RegistryError.unsafe` for a symlink, another user's directory, or one others may write.
    private func check(_ path: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { throw SystemError("lstat", path: path, errno: errno) }
        if st.st_mode & S_IFMT == S_IFLNK { throw RegistryError.unsafe(path, "is a symbolic link") }
        if st.st_mode & S_IFMT != S_IFDIR { throw RegistryError.unsafe(path, "is not a directory") }
        if st.st_uid != geteuid() { throw RegistryError.unsafe(path, "belongs to uid \(st.st_uid), not \(geteuid())") }
        if st.st_mode & 0o022 != 0 {
            throw RegistryError.unsafe(path, "is open to other users (mode \(String(st.st_mode & 0o7777, radix: 8)))")
        }
        guard st.st_mode & 0o077 != 0 else { return }
        let fd = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        defer { fd.closeQuietly() }
        var now = stat()
        guard fstat(fd.rawValue, &now) == 0 else { throw SystemError("fstat", path: path, errno: errno) }
        guard now.st_ino == st.st_ino, now.st_dev == st.st_dev, now.st_uid == geteuid() else {
            throw RegistryError.unsafe(path, "changed while it was checked")
        }
        guard fchmod(fd.rawValue, 0o700) == 0 else { throw SystemError("fchmod", path: path, errno: errno) }
    }

    /// The live sessions other than this process; stale entries are removed on the way.
    /// - Throws: `RegistryError.unsafe` when the registry's directories are not safe to trust.
    public func live() throws -> [RegisteredSession] {
        try prepare()
        return entries()
    }

    /// The entries, read without following symlinks (a planted one is skipped).
    private func entries() -> [RegisteredSession] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var found: [RegisteredSession] = []
        for name in names where name.hasSuffix(".json") {
            let path = directory + "/" + name
            guard let pid = Int32(name.dropLast(5)), pid != getpid() else { continue }
            guard let data = Self.read(path),
                  let entry = try? JSONDecoder().decode(RegisteredSession.self, from: data), entry.pid == pid else {
                // Damaged, or a half-written entry of a process that died writing it (entries are
                // renamed into place, so a live writer never leaves one): only if its pid is gone.
                if !Self.isAlive(pid: pid, start: nil, boot: nil) { removeEntry(path) }
                continue
            }
            if Self.isAlive(pid: entry.pid, start: entry.start, boot: entry.boot) {
                found.append(entry)
            } else {
                removeEntry(path)
            }
        }
        return found.sorted { $0.pid < $1.pid }
    }

    /// The file at `path` (`O_NOFOLLOW`: nil for a symlink), at most 64 KiB; nil when it cannot be read.
    static func read(_ path: String) -> Data? {
        guard let fd = try? FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) else { return nil }
        defer { fd.closeQuietly() }
        var st = stat()
        guard fstat(fd.rawValue, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size <= 65536 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        let n = bytes.withUnsafeMutableBytes { pread(fd.rawValue, $0.baseAddress, $0.count, 0) }
        guard n >= 0 else { return nil }
        return Data(bytes[..<n])
    }

    /// A stale entry: removing it is only tidying (another reader may have removed it first).
    private func removeEntry(_ path: String) {
        if unlink(path) != 0 && errno != ENOENT { /* left for the next reader; it is ignored anyway */ }
    }

    /// Runs `decide` with the live sessions while holding the registry's lock; when it returns
    /// shares, they are registered for this process before the lock is released. Throws
    /// `SystemError` when the registry cannot be made or written, `RegistryError.unsafe` when
    /// its directories are not safe to trust, and what `decide` throws.
    public func admit(_ decide: ([RegisteredSession]) throws -> SessionShares?) throws -> Registration? {
        try prepare()
        return try locked {
            guard let shares = try decide(entries()) else { return nil }
            let me = getpid()
            let entry = RegisteredSession(pid: me, start: Self.startTime(me), boot: Self.bootID, shares: shares,
                                          registeredAt: Date().timeIntervalSince1970)
            return Registration(path: try write(entry), registry: self)
        }
    }

    /// Runs `body` holding the registry's lock (`flock(2)` on `DIRECTORY/lock`, EINTR retried).
    /// - Throws: `SystemError` when the lock file cannot be opened or locked; what `body` throws.
    func locked<T>(_ body: () throws -> T) throws -> T {
        let lock = try FileDescriptor.open(directory + "/lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, permissions: 0o600)
        defer { lock.closeQuietly() }
        try retryingInterrupts("flock", path: lock.path) { flock(lock.rawValue, LOCK_EX) }
        return try body()
    }

    /// Writes `entry` as `DIRECTORY/PID.json` (a temporary file renamed into place: readers
    /// never see half an entry); the caller holds the lock. Returns the entry's path.
    /// - Throws: `SystemError` when it cannot be written or renamed.
    @discardableResult
    private func write(_ entry: RegisteredSession) throws -> String {
        let me = entry.pid
        let path = directory + "/\(me).json"
        let tmp = directory + "/.\(me).tmp"
        let data = try JSONEncoder().encode(entry)
        // The caller holds the lock: a temporary file left there is one a writer died with.
        removeEntry(tmp)
        let fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions: 0o600)
        do {
            try data.withUnsafeBytes { try fd.writeAll($0, toAbsoluteOffset: 0) }
            try fd.close()
        } catch {
            fd.closeQuietly()
            removeEntry(tmp)
            throw error
        }
        guard rename(tmp, path) == 0 else {
            let e = errno
            removeEntry(tmp)
            throw SystemError("rename", path: path, errno: e)
        }
        return path
    }

    /// Replaces the shares of this process's entry (a recording whose frame rate stepped down
    /// under pressure, or back up), holding the lock as admission does: a recorder or `reel
    /// cost` started meanwhile counts the new share. Nothing when the entry is gone (released).
    /// - Throws: `SystemError` when the lock, the entry or its replacement cannot be read or written.
    public func update(_ registration: Registration, shares: SessionShares) throws {
        try prepare()
        try locked {
            // Entries are renamed into place whole: ours is whole, or gone (released).
            guard let data = Self.read(registration.path),
                  var entry = try? JSONDecoder().decode(RegisteredSession.self, from: data), entry.pid == getpid() else { return }
            entry.shares = shares
            try write(entry)
        }
    }

    /// Whether `pid` is a live process and, where known, the same one (start time, boot).
    public static func isAlive(pid: Int32, start: UInt64?, boot: String?) -> Bool {
        guard pid > 0 else { return false }
        if kill(pid, 0) != 0 && errno != EPERM { return false }
        // A zombie (killed, not yet reaped) records nothing any more.
        if let state = statFields(pid)?.first, state == "Z" || state == "X" { return false }
        if let start, let now = startTime(pid), start != now { return false }
        if let boot, let now = bootID, boot != now { return false }
        return true
    }

    static func statFields(_ pid: Int32) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
    }

    /// Field 22 of `/proc/PID/stat`.
    static func startTime(_ pid: Int32) -> UInt64? {
        guard let f = statFields(pid), f.count > 19 else { return nil }
        return UInt64(f[19])
    }

    static let bootID: String? = {
        let id = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        return id?.isEmpty == false ? id : nil
    }()
}

/// This process's entry in the registry; `release()` removes it (a recorder that dies leaves
/// it, and readers drop it once the pid is gone).
public final class Registration: Sendable {
    /// The entry's file, removed by `release()`.
    public let path: String
    /// The registry it belongs to.
    public let registry: SessionRegistry
    init(path: String, registry: SessionRegistry) { self.path = path; self.registry = registry }

    /// Replaces the entry's shares (``SessionRegistry/update(_:shares:)``).
    /// - Throws: `SystemError` when the registry cannot be locked, read or written.
    public func update(shares: SessionShares) throws {
        try registry.update(self, shares: shares)
    }

    /// Removes the entry (`unlink`); an entry already gone is fine.
    public func release() {
        if unlink(path) != 0 && errno != ENOENT { /* readers drop it once this process is gone */ }
    }
}

/// The registry cannot be trusted: another user could plant or forge its entries.
public enum RegistryError: UserFacingError, Equatable {
    /// A directory of the registry (`path`) is a symlink, not a directory, another user's, or
    /// open to others (`why`). Exit 77 (`ExitStatus.permission`).
    case unsafe(String, String)

    /// Always `ExitStatus.permission` (77).
    public var exitStatus: Int32 { ExitStatus.permission }
    /// The one-line message shown after `reel: `.
    public var description: String {
        switch self {
        case .unsafe(let path, let why):
            return "the session registry \(path) \(why): remove it (it is remade 0700), or set XDG_RUNTIME_DIR"
        }
    }
}
