import CLinux
import Foundation
import ReelCore
import Synchronization

/// The control socket: JSON lines over a UNIX stream socket (mode 0600: only this user).
/// Each line is one request, each answered by one JSON line:
///
///     {"event": "began", "action": "primary"}     → {"ok": true}   (a capture event, source "socket")
///     {"set": "zoom", "value": 2}                 → {"ok": true, "control": "zoom", "value": 2, "clamped": false}
///     {"record": "start"}  (start, stop, toggle)  → {"ok": true, "recording": true, "take": N, ...}
///     {"status": true}                            → {"ok": true, "controls": [...], "events": N}
///     {"watch": true}                             → {"ok": true, "watching": true}, then one line per
///                                                   event the camera publishes (`{"framing": {...}}`)
///     not JSON / unknown request                  → {"ok": false, "error": "..."}  (the connection stays open)
///
/// Several clients may be connected at once (up to 8; more are closed at once). A client of
/// another user (`SO_PEERCRED`: a uid other than `geteuid()`) gets one refusal line and is
/// closed; one that sends no complete line for `idleTimeout` seconds is closed, so silent
/// clients cannot hold the 8 places.
public final class ControlSocket: Sendable {
    /// Where the socket listens.
    public let path: String
    /// Seconds a client may stay without sending a complete request line before it is closed.
    public let idleTimeout: Double
    /// The default `idleTimeout`: 30 s.
    public static let defaultIdleTimeout: Double = 30
    private let fd: Int32
    /// The socket file's device and inode when bound: `stop()` removes the path only while it
    /// is still this socket.
    private let boundFile: (dev: UInt, ino: UInt)
    private let stopped = Atomic<Bool>(false)
    private let clients = Atomic<Int>(0)
    private let done = DispatchSemaphore(value: 0)
    private let dispatcher: CaptureEventDispatcher
    private let controls: ControlSet
    private let recordHandler = Mutex<RecordHandler?>(nil)
    /// Published event lines (the newest `feedLimit`) and the number of lines ever published.
    private let feed = Mutex<(lines: [String], total: Int)>(([], 0))
    /// Event lines a watching client can still catch up on.
    static let feedLimit = 256

    /// Publishes an event: every client that sent `{"watch": true}` gets it as one JSON line
    /// (within 100 ms; a client that watches from later gets the newest 256 first, and every
    /// line published before `stop` is sent before its connection closes). A client too slow
    /// to read it holds up only its own connection.
    public func publish(_ object: [String: Any]) {
        let line = Self.reply(object)
        feed.withLock { f in
            f.lines.append(line)
            f.total += 1
            if f.lines.count > Self.feedLimit { f.lines.removeFirst(f.lines.count - Self.feedLimit) }
        }
    }

    /// Lines published after the first `seen`, and the new total.
    private func published(after seen: Int) -> ([String], Int) {
        feed.withLock { f in
            let first = f.total - f.lines.count
            return (Array(f.lines[max(0, seen - first)...]), f.total)
        }
    }

    /// What `{"record": ACTION}` calls with ACTION `start`, `stop`, `toggle` or `status`
    /// (the state alone, for `{"status": true}`).
    public typealias RecordHandler = @Sendable (String) -> RecordReply

    /// Sets who starts and stops recording (`reel record` wires its movie output); until then
    /// `{"record": …}` answers `ok: false`.
    public func setRecordHandler(_ handler: @escaping RecordHandler) {
        recordHandler.withLock { $0 = handler }
    }

