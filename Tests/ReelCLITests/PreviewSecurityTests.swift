import Foundation
import Synchronization
import ReelWriter
import Testing

// Issue 27 item 5 with real `reel` processes: cross-origin requests change nothing in the
// recording (curl and a real Chromium page), the registry refuses an unsafe fallback, the
// `reel control` client gives up on a socket that never answers.

/// scripts/preview-cross-origin.py, from this file's place in the repository.
private let crossOriginScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("scripts/preview-cross-origin.py").path

/// `reel record ARGS… --preview 127.0.0.1:PORT` until SIGINT, once its `/status` answers with
/// the token of its `preview:` line; its port.
private func recordWithPreview(_ args: [String]) throws -> (Launched, UInt16) {
    let port = try freePort()
    let rec = try launch(["record", "--preview", "127.0.0.1:\(port)"] + args + untilSIGINT)
    #expect(waitUntil(60) { !rec.process.isRunning || previewStatus(previewBase(port)) != nil }, "the preview never answered")
    try #require(rec.process.isRunning, "reel record ended: \(rec.stderrSoFar)")
    return (rec, port)
}

@Suite("RealtimePreviewSecurityTests", .serialized, .enabled(if: haveCurl, "needs curl"))
struct RealtimePreviewSecurityTests {
    /// A control changed through the control socket (`reel control zoom 2`: the camera's
    /// `ControlSet`, as keys and devices change it too) reaches the page's `/events` stream,
    /// pushed once applied: the zoom and the `controls` list show 2 within a second; the page's
    /// own `POST /control?name=effect` is pushed the same way.
    @Test func aControlChangedElsewhereIsPushedOnTheEvents() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let socket = dir + "/control.sock"
        let (rec, port) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "prores:proxy", "--plain",
                                                 "--control-socket", socket, "--out", dir])
        defer { rec.signal(SIGINT); _ = rec.wait() }
        let token = try #require(previewToken(port))
        let events = try EventsCurl(port: port, token: token)
        defer { events.stop() }
        #expect(waitUntil(10) { events.latest?.contains(#""identifier":"zoom""#) ?? false }, "no status with the controls")
        #expect(events.latest?.contains(#""zoom":1"#) ?? false, "\(events.latest ?? "")")
        let set = try reel(["control", "--socket", socket, "zoom", "2"])
        let sent = Date()
        #expect(set.status == 0, "\(set.stdout) \(set.stderr)")
        #expect(waitUntil(5) { events.latest?.contains(#""zoom":2"#) ?? false }, "the zoom change never reached /events")
        let took = Date().timeIntervalSince(sent)
        #expect(took < 1, "the change took \(took) s to reach /events")
        let latest = events.latest ?? ""
        let status = try #require(try JSONSerialization.jsonObject(with: Data(latest.utf8)) as? [String: Any])
        let zoom = (status["controls"] as? [[String: Any]])?.first { $0["identifier"] as? String == "zoom" }
        #expect(zoom?["value"] as? Double == 2 && zoom?["maximum"] as? Double == 4, "\(latest)")
        let reasons = status["dropReasons"] as? [String: Int]
        #expect(reasons.map { Set($0.keys) } == ["late", "outOfBuffers", "discontinuity", "corrupt"], "\(latest)")
        #expect(reasons?.values.reduce(0, +) == status["drops"] as? Int && status["seams"] as? Int == 0, "\(latest)")
        let page = try curl(previewBase(port) + "control?name=effect&value=grayscale", post: true)
        #expect(page.status == 200, "\(page.text)")
        #expect(waitUntil(5) { events.latest?.contains(#""effect":"grayscale""#) ?? false }, "the page's effect never reached /events")
    }

    /// The zoom slider and the effect picker in a real browser (Playwright, Debian's
    /// chromium): the page's `POST /control` answers 200 with zoom 2, then grayscale; the
    /// status stream brings `zoom 2×` and `effect grayscale` back to the state line and the
    /// slider; the rows of controls this camera lacks (mode, smart framing's toggles) are not
    /// displayed; the console shows no content-security-policy violation; at phone width
    /// (390 px) the page and the picture fit the window. The recording (FFV1: its decoded
    /// pixels are Reel's) shows it: frames before the zoom's stated frame carry the barcode at
    /// its size, frames from it on twice as large; frames before the effect's frame have
    /// colour, frames from it on none. The screenshots at both sizes (desktop.png at 1280 px,
    /// phone.png at 390 px) are kept in .build/test-artifacts/preview-controls.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func theZoomSliderAndEffectPickerInABrowserChangeTheRecordedFrames() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-controls")
        let (rec, port) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "ffv1", "--container", "mkv",
                                                 "--plain", "--json", "--out", dir])
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        let (status, text, why) = try runPreviewBrowser(previewPage(port), shots: shots, click: "zoom")
        // Frames after the effect, then the end.
        let base = previewBase(port)
        let now = previewStatus(base)?["frames"] as? Int ?? 0
        #expect(waitUntil(30) { (previewStatus(base)?["frames"] as? Int ?? 0) >= now + 10 }, "the recording stalled")
        rec.signal(SIGINT)
        let run = rec.wait()
        print("preview browser screenshots: \(shots)")
        #expect(status == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any], "\(String(decoding: text, as: UTF8.self))")
        #expect(result["zoomStatus"] as? Int == 200, "\(result)")
        #expect((result["zoomAnswer"] as? [String: Any])?["value"] as? Double == 2, "\(result)")
        #expect((result["stateAfter"] as? String)?.contains("zoom 2×") == true)
        #expect(result["sliderAfter"] as? Double == 2)
        #expect(result["effectStatus"] as? Int == 200 && (result["effectAnswer"] as? [String: Any])?["title"] as? String == "grayscale", "\(result)")
        #expect((result["stateAfterEffect"] as? String)?.contains("effect grayscale") == true)
        // No photo output and no smart framing: their rows are not displayed.
        #expect(result["absentRows"] as? [String] == ["none", "none"], "\(result)")
        let errors = result["consoleErrors"] as? [String] ?? []
        #expect(!errors.contains { $0.contains("Content Security Policy") }, "\(errors)")
        let widths = result["phoneWidths"] as? [Double] ?? []
        #expect(widths.count == 2 && widths[0] <= 390 && widths[1] <= 390 && widths[1] > 300, "\(widths)")
        for shot in ["desktop.png", "phone.png"] { #expect(FileManager.default.fileExists(atPath: shots + "/" + shot), "\(shot)") }

        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PictureSummaryJSON.self)
        try #require(summary.controlChanges.map(\.control) == ["zoom", "effect"], "\(summary.controlChanges)")
        let zoomAt = try #require(summary.controlChanges[0].frameIndex)
        let effectAt = try #require(summary.controlChanges[1].frameIndex)
        let clip = try #require(summary.clips.first)
        #expect(summary.clips.count == 1, "a zoom is no seam: one clip")
        try expectPictureChanges(clip, zoomAt: zoomAt, exposureAt: nil, effectAt: effectAt)
    }

    /// The page's marker button (`POST /press`, a secondary click) lays a marker while
    /// recording: the summary lists it with source `page`; a cross-origin press lays none.
    @Test func thePagesMarkerPressLaysAMarker() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (rec, port) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "prores:proxy", "--plain", "--json", "--out", dir])
        let base = previewBase(port)
        #expect(waitUntil(30) { (previewStatus(base)?["frames"] as? Int ?? 0) >= 10 }, "no frames")
        let foreign = try curl(base + "press", post: true, extra: ["-H", "Origin: http://evil.example"])
        #expect(foreign.status == 403)
        let press = try curl(base + "press", post: true)
        #expect(press.status == 200 && press.text == #"{"ok":true}"#, "\(press.text)")
        #expect(waitUntil(10) { (previewStatus(base)?["frames"] as? Int ?? 0) >= 20 }, "the recording stalled")
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let markers = summary["markers"] as? [[String: Any]] ?? []
        #expect(markers.count == 1 && markers.first?["source"] as? String == "page", "\(markers)")
    }

    /// The controls sent with the valid cookie but from another origin (`Origin:
    /// http://evil.example`, another port of 127.0.0.1, `Sec-Fetch-Site: cross-site`): 403
    /// each, and the recording has no seam and was never stopped; the same request from the
    /// page's own origin makes its seam. `/status` counts the refusals.
    @Test func crossOriginControlsChangeNothingInTheRecording() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (rec, port) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                                                 "--plain", "--json", "--out", dir])
        let base = previewBase(port)
        let token = try #require(previewToken(port))
        let cookie = ["-H", "Cookie: reel-preview-\(port)=\(token)"]
        let foreign = [["-H", "Origin: http://evil.example"], ["-H", "Origin: http://127.0.0.1:\(port &+ 1)"],
                       ["-H", "Sec-Fetch-Site: cross-site"]]
        var refused = 0
        for path in ["ratio?to=9x16", "record?action=stop", "record?action=toggle", "shutter"] {
            for headers in foreign {
                let r = try curl(base + path, post: true, extra: cookie + headers, authorized: false)
                #expect(r.status == 403, "POST /\(path) \(headers): \(r.status) \(r.text)")
                refused += 1
            }
        }
        let status = try #require(previewStatus(base))
        #expect(status["crossOriginRefused"] as? Int == refused)
        #expect(status["recording"] as? Bool == true && status["ratio"] as? String == "16x9")
        // The page's own origin, as Chromium sends it: the seam comes.
        let own = try curl(base + "ratio?to=9x16", post: true,
                           extra: cookie + ["-H", "Origin: http://127.0.0.1:\(port)", "-H", "Sec-Fetch-Site: same-origin"], authorized: false)
        #expect(own.status == 200, "\(own.text)")
        let seam = try #require(own.object?["frameIndex"] as? Int, "\(own.text)")
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.seams.map(\.frameIndex) == [seam], "only the same-origin request made a seam")
        #expect(summary.recordingToggles.isEmpty, "a cross-origin request stopped or started the recording")
        #expect(summary.clips.map(\.ratio) == ["16x9", "9x16"])
    }

    /// A real page of another origin in Chromium (scripts/preview-cross-origin.py): after the
    /// user opened the preview (its cookie set, the picture shown), a page served from another
    /// port of 127.0.0.1 — the same site, so the browser sends the SameSite=Strict cookie —
    /// tries every control by `fetch` (`no-cors`, no preflight: ratio, record, shutter, zoom,
    /// exposure, effect, mode, both presses) and by a form, reads the status and the gallery, embeds
    /// the snapshot, the stream, the latest photo and a thumbnail, plays a clip and opens the
    /// event stream. Each request reached the preview (its 403 count, the positive control: the
    /// cookie was accepted, the origin refused); no control moved, and the recording has no
    /// seam, no stop, no marker and no photo.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func aCrossOriginPageInChromiumChangesNothing() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (rec, port) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                                                 "--photos", dir + "/photos", "--plain", "--json", "--out", dir])
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", crossOriginScript, previewPage(port)]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let text = out.fileHandleForReading.readDataToEndOfFile()
        let why = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let status = previewStatus(previewBase(port))
        rec.signal(SIGINT)
        #expect(p.terminationStatus == 0, "\(why)")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any], "\(why)")
        #expect(result["pictureShown"] as? Bool == true, "the preview's own page did not work: \(result)")
        #expect(result["addressAfter"] as? String == previewBase(port), "the token stayed in the address bar: \(result)")
        let attempts = try #require(result["attempts"] as? [String])
        #expect(attempts == ["fetch POST /ratio?to=9x16", "fetch POST /record?action=stop", "fetch POST /record?action=toggle",
                             "fetch POST /shutter", "fetch POST /control?name=zoom&value=2", "fetch POST /control?name=exposure&value=1.5",
                             "fetch POST /control?name=effect&value=grayscale", "fetch POST /control?name=mode&value=video",
                             "fetch POST /press?button=click&action=primary",
                             "fetch POST /press?button=click&action=secondary", "fetch GET /status", "fetch GET /gallery",
                             "form POST /ratio?to=1x1", "img /snapshot.jpg", "img /stream.mjpg", "img /photo.jpg",
                             "img /gallery/clip-1.jpg", "video /media/clip-1", "EventSource /events"], "\(attempts)")
        // The proof that the browser sent each one: the preview counted each as refused.
        #expect(status?["crossOriginRefused"] as? Int == attempts.count, "requests that reached the preview and were refused: \(status ?? [:])")
        // And none changed a control.
        #expect(status?["zoom"] as? Double == 1 && status?["exposure"] as? Double == 0 && status?["effect"] as? String == "none",
                "\(status ?? [:])")
        let mode = (status?["controls"] as? [[String: Any]])?.first { $0["identifier"] as? String == "mode" }
        #expect(mode?["title"] as? String == "photo", "the mode dial (photo: --photos without --mode) moved: \(mode ?? [:])")
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.seams.isEmpty && summary.recordingToggles.isEmpty, "seams \(summary.seams), toggles \(summary.recordingToggles)")
        #expect(summary.clips.map(\.ratio) == ["16x9"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect((json["markers"] as? [Any] ?? []).isEmpty && (json["photos"] as? [Any] ?? []).isEmpty, "markers or photos: \(json["markers"] ?? []), \(json["photos"] ?? [])")
    }
}

