import CMicroHTTPD
import Foundation
import ReelCore

/// What `GET /status` and `GET /events` report.
public struct PreviewStatus: Codable, Sendable {
    public var recording: Bool
    /// Seconds of media time captured.
    public var elapsed: Double
    public var frames: Int
    public var fps: Double
    public var drops: Int
    public var ratio: String
    /// Pictures the preview encoded, and its clients now streaming.
    public var previewFrames: Int
    public var previewClients: Int
    /// Mean time to copy the crop out and encode it as JPEG, per picture, in milliseconds.
    public var previewEncodeMs: Double

    public init(recording: Bool, elapsed: Double, frames: Int, fps: Double, drops: Int, ratio: String) {
        self.recording = recording; self.elapsed = elapsed; self.frames = frames
        self.fps = fps; self.drops = drops; self.ratio = ratio
        previewFrames = 0; previewClients = 0; previewEncodeMs = 0
    }
}

/// Where the preview listens: `[HOST:]PORT` (HOST an IPv4 literal or `[IPv6]`; default 127.0.0.1).
public struct PreviewAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    /// nil when `text` is not `[HOST:]PORT` with PORT 0–65535.
    public init?(parsing text: String) {
        var host = "127.0.0.1"
        var portText = Substring(text)
        if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = UInt16(portText) else { return nil }
        self.host = host; self.port = port
    }

    public init(host: String, port: UInt16) { self.host = host; self.port = port }

    /// True for 127.0.0.0/8 and ::1: no token needed.
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" || host == "localhost" }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The preview's HTTP server (libmicrohttpd, one thread per connection):
/// `GET /` (the page), `/stream.mjpg`, `/snapshot.jpg`, `/status`, `/events`.
///
/// Limits: at most `connectionLimit` connections at once (more are refused by the server),
/// request headers within `requestMemory` bytes, a connection idle for `idleTimeout` seconds
/// (a client that stopped reading) is closed. A stream client holds one picture at a time,
/// so memory is bounded by connections × one JPEG.
public final class PreviewServer: @unchecked Sendable { // immutable after init; `daemon` is used only by stop(), called once
    public static let connectionLimit: UInt32 = 32
    public static let requestMemory = 32 * 1024
    public static let idleTimeout: UInt32 = 10

    public let output: PreviewOutput
    public let address: PreviewAddress
    /// The access token every request must carry (`?token=` or `Authorization: Bearer`), if any.
    public let token: String?
    let status: @Sendable () -> PreviewStatus
    let clients = Counter()
    private var daemon: OpaquePointer?
    private var context: Unmanaged<PreviewServer>?

    /// Binds `address` (port 0: any free port, see `address.port` after) and starts serving.
    /// - Throws: `PreviewError.badAddress`, `.listen` (errno, EADDRINUSE when the port is in use),
    ///   `.serverUnavailable` (`MHD_start_daemon` failed).
    public init(address: PreviewAddress, token: String?, output: PreviewOutput,
                status: @escaping @Sendable () -> PreviewStatus) throws {
        self.output = output; self.token = token; self.status = status
        var error: Int32 = 0
        var bound: UInt16 = 0
        let fd = CMicroHTTPD_listen(address.host, address.port, 64, &error, &bound)
        if fd < 0 {
            if error == EINVAL || error == EADDRNOTAVAIL { throw PreviewError.badAddress(address.host) }
            throw PreviewError.listen(address: address.description, errno: error)
        }
        self.address = PreviewAddress(host: address.host, port: bound)
        let me = Unmanaged.passRetained(self)
        guard let d = CMicroHTTPD_start(fd, previewAccessHandler, me.toOpaque(), Self.connectionLimit,
                                        Self.requestMemory, Self.idleTimeout) else {
            me.release()
            if close(fd) != 0 { /* the start failure is the one reported */ }
            throw PreviewError.serverUnavailable(address.description)
        }
        daemon = d
        context = me
    }

    /// The page's address, with the token when one is needed.
    public var pageURL: String {
        "http://\(address)/" + (token.map { "?token=\($0)" } ?? "")
    }

