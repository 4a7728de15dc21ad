import Foundation
import ReelControl
import ReelCore

/// `reel control --socket PATH REQUEST...`: sends requests to a recording's control socket
/// (`reel record --control-socket PATH`) and prints each JSON answer on its own line.
enum ControlCommand {
    /// The requests as the socket's JSON lines; no side effects. Throws `UsageError`.
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        let scanned = try ScannedArguments(argv, spec: CommandTable.control)
        var socket: String? = nil
        var timeout = defaultTimeout
        for (name, value) in scanned.options {
            switch name {
            case "--socket": socket = value
            case "--timeout": timeout = try parseSeconds(value ?? "", option: name, range: 0.1...3600)
            default: break
            }
        }
        guard let socket, !socket.isEmpty else { throw UsageError("control: --socket PATH is required (the path reel record --control-socket printed)") }
        var words = scanned.operands[...]
        var lines: [String] = []
        func json(_ object: [String: Any]) -> String {
            String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
        }
        while let word = words.popFirst() {
            switch word {
            case "zoom", "exposure", "ratio", "effect", "mode", "framing":
                guard let value = words.popFirst() else { throw UsageError("control: \(word) needs a value") }
                lines.append(json(["set": word, "value": value]))
            case "status": lines.append(json(["status": true]))
            case "record":
                guard let action = words.popFirst(), ["start", "stop", "toggle"].contains(action) else {
                    throw UsageError("control: record needs start, stop or toggle")
                }
                lines.append(json(["record": action]))
            case "shutter", "marker":
                let action = word == "shutter" ? "primary" : "secondary"
                lines.append(json(["event": "began", "action": action]))
                lines.append(json(["event": "ended", "action": action]))
            case "event":
                guard let phase = words.popFirst(), CaptureEvent.Phase(rawValue: phase) != nil else {
                    throw UsageError("control: event needs a phase: began, cancelled or ended")
                }
                var action = "primary"
                if let a = words.first, CaptureEvent.Action(rawValue: a) != nil { action = a; words = words.dropFirst() }
                lines.append(json(["event": phase, "action": action]))
            default:
                throw UsageError("control: unknown request '\(printable(word))' (use zoom V, exposure V, ratio R, effect E, mode M, framing F, shutter, marker, event PHASE [ACTION], record start|stop|toggle, status)")
            }
        }
        guard !lines.isEmpty else { throw UsageError("control: nothing to send (use zoom V, exposure V, ratio R, effect E, mode M, framing F, shutter, marker, event PHASE [ACTION], record start|stop|toggle, status)") }
        return .control(socket: socket, lines: lines, timeout: timeout)
    }

    /// Seconds the connection and all the answers may take by default.
    static let defaultTimeout: Double = 10

    /// Connects, sends each line, prints each answer, all within `timeout` seconds. Exit 0 when
    /// every answer is `ok`, 65 when one is not; no socket 66, no permission 77, nobody
    /// listening 69, no connection or answer within `timeout` 75.
    static func run(socket path: String, lines: [String], timeout: Double) throws -> Int32 {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        /// Bounds the next blocking call (connect, send, read: SO_SNDTIMEO and SO_RCVTIMEO,
        /// which a UNIX socket's connect honours too) by what is left of `timeout`.
        func bound(_ s: Int32) throws {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { throw timedOut() }
            // Rounded up to the next µs (never 0: that would mean no timeout), carried into seconds.
            let left = (deadline - now + 999) / 1000
            var tv = timeval(tv_sec: Int(left / 1_000_000), tv_usec: Int(left % 1_000_000))
            guard setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) == 0,
                  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
                throw CommandError(status: ExitStatus.unavailable, "control: setsockopt: \(String(cString: strerror(errno)))")
            }
        }
        func timedOut() -> CommandError {
            CommandError(status: ExitStatus.busy, "control: \(path) did not answer within \(number(timeout)) s (--timeout)")
        }
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw CommandError(status: ExitStatus.unavailable, "control: socket: \(String(cString: strerror(errno)))") }
        let fd = FileDescriptor(rawValue: s, path: path)
        defer { fd.closeQuietly() }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { throw UsageError("control: socket path too long") }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        try bound(s)
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard r == 0 else {
            let e = errno
            if e == EAGAIN || e == EINPROGRESS { throw timedOut() }
            let status: Int32 = e == ENOENT ? ExitStatus.noInput : (e == EACCES || e == EPERM) ? ExitStatus.permission : ExitStatus.unavailable
            throw CommandError(status: status, "control: cannot connect to \(path): \(String(cString: strerror(e)))")
        }
        var allOK = true
        var pending = [UInt8]()
        for line in lines {
            var out = Array((line + "\n").utf8)[...]
            while !out.isEmpty {
                try bound(s)
                let n = out.withUnsafeBytes { send(s, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && errno == EAGAIN { throw timedOut() }
                guard n > 0 else { throw CommandError(status: ExitStatus.ioError, "control: the recording closed the connection") }
                out = out.dropFirst(n)
            }
            // One answer line per request.
            while !pending.contains(UInt8(ascii: "\n")) {
                var chunk = [UInt8](repeating: 0, count: 4096)
                try bound(s)
                let n = chunk.withUnsafeMutableBytes { read(s, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n < 0 && errno == EAGAIN { throw timedOut() }
                guard n > 0 else { throw CommandError(status: ExitStatus.ioError, "control: the recording closed the connection") }
                pending += chunk[0..<n]
            }
            let nl = pending.firstIndex(of: UInt8(ascii: "\n"))!
            let answer = String(decoding: pending[..<nl], as: UTF8.self)
            pending.removeSubrange(...nl)
            print(answer)
            if let o = try? JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any], o["ok"] as? Bool == true {} else { allOK = false }
        }
        return allOK ? 0 : ExitStatus.dataError
    }
}
