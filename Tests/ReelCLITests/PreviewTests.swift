import Foundation
import ReelCore
import ReelWriter
import Testing


/// A `reel` process serving the preview at `base` (`http://127.0.0.1:PORT/`), started by
/// `serve` once its `/status` answers (with the token its `preview:` line printed: `curl`
/// sends it).
private struct Served {
    let process: Launched
    let port: UInt16
    let base: String

    /// The page's address with the token, as the `preview:` line shows it.
    var page: String { previewPage(port) }
    /// The token the `preview:` line printed.
    var token: String { previewToken(port) ?? "" }

    /// `/status` as JSON (`query` carries a token).
    func status(query: String = "") throws -> [String: Any] {
        try #require(try curl(base + "status" + query).object)
    }

    /// Waits (at most 60 s) until the session has captured at least `frames` frames.
    func waitForFrames(_ frames: Int, query: String = "") throws {
        let got = try waitUntil(60) { (try status(query: query)["frames"] as? Int ?? 0) >= frames }
        try #require(got, "the session at \(base) never captured \(frames) frames")
    }

    /// SIGINT (the session finishes cleanly), then the process's output.
    func stop() -> Run {
        process.signal(SIGINT)
        return process.wait()
    }
}

/// Runs `reel COMMAND --preview HOST:PORT REST…` (`args` is `[COMMAND] + REST`) on a free
/// port and waits (at most 60 s) until its `/status` answers (with `query`, for a token). When
/// another process took the port between `freePort()` and reel's bind (exit 75, in use), it
/// tries another port.
private func serve(_ args: [String], host: String = "127.0.0.1", query: String = "", in directory: String? = nil,
                   environment: [String: String] = [:]) throws -> Served {
    for _ in 0..<5 {
        let port = try freePort()
        let process = try launch([args[0], "--preview", "\(host):\(port)"] + args.dropFirst(), in: directory, environment: environment)
        let served = Served(process: process, port: port, base: previewBase(port))
        let up = waitUntil(60) { !process.process.isRunning || (try? curl(served.base + "status" + query, seconds: 2))?.status == 200 }
        if process.process.isRunning {
            if !up { process.signal(SIGKILL); _ = process.wait() }
            try #require(up, "the preview at \(served.base) never answered")
            return served
        }
        let run = process.wait()
        if run.status == 75 && run.stderr.contains("is in use") { continue }
        throw ProbeFailed(message: "reel \(args[0]) exited \(run.status) before it served: \(run.stderr)")
    }
    throw ProbeFailed(message: "five free ports were taken before reel could bind them")
}

/// The frame-index barcode of a JPEG, decoded by ffmpeg (an independent decoder) to gray.
private func barcode(ofJPEG jpeg: Data) throws -> Int? {
    let dir = temporaryDirectory("reel-jpeg")
    defer { removeTree(dir) }
    let path = dir + "/f.jpg"
    try jpeg.write(to: URL(fileURLWithPath: path))
    let info = try #require(ffprobe(path))
    #expect(info.codec == "mjpeg")
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try #require(installedTool("ffmpeg")))
    p.arguments = ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", "-"]
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let gray = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    try #require(gray.count == info.width * info.height)
    return gray.withUnsafeBytes { raw in
        FrameBarcode.read(LumaPlane(base: raw.baseAddress!, stride: info.width, width: info.width, height: info.height, depth: 8))
    }
}

/// The frame-index barcode of a 1280x720 picture in a browser's screenshot (PNG), cut out or
/// scaled by the ffmpeg filter `filter` and decoded by ffmpeg to gray.
private func barcode(ofScreenshot path: String, filter: String) throws -> Int? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try #require(installedTool("ffmpeg")))
    p.arguments = ["-v", "error", "-i", path, "-vf", filter, "-f", "rawvideo", "-pix_fmt", "gray", "-"]
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let gray = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    try #require(gray.count == 1280 * 720)
    return gray.withUnsafeBytes { raw in
        FrameBarcode.read(LumaPlane(base: raw.baseAddress!, stride: 1280, width: 1280, height: 720, depth: 8))
    }
}