    /// Stops serving: wakes streaming clients, closes every connection (`MHD_stop_daemon`).
    public func stop() {
        output.stop()
        guard let d = daemon else { return }
        daemon = nil
        MHD_stop_daemon(d)
        context?.release()
        context = nil
    }

    /// A random 128-bit token as 32 hex digits (from /dev/urandom through `SystemRandomNumberGenerator`).
    public static func generateToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max, using: &g)) }.joined()
    }

    func currentStatus() -> PreviewStatus {
        var s = status()
        let counters = output.counters
        s.previewFrames = counters.encoded
        s.previewEncodeMs = counters.meanEncodeMilliseconds
        s.previewClients = clients.value
        return s
    }

    func statusJSON() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(currentStatus())) ?? Data("{}".utf8))
    }

    func authorized(_ connection: OpaquePointer) -> Bool {
        guard let token else { return true }
        if let q = MHD_lookup_connection_value(connection, CMicroHTTPD_argumentKind, "token"),
           constantTimeEqual(String(cString: q), token) { return true }
        if let h = MHD_lookup_connection_value(connection, CMicroHTTPD_headerKind, "Authorization"),
           constantTimeEqual(String(cString: h), "Bearer " + token) { return true }
        return false
    }

    private func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }

    var page: String {
        let q = token.map { "?token=\($0)" } ?? ""
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>reel preview</title>
        <style>body{margin:0;background:#111;color:#ddd;font:14px system-ui,sans-serif}
        img{display:block;max-width:100vw;max-height:90vh;margin:auto}#s{padding:6px 12px}</style></head>
        <body><img id="p" src="/stream.mjpg\(q)" alt="live preview"><div id="s">connecting…</div>
        <script>
        const s=document.getElementById('s');const e=new EventSource('/events\(q)');let last='';
        e.onmessage=m=>{const j=JSON.parse(m.data);last=(j.recording?'● recording':'stopped')+
        '  '+j.elapsed.toFixed(1)+' s  '+j.frames+' frames  '+j.fps.toFixed(1)+' fps  '+j.drops+' dropped  '+j.ratio;
        s.textContent=last;};
        e.onerror=()=>{s.textContent=(last?last+'  ':'')+'(disconnected)';};
        </script></body></html>
        """
    }
}

/// A lock-guarded count of streaming clients.
final class Counter: @unchecked Sendable { // `count` guarded by `lock`
    private let lock = NSLock()
    private var count = 0
    func add(_ n: Int) { lock.lock(); count += n; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

private func respond(_ connection: OpaquePointer, _ code: UInt32, _ body: [UInt8], type: String,
                     headers: [(String, String)] = []) -> MHD_Result {
    let response = body.withUnsafeBytes { raw in
        MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), CMicroHTTPD_mustCopy)
    }
    guard let response else { return CMicroHTTPD_no }
    defer { MHD_destroy_response(response) }
    guard MHD_add_response_header(response, "Content-Type", type) == CMicroHTTPD_yes,
          MHD_add_response_header(response, "Cache-Control", "no-store") == CMicroHTTPD_yes else { return CMicroHTTPD_no }
    for (name, value) in headers where MHD_add_response_header(response, name, value) != CMicroHTTPD_yes { return CMicroHTTPD_no }
    return MHD_queue_response(connection, code, response)
}

private let previewAccessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, _, _, _ in
    guard let cls, let connection, let url, let method else { return CMicroHTTPD_no }
    let server = Unmanaged<PreviewServer>.fromOpaque(cls).takeUnretainedValue()
    guard server.authorized(connection) else {
        return respond(connection, 401, Array("401 access token required (?token=…)\n".utf8), type: "text/plain",
                       headers: [("WWW-Authenticate", "Bearer")])
    }
    let verb = String(cString: method)
    guard verb == "GET" || verb == "HEAD" else {
        return respond(connection, 405, Array("405 only GET\n".utf8), type: "text/plain", headers: [("Allow", "GET, HEAD")])
    }
    switch String(cString: url) {
    case "/":
        return respond(connection, 200, Array(server.page.utf8), type: "text/html; charset=utf-8")
    case "/status":
        return respond(connection, 200, server.statusJSON(), type: "application/json")
    case "/snapshot.jpg":
        guard let frame = server.output.frame(after: 0, timeout: 5) else {
            return respond(connection, 503, Array("503 no picture yet\n".utf8), type: "text/plain")
        }
        return respond(connection, 200, frame.jpeg, type: "image/jpeg", headers: [
            ("X-Frame-Index", String(frame.index)), ("X-Timestamp-Us", String(frame.timestampMicroseconds))])
    case "/stream.mjpg":
        return stream(connection, server, Stream(server: server, kind: .mjpeg), type: "multipart/x-mixed-replace;boundary=\(Stream.boundary)")
    case "/events":
        return stream(connection, server, Stream(server: server, kind: .events), type: "text/event-stream")
    default:
        return respond(connection, 404, Array("404 not found\n".utf8), type: "text/plain")
    }
}

private func stream(_ connection: OpaquePointer, _ server: PreviewServer, _ client: Stream, type: String) -> MHD_Result {
    let context = Unmanaged.passRetained(client)
    guard let response = MHD_create_response_from_callback(CMicroHTTPD_sizeUnknown, 64 * 1024, streamReader,
                                                           context.toOpaque(), streamFree) else {
        context.release()
        return CMicroHTTPD_no
    }
    defer { MHD_destroy_response(response) }
    guard MHD_add_response_header(response, "Content-Type", type) == CMicroHTTPD_yes,
          MHD_add_response_header(response, "Cache-Control", "no-store") == CMicroHTTPD_yes else { return CMicroHTTPD_no }
    return MHD_queue_response(connection, 200, response)
}

/// One streaming client: the bytes of the part it is sending now, and how far it got.
/// Used only by its connection's thread.
private final class Stream: @unchecked Sendable {
    enum Kind { case mjpeg, events }
    static let boundary = "reelframe"
    let server: PreviewServer
    let kind: Kind
    var pending: [UInt8]
    var offset = 0
    var lastSequence = 0
    var lastEvent = DispatchTime(uptimeNanoseconds: 0)

    init(server: PreviewServer, kind: Kind) {
        self.server = server; self.kind = kind
        pending = kind == .mjpeg ? Array("--\(Stream.boundary)\r\n".utf8) : []
        server.clients.add(1)
    }
    deinit { server.clients.add(-1) }

    /// The next bytes to send; nil ends the stream.
    func refill() -> Bool {
        switch kind {
        case .mjpeg:
            // The newest picture this client has not sent: a slow client skips the rest.
            var frame: PreviewFrame?
            while frame == nil {
                if server.output.isStopped { return false }
                frame = server.output.frame(after: lastSequence, timeout: 0.5)
            }
            guard let frame else { return false }
            lastSequence = frame.sequence
            let head = "Content-Type: image/jpeg\r\nContent-Length: \(frame.jpeg.count)\r\n"
                + "X-Frame-Index: \(frame.index)\r\nX-Timestamp-Us: \(frame.timestampMicroseconds)\r\n\r\n"
            // The next part's boundary goes right after the picture, so a browser shows it at once.
            pending = Array(head.utf8) + frame.jpeg + Array("\r\n--\(Stream.boundary)\r\n".utf8)
        case .events:
            let period: UInt64 = 250_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            let due = lastEvent.uptimeNanoseconds + period
            if now < due { usleep(useconds_t((due - now) / 1000)) }
            if server.output.isStopped { return false }
            lastEvent = DispatchTime.now()
            pending = Array("data: ".utf8) + server.statusJSON() + Array("\n\n".utf8)
        }
        offset = 0
        return true
    }
}

private let streamReader: MHD_ContentReaderCallback = { cls, _, buf, max in
    guard let cls, let buf else { return CMicroHTTPD_endWithError }
    let client = Unmanaged<Stream>.fromOpaque(cls).takeUnretainedValue()
    if client.offset >= client.pending.count, !client.refill() { return CMicroHTTPD_endOfStream }
    let n = min(max, client.pending.count - client.offset)
    client.pending.withUnsafeBytes { raw in
        UnsafeMutableRawPointer(buf).copyMemory(from: raw.baseAddress! + client.offset, byteCount: n)
    }
    client.offset += n
    return n
}

private let streamFree: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<Stream>.fromOpaque(cls).release()
}
