import Foundation
import ReelCore
import ReelWriter
import Testing


/// The JSON object of a body (empty when it is not one).
private func object(_ data: Data) -> [String: Any] {
    ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
}

/// Frames the session has captured, from `/status` (-1 until it answers).
private func framesCaptured(_ base: String) -> Int { previewStatus(base)?["frames"] as? Int ?? -1 }

/// Waits until the session captured `count` more frames than it has now: the session runs on.
private func waitForMoreFrames(_ base: String, _ count: Int) -> Bool {
    let now = framesCaptured(base)
    return waitUntil(every: 0.05) { framesCaptured(base) >= now + count }
}

/// One answer line of `reel control` as an object.
private func answers(_ run: Run) -> [[String: Any]] {
    run.stdout.split(separator: "\n").map { object(Data($0.utf8)) }
}

/// The barcodes of every frame of a clip, read back by `reel probe --frames`.
private func barcodes(_ path: String) throws -> [Int] {
    try #require(try probeFrames(path).frameIndices)
}

/// Start and stop on a running session (`reel record --standby`): the page's `POST /record`,
/// the control socket's `record`, `reel control record`, primary capture events. Real
/// processes; every wait is for a condition. `--no-realtime` so that nothing is dropped on a
/// loaded machine (what is checked is which frames each take holds), stopped with SIGINT.
@Suite("RealtimeRecordToggleTests", .serialized, .enabled(if: haveCurl, "needs curl (scripts/test installs it)"))
struct RealtimeRecordToggleTests {
    /// Standby: nothing is recorded until a start; start (page) → stop (socket) → start
    /// (socket) → stop (page toggle) makes two clips, each take's barcodes starting at the
    /// frame the summary states (the first captured after its start request) and ending at
    /// the stop's frame; the first clip is published (and verifies) while the session still
    /// runs; refused requests answer 409 / `ok: false` (exit 65); `/status` follows.
    @Test func startStopStartThroughThePageAndTheSocketMakesTwoTakes() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let out = dir + "/out"
        let sock = dir + "/c.sock"
        let port = try freePort()
        let base = previewBase(port)
        let rec = try launch(["record", "--standby", "--preview", "127.0.0.1:\(port)", "--control-socket", sock,
                              "--duration", "86400", "--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                              "--pool", testPool, "--name", "take", "--json", "--out", out])
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        #expect(waitUntil(every: 0.05) { framesCaptured(base) >= 10 }, "the session never ran")
        // Standby: the session runs, nothing records, and a stop is refused.
        #expect(previewStatus(base)?["recording"] as? Bool == false)
        let early = try curl(base + "record?action=stop", post: true)
        #expect(early.status == 409 && object(early.body)["error"] as? String == "not recording")
        #expect(try curl(base + "record?action=dance", post: true).status == 400)
        #expect(try curl(base + "record").status == 405, "record takes POST only")

        // Take 1: the page starts it.
        let before1 = framesCaptured(base)
        let start1 = try curl(base + "record?action=start", post: true)
        #expect(start1.status == 200, "\(start1.text)")
        #expect(object(start1.body)["recording"] as? Bool == true && object(start1.body)["action"] as? String == "start")
        #expect(object(start1.body)["take"] as? Int == 1 && object(start1.body)["source"] as? String == "page")
        let again = try curl(base + "record?action=start", post: true)
        #expect(again.status == 409 && object(again.body)["error"] as? String == "already recording")
        #expect(previewStatus(base)?["recording"] as? Bool == true)
        #expect(waitForMoreFrames(base, 30))
        // The socket stops it: `reel control record stop` prints the answer.
        let stop1 = try reel(["control", "--socket", sock, "record", "stop"])
        #expect(stop1.status == 0, "\(stop1.stdout)\(stop1.stderr)")
        let stop1Answer = try #require(answers(stop1).first)
        #expect(stop1Answer["ok"] as? Bool == true && stop1Answer["recording"] as? Bool == false && stop1Answer["take"] as? Int == 1)
        let stop1Frame = try #require(stop1Answer["frameIndex"] as? Int, "\(stop1.stdout)")
        let refused = try reel(["control", "--socket", sock, "record", "stop"])
        #expect(refused.status == 65 && refused.stdout.contains("\"error\":\"not recording\""))
        // The clip is published while the session runs on, and verifies on its own.
        let first = out + "/take-0001-16x9.mov"
        #expect(waitUntil(every: 0.05) { FileManager.default.fileExists(atPath: first) }, "take 1 was not published after the stop")
        let verify1 = try reel(["verify", first])
        #expect(verify1.status == 0, "\(verify1.stdout)\(verify1.stderr)")
        #expect(previewStatus(base)?["recording"] as? Bool == false)
        #expect(waitForMoreFrames(base, 30), "the session stopped with the recording")
        let bad = try talk(sock, "{\"record\": \"dance\"}\n", lines: 1)
        #expect(bad.first?.contains("record: use start, stop or toggle") == true, "\(bad)")
        let status2 = try #require(try JSONSerialization.jsonObject(with: Data(try reel(["control", "--socket", sock, "status"]).stdout.utf8)) as? [String: Any])
        #expect(status2["recording"] as? Bool == false)

        // Take 2: the socket starts it, the page's toggle stops it.
        let before2 = framesCaptured(base)
        let start2 = try talk(sock, "{\"record\": \"start\"}\n", lines: 1)
        #expect(start2.first.map { object(Data($0.utf8)) }?["ok"] as? Bool == true, "\(start2)")
        #expect(waitForMoreFrames(base, 30))
        let stop2 = try curl(base + "record", post: true)
        #expect(stop2.status == 200 && object(stop2.body)["action"] as? String == "stop" && object(stop2.body)["take"] as? Int == 2)
        let stop2Frame = try #require(object(stop2.body)["frameIndex"] as? Int)
        #expect(waitForMoreFrames(base, 10))

        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.stopReason == "interrupted")
        #expect(s.framesDropped == 0, "drops: \(s.dropReasons)")
        #expect(s.framesNotRecorded > 0)
        #expect(s.framesCaptured == s.framesWritten + s.framesDropped + s.framesNotRecorded)
        #expect(s.recordingToggles.map { "\($0.action.rawValue) \($0.take) \($0.source)" } ==
                ["start 1 page", "stop 1 socket", "start 2 socket", "stop 2 page"])
        #expect(s.recordingToggles.map(\.atSeconds) == s.recordingToggles.map(\.atSeconds).sorted())
        try #require(s.clips.count == 2, "\(s.clips)")
        let (c1, c2) = (s.clips[0], s.clips[1])
        #expect(c1.take == 1 && c2.take == 2)
        // Each clip starts at the first frame after its start request and ends at its stop's frame.
        #expect(c1.firstFrameIndex == s.recordingToggles[0].frameIndex && c2.firstFrameIndex == s.recordingToggles[2].frameIndex)
        // (`frames` counts a frame as it is captured, just before the outputs get it: one frame of slack.)
        #expect(c1.firstFrameIndex >= before1 - 1 && c2.firstFrameIndex >= before2 - 1, "a take began before its request")
        #expect(c1.lastFrameIndex == stop1Frame && c2.lastFrameIndex == stop2Frame)
        #expect(c2.firstFrameIndex > stop1Frame + 30, "frames while stopped were recorded")
        #expect(c1.startRequestSeconds == s.recordingToggles[0].atSeconds && c1.stopRequestSeconds == s.recordingToggles[1].atSeconds)
        #expect(c2.startRequestSeconds == s.recordingToggles[2].atSeconds && c2.stopRequestSeconds == s.recordingToggles[3].atSeconds)
        // The barcodes prove it: every frame of each take, in order, from the stated first frame.
        for c in s.clips {
            #expect(try barcodes(c.path) == Array(c.firstFrameIndex...c.lastFrameIndex), "\(c.path)")
            let v = try reel(["verify", c.path])
            #expect(v.status == 0, "\(c.path): \(v.stdout)\(v.stderr)")
        }
        let all = try reel(["verify", "--json", out])
        #expect(all.status == 0, "\(all.stdout)\(all.stderr)")
    }

    /// Without `--standby` the recording starts at once (take 1 from frame 0); a stop through
    /// the socket ends that clip while the session goes on; `reel control record` needs
    /// start, stop or toggle.
    @Test func aRecordingThatStartedAtOnceStopsAndTheSessionGoesOn() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let sock = dir + "/c.sock"
        let port = try freePort()
        let base = previewBase(port)
        let rec = try launch(["record", "--preview", "127.0.0.1:\(port)", "--control-socket", sock,
                              "--duration", "86400", "--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                              "--plain", "--json", "--out", dir + "/out"])
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        #expect(waitUntil(every: 0.05) { framesCaptured(base) >= 30 }, "the session never ran")
        #expect(previewStatus(base)?["recording"] as? Bool == true)
        #expect(try reel(["control", "--socket", sock, "record"]).status == 64)
        #expect(try reel(["control", "--socket", sock, "record", "pause"]).status == 64)
        let stop = try reel(["control", "--socket", sock, "record", "toggle"])
        #expect(stop.status == 0 && answers(stop).first?["action"] as? String == "stop", "\(stop.stdout)")
        #expect(waitForMoreFrames(base, 30), "the session stopped with the recording")
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        try #require(s.clips.count == 1)
        #expect(s.clips[0].firstFrameIndex == 0 && s.clips[0].take == 1 && s.clips[0].startRequestSeconds == nil)
        #expect(s.clips[0].lastFrameIndex == answers(stop).first?["frameIndex"] as? Int)
        #expect(s.clips[0].stopRequestSeconds == s.recordingToggles.first?.atSeconds)
        #expect(s.framesNotRecorded >= 30 && s.framesDropped == 0)
        #expect(try reel(["verify", dir + "/out"]).status == 0)
    }

    /// Video mode (no `--photos`): a KEY_VOLUMEDOWN press/release of the emulated evdev device
    /// starts recording, the next stops it; a press cut by SYN_DROPPED (cancelled) between them
    /// toggles nothing. The take's clip holds the frames between the two `ended`s.
    @Test(.enabled(if: fakeEvdevLibrary != nil, "scripts/fake-evdev --build (scripts/test builds it)"))
    func volumeDownPressesStartAndStopACancelledPressDoesNothing() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let sock = dir + "/c.sock"
        let script = [
            "wait 1000", "press KEY_VOLUMEDOWN", "wait 50", "release KEY_VOLUMEDOWN",
            "wait 1500", "press KEY_CAMERA", "drop", "release KEY_CAMERA",
            "wait 300", "press KEY_VOLUMEDOWN", "wait 50", "release KEY_VOLUMEDOWN",
        ].joined(separator: ";")
        let rec = try launch(["record", "--standby", "--input", "/dev/input/event0", "--control-socket", sock,
                              "--duration", "86400", "--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                              "--plain", "--json", "--out", dir + "/out"],
                             environment: try evdevEnvironment(script: script))
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        // The script's six events have come and been handled (status drains the handlers).
        func eventsHandled() -> Int {
            guard let r = try? reel(["control", "--socket", sock, "status"]), r.status == 0 else { return -1 }
            return object(Data(r.stdout.utf8))["events"] as? Int ?? -1
        }
        #expect(waitUntil(90, every: 0.05) { eventsHandled() >= 6 }, "the script's presses never all came")
        #expect(eventsHandled() == 6)
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        let events = try run.decode(ControlSummaryJSON.self).captureEvents
        #expect(events.map { "\($0.action) \($0.phase)" } == [
            "primary began", "primary ended", "primary began", "primary cancelled", "primary began", "primary ended",
        ])
        let key = "evdev:/dev/input/event0 (KEY_VOLUMEDOWN)"
        #expect(s.recordingToggles.map { "\($0.action.rawValue) \($0.source)" } == ["start \(key)", "stop \(key)"],
                "the cancelled press toggled: \(s.recordingToggles)")
        #expect(s.framesDropped == 0)
        // Under a heavy load the take may hold no frame; when it does, it is one clip from the
        // start's frame to the stop's.
        if let first = s.recordingToggles.first?.frameIndex {
            try #require(s.clips.count == 1, "\(s.clips)")
            #expect(s.clips[0].firstFrameIndex == first && s.clips[0].lastFrameIndex == s.recordingToggles.last?.frameIndex)
            #expect(try barcodes(s.clips[0].path) == Array(s.clips[0].firstFrameIndex...s.clips[0].lastFrameIndex))
            #expect(try reel(["verify", s.clips[0].path]).status == 0)
        } else {
            #expect(s.clips.isEmpty)
        }
    }
}


