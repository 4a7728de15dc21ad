import Foundation
import Glibc
import Synchronization

/// A `reel` process run in a pseudo-terminal, as a person runs it: the pty is its controlling
/// terminal (a new session; Ctrl-C typed on it sends SIGINT to its foreground process group)
/// and its stdin and stderr; stdout goes to a file, like `reel record --json > summary.json`.
/// The test types on the master side and reads what the terminal shows.
final class TerminalRun: Sendable {
    let pid: pid_t
    private let master: Int32
    /// The test keeps the terminal side open too: to read its settings after the process exits.
    private let slave: Int32
    private let stdoutPath: String
    private let shown = Mutex<[UInt8]>([])
    private let stopReading = Atomic<Bool>(false)
    private let exitStatus = Mutex<Int32?>(nil)

    struct Failure: Error, CustomStringConvertible { let description: String }

    init(_ args: [String], environment: [String: String] = [:]) throws {
        // posix_openpt, unlockpt and ptsname as glibc does them (Swift's Glibc module does
        // not declare them): open the multiplexer, unlock the new terminal, ask its number.
        let m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard m >= 0 else { throw Failure(description: "open /dev/ptmx: \(String(cString: strerror(errno)))") }
        var unlock: Int32 = 0, number: UInt32 = 0
        let TIOCSPTLCK: UInt = 0x4004_5431, TIOCGPTN: UInt = 0x8004_5430
        guard ioctl(m, TIOCSPTLCK, &unlock) == 0, ioctl(m, TIOCGPTN, &number) == 0 else {
            close(m)
            throw Failure(description: "unlocking the pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let slavePath = "/dev/pts/\(number)"
        let s = open(slavePath, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard s >= 0 else { close(m); throw Failure(description: "open \(slavePath): \(String(cString: strerror(errno)))") }
        master = m
        slave = s
        stdoutPath = temporaryDirectory("reel-tty") + "/stdout"

        var env = ProcessInfo.processInfo.environment
        env["REEL_POOL"] = testPool
        env["XDG_CACHE_HOME"] = testCache
        env["REEL_PRESSURE_DIR"] = testPressureDirectory   // issue 13: see Support.swift
        env["XDG_RUNTIME_DIR"] = privateRuntimeDirectory()
        env["TERM"] = "xterm"
        for (k, v) in environment { env[k] = v }

        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        // A new session first; then opening the terminal (without O_NOCTTY) makes it the
        // session's controlling terminal, with the child as its foreground process group.
        var rc = posix_spawn_file_actions_addopen(&actions, 0, slavePath, O_RDWR, 0)
        if rc == 0 { rc = posix_spawn_file_actions_adddup2(&actions, 0, 2) }
        if rc == 0 { rc = posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        if rc == 0 { rc = posix_spawnattr_setsigmask(&attributes, &none) }
        if rc == 0 { rc = posix_spawnattr_setsigdefault(&attributes, &all) }
        let setsid: Int32 = 0x80  // POSIX_SPAWN_SETSID (glibc ≥ 2.26)
        if rc == 0 { rc = posix_spawnattr_setflags(&attributes, Int16(setsid | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) }
        guard rc == 0 else { close(m); close(s); throw Failure(description: "posix_spawn setup: \(String(cString: strerror(rc)))") }

        let argv = [reelBinary] + pinned(args)
        let envp = env.map { "\($0.key)=\($0.value)" }
        var child: pid_t = 0
        rc = withCStrings(argv) { cargv in
            withCStrings(envp) { cenv in posix_spawn(&child, reelBinary, &actions, &attributes, cargv, cenv) }
        }
        guard rc == 0 else { close(m); close(s); throw Failure(description: "posix_spawn \(reelBinary): \(String(cString: strerror(rc)))") }
        pid = child

        let reader = Thread { [self] in readTerminal() }
        reader.name = "test.pty"
        reader.start()
    }

    /// Kills the process if it is still running and stops reading the terminal; the
    /// terminal is closed once the reader has let go.
    func finish() {
        stopReading.store(true, ordering: .releasing)
        if exited == nil {
            kill(pid, SIGKILL)
            _ = waitForExit(10)
        }
    }

    deinit {
        if exitStatus.withLock({ $0 }) == nil {
            kill(pid, SIGKILL)
            var st: Int32 = 0
            while waitpid(pid, &st, 0) < 0 && errno == EINTR {}
        }
        // The reader thread polls with a timeout and holds `self` until it returns.
        removeTree((stdoutPath as NSString).deletingLastPathComponent)
        close(master)
        close(slave)
    }

    private func readTerminal() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopReading.load(ordering: .acquiring) {
            var pfd = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, 50)
            if r <= 0 { continue }
            let n = read(master, &buffer, buffer.count)
            if n > 0 {
                let text = shown.withLock { $0 += buffer[0..<n]; return String(decoding: $0, as: UTF8.self) }
                notePreviewTokens(in: text)   // the preview's token, for curl
            } else if n < 0 && errno != EINTR && errno != EAGAIN { usleep(10_000) }
        }
    }

    /// Everything the terminal showed so far.
    var screen: String { String(decoding: shown.withLock { $0 }, as: UTF8.self) }

    /// Types on the keyboard (`"\u{03}"` is Ctrl-C).
    func type(_ text: String) {
        let bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            precondition(n > 0, "write to the pty master: \(String(cString: strerror(errno)))")
            off += n
        }
    }

    /// The last progress line `reel record` drew: frames captured and the current ratio.
    var progress: (frames: Int, ratio: String)? {
        let lines = screen.split(whereSeparator: { $0 == "\r" || $0 == "\n" })
        for line in lines.reversed() {
            let words = line.split(separator: " ")
            if let k = words.firstIndex(of: "frames"), k > 0, let n = Int(words[k - 1]), let last = words.last {
                return (n, String(last))
            }
        }
        return nil
    }

    /// Waits until `condition` holds for the progress line; nil when `seconds` pass first.
    func waitForProgress(_ seconds: Double, _ condition: (Int, String) -> Bool) -> (frames: Int, ratio: String)? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let p = progress, condition(p.frames, p.ratio) { return p }
            if exited != nil { return nil }
            usleep(10_000)
        }
        return nil
    }