/// `reel control`'s wait for an answer. Not a real-time suite: the test waits, it measures
/// nothing a loaded machine would disturb (the bounds are the timeout and 8 s over it), so it
/// runs in the parallel pass beside the busy tests.
@Suite struct ControlClientTimeoutTests {
    /// `reel control` against a socket that accepts (the kernel's backlog) but never answers:
    /// it gives up after its timeout (10 s by default, `--timeout` to change), exit 75, one line.
    @Test func reelControlGivesUpOnASocketThatNeverAnswers() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/mute.sock"
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        try #require(s >= 0)
        defer { close(s) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        try #require(bound == 0 && listen(s, 8) == 0)
        for (args, limit) in [([String](), 10.0), (["--timeout", "1.5"], 1.5)] {
            let started = Date()
            let run = try boundedReel(["control", "--socket", path] + args + ["status"], timeout: 60)
            let took = Date().timeIntervalSince(started)
            #expect(!run.timedOut, "reel control \(args) still waited after 60 s")
            #expect(run.status == 75, "\(run.stderr)")
            #expect(run.stderr == "reel: control: \(path) did not answer within \(limit == 10 ? "10" : "1.5") s (--timeout)\n")
            #expect(took >= limit - 0.2 && took < limit + 8, "gave up after \(took) s")
        }
        #expect(try reel(["control", "--socket", path, "--timeout", "0", "status"]).status == 64)
    }
}