    /// Binds and listens at `path` (`socket`, `bind` under umask 077, `chmod` 0600, `listen`).
    /// A stale socket there (nobody accepts on it) is replaced; anything else there is refused:
    /// a live socket exits 75, another file 73. `idleTimeout`: see the type. Throws `ControlError`.
    public init(path: String, dispatcher: CaptureEventDispatcher, controls: ControlSet,
                idleTimeout: Double = ControlSocket.defaultIdleTimeout) throws {
        self.path = path
        self.idleTimeout = idleTimeout
        self.dispatcher = dispatcher
        self.controls = controls
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw ControlError("--control-socket: '\(path)' is empty or longer than \(MemoryLayout.size(ofValue: addr.sun_path) - 1) bytes", exitStatus: ExitStatus.usage)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in p.copyBytes(from: bytes) }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard st.st_mode & S_IFMT == S_IFSOCK else {
                throw ControlError("--control-socket: \(path) exists and is not a socket", exitStatus: ExitStatus.cantCreate)
            }
            if Self.connects(addr) {
                throw ControlError("--control-socket: \(path) is in use by another reel", exitStatus: ExitStatus.busy)
            }
            guard unlink(path) == 0 || errno == ENOENT else {
                throw ControlError("--control-socket: cannot remove the stale socket \(path): \(String(cString: strerror(errno)))", exitStatus: ExitStatus.cantCreate)
            }
        }
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw ControlError("--control-socket: socket: \(String(cString: strerror(errno)))", exitStatus: ExitStatus.unavailable) }
        let old = umask(0o077)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        let bindErrno = errno
        umask(old)
        var mine = stat()
        guard bound == 0, chmod(path, 0o600) == 0, lstat(path, &mine) == 0, listen(s, 8) == 0 else {
            let e = bound == 0 ? errno : bindErrno
            FileDescriptor(rawValue: s, path: path).closeQuietly()
            throw ControlError("--control-socket: cannot listen at \(path): \(String(cString: strerror(e)))",
                               exitStatus: e == EACCES || e == EPERM ? ExitStatus.permission : ExitStatus.cantCreate)
        }
        boundFile = (UInt(mine.st_dev), UInt(mine.st_ino))
        fd = s
        let t = Thread { [self] in acceptLoop(); done.signal() }
        t.name = "reel.control"
        t.start()
    }

    /// Someone accepts on the socket at `addr`.
    private static func connects(_ addr: sockaddr_un) -> Bool {
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { return false }
        defer { FileDescriptor(rawValue: s, path: "").closeQuietly() }
        var a = addr
        return withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } } == 0
    }

    /// Stops accepting, closes the socket and removes its path — only while the path is
    /// still this socket (the device and inode recorded at bind): a socket another process
    /// made there since is left alone. Safe more than once.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        done.wait()
        var now = stat()
        if lstat(path, &now) == 0, now.st_mode & S_IFMT == S_IFSOCK, UInt(now.st_dev) == boundFile.dev, UInt(now.st_ino) == boundFile.ino {
            if unlink(path) != 0 { /* gone meanwhile: nothing to remove */ }
        }
        FileDescriptor(rawValue: fd, path: path).closeQuietly()
    }

    /// The uid of the process at the other end of `c` (`SO_PEERCRED`), nil when unknown.
    private static func peerUID(_ c: Int32) -> uid_t? {
        var uid: UInt32 = 0
        guard CLinux_peer_uid(c, &uid) == 0 else { return nil }
        return uid_t(uid)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, 100)
            if r < 0 && errno != EINTR { return }   // the listening socket is broken: no more clients
            if r <= 0 { continue }
            let c = accept(fd, nil, nil)
            if c < 0 { continue }
            guard fcntl(c, F_SETFD, FD_CLOEXEC) == 0 else { FileDescriptor(rawValue: c, path: path).closeQuietly(); continue }
            if clients.add(1, ordering: .relaxed).newValue > 8 {
                clients.subtract(1, ordering: .relaxed)
                FileDescriptor(rawValue: c, path: path).closeQuietly()
                continue
            }
            let t = Thread { [self] in
                if Self.peerUID(c) == geteuid() { serve(c) } else { refuse(c) }
                clients.subtract(1, ordering: .relaxed)
            }
            t.name = "reel.control.client"
            t.start()
        }
    }

    /// Another user's client (a socket made reachable to others, or a descriptor handed on):
    /// one refusal line, then what it sent is read and dropped for up to a second (closing with
    /// unread data would reset the connection before the client reads the refusal), then closed.
    private func refuse(_ c: Int32) {
        defer { FileDescriptor(rawValue: c, path: path).closeQuietly() }
        // Refused either way: whether the line went out changes nothing.
        guard send(c, Self.reply(["ok": false, "error": "this control socket serves uid \(geteuid()) only"])),
              shutdown(c, Int32(SHUT_WR)) == 0 else { return }
        let end = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
        var chunk = [UInt8](repeating: 0, count: 4096)
        while DispatchTime.now().uptimeNanoseconds < end {
            var pfd = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, 100)
            if r < 0 && errno != EINTR { return }
            if r <= 0 { continue }
            if chunk.withUnsafeMutableBytes({ recv(c, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) <= 0 { return }
        }
    }

    /// Reads lines from one client and answers each; a line over 64 KiB closes the connection,
    /// and so do `idleTimeout` seconds without a complete line.
    private func serve(_ c: Int32) {
        defer { FileDescriptor(rawValue: c, path: path).closeQuietly() }
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        var lastLine = DispatchTime.now().uptimeNanoseconds
        // A watching client gets the published lines after `seen`; it may stay silent.
        var watching = false, seen = 0
        defer {
            // The lines published before the stop go out before the connection closes.
            if watching { for l in published(after: seen).0 where !send(c, l) { break } }
        }
        while !stopped.load(ordering: .acquiring) {
            if watching {
                let (lines, total) = published(after: seen)
                seen = total
                for l in lines where !send(c, l) { return }
            } else if Double(DispatchTime.now().uptimeNanoseconds - lastLine) / 1e9 >= idleTimeout { return }
            var pfd = pollfd(fd: c, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, 100)
            if r < 0 && errno != EINTR { return }
            if r <= 0 { continue }
            let n = chunk.withUnsafeMutableBytes { read(c, $0.baseAddress, $0.count) }
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n <= 0 { return }
            buffer += chunk[0..<n]
            while let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<nl])
                buffer.removeSubrange(...nl)
                if !watching, Self.isWatch(line) {
                    // From the oldest line kept: a client that comes late catches up.
                    watching = true
                    seen = feed.withLock { $0.total - $0.lines.count }
                }
                guard send(c, answer(line)) else { return }
                lastLine = DispatchTime.now().uptimeNanoseconds
            }
            if buffer.count > 65536 {
                // Answered and closed either way: whether the reply went out changes nothing.
                if !send(c, Self.reply(["ok": false, "error": "line longer than 64 KiB"])) { return }
                return
            }
        }
    }

    private func send(_ c: Int32, _ text: String) -> Bool {
        var bytes = Array((text + "\n").utf8)[...]
        while !bytes.isEmpty {
            let n = bytes.withUnsafeBytes { Glibc.send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            bytes = bytes.dropFirst(n)
        }
        return true
    }

    /// The answer to one request line (public for tests and for other transports).
    public func answer(_ line: [UInt8]) -> String {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)), let request = object as? [String: Any] else {
            return Self.reply(["ok": false, "error": "not a JSON object"])
        }
        if let phase = request["event"] as? String {
            guard let p = CaptureEvent.Phase(rawValue: phase), let a = CaptureEvent.Action(rawValue: request["action"] as? String ?? "primary") else {
                return Self.reply(["ok": false, "error": "event: phase is began, cancelled or ended; action primary or secondary"])
            }
            dispatcher.send(CaptureEvent(phase: p, action: a, source: "socket"))
            return Self.reply(["ok": true])
        }
        if let name = request["set"] as? String {
            let value: String
            switch request["value"] {
            case let n as NSNumber: value = n.stringValue
            case let t as String: value = t
            default: return Self.reply(["ok": false, "error": "set: needs a value"])
            }
            let r = controls.set(name, value)
            var out: [String: Any] = ["ok": r.ok, "control": r.control, "clamped": r.clamped]
            if let v = r.value { out["value"] = v }
            if let t = r.title { out["title"] = t }
            if let e = r.error { out["error"] = e }
            return Self.reply(out)
        }
        if let action = request["record"] {
            guard let a = action as? String, ["start", "stop", "toggle"].contains(a) else {
                return Self.reply(["ok": false, "error": "record: use start, stop or toggle"])
            }
            guard let handler = recordHandler.withLock({ $0 }) else {
                return Self.reply(["ok": false, "error": "record: this session has no movie output to start or stop"])
            }
            return Self.reply(handler(a).object)
        }
        if request["watch"] != nil {
            return Self.reply(["ok": true, "watching": true])
        }
        if request["status"] != nil {
            // Every event sent so far has been handled, every control change applied.
            dispatcher.drain()
            controls.drain()
            let states = controls.controls.map(\.state)
            let encoded = (try? JSONEncoder().encode(states)).flatMap { try? JSONSerialization.jsonObject(with: $0) } ?? []
            var out: [String: Any] = ["ok": true, "controls": encoded, "events": dispatcher.events.count, "markers": dispatcher.markers.count,
                                      "frame": dispatcher.newestFrame.map { $0 as Any } ?? NSNull()]
            if let handler = recordHandler.withLock({ $0 }) { out["recording"] = handler("status").recording }
            return Self.reply(out)
        }
        return Self.reply(["ok": false, "error": "unknown request: use event, set, record, status or watch"])
    }

    /// Whether `line` is a `{"watch": …}` request.
    private static func isWatch(_ line: [UInt8]) -> Bool {
        ((try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any])?["watch"] != nil
    }

    private static func reply(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "{\"ok\":false}" }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The answer to `{"record": ACTION}`: whether it was done, whether the movie output records