/// The parts of a multipart/x-mixed-replace body: headers (lower-cased names) and JPEG bytes.
private func parts(of body: Data, boundary: String) -> [(headers: [String: String], jpeg: Data)] {
    var result: [(headers: [String: String], jpeg: Data)] = []
    let bytes = [UInt8](body)
    let marker = Array("--\(boundary)\r\n".utf8)
    var i = 0
    func find(_ needle: [UInt8], from: Int) -> Int? {
        guard needle.count <= bytes.count else { return nil }
        var k = from
        while k + needle.count <= bytes.count {
            if bytes[k] == needle[0] && Array(bytes[k..<k + needle.count]) == needle { return k }
            k += 1
        }
        return nil
    }
    while let start = find(marker, from: i) {
        let headStart = start + marker.count
        guard let headEnd = find(Array("\r\n\r\n".utf8), from: headStart) else { break }
        var headers: [String: String] = [:]
        for line in String(decoding: bytes[headStart..<headEnd], as: UTF8.self).split(separator: "\r\n") {
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        guard let length = headers["content-length"].flatMap({ Int($0) }), headEnd + 4 + length <= bytes.count else { break }
        result.append((headers, Data(bytes[(headEnd + 4)..<(headEnd + 4 + length)])))
        i = headEnd + 4 + length
    }
    return result
}

private let haveTools = haveCurl && installedTool("ffmpeg") != nil && installedTool("ffprobe") != nil

@Suite("RealtimePreviewTests", .serialized, .enabled(if: haveTools, "needs curl, ffmpeg and ffprobe"))
struct RealtimePreviewTests {
    /// The page, the snapshot, the MJPEG stream and the status while recording: every picture
    /// shows the frame its `X-Frame-Index` names, and the index advances between parts.
    @Test func streamSnapshotAndStatusWhileRecording() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // Until SIGINT (below): the checks take a while on a loaded machine. --no-realtime:
        // what is checked here is what the endpoints serve, not drops (a machine at load 15
        // dropped 418 frames in the minute the checks took); drops under clients are
        // slowClientDropsNothing's, manyConnectionsAndHugeHeaders' and perAddressCap's business.
        let rec = try serve(["record", "--source", "synthetic:1280", "--no-realtime", "--plain", "--json", "--out", dir] + untilSIGINT)
        let base = rec.base

        let page = try curl(base)
        #expect(page.status == 200)
        #expect(page.text.contains("<img id=\"p\" src=\"/stream.mjpg\""))
        #expect(page.text.contains(#"<script src="/app.js"></script>"#))
        #expect(try curl(base + "app.js").text.contains("new EventSource('/events')"))

        #expect(try curl(base + "status", post: true).status == 405)
        #expect(try curl(base + "ratio").status == 405, "controls take POST only")
        #expect(try curl(base + "nothing-here").status == 404)

        let snap = try curl(base + "snapshot.jpg")
        #expect(snap.status == 200)
        #expect(snap.headers["content-type"] == "image/jpeg")
        let snapIndex = try #require(snap.headers["x-frame-index"].flatMap { Int($0) })
        #expect(snap.headers["x-timestamp-us"].flatMap { Int64($0) } == Int64(snapIndex) * 1_000_000 / 30)
        #expect(try barcode(ofJPEG: snap.body) == snapIndex)

        // While it records: the stream, the status, the events; decoding comes after.
        let stream = try curl(base + "stream.mjpg", seconds: 1.5)
        #expect(stream.headers["content-type"] == "multipart/x-mixed-replace;boundary=reelframe")
        let status = try curl(base + "status")
        #expect(status.headers["content-type"] == "application/json")
        let json = try #require(status.object)
        #expect(Set(json.keys) == ["recording", "elapsed", "frames", "fps", "drops", "crossOriginRefused", "ratio", "previewFrames", "previewClients", "previewEncodeMs", "poolRemainingCapacity", "poolRemainingSeconds", "pressure", "zoom", "exposure", "effect", "dropReasons", "seams", "controls", "photo", "gallery"])
        #expect(json["poolRemainingCapacity"] is NSNull, "--plain records through no pool")
        #expect(json["poolRemainingSeconds"] is NSNull, "--plain records through no pool")
        #expect(json["recording"] as? Bool == true)
        #expect(json["ratio"] as? String == "16x9")
        #expect((json["frames"] as? Int ?? 0) > 0)

        let events = try curl(base + "events", seconds: 0.8)
        let text = events.text
        #expect(events.headers["content-type"] == "text/event-stream")
        #expect(text.hasPrefix("data: {"), "\(text.prefix(80))")

        let got = parts(of: stream.body, boundary: "reelframe")
        #expect(got.count >= 10, "parts in 1.5 s at 30 fps: \(got.count)")
        var previous = -1
        for part in got {
            let index = try #require(part.headers["x-frame-index"].flatMap { Int($0) })
            #expect(part.headers["x-timestamp-us"] != nil)
            #expect(index > previous, "the frame index advances between parts")
            #expect(try barcode(ofJPEG: part.jpeg) == index, "the picture shows frame \(index)")
            previous = index
        }

        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("preview: \(base)?token=\(rec.token)\n"))
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.framesDropped == 0, "drops: \(summary.dropReasons)")
        #expect(summary.framesWritten == summary.framesCaptured && summary.framesWritten > snapIndex)
    }

    /// Off loopback every request needs the token: 401 without it, 200 with `?token=` or a
    /// bearer header.
    @Test func tokenRequiredOffLoopback() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let rec = try serve(["record", "--preview-token", "s3cret", "--source", "synthetic:1280", "--plain", "--out", dir] + untilSIGINT,
                            host: "0.0.0.0", query: "?token=s3cret")
        let (base, port) = (rec.base, rec.port)
        for path in ["", "status", "snapshot.jpg", "stream.mjpg", "events"] {
            #expect(try curl(base + path, seconds: 2, authorized: false).status == 401, "/\(path) without a token")
            #expect(try curl(base + path + "?token=wrong", seconds: 2, authorized: false).status == 401, "/\(path) with a wrong token")
        }
        for path in ["ratio?to=9x16", "shutter"] {
            #expect(try curl(base + path, post: true, seconds: 2, authorized: false).status == 401, "POST /\(path) without a token")
        }
        // With a token, the Host header is not what guards the preview: any name works.
        #expect(try curl(base + "status?token=s3cret", extra: ["-H", "Host: camera.lan:\(port)"], authorized: false).status == 200)
        #expect(try curl(base + "status?token=s3cret", authorized: false).status == 200)
        #expect(try curl(base + "status", extra: ["-H", "Authorization: Bearer s3cret"], authorized: false).status == 200)
        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("preview: http://0.0.0.0:\(port)/?token=s3cret\n"))
    }

    /// A port in use: one line, exit 75, and no clip (before capture starts). A bad address: 64.
    @Test func portInUseAndBadAddress() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (fd, port) = try loopbackSocket(listening: true)
        defer { close(fd) }
        let run = try reel(["record", "--preview", "127.0.0.1:\(port)", "--duration", "1", "--plain", "--out", dir])
        #expect(run.status == 75)
        #expect(run.stderr == "reel: preview: 127.0.0.1:\(port) is in use (choose another port with --preview)\n")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasSuffix(".mov") }.isEmpty)

        let bad = try reel(["record", "--preview", "203.0.113.7:8080", "--duration", "1", "--plain", "--out", dir])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderr.hasPrefix("reel: preview: '203.0.113.7'") && bad.stderr.split(separator: "\n").count == 1)
        let unparsable = try reel(["record", "--preview", "nohost:99999", "--duration", "1", "--plain", "--out", dir])
        #expect(unparsable.status == 64)
    }

    /// 200 connections that say nothing, and one request with 64 KiB of headers: the server
    /// refuses what is over its limits, the recording drops nothing and ends on time.
    @Test func manyConnectionsAndHugeHeaders() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let rec = try serve(["record", "--duration", "3", "--source", "synthetic:1280", "--plain", "--json", "--out", dir])
        let port = rec.port
        // From the moment it serves (a loaded machine may take long to start it).
        let started = Date()
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        let huge = try #require(connectLoopback(port: port))
        sockets.append(huge)
        let request = Array(("GET /status HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + String(repeating: "X-Filler: " + String(repeating: "a", count: 1000) + "\r\n", count: 64) + "\r\n").utf8)
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(huge, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            sent += n
        }
        var reply = [UInt8](repeating: 0, count: 4096)
        let got = recv(huge, &reply, reply.count, 0)
        let text = got > 0 ? String(decoding: reply[..<got], as: UTF8.self) : ""
        // Refused with its status, not dropped without a word (a server that answered nothing
        // would fail here).
        #expect(text.hasPrefix("HTTP/1.1 431"), "huge headers: \(got) bytes, errno \(got < 0 ? errno : 0): \(text.prefix(40))")
        for _ in 0..<200 { if let fd = connectLoopback(port: port) { sockets.append(fd) } }
        let run = rec.process.wait()
        let took = Date().timeIntervalSince(started)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(took < 9, "3 s recording with 200 idle connections ended after \(took) s")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.framesDropped == 0, "drops: \(summary.dropReasons)")
        #expect(summary.framesWritten == 90)
    }

    /// Port 0 (as `scripts/demo` runs it): a free port, printed in the page's address with
    /// the session's token (a capability URL on loopback too, as Jupyter prints one): 128
    /// random bits, another each run.
    @Test func portZeroPicksAFreePortAndThePreviewLineCarriesTheToken() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        var tokens: Set<String> = []
        for _ in 0..<2 {
            let run = try reel(["record", "--preview", "127.0.0.1:0", "--frames", "3", "--plain", "--out", dir])
            #expect(run.status == 0, "\(run.stderr)")
            let line = try #require(run.stderr.split(separator: "\n").first { $0.hasPrefix("preview: ") })
            let match = try #require(line.wholeMatch(of: /preview: http:\/\/127\.0\.0\.1:([0-9]+)\/\?token=([0-9a-f]{32})/), "\(line)")
            #expect((Int(match.1) ?? 0) > 0)
            tokens.insert(String(match.2))
            removeTree(dir)
        }
        #expect(tokens.count == 2, "the same token twice")
    }

    /// A client that opens the stream and never reads holds back nothing: 0 frames dropped.
    @Test func slowClientDropsNothing() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let rec = try serve(["record", "--source", "synthetic:1280", "--plain", "--json", "--out", dir] + untilSIGINT)
        let port = rec.port
        // A 4 KiB receive buffer, set before connecting (the window is agreed then).
        let fd = try #require(connectLoopback(port: port, receiveBuffer: 4096), "connect to the preview with a 4 KiB receive buffer")
        defer { close(fd) }
        let request = Array("GET /stream.mjpg HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(rec.token)\r\n\r\n".utf8)
        #expect(write(fd, request, request.count) == request.count)
        // 1.5 s of frames (45) later, its buffers long full, another client still gets fresh
        // pictures: newer than the frame captured when the slow client came.
        let connectedAt = try #require(try rec.status()["frames"] as? Int)
        try rec.waitForFrames(connectedAt + 45)
        var snapIndex = -1
        let fresh = try waitUntil(60) {
            let snap = try curl(rec.base + "snapshot.jpg")
            #expect(snap.status == 200)
            snapIndex = snap.headers["x-frame-index"].flatMap { Int($0) } ?? -1
            return snapIndex > connectedAt
        }
        #expect(fresh, "the snapshot stayed at frame \(snapIndex), captured \(connectedAt) when the slow client came")
        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.framesDropped == 0, "drops: \(summary.dropReasons)")
        #expect(summary.framesWritten == summary.framesCaptured && summary.framesWritten >= connectedAt + 45)
    }

    /// The page in a real browser (Debian's headless Chromium): the screenshot shows a frame
    /// whose barcode reads back, and the state line follows `/events`. The screenshot stays in
    /// a /tmp directory whose path the test prints.
    @Test(.enabled(if: installedTool("chromium") != nil, "needs Debian's chromium (scripts/test installs it)"))
    func pageInHeadlessChromium() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = temporaryDirectory("reel-preview-screenshot")
        // Until SIGINT (below): a browser starts slowly on a loaded machine.
        let rec = try serve(["record", "--source", "synthetic:1280", "--plain", "--json", "--out", dir] + untilSIGINT)
        @discardableResult func chromium(_ args: [String]) throws -> String {
            let text = try runTool("chromium", ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,900",
                                                "--timeout=2500", "--user-data-dir=\(shots)/profile"] + args + [rec.page]).stdout
            return String(decoding: text, as: UTF8.self)
        }
        let shot = shots + "/page.png"
        try chromium(["--screenshot=\(shot)"])
        print("preview screenshot: \(shot)")
        let dom = try chromium(["--dump-dom"])
        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        // `--timeout` stops loading after 2.5 s, while the recording still runs.
        #expect(dom.contains("● recording") && dom.contains(" frames ") && dom.contains(" fps ") && dom.contains(" dropped "),
                "the state line: \(dom.suffix(300))")

        // The picture sits at the top left at its natural size (1280x720): read its barcode.
        let shown = try #require(try barcode(ofScreenshot: shot, filter: "crop=1280:720:0:0"), "no barcode in the screenshot \(shot)")
        #expect((0..<summary.framesCaptured).contains(shown))
    }
}

