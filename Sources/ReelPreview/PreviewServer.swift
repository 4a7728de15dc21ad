import CMicroHTTPD
import Foundation
import Synchronization
import ReelCapture
import ReelCore

/// What `GET /status` and `GET /events` report.
public struct PreviewStatus: Codable, Sendable {
    /// True while the movie output records (`reel record`: false in `--standby` before a start
    /// and after a stop), false for `reel preview`.
    public var recording: Bool
    /// Seconds of media time captured.
    public var elapsed: Double
    /// Frames captured so far.
    public var frames: Int
    /// Frames captured per second of wall time.
    public var fps: Double
    /// Frames dropped, every reason.
    public var drops: Int
    /// Requests the server refused with 403 because another origin sent them (`Origin` or
    /// `Sec-Fetch-Site`), since it started.
    public var crossOriginRefused: Int
    /// The ratio in force (`16x9`, …).
    public var ratio: String
    /// Pictures the preview encoded, and its clients now streaming.
    public var previewFrames: Int
    /// The page's clients streaming the preview now.
    public var previewClients: Int
    /// Mean time to copy the crop out and encode it as JPEG, per picture, in milliseconds.
    public var previewEncodeMs: Double
    /// Bytes the storage pool can still take, when recording through a pool (else null).
    @EncodedNull public var poolRemainingCapacity: Int64?
    /// `poolRemainingCapacity` as seconds of recording at the bit rate of the last 10 s (null
    /// without a pool, or before a second was recorded).
    @EncodedNull public var poolRemainingSeconds: Double? = nil
    /// The system-pressure level a recording sees (`nominal`, …, `unknown`; null for `reel preview`).
    @EncodedNull public var pressure: String? = nil
    /// The zoom factor last applied (1–4) while recording with controls; null for `reel preview`.
    @EncodedNull public var zoom: Double? = nil
    /// The exposure bias last applied, in stops (−2…+2); null for `reel preview`.
    @EncodedNull public var exposure: Double? = nil
    /// The picture effect last applied (`none`, `grayscale`, a colour LUT's title); null for `reel preview`.
    @EncodedNull public var effect: String? = nil

    /// The session's part of the status; the server fills in the preview's own counters.
    public init(recording: Bool, elapsed: Double, frames: Int, fps: Double, drops: Int, ratio: String,
                poolRemainingCapacity: Int64? = nil) {
        self.recording = recording; self.elapsed = elapsed; self.frames = frames
        self.fps = fps; self.drops = drops; self.ratio = ratio
        previewFrames = 0; previewClients = 0; previewEncodeMs = 0; crossOriginRefused = 0
        self.poolRemainingCapacity = poolRemainingCapacity
    }
}

/// Where the preview listens: `[HOST:]PORT` (HOST an IPv4 literal or `[IPv6]`; default 127.0.0.1).
public struct PreviewAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host to bind: an IPv4 literal or an IPv6 literal (without its brackets).
    public var host: String
    /// The TCP port.
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

    /// The address `host`:`port`, unchecked.
    public init(host: String, port: UInt16) { self.host = host; self.port = port }

    /// True for 127.0.0.0/8 and ::1 (the `Host` header must then name this server too).
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" || host == "localhost" }

    /// `HOST:PORT`, or `[IPv6]:PORT`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The preview's HTTP server (libmicrohttpd, one thread per connection):
/// `GET /` (the page), `/stream.mjpg`, `/snapshot.jpg`, `/status`, `/events`, and the
/// controls `POST /ratio`, `POST /shutter` and `POST /record`.
///
/// Access: every request carries the session's token — `?token=`, `Authorization: Bearer`,
/// or the cookie the page's address sets (`HttpOnly; SameSite=Strict`) — or gets 401, whatever
/// the address it listens on (another local user can reach 127.0.0.1 too). A request that
/// changes something (any method but GET and HEAD) and comes from another origin (an `Origin`
/// that is not `http://` + its `Host`, or `Sec-Fetch-Site` other than `same-origin`/`none`)
/// gets 403 and changes nothing, cookie or not; so does a cookie-only GET that another site's
/// page embeds or fetches (`Sec-Fetch-Site: same-site|cross-site`, not a navigation).
///
/// Limits (`PreviewLimits`): connections at once, connections that have not made an
/// authorized request (the oldest is shut when a newer one needs the room), a total deadline
/// from accept for such a connection's headers (however slowly it trickles), an idle timeout,
/// request headers within `requestMemory` bytes, bodies within `limits.body` bytes (decided on
/// the headers: a body is never read before the request is authorized and allowed). Stream
/// clients share each picture's one immutable copy, so memory is bounded by the pictures
/// clients still hold (at most one each) plus per-connection buffers.
///
/// On loopback, a request whose `Host` header is not this server's address (`localhost`,
/// `127.0.0.1`, `[::1]` or the bound address, with the bound port) is refused with 403: a
/// page of another site that a DNS-rebinding attack points at 127.0.0.1 does not reach it.
public final class PreviewServer: @unchecked Sendable { // immutable after init but `daemon`/`context`, guarded by `stopLock`
    /// Bytes a connection may use for its request (MHD_OPTION_CONNECTION_MEMORY_LIMIT).
    public static let requestMemory = 32 * 1024
    /// How long a stream or snapshot waits for a picture before answering 503 or ending.
    public static let pictureWait: Double = 5