    /// The wait status once the process has ended (not reaped before).
    var exited: Int32? {
        exitStatus.withLock { status in
            if status == nil {
                var st: Int32 = 0
                if waitpid(pid, &st, WNOHANG) == pid { status = st }
            }
            return status
        }
    }

    /// Waits for the process to end; its exit status, or nil when it ended by a signal or
    /// did not end within `seconds`.
    func waitForExit(_ seconds: Double) -> (status: Int32?, signal: Int32?) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let st = exited {
                let sig = st & 0x7f
                return sig == 0 ? ((st >> 8) & 0xff, nil) : (nil, sig)
            }
            usleep(10_000)
        }
        return (nil, nil)
    }

    /// What the process printed on stdout.
    var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }

    /// The terminal's settings now.
    func settings() throws -> termios {
        var t = termios()
        guard tcgetattr(slave, &t) == 0 else { throw Failure(description: "tcgetattr: \(String(cString: strerror(errno)))") }
        return t
    }

    /// Whether `sig` is pending for the process (sent, not yet taken).
    func isPending(_ sig: Int32) -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return false }
        let bit = UInt64(1) << UInt64(sig - 1)
        for line in text.split(separator: "\n") where line.hasPrefix("ShdPnd:") || line.hasPrefix("SigPnd:") {
            if let mask = UInt64(line.split(separator: "\t").last ?? "", radix: 16), mask & bit != 0 { return true }
        }
        return false
    }
}

/// Calls `body` with a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    let pointers = strings.map { strdup($0) } + [nil]
    defer { for p in pointers { free(p) } }
    return body(pointers)
}

extension termios {
    /// The fields a program changes, for comparison.
    var snapshot: [UInt64] {
        var t = self
        let cc = withUnsafeBytes(of: &t.c_cc) { Array($0) }
        return [UInt64(c_iflag), UInt64(c_oflag), UInt64(c_cflag), UInt64(c_lflag)] + cc.map { UInt64($0) }
    }
}
