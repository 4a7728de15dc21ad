import Foundation
import ReelCore
import ReelWriter
import Testing


/// A `reel` process serving the preview at `base` (`http://127.0.0.1:PORT/`), started by
/// `serve` once its `/status` answers (with the token its `preview:` line printed: `curl`
/// sends it).
struct Served {
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
func serve(_ args: [String], host: String = "127.0.0.1", query: String = "", in directory: String? = nil,
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

/// The frame-index barcodes of JPEGs of one size (a stream's parts), decoded by ffmpeg (an
/// independent decoder, not the libjpeg-turbo that encoded them) to gray in one run: the
/// JPEGs are concatenated into one MJPEG stream, ffprobe names their size once.
func barcodes(ofJPEGs jpegs: [Data]) throws -> [Int?] {
    guard !jpegs.isEmpty else { return [] }
    let dir = temporaryDirectory("reel-jpeg")
    defer { removeTree(dir) }
    let path = dir + "/parts.mjpeg"
    try jpegs.reduce(Data(), +).write(to: URL(fileURLWithPath: path))
    let info = try #require(ffprobe(path))
    #expect(info.codec == "mjpeg")
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try #require(installedTool("ffmpeg")))
    p.arguments = ["-v", "error", "-f", "mjpeg", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", "-"]
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let gray = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let size = info.width * info.height
    try #require(p.terminationStatus == 0 && gray.count == jpegs.count * size,
                 "ffmpeg decoded \(gray.count) bytes of \(jpegs.count) pictures of \(info.width)x\(info.height)")
    return gray.withUnsafeBytes { raw in
        (0..<jpegs.count).map { i in
            FrameBarcode.read(LumaPlane(base: raw.baseAddress! + i * size, stride: info.width, width: info.width, height: info.height, depth: 8))
        }
    }
}

/// The frame-index barcode of one JPEG (see `barcodes(ofJPEGs:)`).
func barcode(ofJPEG jpeg: Data) throws -> Int? {
    try barcodes(ofJPEGs: [jpeg])[0]
}

/// The frame-index barcode of a 1280x720 picture in a browser's screenshot (PNG), cut out or
/// scaled by the ffmpeg filter `filter` and decoded by ffmpeg to gray.
func barcode(ofScreenshot path: String, filter: String) throws -> Int? {
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
func parts(of body: Data, boundary: String) -> [(headers: [String: String], jpeg: Data)] {
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

let haveTools = haveCurl && installedTool("ffmpeg") != nil && installedTool("ffprobe") != nil

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
        #expect(Set(json.keys) == ["recording", "elapsed", "frames", "fps", "drops", "crossOriginRefused", "ratio", "previewFrames", "previewClients", "previewEncodeMs", "poolRemainingCapacity", "poolRemainingSeconds", "pressure", "zoom", "exposure", "effect", "dropReasons", "seams", "controls", "photo", "gallery", "secondary", "audioLevelDb"])
        #expect(json["audioLevelDb"] is NSNull, "no sound: no level")
        #expect(json["poolRemainingCapacity"] is NSNull, "--plain records through no pool")
        #expect(json["poolRemainingSeconds"] is NSNull, "--plain records through no pool")
        #expect(json["recording"] as? Bool == true)
        #expect(json["ratio"] as? String == "16x9")
        #expect(json["secondary"] as? String == "marker", "the synthetic sensor has no lock: a secondary press lays a marker")
        #expect((json["frames"] as? Int ?? 0) > 0)

        let events = try curl(base + "events", seconds: 0.8)
        let text = events.text
        #expect(events.headers["content-type"] == "text/event-stream")
        #expect(text.hasPrefix("data: {"), "\(text.prefix(80))")

        let got = parts(of: stream.body, boundary: "reelframe")
        #expect(got.count >= 10, "parts in 1.5 s at 30 fps: \(got.count)")
        var previous = -1
        let shown = try barcodes(ofJPEGs: got.map(\.jpeg))
        for (part, barcode) in zip(got, shown) {
            let index = try #require(part.headers["x-frame-index"].flatMap { Int($0) })
            #expect(part.headers["x-timestamp-us"] != nil)
            #expect(index > previous, "the frame index advances between parts")
            #expect(barcode == index, "the picture shows frame \(index)")
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

    /// The page in a real browser (Debian's headless Chromium): the screenshot shows a frame
    /// whose barcode reads back, and the state line follows `/events`. The screenshot is kept
    /// in .build/test-artifacts/preview-chromium.
    @Test(.enabled(if: installedTool("chromium") != nil, "needs Debian's chromium (scripts/test installs it)"))
    func pageInHeadlessChromium() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-chromium")
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
        for (part, barcode) in zip(got.prefix(5), try barcodes(ofJPEGs: got.prefix(5).map(\.jpeg))) {
            #expect(barcode == part.headers["x-frame-index"].flatMap { Int($0) })
            #expect(part.headers["x-capture-monotonic-ns"].flatMap { UInt64($0) } != nil)
        }
        #expect(run.stop().status == 0)
    }

}