    /// The output whose pictures are served.
    public let output: PreviewOutput
    /// Where it listens (the bound port when 0 was asked).
    public let address: PreviewAddress
    /// The access token every request must carry (`?token=`, `Authorization: Bearer`, or the
    /// cookie `cookieName`).
    public let token: String
    /// What `POST /ratio` and `POST /shutter` call.
    public let controls: PreviewControls
    /// The server's limits.
    public let limits: PreviewLimits
    let status: @Sendable () -> PreviewStatus
    let clients = Counter()
    let refusedCrossOrigin = Counter()
    let connections: PreviewConnectionGuard
    private let stopLock = NSLock()
    private var daemon: OpaquePointer?
    private var context: Unmanaged<PreviewServer>?

    /// Starts `output` (its JPEG thread), binds `address` (port 0: any free port, see
    /// `address.port` after) and starts serving, with `token` (nil: a fresh random one,
    /// `generateToken()`). On any failure nothing is left behind: the output is stopped and
    /// joined, the socket closed, the daemon not running.
    /// - Throws: `PreviewError.alreadyStarted`/`.encoderUnavailable` (from `output.start()`),
    ///   `.badAddress`, `.listen` (errno, EADDRINUSE when the port is in use),
    ///   `.serverUnavailable` (`MHD_start_daemon` failed).
    public init(address: PreviewAddress, token: String? = nil, output: PreviewOutput, controls: PreviewControls = PreviewControls(),
                limits: PreviewLimits = .standard, status: @escaping @Sendable () -> PreviewStatus) throws {
        self.output = output; self.token = token ?? Self.generateToken(); self.status = status; self.controls = controls
        self.limits = limits
        try output.start()
        var error: Int32 = 0
        var bound: UInt16 = 0
        let fd = CMicroHTTPD_listen(address.host, address.port, 64, &error, &bound)
        if fd < 0 {
            output.stop()
            if error == EINVAL || error == EADDRNOTAVAIL { throw PreviewError.badAddress(address.host) }
            throw PreviewError.listen(address: address.description, errno: error)
        }
        self.address = PreviewAddress(host: address.host, port: bound)
        connections = PreviewConnectionGuard(limits: limits)
        let me = Unmanaged.passRetained(self)
        guard let d = CMicroHTTPD_start(fd, previewAccessHandler, me.toOpaque(), previewConnectionNotice, limits.connections,
                                        Self.requestMemory, limits.idleTimeout) else {
            me.release()
            if close(fd) != 0 { /* the start failure is the one reported */ }
            connections.stop()
            output.stop()
            throw PreviewError.serverUnavailable(address.description)
        }
        daemon = d
        context = me
    }

    /// The page's address with the token: `http://HOST:PORT/?token=TOKEN` (opening it sets the cookie).
    public var pageURL: String { "http://\(address)/?token=\(token)" }

    /// Connections shut so far that made no authorized request: at the header deadline
    /// (`limits.headerDeadline`), and to make room for newer ones (`limits.unauthenticated`).
    public var shutConnections: (deadline: Int, room: Int) { connections.counts }

    /// The cookie that carries the token once the page's address was opened: one name per
    /// port, so two previews on one host keep theirs apart.
    public var cookieName: String { "reel-preview-\(address.port)" }

    /// Stops serving: stops the output (streaming clients end), closes every connection
    /// (`MHD_stop_daemon`, which joins the connection threads) and the listening socket.
    public func stop() {
        output.stop()
        stopLock.lock()
        let d = daemon, c = context
        daemon = nil; context = nil
        stopLock.unlock()
        guard let d else { return }
        MHD_stop_daemon(d)
        connections.stop()
        c?.release()
    }