extension RealtimeRecordToggleTests {
    /// The page's record button in a real browser (Playwright, Debian's chromium) on
    /// `reel record --standby`: a click starts (the button turns to `stop`, the state line to
    /// `● recording`), a second click stops (`record` again); the take's clip ends at the frame
    /// the stop answered and `reel verify` accepts it.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func theRecordButtonInABrowserStartsAndStops() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-record")
        let port = try freePort()
        let base = previewBase(port)
        let rec = try launch(["record", "--standby", "--preview", "127.0.0.1:\(port)", "--duration", "86400",
                              "--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                              "--plain", "--json", "--out", dir + "/out"])
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        #expect(waitUntil(every: 0.05) { framesCaptured(base) >= 1 }, "the preview never answered")
        let (code, text, why) = try runPreviewBrowser(previewPage(port), shots: shots, click: "record")
        rec.signal(SIGINT)
        #expect(code == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        #expect((result["stateBefore"] as? String ?? "").hasPrefix("○ not recording"))
        #expect(result["buttonWhileRecording"] as? String == "stop")
        #expect((result["stateWhileRecording"] as? String ?? "").hasPrefix("● recording"))
        #expect(result["buttonAfter"] as? String == "record")
        let start = try #require(result["recordStart"] as? [Any])
        let stop = try #require(result["recordStop"] as? [Any])
        #expect(start.first as? Int == 200 && stop.first as? Int == 200)
        let stopFrame = try #require((stop.last as? [String: Any])?["frameIndex"] as? Int, "\(stop)")
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.recordingToggles.map { "\($0.action.rawValue) \($0.source)" } == ["start page", "stop page"])
        try #require(s.clips.count == 1, "\(s.clips)")
        #expect(s.clips[0].firstFrameIndex == s.recordingToggles[0].frameIndex && s.clips[0].lastFrameIndex == stopFrame)
        #expect(try reel(["verify", s.clips[0].path]).status == 0)
    }
}

