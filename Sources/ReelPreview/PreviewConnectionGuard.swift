import Foundation

/// The preview server's limits on connections that have not yet made an authorized request.
public struct PreviewLimits: Sendable, Equatable {
    /// Connections at once, authorized or not (MHD_OPTION_CONNECTION_LIMIT; more are closed
    /// by the server at once).
    public var connections: UInt32
    /// Connections at once that have not made an authorized request; a new one beyond this
    /// closes the oldest of them, so clients that never authenticate cannot fill the server.
    public var unauthenticated: Int
    /// Seconds from accept within which a connection must make an authorized request (its
    /// headers complete, with the token), however slowly it trickles bytes; then it is shut.
    public var headerDeadline: Double
    /// Seconds a connection may stay idle (MHD_OPTION_CONNECTION_TIMEOUT: a client that
    /// stopped reading or sending); every byte resets it.
    public var idleTimeout: UInt32
    /// Bytes a request body may have; a bigger one (or one without `Content-Length`) is
    /// refused with 413 before any of it is read.
    public var body: Int

    /// The limits `reel` runs with: 256 connections, 128 unauthenticated, 5 s for the
    /// headers, 10 s idle, 4 KiB bodies.
    public static let standard = PreviewLimits(connections: 256, unauthenticated: 128, headerDeadline: 5, idleTimeout: 10, body: 4096)

    /// Limits as given (tests use short deadlines and small counts).
    public init(connections: UInt32, unauthenticated: Int, headerDeadline: Double, idleTimeout: UInt32, body: Int) {
        self.connections = connections; self.unauthenticated = unauthenticated
        self.headerDeadline = headerDeadline; self.idleTimeout = idleTimeout; self.body = body
    }
}

/// Watches the connections that have not made an authorized request yet: each is shut down
/// (`shutdown(2)`, which ends its libmicrohttpd thread) when `headerDeadline` passes, and the
/// oldest when more than `unauthenticated` are open. libmicrohttpd's own timeout is only an
/// inactivity timeout that any byte resets, so a client trickling header bytes would
/// otherwise hold its slot for ever.
///
/// A socket is shut only under `condition` and only while its connection is listed: the
/// connection is unlisted at MHD_CONNECTION_NOTIFY_CLOSED, which libmicrohttpd calls before it
/// closes the socket, so a descriptor number reused by a later connection is never shut.
final class PreviewConnectionGuard: @unchecked Sendable { // every var below is guarded by `condition`
    private struct Entry {
        let fd: Int32
        let accepted: UInt64
        var shut = false
    }
    private let condition = NSCondition()
    private var pending: [UInt: Entry] = [:]
    private var stopped = false
    private var shutByDeadline = 0
    private var shutForRoom = 0
    private let done = DispatchSemaphore(value: 0)
    let limits: PreviewLimits

    init(limits: PreviewLimits) {
        self.limits = limits
        let t = Thread { [self] in watch(); done.signal() }
        t.name = "reel.preview.deadline"
        t.start()
    }

    /// Connections shut because their deadline passed, and to make room for newer ones.
    var counts: (deadline: Int, room: Int) {
        condition.lock(); defer { condition.unlock() }
        return (shutByDeadline, shutForRoom)
    }

    /// A connection was accepted (MHD_CONNECTION_NOTIFY_STARTED, on the daemon's thread).
    func started(_ key: UInt, fd: Int32) {
        condition.lock()
        defer { condition.unlock() }
        pending[key] = Entry(fd: fd, accepted: DispatchTime.now().uptimeNanoseconds)
        var open = pending.filter { !$0.value.shut }
        while open.count > limits.unauthenticated,
              let oldest = open.filter({ $0.key != key }).min(by: { $0.value.accepted < $1.value.accepted }) {
            shut(oldest.key)
            shutForRoom += 1
            open[oldest.key] = nil
        }
        condition.signal()
    }

    /// The connection made an authorized request: no deadline for it from now on.
    func authorized(_ key: UInt) {
        condition.lock(); pending[key] = nil; condition.unlock()
    }

    /// The connection is closing (MHD_CONNECTION_NOTIFY_CLOSED: its socket is still open).
    func closed(_ key: UInt) {
        condition.lock(); pending[key] = nil; condition.unlock()
    }

    /// Ends the watching thread and waits for it. Once only.
    func stop() {
        condition.lock(); stopped = true; condition.broadcast(); condition.unlock()
        done.wait()
    }

    /// Caller holds `condition`.
    private func shut(_ key: UInt) {
        guard var entry = pending[key], !entry.shut else { return }
        // ENOTCONN: the client has gone already; its thread notices on its own.
        if shutdown(entry.fd, Int32(SHUT_RDWR)) != 0 && errno != ENOTCONN { /* the deadline is enforced by the idle timeout then */ }
        entry.shut = true
        pending[key] = entry
    }

    private func watch() {
        let deadline = UInt64(limits.headerDeadline * 1e9)
        condition.lock()
        defer { condition.unlock() }
        while !stopped {
            let now = DispatchTime.now().uptimeNanoseconds
            var next: UInt64?
            for (key, entry) in pending where !entry.shut {
                if now >= entry.accepted + deadline {
                    shut(key)
                    shutByDeadline += 1
                } else {
                    next = min(next ?? .max, entry.accepted + deadline)
                }
            }
            if let next {
                if condition.wait(until: Date(timeIntervalSinceNow: Double(next - now) / 1e9)) { /* woken early: a new connection */ }
            } else {
                condition.wait()
            }
        }
    }
}