@Suite struct RegistrySafetyCommandTests {
    /// `reel record` with a registry directory open to others (0777, as another user could
    /// have made it): one line saying which directory and why, exit 77, nothing recorded.
    @Test func anUnsafeRegistryDirectoryIsExit77() throws {
        let (env, root) = try capacityEnvironment(cpuSecondsPerMegapixel: 0.001)
        defer { removeTree(root) }
        let registry = root + "/run/reel"
        #expect(mkdir(registry, 0o700) == 0 && chmod(registry, 0o777) == 0)
        let run = try reel(["record", "--frames", "3", "--plain", "--out", root + "/out"], environment: env)
        #expect(run.status == 77, "\(run.stderr)")
        #expect(run.stderr == "reel: the session registry \(registry) is open to other users (mode 777): remove it (it is remade 0700), or set XDG_RUNTIME_DIR\n")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: root + "/out")) ?? []).isEmpty, "a clip was recorded")
        // Removed, it is made afresh (0700) and the recording goes ahead.
        #expect(rmdir(registry) == 0)
        let again = try reel(["record", "--frames", "3", "--plain", "--out", root + "/out"], environment: env)
        #expect(again.status == 0, "\(again.stderr)")
        var st = stat()
        #expect(lstat(registry, &st) == 0 && st.st_mode & 0o777 == 0o700)
    }
}