    /// A random 128-bit token as 32 hex digits (`SystemRandomNumberGenerator`: getrandom(2) on Linux).
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
        s.crossOriginRefused = refusedCrossOrigin.value
        return s
    }

    func statusJSON() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(currentStatus())) ?? Data("{}".utf8))
    }

    /// How a request carries the token.
    enum Credential { case query, bearer, cookie }

    /// How `connection`'s request carries the token, or nil when it does not (compared in
    /// constant time).
    func credential(_ connection: OpaquePointer) -> Credential? {
        if let q = value(connection, CMicroHTTPD_argumentKind, "token"), Self.constantTimeEqual(q, token) { return .query }
        if let h = value(connection, CMicroHTTPD_headerKind, "Authorization"), Self.constantTimeEqual(h, "Bearer " + token) { return .bearer }
        if let c = value(connection, CMicroHTTPD_cookieKind, cookieName), Self.constantTimeEqual(c, token) { return .cookie }
        return nil
    }

    /// True when the request comes from a page of another origin: `Sec-Fetch-Site` other
    /// than `same-origin` or `none` (typed by the user), or an `Origin` that is not `http://`
    /// + the request's `Host`. A client that sends neither (curl) is not a browser page.
    func crossOrigin(_ connection: OpaquePointer) -> Bool {
        if let site = value(connection, CMicroHTTPD_headerKind, "Sec-Fetch-Site")?.lowercased(), site != "same-origin", site != "none" {
            return true
        }
        if let origin = value(connection, CMicroHTTPD_headerKind, "Origin") {
            guard let host = value(connection, CMicroHTTPD_headerKind, "Host") else { return true }
            return origin.lowercased() != "http://" + host.lowercased()
        }
        return false
    }

    /// A GET that another site's page embeds or fetches (`Sec-Fetch-Site` `same-site` — another
    /// port of 127.0.0.1 is the same site — or `cross-site`), other than a navigation to it.
    func embeddedByAnotherSite(_ connection: OpaquePointer) -> Bool {
        guard let site = value(connection, CMicroHTTPD_headerKind, "Sec-Fetch-Site")?.lowercased(),
              site == "same-site" || site == "cross-site" else { return false }
        return value(connection, CMicroHTTPD_headerKind, "Sec-Fetch-Mode")?.lowercased() != "navigate"
    }

    func value(_ connection: OpaquePointer, _ kind: MHD_ValueKind, _ key: String) -> String? {
        MHD_lookup_connection_value(connection, kind, key).map { String(cString: $0) }
    }

    /// True when the `Host` header names this server: `localhost`, `127.0.0.1`, `[::1]` or
    /// the bound host, with the bound port (or none when it is 80).
    func hostAllowed(_ connection: OpaquePointer) -> Bool {
        guard let raw = MHD_lookup_connection_value(connection, CMicroHTTPD_headerKind, "Host") else { return false }
        return Self.hostAllowed(String(cString: raw), address: address)
    }

    /// Whether a `Host` header value names a server bound at `address` (the DNS-rebinding
    /// guard of a loopback preview).
    public static func hostAllowed(_ header: String, address: PreviewAddress) -> Bool {
        let value = header.lowercased()
        var name: Substring, port: Substring?
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return false }
            name = value[value.index(after: value.startIndex)..<close]
            let rest = value[value.index(after: close)...]
            if rest.isEmpty { port = nil } else if rest.hasPrefix(":") { port = rest.dropFirst() } else { return false }
        } else if let colon = value.lastIndex(of: ":") {
            name = value[..<colon]; port = value[value.index(after: colon)...]
        } else {
            name = Substring(value); port = nil
        }
        let names: Set<String> = ["localhost", "127.0.0.1", "::1", address.host.lowercased()]
        guard names.contains(String(name)) else { return false }
        if let port { return UInt16(port) == address.port }
        return address.port == 80
    }

    /// Equal strings, in time that depends only on their lengths.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }

    /// The page. It holds no token: its requests carry the cookie its address set.
    var page: String {
        let buttons = ["1x1", "4x3", "3x4", "16x9", "9x16"].map { "<button data-r=\"\($0)\">\($0)</button>" }.joined()
        return """
        <!doctype html><html><head><meta charset="utf-8"><title>reel preview</title>
        <style>body{margin:0;background:#111;color:#ddd;font:14px system-ui,sans-serif}
        img{display:block;max-width:100vw;max-height:80vh;margin:auto}#s,#c,#r{padding:6px 12px}
        button{font:inherit;margin-right:4px}</style></head>
        <body><img id="p" src="/stream.mjpg" alt="live preview"><div id="s">connecting…</div>
        <div id="c"><button id="record" data-recording="false">record</button> \(buttons) <button id="shutter">shutter</button></div><div id="r"></div>
        <script>
        if(location.search.includes('token='))history.replaceState(null,'',location.pathname);
        const s=document.getElementById('s'),r=document.getElementById('r');const e=new EventSource('/events');let last='';
        e.onmessage=m=>{const j=JSON.parse(m.data);last=(j.recording?'● recording':'○ not recording')+
        '  '+j.elapsed.toFixed(1)+' s  '+j.frames+' frames  '+j.fps.toFixed(1)+' fps  '+j.drops+' dropped  '+j.ratio+
        (j.poolRemainingCapacity==null?'':'  pool '+(j.poolRemainingCapacity/1e9).toFixed(2)+' GB left')+
        (j.poolRemainingSeconds==null?'':' ('+Math.floor(j.poolRemainingSeconds/60)+' min)');
        if(j.pressure!=null)last+='  pressure '+j.pressure;
        if(j.zoom!=null)last+='  zoom '+(+j.zoom.toFixed(2))+'×';if(j.exposure!=null)last+='  exposure '+(j.exposure>0?'+':'')+(+j.exposure.toFixed(2));
        if(j.effect!=null)last+='  effect '+j.effect;
        s.textContent=last;const b=document.getElementById('record');b.dataset.recording=String(j.recording);
        b.textContent=j.recording?'stop':'record';};
        e.onerror=()=>{s.textContent=(last?last+'  ':'')+'(disconnected)';};
        async function post(path){const x=await fetch(path,{method:'POST'});const t=await x.text();
        r.textContent=path.split('?')[0]+': '+x.status+' '+t;r.dataset.status=x.status;return t;}
        for(const b of document.querySelectorAll('button[data-r]'))b.onclick=()=>post('/ratio?to='+b.dataset.r);
        document.getElementById('shutter').onclick=()=>post('/shutter');
        document.getElementById('record').onclick=()=>post('/record?action=toggle');
        </script></body></html>
        """
    }
}

