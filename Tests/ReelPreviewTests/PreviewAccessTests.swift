import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import ReelPreview
import Synchronization
import Testing

// Issue 27 item 5: nobody but the token holder operates or watches the camera, and slow or
// malicious clients cannot lock the token holder out. In-process servers, raw sockets.

/// A TCP connection to 127.0.0.1:`port` from `source` (bound before connecting), with
/// `SO_RCVTIMEO` of `seconds`; nil when socket, bind or connect fails.
func connectLoopback(_ port: UInt16, from source: String = "127.0.0.1", seconds: Double = 5) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1e6))
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr(source)
    var remote = sockaddr_in()
    remote.sin_family = sa_family_t(AF_INET)
    remote.sin_port = port.bigEndian
    remote.sin_addr.s_addr = inet_addr("127.0.0.1")
    let ok = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) == 0
        && withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 } }
        && withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 } }
    if !ok { close(fd); return nil }
    return fd
}

/// Sends all of `text`; false when the peer has gone.
@discardableResult
func sendAll(_ fd: Int32, _ text: String) -> Bool {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { return false }
        bytes = bytes.dropFirst(n)
    }
    return true
}

/// Everything the server sends until it closes the connection, `SO_RCVTIMEO` passes, or
/// 20 s (a stream never ends by itself).
func receiveAll(_ fd: Int32) -> String {
    var data = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 4096)
    let end = Date(timeIntervalSinceNow: 20)
    while Date() < end {
        let n = recv(fd, &chunk, chunk.count, 0)
        if n <= 0 { break }
        data += chunk[..<n]
    }
    return String(decoding: data, as: UTF8.self)
}

/// True when the server has closed `fd` (end of file or reset), without waiting.
func closedByServer(_ fd: Int32) -> Bool {
    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    guard poll(&p, 1, 0) == 1 else { return false }
    var byte: UInt8 = 0
    return recv(fd, &byte, 1, Int32(MSG_DONTWAIT)) <= 0
}

/// One request on a fresh connection: the status line's code (0 when none came), the head
/// and the body.
func request(_ port: UInt16, _ method: String = "GET", _ target: String, headers: [String] = [], seconds: Double = 10)
    -> (status: Int, head: String, body: String) {
    guard let fd = connectLoopback(port, seconds: seconds) else { return (0, "", "") }
    defer { close(fd) }
    let lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"] + headers
    guard sendAll(fd, lines.joined(separator: "\r\n") + "\r\n\r\n") else { return (0, "", "") }
    let text = receiveAll(fd)
    let parts = text.components(separatedBy: "\r\n\r\n")
    let head = parts.first ?? ""
    let code = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return (code, head, parts.dropFirst().joined(separator: "\r\n\r\n"))
}

/// Polls `condition` every 20 ms until it holds or `seconds` pass.
func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let end = Date(timeIntervalSinceNow: seconds)
    while Date() < end {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// Calls of the server's controls, to check that a refused request changed nothing.
final class ControlCalls: Sendable {
    let ratio = Atomic<Int>(0), record = Atomic<Int>(0), shutter = Atomic<Int>(0), control = Atomic<Int>(0), press = Atomic<Int>(0)
    var controls: PreviewControls {
        PreviewControls(setRatio: { [self] r in
            ratio.add(1, ordering: .relaxed)
            return PreviewRatioChange(ratio: r.description, frameIndex: 1, pts: 0)
        }, shutter: { [self] in
            shutter.add(1, ordering: .relaxed)
            return Data("{}".utf8)
        }, record: { [self] _ in
            record.add(1, ordering: .relaxed)
            return Data("{}".utf8)
        }, setControl: { [self] _, _ in
            control.add(1, ordering: .relaxed)
            return Data("{}".utf8)
        }, press: { [self] _, _ in
            press.add(1, ordering: .relaxed)
            return true
        })
    }
    var total: Int {
        ratio.load(ordering: .relaxed) + record.load(ordering: .relaxed) + shutter.load(ordering: .relaxed)
            + control.load(ordering: .relaxed) + press.load(ordering: .relaxed)
    }
}

/// A server on a free loopback port with a picture ready (one 640x360 frame offered).
func serverWithPicture(token: String? = nil, controls: PreviewControls = PreviewControls(), limits: PreviewLimits = .standard) throws -> PreviewServer {
    let output = PreviewOutput()
    let server = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), token: token, output: output,
                                   controls: controls, limits: limits) {
        PreviewStatus(recording: true, elapsed: 0, frames: 0, fps: 0, drops: 0, ratio: "16x9")
    }
    let pool = try PixelBufferPool(count: 2, size: Size(width: 640, height: 360), format: .yuv420p)
    let lease = try #require(pool.lease())
    let frame = CapturedFrame(lease: lease, index: 3, pts: Timestamp(value: 3, timescale: 30), duration: 1,
                              ratio: .landscape16x9, crop: CropRect(x: 0, y: 0, width: 640, height: 360))
    #expect(output.offer(frame, waiting: false) == .taken)
    try #require(output.frame(after: 0, timeout: 30) != nil, "the picture was never encoded")
    return server
}

