import Foundation
import ReelControl
import Testing

// Issue 27 item 5: the control socket holds against silent clients and other local users,
// and removes only its own socket. In-process sockets; another user through setpriv.

/// A UNIX stream socket connected to `path`, with `SO_RCVTIMEO` of `seconds`; nil on failure.
private func connectUnix(_ path: String, seconds: Int = 5) -> Int32? {
    let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard s >= 0 else { return nil }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    var tv = timeval(tv_sec: seconds, tv_usec: 0)
    let ok = setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) == 0
        && withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 } }
    if !ok { close(s); return nil }
    return s
}

/// Sends `line` + newline and reads one answer line ("" when the socket closed first).
private func ask(_ s: Int32, _ line: String) -> String {
    let bytes = Array((line + "\n").utf8)
    guard bytes.withUnsafeBytes({ send(s, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else { return "" }
    var got = [UInt8]()
    var byte: UInt8 = 0
    while recv(s, &byte, 1, 0) == 1 {
        if byte == UInt8(ascii: "\n") { break }
        got.append(byte)
    }
    return String(decoding: got, as: UTF8.self)
}

/// Blocks until the peer closes `s` or `seconds` pass; true when it closed.
private func closes(_ s: Int32, within seconds: Double) -> Bool {
    var p = pollfd(fd: s, events: Int16(POLLIN), revents: 0)
    guard poll(&p, 1, Int32(seconds * 1000)) == 1 else { return false }
    var byte: UInt8 = 0
    return recv(s, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
}

/// A fresh directory (0755: reachable by another user when a test makes a socket so) under /tmp.
private func directory() -> String {
    let path = NSTemporaryDirectory() + "reel-control-\(UUID().uuidString)"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
    return path
}

private func controlSocket(_ path: String, idleTimeout: Double = ControlSocket.defaultIdleTimeout) throws -> ControlSocket {
    try ControlSocket(path: path, dispatcher: CaptureEventDispatcher(), controls: ControlSet(), idleTimeout: idleTimeout)
}

@Suite("RealtimeControlSocketSecurityTests", .serialized)
struct RealtimeControlSocketSecurityTests {
    /// Eight clients that connect and say nothing are closed after the idle timeout (1 s
    /// here; 30 s by default), and then a ninth is served: silent clients cannot lock it.
    @Test func silentClientsAreClosedAfterTheIdleTimeout() throws {
        #expect(ControlSocket.defaultIdleTimeout == 30)
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try controlSocket(dir + "/c.sock", idleTimeout: 1)
        defer { server.stop() }
        var silent: [Int32] = []
        defer { for s in silent { close(s) } }
        for _ in 0..<8 { silent.append(try #require(connectUnix(dir + "/c.sock"))) }
        let start = Date()
        for s in silent { #expect(closes(s, within: 10), "a silent client stayed connected") }
        let took = Date().timeIntervalSince(start)
        #expect(took >= 0.8 && took < 6, "closed after \(took) s")
        let ninth = try #require(connectUnix(dir + "/c.sock"))
        defer { close(ninth) }
        #expect(ask(ninth, #"{"status": true}"#).hasPrefix(#"{"controls""#))
        // A client that keeps asking is not idle.
        for _ in 0..<3 { usleep(600_000); #expect(ask(ninth, #"{"status": true}"#).contains(#""ok":true"#)) }
    }
}

@Suite("ControlSocketSecurityTests", .serialized)
struct ControlSocketSecurityTests {
    /// A client of another user (uid 65534 through setpriv, connecting to a socket made
    /// reachable to it) gets one refusal line and is closed: its request is not answered.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs root and setpriv to be another user"))
    func anotherUsersClientIsRefused() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/c.sock"
        let server = try controlSocket(path)
        defer { server.stop() }
        #expect(chmod(path, 0o666) == 0, "the socket reachable to others (as a loose umask or a handed-on path would make it)")
        let script = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
        try: s.sendall(b'{"status": true}\\n')
        except BrokenPipeError: pass  # refused before the request went out: the refusal is still there to read
        data = b''
        while True:
            chunk = s.recv(4096)
            if not chunk: break
            data += chunk
        sys.stdout.write(data.decode())
        """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", "/usr/bin/python3", "-c", script, path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(text == #"{"error":"this control socket serves uid 0 only","ok":false}"# + "\n", "\(text)")
        // This user is still served.
        let mine = try #require(connectUnix(path))
        defer { close(mine) }
        #expect(ask(mine, #"{"status": true}"#).contains(#""ok":true"#))
    }

    /// `stop()` removes the path only while it is still its own socket: a socket another
    /// process made there since (after removing ours) is left alone.
    @Test func stopLeavesAnotherProcessesSocket() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/c.sock"
        let server = try controlSocket(path)
        #expect(unlink(path) == 0)
        let other = try controlSocket(path)   // another recording's, now at the path
        var before = stat()
        #expect(lstat(path, &before) == 0)
        server.stop()
        var after = stat()
        #expect(lstat(path, &after) == 0, "stop() removed another socket's path")
        #expect(after.st_ino == before.st_ino)
        let c = try #require(connectUnix(path))
        #expect(ask(c, #"{"status": true}"#).contains(#""ok":true"#), "the other socket still answers")
        close(c)
        other.stop()
        #expect(lstat(path, &after) != 0 && errno == ENOENT, "its own path is removed")
    }
}