/// The count of streaming clients.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add(_ n: Int) { count.add(n, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

private func respond(_ connection: OpaquePointer, _ code: UInt32, _ body: some Collection<UInt8>, type: String,
                     headers: [(String, String)] = []) -> MHD_Result {
    let bytes = ContiguousArray(body)
    let response = bytes.withUnsafeBytes { raw in
        MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), CMicroHTTPD_mustCopy)
    }
    guard let response else { return CMicroHTTPD_no }
    defer { MHD_destroy_response(response) }
    guard MHD_add_response_header(response, "Content-Type", type) == CMicroHTTPD_yes,
          MHD_add_response_header(response, "Cache-Control", "no-store") == CMicroHTTPD_yes else { return CMicroHTTPD_no }
    for (name, value) in headers where MHD_add_response_header(response, name, value) != CMicroHTTPD_yes { return CMicroHTTPD_no }
    return MHD_queue_response(connection, code, response)
}

/// A one-key JSON object `{"error": why}` for the controls' refusals.
private func jsonError(_ connection: OpaquePointer, _ code: UInt32, _ why: String) -> MHD_Result {
    let body = (try? JSONEncoder().encode(["error": why])) ?? Data("{}".utf8)
    return respond(connection, code, Array(body), type: "application/json")
}

/// libmicrohttpd's word on each connection: started (watched by the deadline until it makes
/// an authorized request) or closed (its socket still open: unlisted before it closes).
private let previewConnectionNotice: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls, let connection else { return }
    let server = Unmanaged<PreviewServer>.fromOpaque(cls).takeUnretainedValue()
    let key = UInt(bitPattern: connection)
    if code == CMicroHTTPD_connectionStarted {
        server.connections.started(key, fd: CMicroHTTPD_connection_fd(connection))
    } else {
        server.connections.closed(key)
    }
}

/// A refusal, decided on the headers alone: the connection closes after it (libmicrohttpd
/// reads no body of a request answered on its first call).
private func refuse(_ connection: OpaquePointer, _ code: UInt32, _ text: String, headers: [(String, String)] = []) -> MHD_Result {
    respond(connection, code, Array(text.utf8), type: "text/plain", headers: headers + [("Connection", "close")])
}