private let routes: [(String, String)] = [
    ("GET", "/"), ("GET", "/app.css"), ("GET", "/app.js"), ("GET", "/stream.mjpg"), ("GET", "/snapshot.jpg"), ("GET", "/status"),
    ("GET", "/events"), ("POST", "/ratio?to=9x16"), ("POST", "/record?action=stop"), ("POST", "/shutter"),
    ("POST", "/control?name=zoom&value=2"), ("POST", "/press?button=down&action=secondary"),
]

@Suite("PreviewAccessTests", .serialized)
struct PreviewAccessTests {
    /// Without the token every route answers 401 (the page, the stream, the snapshot, the
    /// status, the events, each control), and no control is called; a wrong token is no token.
    @Test func everyRouteWithoutTheTokenIs401() throws {
        let calls = ControlCalls()
        let server = try serverWithPicture(controls: calls.controls)
        defer { server.stop() }
        let port = server.address.port
        for (method, path) in routes {
            let none = request(port, method, path)
            #expect(none.status == 401, "\(method) \(path): \(none.head)")
            #expect(!none.body.contains(server.token), "\(method) \(path) shows the token")
            let wrong = request(port, method, path + (path.contains("?") ? "&" : "?") + "token=" + String(repeating: "0", count: 32))
            #expect(wrong.status == 401, "\(method) \(path) with a wrong token")
            let cookie = request(port, method, path, headers: ["Cookie: \(server.cookieName)=nope"])
            #expect(cookie.status == 401, "\(method) \(path) with a wrong cookie")
        }
        #expect(calls.total == 0, "a control ran without the token")
    }

