import Foundation
import ReelCapture
import ReelCore
import ReelPreview
import Synchronization
import Testing

// Issue 27 items 1–3, in-process: the page's files are served from the binary with a
// content-security policy, the new control endpoints answer as documented, and the status is
// pushed on /events when it changes (not on a timer).

/// Sources/ReelPreview/Web/NAME, from this file's place in the repository.
private func webFile(_ name: String) throws -> Data {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    return try Data(contentsOf: root.appendingPathComponent("Sources/ReelPreview/Web/\(name)"))
}

/// The value of header `name` in `head` (case-insensitive name), nil when absent.
private func header(_ name: String, in head: String) -> String? {
    for line in head.split(separator: "\r\n") {
        let parts = line.split(separator: ":", maxSplits: 1)
        if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
    }
    return nil
}

/// An `/events` stream: each `data:` event as it comes (the chunks' framing is on lines of its own).
final class EventReader {
    let fd: Int32
    private var buffer = [UInt8]()

    init?(port: UInt16, token: String) {
        guard let fd = connectLoopback(port, seconds: 0.05) else { return nil }
        self.fd = fd
        sendAll(fd, "GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n\r\n")
    }
    deinit { close(fd) }

    /// The next event's data within `seconds`, nil when none came.
    func next(within seconds: Double) -> String? {
        let end = Date(timeIntervalSinceNow: seconds)
        var chunk = [UInt8](repeating: 0, count: 4096)
        repeat {
            // "\r\n" is one Character in Swift: lines are split on bytes made plain "\n".
            let text = String(decoding: buffer, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
            if let range = text.range(of: "\n\n") {
                let event = String(text[..<range.lowerBound])
                buffer = Array(text[range.upperBound...].utf8)
                if let data = event.components(separatedBy: "\n").first(where: { $0.hasPrefix("data: ") }) { return String(data.dropFirst(6)) }
                continue // the response head, or a keepalive comment
            }
            let n = recv(fd, &chunk, chunk.count, 0)
            if n > 0 { buffer += chunk[..<n] }
        } while Date() < end
        return nil
    }
}

@Suite("RealtimePreviewPageTests", .serialized)
struct RealtimePreviewPageTests {
    /// `/`, `/app.css` and `/app.js` are the files of Sources/ReelPreview/Web byte for byte
    /// (embedded in the binary), each with its content type and the content-security policy;
    /// the page has no inline script or handler, and the policy allows none.
    @Test func theAssetsAreServedWithTheirTypesAndThePolicy() throws {
        let server = try serverWithPicture()
        defer { server.stop() }
        let port = server.address.port
        let auth = ["Authorization: Bearer \(server.token)"]
        for (path, file, type) in [("/", "index.html", "text/html; charset=utf-8"), ("/app.css", "app.css", "text/css; charset=utf-8"),
                                   ("/app.js", "app.js", "text/javascript; charset=utf-8")] {
            let r = request(port, "GET", path, headers: auth)
            #expect(r.status == 200, "\(path)")
            #expect(header("Content-Type", in: r.head) == type, "\(path): \(r.head)")
            #expect(header("Content-Security-Policy", in: r.head) == PreviewAssets.contentSecurityPolicy, "\(path)")
            #expect(header("X-Content-Type-Options", in: r.head) == "nosniff")
            #expect(Data(r.body.utf8) == (try webFile(file)), "\(path) is not Web/\(file)")
        }
        let policy = PreviewAssets.contentSecurityPolicy
        #expect(policy.contains("default-src 'self'") && policy.contains("script-src 'self'") && !policy.contains("unsafe"))
        let html = String(decoding: try webFile("index.html"), as: UTF8.self)
        #expect(html.contains(#"<script src="/app.js"></script>"#))
        #expect(html.components(separatedBy: "<script").count == 2, "one script element, with src")
        #expect(html.firstMatch(of: /\son[a-z]+=/) == nil, "an inline event handler")
        #expect(!html.contains("http://") && !html.contains("https://"), "an external download")
        #expect(html.contains(#"<meta name="viewport" content="width=device-width, initial-scale=1">"#))
        // Every other answer carries the policy too.
        #expect(header("Content-Security-Policy", in: request(port, "GET", "/status", headers: auth).head) == policy)
    }