private let previewAccessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, _, uploadSize, connectionContext in
    guard let cls, let connection, let url, let method, let connectionContext else { return CMicroHTTPD_no }
    let server = Unmanaged<PreviewServer>.fromOpaque(cls).takeUnretainedValue()
    let verb = String(cString: method)
    if connectionContext.pointee != nil {
        // A later call of an allowed request with a small body: the body in chunks (read and
        // dropped: controls take query arguments), then one call with no data: answer.
        if let uploadSize, uploadSize.pointee > 0 {
            uploadSize.pointee = 0
            return CMicroHTTPD_yes
        }
        return answer(connection, server, verb: verb, path: String(cString: url), credential: nil)
    }
    // The first call: headers only. Everything is decided here, before any body is read.
    connectionContext.pointee = cls // any non-nil marker: nothing to free
    if server.address.isLoopback && !server.hostAllowed(connection) {
        return refuse(connection, 403, "403 the Host header does not name this preview (use http://\(server.address)/)\n")
    }
    guard let credential = server.credential(connection) else {
        return refuse(connection, 401, "401 access token required (open the address the preview: line shows, or send ?token=…)\n",
                      headers: [("WWW-Authenticate", "Bearer")])
    }
    server.connections.authorized(UInt(bitPattern: connection))
    let changes = verb != "GET" && verb != "HEAD"
    if changes ? server.crossOrigin(connection) : (credential == .cookie && server.embeddedByAnotherSite(connection)) {
        server.refusedCrossOrigin.add(1)
        return refuse(connection, 403, "403 a page of another origin may not use this preview\n")
    }
    let chunked = server.value(connection, CMicroHTTPD_headerKind, "Transfer-Encoding").map { $0.lowercased().contains("chunked") } ?? false
    let length = server.value(connection, CMicroHTTPD_headerKind, "Content-Length").map { Int($0.trimmingCharacters(in: .whitespaces)) ?? Int.max } ?? 0
    if chunked || length > server.limits.body || length < 0 {
        return refuse(connection, 413, "413 request bodies are \(server.limits.body) bytes at most, with a Content-Length\n")
    }
    if length > 0 && changes { return CMicroHTTPD_yes } // read (and drop) the small body first
    return answer(connection, server, verb: verb, path: String(cString: url), credential: credential)
}

/// The answer to an authorized, allowed request (`credential`: how it carried the token, nil
/// for a request whose body came after its headers: a `POST`, never the page).
private func answer(_ connection: OpaquePointer, _ server: PreviewServer, verb: String, path: String,
                    credential: PreviewServer.Credential?) -> MHD_Result {
    if verb == "POST" {
        switch path {
        case "/ratio": return ratio(connection, server)
        case "/record": return record(connection, server)
        case "/shutter":
            guard let shutter = server.controls.shutter else {
                return jsonError(connection, 501, "no photo output is attached to this session")
            }
            do { return respond(connection, 200, Array(try shutter()), type: "application/json") } catch {
                return jsonError(connection, 409, "\(error)")
            }
        default:
            return respond(connection, 405, Array("405 only GET here\n".utf8), type: "text/plain", headers: [("Allow", "GET, HEAD")])
        }
    }
    guard verb == "GET" || verb == "HEAD" else {
        return respond(connection, 405, Array("405 only GET, HEAD and POST\n".utf8), type: "text/plain", headers: [("Allow", "GET, HEAD, POST")])
    }
    switch path {
    case "/":
        // The address with the token sets the cookie the page's own requests carry.
        var headers = [("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY")]
        if credential == .query {
            headers.append(("Set-Cookie", "\(server.cookieName)=\(server.token); Path=/; HttpOnly; SameSite=Strict"))
        }
        return respond(connection, 200, Array(server.page.utf8), type: "text/html; charset=utf-8", headers: headers)
    case "/status":
        return respond(connection, 200, server.statusJSON(), type: "application/json")
    case "/snapshot.jpg":
        guard let frame = firstPicture(server) else { return unavailable(connection, server) }
        return respond(connection, 200, frame.jpeg, type: "image/jpeg", headers: frame.headers)
    case "/stream.mjpg":
        guard let first = firstPicture(server) else { return unavailable(connection, server) }
        return stream(connection, server, Stream(server: server, kind: .mjpeg, first: first),
                      type: "multipart/x-mixed-replace;boundary=\(PreviewFrame.boundary)")
    case "/events":
        return stream(connection, server, Stream(server: server, kind: .events, first: nil), type: "text/event-stream")
    case "/ratio", "/shutter", "/record":
        return respond(connection, 405, Array("405 use POST\n".utf8), type: "text/plain", headers: [("Allow", "POST")])
    default:
        return respond(connection, 404, Array("404 not found\n".utf8), type: "text/plain")
    }
}

