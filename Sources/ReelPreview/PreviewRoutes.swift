import CMicroHTTPD
import Foundation
import Synchronization
import ReelCapture
import ReelCore

/// The count of streaming clients.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add(_ n: Int) { count.add(n, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

func respond(_ connection: OpaquePointer, _ code: UInt32, _ body: some Collection<UInt8>, type: String,
                     headers: [(String, String)] = []) -> MHD_Result {
    let bytes = ContiguousArray(body)
    let response = bytes.withUnsafeBytes { raw in
        MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), CMicroHTTPD_mustCopy)
    }
    guard let response else { return CMicroHTTPD_no }
    defer { MHD_destroy_response(response) }
    guard MHD_add_response_header(response, "Content-Type", type) == CMicroHTTPD_yes,
          MHD_add_response_header(response, "Cache-Control", "no-store") == CMicroHTTPD_yes,
          MHD_add_response_header(response, "Content-Security-Policy", PreviewAssets.contentSecurityPolicy) == CMicroHTTPD_yes,
          MHD_add_response_header(response, "X-Content-Type-Options", "nosniff") == CMicroHTTPD_yes else { return CMicroHTTPD_no }
    for (name, value) in headers where MHD_add_response_header(response, name, value) != CMicroHTTPD_yes { return CMicroHTTPD_no }
    return MHD_queue_response(connection, code, response)
}

/// A one-key JSON object `{"error": why}` for the controls' refusals.
func jsonError(_ connection: OpaquePointer, _ code: UInt32, _ why: String) -> MHD_Result {
    let body = (try? JSONEncoder().encode(["error": why])) ?? Data("{}".utf8)
    return respond(connection, code, Array(body), type: "application/json")
}

/// libmicrohttpd's word on each connection: started (watched by the deadline until it makes
/// an authorized request) or closed (its socket still open: unlisted before it closes).
let previewConnectionNotice: MHD_NotifyConnectionCallback = { cls, connection, _, code in
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

let previewAccessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, _, _, uploadSize, connectionContext in
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
        case "/control": return control(connection, server)
        case "/press": return press(connection, server)
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
    if let asset = PreviewAssets.asset(path) {
        // The address with the token sets the cookie the page's own requests carry.
        var headers = [("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY")]
        if credential == .query {
            headers.append(("Set-Cookie", "\(server.cookieName)=\(server.token); Path=/; HttpOnly; SameSite=Strict"))
        }
        return respond(connection, 200, asset.bytes, type: asset.type, headers: headers)
    }
    if let answered = GalleryRoutes.answer(connection, server, path: path) { return answered }
    switch path {
    case "/photo.jpg":
        guard let photo = server.thumbnail.withLock({ $0 }) else {
            return respond(connection, 404, Array("404 no photo saved yet\n".utf8), type: "text/plain")
        }
        return respond(connection, 200, photo.jpeg, type: "image/jpeg")
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
    case "/ratio", "/shutter", "/record", "/control", "/press":
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

/// `POST /control?name=N&value=V`: 200 with what the control became as JSON, 400 without
/// both arguments, 422 when the control refuses (unknown, bad value, disabled), 501 without
/// live controls. The page's sliders and effect picker; the change reaches `/events` once applied.
private func control(_ connection: OpaquePointer, _ server: PreviewServer) -> MHD_Result {
    guard let setControl = server.controls.setControl else {
        return jsonError(connection, 501, "this session has no live controls")
    }
    guard let name = server.value(connection, CMicroHTTPD_argumentKind, "name"),
          let value = server.value(connection, CMicroHTTPD_argumentKind, "value") else {
        return jsonError(connection, 400, "use POST /control?name=N&value=V (N: zoom, exposure, effect, ratio, mode, framing)")
    }
    do { return respond(connection, 200, Array(try setControl(name, value)), type: "application/json") } catch {
        return jsonError(connection, 422, "\(error)")
    }
}

/// `POST /press?button=B&action=A` (`B` `down`, `up`, `leave` or `click` — down then up —,
/// default `click`; `A` `primary` or `secondary`, default `secondary`): the page's press as a
/// capture event. 200 `{"ok":true}`, 400 for another button or action, 501 without capture events.
private func press(_ connection: OpaquePointer, _ server: PreviewServer) -> MHD_Result {
    guard let press = server.controls.press else {
        return jsonError(connection, 501, "this session takes no presses")
    }
    let button = server.value(connection, CMicroHTTPD_argumentKind, "button") ?? "click"
    let action = server.value(connection, CMicroHTTPD_argumentKind, "action") ?? "secondary"
    let usage = "use POST /press?button=B&action=A with B one of down, up, leave, click and A one of primary, secondary"
    guard ["down", "up", "leave", "click"].contains(button), ["primary", "secondary"].contains(action) else {
        return jsonError(connection, 400, usage)
    }
    let sent = button == "click" ? press("down", action) && press("up", action) : press(button, action)
    guard sent else { return jsonError(connection, 400, usage) }
    return respond(connection, 200, Array(#"{"ok":true}"#.utf8), type: "application/json")
}