/// The preview's `/events` on 127.0.0.1:`port`, read on a thread of its own: the newest
/// `data:` line, as it comes. `stop` shuts the connection and joins the thread.
private final class EventsCurl: Sendable {
    private let state = Mutex<(partial: String, latest: String?)>(("", nil))
    private let fd: Int32
    private let done = DispatchSemaphore(value: 0)

    init(port: UInt16, token: String) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        remote.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        let head = Array("GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8)
        guard fd >= 0, connected, send(fd, head, head.count, Int32(MSG_NOSIGNAL)) == head.count else {
            if fd >= 0 { close(fd) }
            throw POSIXError(.ECONNREFUSED)
        }
        self.fd = fd
        Thread.detachNewThread { [self] in
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = recv(fd, &chunk, chunk.count, 0)
                if n <= 0 { break }
                let text = String(decoding: chunk[..<n], as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
                state.withLock { s in
                    s.partial += text
                    var lines = s.partial.components(separatedBy: "\n")
                    s.partial = lines.removeLast()
                    if let data = lines.last(where: { $0.hasPrefix("data: ") }) { s.latest = String(data.dropFirst(6)) }
                }
            }
            done.signal()
        }
    }

    /// The newest status the stream sent (nil before the first).
    var latest: String? { state.withLock { $0.latest } }

    /// Shuts the connection and waits for the reading thread.
    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        done.wait()
        close(fd)
    }
}