/// The newest picture, waiting up to `pictureWait` for one; nil when none can come.
private func firstPicture(_ server: PreviewServer) -> PreviewFrame? {
    if server.output.unavailableReason != nil { return nil }
    return server.output.frame(after: 0, timeout: PreviewServer.pictureWait)
}

/// 503 with one line saying why no picture comes.
private func unavailable(_ connection: OpaquePointer, _ server: PreviewServer) -> MHD_Result {
    let why = server.output.unavailableReason ?? "no picture within \(Int(PreviewServer.pictureWait)) s"
    return respond(connection, 503, Array("503 no picture: \(why)\n".utf8), type: "text/plain", headers: [("Retry-After", "5")])
}

/// `POST /record?action=start|stop|toggle` (default toggle): 200 with the request as JSON,
/// 400 for another action, 409 when refused, 501 without a movie output.
private func record(_ connection: OpaquePointer, _ server: PreviewServer) -> MHD_Result {
    guard let record = server.controls.record else {
        return jsonError(connection, 501, "this session has no movie output to start or stop")
    }
    let action = MHD_lookup_connection_value(connection, CMicroHTTPD_argumentKind, "action").map { String(cString: $0) } ?? "toggle"
    guard ["start", "stop", "toggle"].contains(action) else {
        return jsonError(connection, 400, "use POST /record?action=A with A one of start, stop, toggle")
    }
    do { return respond(connection, 200, Array(try record(action)), type: "application/json") } catch {
        return jsonError(connection, 409, "\(error)")
    }
}

/// `POST /ratio?to=R`: 200 with the seam as JSON, 400 for a missing or unknown ratio,
/// 422 for a ratio the sensor format lacks, 501 without a session to change, 503 on timeout.
private func ratio(_ connection: OpaquePointer, _ server: PreviewServer) -> MHD_Result {
    guard let setRatio = server.controls.setRatio else {
        return jsonError(connection, 501, "this preview has no session whose ratio it can change")
    }
    guard let raw = MHD_lookup_connection_value(connection, CMicroHTTPD_argumentKind, "to"),
          let ratio = AspectRatio(parsing: String(cString: raw)) else {
        return jsonError(connection, 400, "use POST /ratio?to=R with R one of 1x1, 4x3, 3x4, 16x9, 9x16")
    }
    do {
        let change = try setRatio(ratio)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return respond(connection, 200, Array((try? encoder.encode(change)) ?? Data("{}".utf8)), type: "application/json")
    } catch let error as PreviewControlError {
        return jsonError(connection, 503, error.description)
    } catch {
        return jsonError(connection, 422, "\(error)")
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

/// One streaming client: the bytes it is sending now (for the MJPEG stream, the shared part
/// of one picture: assigning the array shares its storage, nothing is copied), and how far
/// it got. Used only by its connection's thread.
private final class Stream: @unchecked Sendable {
    enum Kind { case mjpeg, events }
    let server: PreviewServer
    let kind: Kind
    var pending: [UInt8]
    var offset = 0
    var lastSequence = 0
    var lastEvent = DispatchTime(uptimeNanoseconds: 0)
    /// The first picture, sent right after the opening boundary.
    var first: PreviewFrame?

    init(server: PreviewServer, kind: Kind, first: PreviewFrame?) {
        self.server = server; self.kind = kind; self.first = first
        pending = kind == .mjpeg ? Array("--\(PreviewFrame.boundary)\r\n".utf8) : []
        server.clients.add(1)
    }
    deinit { server.clients.add(-1) }

    /// The next bytes to send; false ends the stream (the output stopped, no picture can
    /// come, or none came for `pictureWait` seconds).
    func refill() -> Bool {
        switch kind {
        case .mjpeg:
            // The newest picture this client has not sent: a slow client skips the rest.
            var frame = first
            first = nil
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(PreviewServer.pictureWait * 1e9)
            while frame == nil {
                if server.output.unavailableReason != nil || DispatchTime.now().uptimeNanoseconds >= deadline { return false }
                frame = server.output.frame(after: lastSequence, timeout: 0.5)
            }
            guard let frame else { return false }
            lastSequence = frame.sequence
            // The part ends with the next boundary, so a browser shows the picture at once.
            pending = frame.part
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