/// A connected TCP socket to `port` from `source` (a loopback address of this machine), with
/// a receive buffer of `receiveBuffer` bytes (`SO_RCVBUF`, set before connecting) when given;
/// nil when any of socket, setsockopt, bind or connect fails.
private func connectLoopback(port: UInt16, from source: String = "127.0.0.1", receiveBuffer: Int32? = nil) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    if var size = receiveBuffer, setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
        close(fd)
        return nil
    }
    var local = sockaddr_in()
    local.sin_family = sa_family_t(AF_INET)
    local.sin_addr.s_addr = inet_addr(source)
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_port = port.bigEndian
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    let ok = withUnsafePointer(to: &local) { l in
        l.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    } && withUnsafePointer(to: &a) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    if !ok { close(fd); return nil }
    return fd
}

/// Resident memory of process `pid` in KiB (`VmRSS` of /proc/PID/status).
private func residentKiB(_ pid: Int32) -> Int {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

extension RealtimePreviewTests {
    /// On loopback without a token, a request naming another host (a DNS-rebinding page) is
    /// refused with 403; the names of this server are served.
    @Test func hostHeaderGuardsLoopback() throws {
        // Until SIGINT (below).
        let run = try serve(["preview", "--source", "synthetic:1280"])
        let (base, port) = (run.base, run.port)
        for host in ["evil.example:\(port)", "evil.example", "127.0.0.1:1", "rebind.attacker.test:\(port)"] {
            for path in ["", "status", "snapshot.jpg", "stream.mjpg"] {
                let r = try curl(base + path, extra: ["-H", "Host: \(host)"], seconds: 3)
                #expect(r.status == 403, "Host: \(host) /\(path)")
            }
            #expect(try curl(base + "ratio?to=9x16", post: true, extra: ["-H", "Host: \(host)"]).status == 403)
        }
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"] {
            #expect(try curl(base + "status", extra: ["-H", "Host: \(host)"]).status == 200, "Host: \(host)")
        }
        #expect(run.stop().status == 0)
    }

    /// `reel preview`: the session with the preview alone. The page's address on stderr, the
    /// status says not recording, the picture's barcode reads back, no file is written, exit 0.
    @Test func previewCommandServesWithoutRecording() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // Until SIGINT (below); `--duration` is checked by previewCommandStopsAfterItsDuration.
        let run = try serve(["preview", "--source", "synthetic:1280"], in: dir)
        let base = run.base
        #expect(try run.status()["recording"] as? Bool == false)
        let snap = try curl(base + "snapshot.jpg")
        #expect(snap.status == 200)
        #expect(try barcode(ofJPEG: snap.body) == snap.headers["x-frame-index"].flatMap { Int($0) })
        let done = run.stop()
        #expect(done.status == 0, "\(done.stderr)")
        #expect(done.stderr == "preview: \(base)?token=\(run.token)\n")
        #expect(done.stdout.isEmpty)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).isEmpty, "reel preview records nothing")
        #expect(try reel(["preview", "--duration", "0"]).status == 64)
        #expect(try reel(["preview", "--preview", "nohost:99999"]).status == 64)
    }

    /// `reel preview --duration 1` ends by itself after a second of media time, exit 0.
    @Test func previewCommandStopsAfterItsDuration() throws {
        let run = try boundedReel(["preview", "--preview", "127.0.0.1:0", "--duration", "1", "--source", "synthetic:1280"], timeout: 120)
        #expect(!run.timedOut, "reel preview --duration 1 still ran after 120 s")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("preview: http://127.0.0.1:"))
    }

    /// `POST /ratio?to=9x16` while recording answers with the frame the change landed on; the
    /// recording has its seam exactly there, and `reel verify` accepts it. `POST /shutter`
    /// without a photo output: 501 with a JSON reason. Bad ratios: 400.
    @Test func ratioControlMakesASeamAndShutterNeedsAPhotoOutput() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // --no-realtime (the seam and `reel verify` are checked, not drops): nothing is
        // dropped on a loaded machine; it runs until SIGINT below.
        let rec = try serve(["record", "--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                             "--plain", "--json", "--out", dir] + untilSIGINT)
        let base = rec.base
        // The first clip has frames (0.8 s of them) before the change.
        try rec.waitForFrames(24)
        let change = try curl(base + "ratio?to=9x16", post: true)
        #expect(change.status == 200)
        #expect(change.headers["content-type"] == "application/json")
        let answer = try #require(change.object)
        let seamFrame = try #require(answer["frameIndex"] as? Int, "\(change.text)")
        #expect(answer["ratio"] as? String == "9x16")
        #expect(abs((answer["pts"] as? Double ?? -1) - Double(seamFrame) / 30) < 1e-6)
        let status = try #require(try curl(base + "status").object)
        #expect(status["ratio"] as? String == "9x16", "the status follows")

        let shutter = try curl(base + "shutter", post: true)
        #expect(shutter.status == 501)
        #expect(shutter.text == #"{"error":"no photo output is attached to this session"}"#)
        for bad in ["ratio?to=5x4", "ratio"] {
            let r = try curl(base + bad, post: true)
            #expect(r.status == 400, "\(bad)")
            #expect(r.text.contains("1x1, 4x3, 3x4, 16x9, 9x16"))
        }

        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.framesDropped == 0, "drops: \(summary.dropReasons)")
        #expect(summary.seams.map(\.frameIndex) == [seamFrame])
        #expect(summary.clips.map(\.ratio) == ["16x9", "9x16"])
        #expect(summary.clips.last?.firstFrameIndex == seamFrame)
        let verify = try reel(["verify", dir])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }

    /// Recording through a pool: `/status` has the pool's remaining capacity, and the time it
    /// holds at the recording's bit rate (issue 23).
    @Test func statusHasThePoolsRemainingCapacity() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // Until SIGINT (below).
        let rec = try serve(["record", "--source", "synthetic:1280", "--pool", testPool, "--json", "--out", dir] + untilSIGINT)
        // Under Deferred Start the pool opens right after the first preview frame: until then
        // the figure is null (nothing is known yet), then it is the pool's; the time once a
        // second of media has a bit rate.
        var status: [String: Any] = [:]
        var remaining: Int64? = nil
        var seconds: Double? = nil
        try waitUntil(60) {
            status = try rec.status()
            remaining = status["poolRemainingCapacity"] as? Int64
            seconds = status["poolRemainingSeconds"] as? Double
            return remaining != nil && seconds != nil && (status["elapsed"] as? Double ?? 0) >= 2
        }
        let run = rec.stop()
        let clipRate = try { () throws -> Double in
            let s = try run.decode(RecordingSummary.self)
            return Double(s.clips.reduce(0) { $0 + $1.bytes }) * 8 / s.clips.reduce(0) { $0 + $1.durationSeconds }
        }()
        let time = try #require(seconds, "\(status)")
        let bytes = try #require(remaining)
        #expect(abs(time / (Double(bytes) * 8 / clipRate) - 1) < 0.10, "\(time) s for \(bytes) bytes at \(clipRate) bit/s")
        let capacity = try #require(remaining, "\(status)")
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        let before = try #require(summary.storage.remainingCapacityBefore)
        #expect(capacity > 0 && capacity <= before)
    }

    /// V4L2 cameras in YUYV and NV12 (the emulated camera): the snapshot shows the frame its
    /// `X-Frame-Index` names.
    @Test(arguments: ["YUYV", "NV12"])
    func packedCameraFormatsArePreviewed(fourcc: String) throws {
        let lib = try #require(fakeV4L2Library, "scripts/fake-v4l2 --build")
        // Until SIGINT (below).
        let run = try serve(["preview", "--source", "v4l2:/dev/video0:1280x720@30:\(fourcc)"],
                            environment: ["LD_PRELOAD": lib, "FAKE_V4L2": ""])
        let base = run.base
        // 3 s of the stream: at least 5 parts even when a loaded machine is slow to send them.
        let stream = try curl(base + "stream.mjpg", seconds: 3)
        for _ in 0..<3 {
            let snap = try curl(base + "snapshot.jpg")
            #expect(snap.status == 200, "\(fourcc): \(String(decoding: snap.body.prefix(100), as: UTF8.self))")
            let index = try #require(snap.headers["x-frame-index"].flatMap { Int($0) })
            #expect(try barcode(ofJPEG: snap.body) == index, "\(fourcc) frame \(index)")
            usleep(300_000)
        }
        let got = parts(of: stream.body, boundary: "reelframe")
        #expect(got.count >= 5)
        for part in got.prefix(5) {
            #expect(try barcode(ofJPEG: part.jpeg) == part.headers["x-frame-index"].flatMap { Int($0) })
            #expect(part.headers["x-capture-monotonic-ns"].flatMap { UInt64($0) } != nil)
        }
        #expect(run.stop().status == 0)
    }

    /// No cap per address (on 127.0.0.0/8 it only let a client lock others out of its own
    /// address): with 100 idle connections from 127.0.0.1 the token holder at 127.0.0.1 is
    /// served. Then 2000 more connections that never send or read (the oldest unauthenticated
    /// ones are shut as newer come): the recording drops nothing, the server's memory stays
    /// bounded, and the token holder is still served.
    @Test func noCapPerAddressAndThousandsOfConnections() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // Until SIGINT (below): thousands of connections take a while on a loaded machine.
        let rec = try serve(["record", "--source", "synthetic:1280", "--codec", "prores:proxy", "--plain", "--json", "--out", dir] + untilSIGINT)
        let (base, port) = (rec.base, rec.port)
        let pid = rec.process.process.processIdentifier
        let memoryBefore = residentKiB(pid)
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for _ in 0..<100 { sockets.append(try #require(connectLoopback(port: port))) }
        #expect(try curl(base + "status").status == 200, "the token holder at 127.0.0.1 beside 100 idle connections from it")

        var made = 0
        for _ in 0..<2000 {
            guard let fd = connectLoopback(port: port) else { continue }
            sockets.append(fd)
            made += 1
        }
        #expect(made == 2000, "connections made: \(made)")
        let memoryAfter = residentKiB(pid)
        #expect(memoryAfter - memoryBefore < 64 * 1024, "RSS \(memoryBefore) -> \(memoryAfter) KiB")
        #expect(try curl(base + "status", extra: ["--interface", "127.0.0.2"]).status == 200)
        #expect(try curl(base + "status").status == 200)
        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.framesDropped == 0, "drops: \(summary.dropReasons)")
        #expect(summary.framesWritten == summary.framesCaptured && summary.framesWritten > 60)
    }
}

