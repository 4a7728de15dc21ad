import Foundation
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
    /// tries every control by `fetch` (`no-cors`, no preflight) and by a form, and embeds the
    /// snapshot. Each request reached the preview (its 403 count, the positive control: the
    /// cookie was accepted, the origin refused) and the recording has no seam and no stop.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func aCrossOriginPageInChromiumChangesNothing() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (rec, port) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                                                 "--plain", "--json", "--out", dir])
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
                             "fetch POST /shutter", "form POST /ratio?to=1x1", "img /snapshot.jpg"], "\(attempts)")
        #expect(status?["crossOriginRefused"] as? Int == attempts.count, "requests that reached the preview and were refused: \(status ?? [:])")
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.seams.isEmpty && summary.recordingToggles.isEmpty, "seams \(summary.seams), toggles \(summary.recordingToggles)")
        #expect(summary.clips.map(\.ratio) == ["16x9"])
    }

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