extension RealtimeRecordToggleTests {
    /// `reel preview` has no movie output: `POST /record` answers 501 with a JSON reason, and
    /// `/status` says `recording: false`.
    @Test func previewWithoutRecordingAnswers501() throws {
        let port = try freePort()
        let base = previewBase(port)
        let run = try launch(["preview", "--preview", "127.0.0.1:\(port)", "--source", "synthetic:1280"])
        defer { if run.process.isRunning { run.signal(SIGKILL) } }
        #expect(waitUntil(every: 0.05) { framesCaptured(base) >= 1 }, "the preview never answered")
        #expect(previewStatus(base)?["recording"] as? Bool == false)
        let r = try curl(base + "record?action=start", post: true)
        #expect(r.status == 501 && r.text == #"{"error":"this session has no movie output to start or stop"}"#)
        run.signal(SIGINT)
        #expect(run.wait().status == 0)
    }
}

extension RealtimeRecordToggleTests {
    /// The terminal's space bar (a primary press: began and ended at once) starts and stops
    /// recording in video mode; the preview's `/status` follows it.
    @Test func theSpaceBarStartsAndStopsRecording() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let port = try freePort()
        let base = previewBase(port)
        let term = try TerminalRun(["record", "--standby", "--preview", "127.0.0.1:\(port)", "--duration", "86400",
                                    "--source", "synthetic:1280", "--codec", "prores:proxy", "--no-realtime",
                                    "--plain", "--out", dir, "--json"])
        defer { term.finish() }
        #expect(waitUntil(every: 0.05) { framesCaptured(base) >= 10 }, "the session never ran: \(term.screen.suffix(300))")
        #expect(previewStatus(base)?["recording"] as? Bool == false)
        term.type(" ")
        #expect(waitUntil(every: 0.05) { previewStatus(base)?["recording"] as? Bool == true }, "the space did not start recording")
        #expect(waitForMoreFrames(base, 30))
        term.type(" ")
        #expect(waitUntil(every: 0.05) { previewStatus(base)?["recording"] as? Bool == false }, "the space did not stop recording")
        term.type("q")
        let end = term.waitForExit(60)
        #expect(end.status == 0, "\(term.screen.suffix(300))")
        let s = try JSONDecoder().decode(RecordingSummary.self, from: Data(term.stdout.utf8))
        #expect(s.recordingToggles.map { "\($0.action.rawValue) \($0.source)" } == ["start terminal", "stop terminal"])
        try #require(s.clips.count == 1, "\(s.clips)")
        #expect(s.clips[0].firstFrameIndex == s.recordingToggles[0].frameIndex && s.clips[0].lastFrameIndex == s.recordingToggles[1].frameIndex)
        #expect(s.clips[0].frames >= 30 && s.framesDropped == 0)
        #expect(try reel(["verify", s.clips[0].path]).status == 0)
    }
}