/// scripts/preview-browser.py, from this file's place in the repository.
private let previewBrowserScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("scripts/preview-browser.py").path

/// Playwright for Python is importable by the `python3` on PATH (the one scripts/test's
/// `python3 -m pip install playwright` installs into) and Debian's chromium is there.
let havePlaywright: Bool = {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") else { return false }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", "import playwright.sync_api"]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return false }
    p.waitUntilExit()
    return p.terminationStatus == 0
}()

extension RealtimePreviewTests {
    /// The page in a real browser, driven by Playwright (scripts/preview-browser.py, Debian's
    /// chromium): the picture shows, its barcode reads back from the screenshot, a click on
    /// `9x16` answers with the frame the change landed on, the state line and the picture
    /// follow, and the recording has its seam exactly there, which `reel verify` accepts.
    /// The screenshots stay in a /tmp directory whose path the test prints.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func ratioClickInABrowserMakesTheSeam() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = temporaryDirectory("reel-preview-browser")
        // Until SIGINT (below): a browser starts slowly on a loaded machine.
        // --no-realtime: what is checked here is the seam and `reel verify` (every frame), so
        // the source waits for the writer instead of dropping frames on a loaded machine
        // (drops under clients are the other tests' business).
        let rec = try serve(["record", "--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                             "--plain", "--json", "--out", dir] + untilSIGINT)
        let (status, text, why) = try runPreviewBrowser(rec.page, shots: shots, click: "9x16")
        rec.process.signal(SIGINT)
        print("preview screenshots: \(shots)")
        #expect(status == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        #expect(result["natural"] as? [Int] == [1280, 720])
        #expect(result["naturalAfter"] as? [Int] == [720, 1280], "the picture follows the ratio")
        #expect((result["stateBefore"] as? String ?? "").hasPrefix("● recording") && (result["stateBefore"] as? String ?? "").contains("dropped 16x9"), "\(result)")
        #expect((result["stateAfter"] as? String ?? "").contains("dropped 9x16"), "the state line follows: \(result)")
        #expect(result["ratioStatus"] as? Int == 200)
        let answer = try #require(result["ratioAnswer"] as? [String: Any])
        let seamFrame = try #require(answer["frameIndex"] as? Int)

        // The element screenshot is the picture at its natural size (1280x720): read its barcode.
        let shot = try #require(result["picture"] as? String)
        let index = try #require(try barcode(ofScreenshot: shot, filter: "scale=1280:720"), "no barcode in the screenshot \(shot)")
        #expect(index < seamFrame, "the picture before the click shows an earlier frame")

        let run = rec.process.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.seams.map(\.frameIndex) == [seamFrame])
        #expect(summary.clips.map(\.ratio) == ["16x9", "9x16"])
        #expect(summary.clips.last?.firstFrameIndex == seamFrame)
        let verify = try reel(["verify", dir])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }
}