    /// The token by query, bearer header or cookie opens every route (200); the page's
    /// address sets the cookie `HttpOnly; SameSite=Strict; Path=/`, and the page itself
    /// holds no token (its requests carry the cookie).
    @Test func theTokenByQueryBearerOrCookieIs200() throws {
        let calls = ControlCalls()
        let server = try serverWithPicture(controls: calls.controls)
        defer { server.stop() }
        let port = server.address.port
        #expect(server.token.wholeMatch(of: /[0-9a-f]{32}/) != nil, "a 128-bit token: \(server.token)")
        #expect(server.pageURL == "http://127.0.0.1:\(port)/?token=\(server.token)")
        for (method, path) in routes where !["/stream.mjpg", "/events"].contains(path) {
            let sep = path.contains("?") ? "&" : "?"
            #expect(request(port, method, path + sep + "token=" + server.token).status == 200, "\(method) \(path) ?token=")
            #expect(request(port, method, path, headers: ["Authorization: Bearer \(server.token)"]).status == 200, "\(method) \(path) bearer")
            #expect(request(port, method, path, headers: ["Cookie: \(server.cookieName)=\(server.token)"]).status == 200, "\(method) \(path) cookie")
        }
        #expect(calls.ratio.load(ordering: .relaxed) == 3 && calls.record.load(ordering: .relaxed) == 3 && calls.shutter.load(ordering: .relaxed) == 3)
        #expect(calls.control.load(ordering: .relaxed) == 3 && calls.press.load(ordering: .relaxed) == 3)
        // Streams: the status line says 200 (then the client closes: the stream goes on).
        for path in ["/stream.mjpg", "/events"] {
            let fd = try #require(connectLoopback(port, seconds: 5))
            defer { close(fd) }
            sendAll(fd, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nCookie: \(server.cookieName)=\(server.token)\r\n\r\n")
            var head = [UInt8](repeating: 0, count: 15)
            #expect(recv(fd, &head, head.count, Int32(MSG_WAITALL)) == head.count)
            #expect(String(decoding: head, as: UTF8.self) == "HTTP/1.1 200 OK", "\(path)")
        }
        let page = request(port, "GET", "/?token=\(server.token)")
        #expect(page.status == 200)
        let cookie = page.head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie:") }
        #expect(cookie == "Set-Cookie: \(server.cookieName)=\(server.token); Path=/; HttpOnly; SameSite=Strict", "\(page.head)")
        #expect(page.body.contains("<img id=\"p\" src=\"/stream.mjpg\""))
        #expect(!page.body.contains(server.token), "the page holds the token")
        #expect(page.head.contains("Referrer-Policy: no-referrer") && page.head.contains("X-Frame-Options: DENY"))
        // Only the address with the token sets the cookie.
        #expect(!request(port, "GET", "/", headers: ["Authorization: Bearer \(server.token)"]).head.lowercased().contains("set-cookie"))
    }

    /// `--preview-token` keeps working: a given token is the one required.
    @Test func aGivenTokenIsTheOneRequired() throws {
        let server = try serverWithPicture(token: "s3cret")
        defer { server.stop() }
        #expect(server.token == "s3cret")
        #expect(request(server.address.port, "GET", "/status?token=s3cret").status == 200)
        #expect(request(server.address.port, "GET", "/status?token=s3cre").status == 401)
    }

    /// A control sent by a page of another origin gets 403 and is not called, even with the
    /// valid cookie: an `Origin` that is not the server's own (another site, another port of
    /// 127.0.0.1, `null`), or `Sec-Fetch-Site` `cross-site`/`same-site`. The same origin works.
    @Test func crossOriginControlsAre403AndChangeNothing() throws {
        let calls = ControlCalls()
        let server = try serverWithPicture(controls: calls.controls)
        defer { server.stop() }
        let port = server.address.port
        let cookie = "Cookie: \(server.cookieName)=\(server.token)"
        let foreign: [[String]] = [
            ["Origin: http://evil.example"], ["Origin: http://127.0.0.1:\(port &+ 1)"], ["Origin: null"],
            ["Sec-Fetch-Site: cross-site"], ["Sec-Fetch-Site: same-site"],
            ["Origin: http://127.0.0.1:\(port)", "Sec-Fetch-Site: same-site"],
        ]
        var refused = 0
        for (method, path) in routes where method == "POST" {
            for headers in foreign {
                let r = request(port, method, path, headers: [cookie] + headers)
                #expect(r.status == 403, "\(path) \(headers): \(r.head)")
                refused += 1
            }
        }
        #expect(calls.total == 0, "a cross-origin control ran")
        let status = request(port, "GET", "/status", headers: ["Authorization: Bearer \(server.token)"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.body.utf8)) as? [String: Any], "\(status.body)")
        #expect(json["crossOriginRefused"] as? Int == refused)
        // A cookie-only GET that another site's page embeds: 403; a navigation to it: served.
        #expect(request(port, "GET", "/snapshot.jpg", headers: [cookie, "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: no-cors"]).status == 403)
        #expect(request(port, "GET", "/", headers: [cookie, "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: navigate"]).status == 200)
        // The page's own requests (same origin, as a browser sends them), and curl (neither header).
        let own = [cookie, "Origin: http://127.0.0.1:\(port)", "Sec-Fetch-Site: same-origin"]
        for (method, path) in routes where method == "POST" {
            #expect(request(port, method, path, headers: own).status == 200, "\(path) same-origin")
            #expect(request(port, method, path, headers: [cookie]).status == 200, "\(path) without Origin")
        }
        #expect(calls.total == 10)
        // State changes take POST: a GET of a control is 405 and calls nothing.
        #expect(request(port, "GET", "/ratio?to=9x16", headers: [cookie]).status == 405)
        #expect(request(port, "GET", "/control?name=zoom&value=2", headers: [cookie]).status == 405)
        #expect(calls.total == 10)
    }