    /// `POST /control` and `POST /press`: 501 without their handler, 400 without the right
    /// arguments, 422 with the control's reason when it refuses, 200 with its answer; a
    /// `click` press is a `down` then an `up`.
    @Test func theControlEndpointsAnswerAsDocumented() throws {
        let auth = ["Authorization: Bearer \(PreviewServer.generateToken())"]
        let bare = try serverWithPicture(token: String(auth[0].dropFirst(22)))
        let port = bare.address.port
        #expect(request(port, "POST", "/control?name=zoom&value=2", headers: auth).status == 501)
        #expect(request(port, "POST", "/press", headers: auth).status == 501)
        bare.stop()

        let presses = Mutex<[String]>([])
        let controls = PreviewControls(setControl: { name, value in
            guard name == "zoom" else { throw PreviewControlError.refused("no control '\(name)'") }
            return Data(#"{"control":"zoom","ok":true,"value":\#(value)}"#.utf8)
        }, press: { button, action in
            presses.withLock { $0.append("\(button) \(action)") }
            return true
        })
        let server = try serverWithPicture(controls: controls)
        defer { server.stop() }
        let p = server.address.port
        let a = ["Authorization: Bearer \(server.token)"]
        #expect(request(p, "POST", "/control?name=zoom", headers: a).status == 400)
        let refused = request(p, "POST", "/control?name=focus&value=1", headers: a)
        #expect(refused.status == 422 && refused.body == #"{"error":"no control 'focus'"}"#, "\(refused.body)")
        let set = request(p, "POST", "/control?name=zoom&value=2", headers: a)
        #expect(set.status == 200 && set.body == #"{"control":"zoom","ok":true,"value":2}"#)
        #expect(request(p, "POST", "/press?button=twist", headers: a).status == 400)
        #expect(request(p, "POST", "/press?action=tertiary", headers: a).status == 400)
        #expect(request(p, "POST", "/press", headers: a).status == 200)
        #expect(request(p, "POST", "/press?button=leave&action=primary", headers: a).status == 200)
        #expect(presses.withLock { $0 } == ["down secondary", "up secondary", "leave primary"])
    }

    /// `/events` sends the status when it changes and only then: nothing for a second while
    /// it stays the same (no timer), at once after `statusChanged()` (a control, say), and a
    /// moved counter within the 250 ms refresh.
    @Test func theStatusIsPushedOnChange() throws {
        let zoom = Mutex(1.0), frames = Mutex(0)
        let output = PreviewOutput()
        let server = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), output: output) {
            var s = PreviewStatus(recording: true, elapsed: 0, frames: frames.withLock { $0 }, fps: 0, drops: 0, ratio: "16x9")
            s.zoom = zoom.withLock { $0 }
            return s
        }
        defer { server.stop() }
        let events = try #require(EventReader(port: server.address.port, token: server.token))
        let first = try #require(events.next(within: 5), "no first event")
        #expect(first.contains(#""zoom":1"#), "\(first)")
        #expect(events.next(within: 1) == nil, "an event although nothing changed")
        zoom.withLock { $0 = 2 }
        let pushed = Date()
        server.statusChanged()
        let second = try #require(events.next(within: 5), "the change never came")
        let took = Date().timeIntervalSince(pushed)
        #expect(second.contains(#""zoom":2"#), "\(second)")
        #expect(took < 0.2, "the change took \(took) s: not pushed")
        frames.withLock { $0 = 7 }
        let third = try #require(events.next(within: 2), "a moved counter never came")
        #expect(third.contains(#""frames":7"#), "\(third)")
    }

    /// `/photo.jpg` is 404 until a photo is saved; then the preview's picture as a JPEG,
    /// `photo` in the status names it, and `/events` is told at once.
    @Test func theLatestPhotoIsAThumbnail() throws {
        let server = try serverWithPicture()
        defer { server.stop() }
        let port = server.address.port
        let auth = ["Authorization: Bearer \(server.token)"]
        #expect(request(port, "GET", "/photo.jpg", headers: auth).status == 404)
        let events = try #require(EventReader(port: port, token: server.token))
        #expect(events.next(within: 5)?.contains(#""photo":null"#) == true)
        server.photoSaved("IMG_0001.jpg")
        #expect(events.next(within: 0.2)?.contains(#""photo":"IMG_0001.jpg""#) == true, "the photo was not pushed")
        let thumb = request(port, "GET", "/photo.jpg", headers: auth)
        #expect(thumb.status == 200 && header("Content-Type", in: thumb.head) == "image/jpeg")
        #expect(header("Content-Length", in: thumb.head).flatMap { Int($0) } ?? 0 > 100)
    }

    /// The style sheet lays the page out in one column, the picture on top at most at its
    /// natural size and as wide as the window (a phone at 390 px, a 1280 px desktop window),
    /// and puts the controls beside the picture from 1600 px; the page sets the viewport for phones.
    @Test func thePageFitsAPhoneAndADesktop() throws {
        let css = String(decoding: try webFile("app.css"), as: UTF8.self)
        #expect(css.contains("main { max-width: 1280px; margin: auto; display: grid; grid-template-columns: 1fr;"))
        #expect(css.contains("#p { display: block; max-width: 100%; max-height: 80vh;"), "the picture fits the window")
        #expect(css.contains("@media (min-width: 1600px) {\n  main { max-width: 1620px; grid-template-columns: minmax(0, 1280px) 320px; }"))
    }
}