/// `reel record --json --photos`: the summary's `photos` (each as `reel photo --json` lists it)
/// and the capture events.
private struct PhotoRecordingJSON: Decodable {
    var photos: [PhotoRun.Shot]
    var captureEvents: [EventJSON]
    var framesDropped: Int
    var dropReasons: [String: Int]
}

/// The shutter during a recording, timed against the clock: the page's `POST /shutter`
/// (twice) takes photos of the pressed frames, and not one video frame is dropped.
@Suite("RealtimeShutterTests", .serialized, .enabled(if: haveTools && havePhotoTools, "needs curl, ffmpeg, ffprobe, exiftool and heif-convert"))
struct RealtimeShutterTests {
    /// `reel record --preview --photos DIR` (HEIC, the default) in real time: each `POST
    /// /shutter` answers with its saved photo (path, frameIndex, pressedFrameIndex, lagFrames),
    /// whose barcode, decoded by libheif's heif-convert, is that frame; the summary lists the
    /// same photos; the video has no dropped frame and `reel verify` accepts it.
    @Test func thePagesShutterTakesPhotosDuringARecordingWithoutADroppedFrame() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // Until SIGINT (below).
        let rec = try serve(["record", "--photos", dir + "/photos", "--source", "synthetic:1280", "--codec", "h264",
                             "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        let base = rec.base
        // A second of frames before the first press, 0.7 s (21 frames) between the presses.
        try rec.waitForFrames(30)
        var answers: [[String: Any]] = []
        for _ in 0..<2 {
            let shot = try curl(base + "shutter", post: true)
            #expect(shot.status == 200, "\(shot.text)")
            #expect(shot.headers["content-type"] == "application/json")
            let answer = try #require(shot.object)
            answers.append(answer)
            try rec.waitForFrames((answer["frameIndex"] as? Int ?? 0) + 21)
        }
        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.framesDropped == 0, "drops: \(summary.dropReasons)")
        #expect(summary.photos.count == 2)
        for (answer, shot) in zip(answers, summary.photos) {
            let path = try #require(answer["path"] as? String)
            let frame = try #require(answer["frameIndex"] as? Int)
            let pressed = try #require(answer["pressedFrameIndex"] as? Int)
            #expect(answer["lagFrames"] as? Int == frame - pressed)
            #expect(abs(frame - pressed) <= 1, "zero shutter lag: the frame nearest the press")
            #expect(shot.path == path && shot.frameIndex == frame && shot.pressedFrameIndex == pressed)
            #expect(shot.format == "heic" && shot.width == 1280 && shot.height == 960, "the sensor's 4x3 crop")
            let read = try photoBarcode(path)
            #expect(read.index == frame, "the photo shows the frame it reports")
            #expect(read.width == 1280 && read.height == 960)
        }
        #expect(Set(summary.photos.map(\.frameIndex)).count == 2)
        let verify = try reel(["verify", dir + "/video"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }
}

/// `--photos` in the parallel pass (nothing timed against the clock): a photo on a full disk,
/// one with Eager Start, bad `--photos`.
@Suite("RecordPhotoTests", .enabled(if: haveTools && havePhotoTools, "needs curl, ffmpeg, ffprobe, exiftool and heif-convert"))
struct RecordPhotoTests {
    /// A photo that cannot be saved (a full disk): `POST /shutter` answers 409 with the
    /// reason; the recording is kept and the command exits 74 with the error on stderr.
    @Test(.enabled(if: canMountTmpfs, "needs to mount tmpfs (root)"))
    func aPhotoThatCannotBeSavedIs409AndExit74() throws {
        let photos = try #require(mountTmpfs(sizeKiB: 32))   // a 1280x960 PNG of the pattern is ~125 kB
        defer { unmount(photos) }
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let rec = try serve(["record", "--photos", photos, "--photo-format", "png", "--source", "synthetic:1280", "--codec", "h264",
                             "--plain", "--json", "--out", dir] + untilSIGINT)
        let shot = try curl(rec.base + "shutter", post: true, seconds: 60)
        #expect(shot.status == 409)
        #expect(shot.text.contains("No space left on device"))
        let run = rec.stop()
        #expect(run.status == 74, "\(run.stderr)")
        #expect(run.stderr.contains("reel: photo: saving failed: "), "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.photos.isEmpty)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).contains { $0.hasSuffix(".mov") }, "the recording is kept")
        #expect(try FileManager.default.contentsOfDirectory(atPath: photos).isEmpty, "no half-written photo")
    }

    /// `--photos` with `--eager-start`: the photo output is prepared before the first frame,
    /// so a press made as the recording starts is never buffered. (That the session prepares it
    /// eagerly is checked deterministically in PhotoOutputDeferredStartTests.)
    @Test func withEagerStartThePhotoOutputIsReadyAtTheFirstFrame() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/control.sock"
        // Until SIGINT, once the photo is saved (a loaded machine could otherwise end a short
        // recording before the press arrives).
        let rec = try launch(["record", "--eager-start", "--control-socket", path, "--photos", dir + "/photos", "--photo-format", "jpeg",
                              "--source", "synthetic:1280", "--codec", "h264", "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        #expect(waitForFile(path))
        #expect(try reel(["control", "--socket", path, "shutter"]).status == 0)
        #expect(waitUntil(60) { ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/photos")) ?? []).contains { $0.hasSuffix(".jpg") } })
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        let shot = try #require(summary.photos.first)
        #expect(summary.photos.count == 1 && !shot.buffered)
        #expect(try photoBarcode(shot.path).index == shot.frameIndex)
    }

    @Test func photosNeedAWritableDirectory() throws {
        // A V4L2 camera takes photos too (RealtimeV4L2PhotoTests); a missing one is still 66.
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let v4l2 = try reel(["record", "--photos", dir + "/photos", "--source", "v4l2:/dev/video99", "--plain"])
        #expect(v4l2.status == 66)
        #expect(v4l2.stderr == "reel: /dev/video99: no such video device\n", "\(v4l2.stderr)")
        let unwritable = try reel(["record", "--photos", "/proc/reel-photos", "--plain", "--frames", "3"])
        #expect(unwritable.status == 73)
        #expect(unwritable.stderr == "reel: --photos: cannot create or write the photo directory '/proc/reel-photos'\n")
        let format = try reel(["record", "--photos", "photos", "--photo-format", "gif"])
        #expect(format.status == 64 && format.stderr.contains("jpeg, heic or png"))
    }
}

extension RealtimeShutterTests {
    /// The control socket's shutter and a held press, timed against the clock (a press held
    /// 0.3 s): in the real-time pass of `scripts/test`.
    @Test func theControlSocketsShutterTakesAPhotoWithTheTimeOfItsPress() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/control.sock"
        // --burst-rate 0: the held press below must stay one press even when the two `reel
        // control` launches take longer than the 0.5 s burst threshold on a loaded machine.
        let rec = try launch(["record", "--control-socket", path, "--photos", dir + "/photos", "--photo-format", "jpeg", "--burst-rate", "0",
                              "--source", "synthetic:1280", "--codec", "h264", "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        #expect(waitForFile(path))
        // Capture has begun (its first clip is there) and 15 frames more were captured: the
        // photo output, prepared after the first frame, holds frames in its ring (a press before
        // is buffered, which is not checked here).
        #expect(waitForFirstClip(in: dir + "/video"))
        #expect(waitForFramesAfterNow(path, 15) != nil)
        // A cancelled press: no photo. `shutter`: primary began + ended, one photo.
        #expect(try reel(["control", "--socket", path, "event", "began", "primary", "event", "cancelled", "primary"]).status == 0)
        #expect(try reel(["control", "--socket", path, "shutter"]).status == 0)
        // A press held for 0.3 s: the photo is of the frame at its `began` (the ring's oldest
        // frame when it is older than the ring: then lagFrames says how late).
        #expect(try reel(["control", "--socket", path, "event", "began", "primary"]).status == 0)
        usleep(300_000)
        #expect(try reel(["control", "--socket", path, "event", "ended", "primary"]).status == 0)
        // Both photos saved before the recording stops.
        let saved = waitUntil(60) { ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/photos")) ?? []).filter { $0.hasSuffix(".jpg") }.count == 2 }
        #expect(saved, "the two photos were never saved")
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.captureEvents.map { "\($0.action) \($0.phase)" } == [
            "primary began", "primary cancelled", "primary began", "primary ended", "primary began", "primary ended",
        ])
        try #require(summary.photos.count == 2, "one photo per ended press, none for the cancelled one")
        for shot in summary.photos {
            #expect(shot.format == "jpeg" && shot.path.hasSuffix(".jpg"))
            #expect(shot.lagFrames == shot.frameIndex - shot.pressedFrameIndex)
            #expect(try photoBarcode(shot.path).index == shot.frameIndex)
        }
        // The held press: pressed at its `began`, not at its `ended` 0.3 s (9 frames) later.
        // (The logged frames are the newest captured when each event was handled: a loaded
        // machine may log a frame or two behind the clock, hence the margin of 3.)
        let held = summary.photos[1]
        let began = try #require(summary.captureEvents[4].frameIndex), ended = try #require(summary.captureEvents[5].frameIndex)
        #expect(abs(held.pressedFrameIndex - began) <= 3, "pressed at frame \(began), the photo says \(held.pressedFrameIndex)")
        #expect(ended - held.pressedFrameIndex >= 6, "ended at frame \(ended): the press time is the began's")
        #expect(summary.photos[1].lagFrames >= 5, "held 0.3 s: the pressed frame had left the ring of 3")
    }

    /// The page's shutter button clicked in a real browser (Playwright, Debian's chromium):
    /// the page shows the photo's JSON (200), and the photo it names shows the frame it reports;
    /// the status stream brings the photo's thumbnail to the page.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func theShutterButtonInABrowserTakesAPhoto() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = temporaryDirectory("reel-preview-browser")
        defer { removeTree(shots) }
        // Until SIGINT (below): a browser starts slowly on a loaded machine.
        let rec = try serve(["record", "--photos", dir + "/photos", "--photo-format", "jpeg", "--source", "synthetic:1280",
                             "--codec", "h264", "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        let (status, text, why) = try runPreviewBrowser(rec.page, shots: shots, click: "shutter")
        rec.process.signal(SIGINT)
        #expect(status == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        #expect(result["shutterStatus"] as? Int == 200)
        let answer = try #require(result["shutterAnswer"] as? [String: Any], "\(result)")
        let path = try #require(answer["path"] as? String)
        let frame = try #require(answer["frameIndex"] as? Int)
        #expect(try photoBarcode(path).index == frame)
        #expect((result["thumbnail"] as? [Int])?.first ?? 0 > 0, "the page showed no thumbnail: \(result)")
        let run = rec.process.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.photos.map(\.path) == [path])
    }
}

/// Runs scripts/preview-browser.py (Playwright driving Debian's chromium) against the page at
/// `base`: screenshots into `shots`, then a click on the button named `click`; its exit
/// status, stdout (JSON) and stderr.
func runPreviewBrowser(_ base: String, shots: String, click: String) throws -> (Int32, Data, Data) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", previewBrowserScript, base, shots, "--click", click]
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    let text = out.fileHandleForReading.readDataToEndOfFile()
    let why = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, text, why)
}

/// `reel ARGS…` as the unprivileged user nobody (`setpriv`, util-linux), with a cache of its
/// own in `home`: what a user who may not bind a low port sees.
private func reelAsNobody(_ args: [String], home: String) throws -> Run {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try #require(installedTool("setpriv")))
    p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", reelBinary] + args
    var env = ProcessInfo.processInfo.environment
    env["HOME"] = home
    env["XDG_CACHE_HOME"] = home + "/cache"
    env["REEL_POOL"] = home + "/pool"
    p.environment = env
    p.currentDirectoryURL = URL(fileURLWithPath: home)
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    return Launched(process: p, out: out, err: err).wait()
}

/// The lowest port an unprivileged process may bind (`net.ipv4.ip_unprivileged_port_start`).
private let unprivilegedPortStart = Int(((try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_unprivileged_port_start", encoding: .utf8)) ?? "")
    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0

/// Binding the preview's port is not allowed (EACCES: port 80 for a user without the
/// privilege): one line, exit 77, before capture starts — for `reel preview` and `reel record`.
@Suite struct PreviewPermissionTests {
    @Test(.enabled(if: getuid() == 0 && installedTool("setpriv") != nil && unprivilegedPortStart > 80,
                   "needs root, setpriv (util-linux) and an unprivileged port start above 80 to run as nobody and be refused port 80"))
    func aPortThisUserMayNotBindIsExit77() throws {
        let home = temporaryDirectory("reel-nobody")
        defer { removeTree(home) }
        #expect(chmod(home, 0o777) == 0)
        let line = "reel: preview: no permission to listen on 127.0.0.1:80 (use a port above 1023)\n"
        let preview = try reelAsNobody(["preview", "--preview", "127.0.0.1:80", "--source", "synthetic:1280"], home: home)
        #expect(preview.status == 77, "\(preview.stderr)")
        #expect(preview.stderr == line)
        let record = try reelAsNobody(["record", "--preview", "127.0.0.1:80", "--frames", "3", "--plain", "--out", home + "/out"], home: home)
        #expect(record.status == 77, "\(record.stderr)")
        #expect(record.stderr == line)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: home + "/out")) ?? []).isEmpty, "no clip")
    }
}

extension RealtimePreviewTests {
    /// The page shows the controls' values and follows a change made elsewhere (the control
    /// socket) without a reload — no stale zoom: a real browser (Playwright, Debian's
    /// chromium) waits until the state line says `zoom 1×`, the test sets zoom 2 through
    /// `reel control`, and the same page then says `zoom 2×`; `/status` agrees.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func thePageFollowsAZoomSetThroughTheControlSocket() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = temporaryDirectory("reel-preview-browser")
        defer { removeTree(shots) }
        let socket = dir + "/control.sock"
        let rec = try serve(["record", "--control-socket", socket, "--source", "synthetic:1280", "--codec", "h264",
                             "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        let ready = shots + "/ready"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", previewBrowserScript, rec.page, shots, "--follow", ready]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        #expect(waitUntil(60) { FileManager.default.fileExists(atPath: ready) || !p.isRunning }, "the page never showed zoom 1×")
        let set = try reel(["control", "--socket", socket, "zoom", "2"])
        #expect(set.status == 0, "\(set.stdout)\(set.stderr)")
        let text = out.fileHandleForReading.readDataToEndOfFile()
        let why = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        #expect((result["stateBefore"] as? String)?.contains("zoom 1×") == true, "\(result)")
        #expect((result["stateFollowed"] as? String)?.contains("zoom 2×") == true, "\(result)")
        #expect(try rec.status()["zoom"] as? Double == 2)
        // A ratio that is not one of the five: 400, and the recording goes on.
        let bad = try curl(rec.base + "ratio?to=2x1", post: true)
        #expect(bad.status == 400, "\(bad.text)")
        rec.process.signal(SIGINT)
        #expect(rec.process.wait().status == 0)
    }
}