/// now, and for a done request its take and frame (`frameIndex`: a stop's last recorded frame;
/// a start's first frame is not captured yet, so null).
public struct RecordReply: Sendable, Equatable {
    /// The request was done.
    public var ok: Bool
    /// The movie output records now.
    public var recording: Bool
    /// Why not, when `ok` is false.
    public var error: String?
    /// `start` or `stop`, what a done request did.
    public var action: String?
    /// The take the request opened or ended.
    public var take: Int?
    /// A stop's last recorded frame.
    public var frameIndex: Int?

    /// A reply; leave the optional parts nil when they do not apply.
    public init(ok: Bool, recording: Bool, error: String? = nil, action: String? = nil, take: Int? = nil, frameIndex: Int? = nil) {
        self.ok = ok; self.recording = recording; self.error = error
        self.action = action; self.take = take; self.frameIndex = frameIndex
    }

    var object: [String: Any] {
        var o: [String: Any] = ["ok": ok, "recording": recording]
        if let error { o["error"] = error }
        if let action { o["action"] = action }
        if let take { o["take"] = take }
        o["frameIndex"] = frameIndex.map { $0 as Any } ?? NSNull()
        return o
    }
}

extension CaptureEvent {
    /// The preview page's shutter button: `down` → began, `up` → ended, `leave` (the pointer
    /// left the button while pressed) → cancelled; anything else nil. The preview's POST
    /// endpoint hands the result to `CaptureEventDispatcher.send`.
    public static func fromPage(_ button: String, action: Action = .primary) -> CaptureEvent? {
        switch button {
        case "down": return CaptureEvent(phase: .began, action: action, source: "page")
        case "up": return CaptureEvent(phase: .ended, action: action, source: "page")
        case "leave": return CaptureEvent(phase: .cancelled, action: action, source: "page")
        default: return nil
        }
    }
}