    /// A body over the limit, or one announced before authentication, is refused on the
    /// headers alone: 413 / 401 come at once although the body never comes (the old server
    /// waited to drain it). A small body of an authorized request is read and dropped.
    @Test func bodiesAreRefusedWithoutBeingRead() throws {
        let calls = ControlCalls()
        let server = try serverWithPicture(controls: calls.controls)
        defer { server.stop() }
        let port = server.address.port
        let started = Date()
        let big = request(port, "POST", "/ratio?to=9x16", headers: ["Authorization: Bearer \(server.token)", "Content-Length: 100000"], seconds: 3)
        #expect(big.status == 413, "\(big.head)")
        let chunked = request(port, "POST", "/ratio?to=9x16", headers: ["Authorization: Bearer \(server.token)", "Transfer-Encoding: chunked"], seconds: 3)
        #expect(chunked.status == 413, "\(chunked.head)")
        let early = request(port, "POST", "/ratio?to=9x16", headers: ["Content-Length: 1000"], seconds: 3)
        #expect(early.status == 401, "\(early.head)")
        #expect(Date().timeIntervalSince(started) < 6, "the refusals waited for bodies that never came")
        #expect(calls.total == 0)
        // 4096 bytes with the token: read, dropped, answered.
        let fd = try #require(connectLoopback(port))
        defer { close(fd) }
        sendAll(fd, "POST /ratio?to=9x16 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(server.token)\r\nContent-Length: 4096\r\nConnection: close\r\n\r\n")
        sendAll(fd, String(repeating: "x", count: 4096))
        #expect(receiveAll(fd).hasPrefix("HTTP/1.1 200 OK"))
        #expect(calls.ratio.load(ordering: .relaxed) == 1)
        #expect(PreviewLimits.standard.body == 4096)
    }
}

/// The slow clients' state, shared with the thread that trickles their bytes.
private final class Trickle: Sendable {
    let stop = Atomic<Bool>(false)
    let closedAfter: Mutex<[Double?]>
    let done = DispatchSemaphore(value: 0)
    init(count: Int) { closedAfter = Mutex(Array(repeating: nil, count: count)) }
}

@Suite("RealtimePreviewAccessTests", .serialized)
struct RealtimePreviewAccessTests {
    /// 100 clients from 100 loopback addresses (127.0.0.2 …) trickle header bytes, one per
    /// 0.5 s each, so that libmicrohttpd's idle timeout never fires: the token holder still
    /// gets the page and a snapshot promptly, and each slow client is closed once the 5 s
    /// header deadline has passed (well before it stops trickling at 20 s).
    @Test func aHundredSlowClientsDoNotLockOutTheTokenHolder() throws {
        let server = try serverWithPicture()
        defer { server.stop() }
        let port = server.address.port
        var slow: [(fd: Int32, since: Date)] = []
        defer { for s in slow { close(s.fd) } }
        for i in 0..<100 {
            let fd = try #require(connectLoopback(port, from: "127.0.0.\(i + 2)"), "connect from 127.0.0.\(i + 2)")
            #expect(sendAll(fd, "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Slow: "))
            slow.append((fd, Date()))
        }
        // The trickle goes on in the background while the token holder asks.
        let trickle = Trickle(count: slow.count)
        let fds = slow.map(\.fd), since = slow.map(\.since)
        let trickler = Thread {
            while !trickle.stop.load(ordering: .relaxed) {
                for (i, fd) in fds.enumerated() where trickle.closedAfter.withLock({ $0[i] == nil }) {
                    if closedByServer(fd) || !sendAll(fd, "a") {
                        trickle.closedAfter.withLock { $0[i] = Date().timeIntervalSince(since[i]) }
                    }
                }
                usleep(500_000)
            }
            trickle.done.signal()
        }
        trickler.start()
        defer { trickle.stop.store(true, ordering: .relaxed); trickle.done.wait() }
        let asked = Date()
        let page = request(port, "GET", "/?token=\(server.token)", seconds: 3)
        let snapshot = request(port, "GET", "/snapshot.jpg", headers: ["Authorization: Bearer \(server.token)"], seconds: 3)
        let took = Date().timeIntervalSince(asked)
        #expect(page.status == 200, "the page: \(page.head)")
        #expect(snapshot.status == 200, "the snapshot: \(snapshot.head)")
        #expect(took < 3, "the token holder waited \(took) s")
        // Every slow client is closed after the deadline (5 s), none of them lasts to 20 s.
        #expect(eventually(20) { trickle.closedAfter.withLock { $0.allSatisfy { $0 != nil } } },
                "slow clients still open after 20 s: \(trickle.closedAfter.withLock { $0.filter { $0 == nil }.count })")
        let times = trickle.closedAfter.withLock { $0.compactMap { $0 } }
        #expect(times.allSatisfy { $0 >= PreviewLimits.standard.headerDeadline - 0.5 }, "closed before the deadline: \(times.min() ?? -1) s")
        #expect(server.shutConnections.deadline == 100, "\(server.shutConnections)")
    }

    /// More unauthenticated connections than `unauthenticated` allows: each new one shuts the
    /// oldest at once (not at its deadline), so the token holder always gets a place; an
    /// authorized connection is never shut for room.
    @Test func theOldestUnauthenticatedConnectionMakesRoom() throws {
        let limits = PreviewLimits(connections: 16, unauthenticated: 4, headerDeadline: 60, idleTimeout: 60, body: 4096)
        let server = try serverWithPicture(limits: limits)
        defer { server.stop() }
        let port = server.address.port
        // An authorized stream, open throughout.
        let stream = try #require(connectLoopback(port, seconds: 2))
        defer { close(stream) }
        sendAll(stream, "GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(server.token)\r\n\r\n")
        var head = [UInt8](repeating: 0, count: 12)
        #expect(recv(stream, &head, 12, Int32(MSG_WAITALL)) == 12 && String(decoding: head, as: UTF8.self) == "HTTP/1.1 200")
        var idle: [Int32] = []
        defer { for fd in idle { close(fd) } }
        for _ in 0..<4 { idle.append(try #require(connectLoopback(port))) }
        #expect(eventually(5) { server.shutConnections.room == 0 } && !idle.contains { closedByServer($0) })
        idle.append(try #require(connectLoopback(port)))
        #expect(eventually(5) { closedByServer(idle[0]) }, "the oldest idle connection was not shut for the fifth")
        #expect(!idle.dropFirst().contains { closedByServer($0) })
        #expect(request(port, "GET", "/status", headers: ["Authorization: Bearer \(server.token)"], seconds: 3).status == 200)
        #expect(!closedByServer(stream), "the authorized stream was shut")
        #expect(server.shutConnections.room >= 2)
    }

    /// The idle timeout (10 s by default, 1 s here): an authorized request whose body never
    /// comes is closed once nothing moved for that long.
    @Test func anIdleConnectionIsClosedAfterTheIdleTimeout() throws {
        #expect(PreviewLimits.standard.idleTimeout == 10 && PreviewLimits.standard.headerDeadline == 5)
        #expect(PreviewLimits.standard.connections == 256 && PreviewLimits.standard.unauthenticated == 128)
        let limits = PreviewLimits(connections: 16, unauthenticated: 4, headerDeadline: 60, idleTimeout: 1, body: 4096)
        let server = try serverWithPicture(limits: limits)
        defer { server.stop() }
        let port = server.address.port
        let fd = try #require(connectLoopback(port))
        defer { close(fd) }
        let start = Date()
        sendAll(fd, "POST /ratio?to=9x16 HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(server.token)\r\nContent-Length: 10\r\n\r\n")
        #expect(eventually(10) { closedByServer(fd) }, "an idle connection stayed open")
        let took = Date().timeIntervalSince(start)
        #expect(took >= 0.9 && took < 5, "closed after \(took) s")
    }
}
