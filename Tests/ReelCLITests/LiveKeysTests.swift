import Foundation
import Glibc
import Testing
import ReelWriter

/// `reel record` in a terminal, driven the way a person types: keys and Ctrl-C go through a
/// pseudo-terminal. Timed against the clock (the keys land at real frames): runs in the
/// real-time pass of `scripts/test`.
@Suite(.serialized) struct RealtimeTerminalTests {
    /// Keys `2`, `3`, `q` in real time, once. Whether a loaded machine drops frames is not
    /// this test's claim (`scripts/bench seams` measures real-time drops at seams): every
    /// frame captured is either in the clips, in order and once, or counted as dropped.
    @Test func keysSwitchTheRatioLiveAndQStops() throws {
        do {
            let dir = temporaryDirectory()
            defer { removeTree(dir) }
            // Until `q` (below): a loaded machine may take longer than a fixed duration.
            let term = try TerminalRun(["record", "--source", "synthetic:1280", "--codec", "prores:proxy",
                                        "--out", dir, "--name", "keys", "--json"] + untilSIGINT)
            defer { term.finish() }
            let before = try term.settings()
            #expect(before.c_lflag & tcflag_t(ICANON | ECHO) == tcflag_t(ICANON | ECHO))

            // Recording, 16x9, a second in: the keys are on (the terminal is out of canonical mode).
            let started = try #require(term.waitForProgress(30) { frames, _ in frames >= 30 }, "no progress line: \(term.screen)")
            #expect(started.ratio == "16x9")
            #expect(try term.settings().c_lflag & tcflag_t(ICANON | ECHO) == 0, "live keys need the terminal in raw mode")

            // `2`: 9x16 from the next frame or so; the progress line shows it.
            let at2 = try #require(term.progress)
            term.type("2")
            let shown2 = try #require(term.waitForProgress(60) { _, ratio in ratio == "9x16" }, "key 2 did nothing: \(term.screen.suffix(300))")
            _ = try #require(term.waitForProgress(60) { frames, _ in frames >= shown2.frames + 30 })
            // `3`: 1x1.
            let at3 = try #require(term.progress)
            term.type("3")
            let shown3 = try #require(term.waitForProgress(60) { _, ratio in ratio == "1x1" }, "key 3 did nothing: \(term.screen.suffix(300))")
            _ = try #require(term.waitForProgress(60) { frames, _ in frames >= shown3.frames + 15 })
            // `q` stops.
            term.type("q")
            let end = term.waitForExit(30)
            #expect(end.status == 0 && end.signal == nil, "\(term.screen.suffix(500))")
            // The terminal is put back as it was.
            #expect(try term.settings().snapshot == before.snapshot)

            let s = try JSONDecoder().decode(RecordingSummary.self, from: Data(term.stdout.utf8))
            #expect(s.stopReason == "interrupted")
            #expect(s.framesCaptured >= shown3.frames)
            #expect(s.framesWritten + s.framesDropped == s.framesCaptured, "\(s.dropReasons)")
            // The seams are where the keys landed: after the last frame shown before the key,
            // before the first progress line that showed the new ratio; within 20 frames (0.67 s).
            #expect(s.seams.map { "\($0.from.rawValue)>\($0.to.rawValue)" } == ["16x9>9x16", "9x16>1x1"])
            if s.seams.count == 2 {
                #expect((at2.frames..<shown2.frames).contains(s.seams[0].frameIndex), "\(at2) \(shown2) \(s.seams)")
                #expect((at3.frames..<shown3.frames).contains(s.seams[1].frameIndex), "\(at3) \(shown3) \(s.seams)")
                #expect(shown2.frames - at2.frames <= 20 && shown3.frames - at3.frames <= 20, "\(at2) \(shown2) \(at3) \(shown3)")
            }
            #expect(s.clips.map { "\($0.width)x\($0.height)" } == ["1280x720", "720x1280", "1280x1280"])
            // Every frame kept, read back from the clips: in order, each once, as many as
            // written; with no drops, `reel verify` passes the clips as a whole.
            var kept: [Int] = []
            for clip in s.clips { kept += try probeFrames(clip.path).frameIndices ?? [] }
            #expect(kept.count == s.framesWritten && kept == kept.sorted() && Set(kept).count == kept.count)
            #expect(kept.allSatisfy { (0..<s.framesCaptured).contains($0) })
            if s.framesDropped == 0 {
                let verify = try reel(["verify", dir])
                #expect(verify.status == 0 && verify.stdout.contains("ok: \(s.framesCaptured) frames in 3 clips"), "\(verify.stdout) \(verify.stderr)")
            }
        }
    }

    @Test func aKeyForARatioTheSensorLacksSaysSoAndChangesNothing() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // The 4032 sensor offers 4x3 and 3x4 only.
        let term = try TerminalRun(["record", "--duration", "60", "--source", "synthetic:4032", "--codec", "prores:proxy", "--no-realtime",
                                    "--plain", "--out", dir, "--name", "lack", "--json"])
        defer { term.finish() }
        _ = try #require(term.waitForProgress(60) { frames, _ in frames >= 3 }, "no progress line: \(term.screen)")
        term.type("1")
        waitUntil(60) { term.screen.contains("reel: ratio 16x9 is not supported") }
        let said = term.screen.contains("reel: ratio 16x9 is not supported by the 4032x4032 sensor format (supported: 4x3, 3x4)")
        #expect(said, "\(term.screen.suffix(300))")
        let at = try #require(term.progress)
        #expect(at.ratio == "4x3")
        term.type("5")
        _ = try #require(term.waitForProgress(60) { frames, ratio in ratio == "3x4" && frames >= at.frames + 2 }, "\(term.screen.suffix(300))")
        term.type("q")
        let end = term.waitForExit(60)
        #expect(end.status == 0, "\(term.screen.suffix(300))")
        let s = try JSONDecoder().decode(RecordingSummary.self, from: Data(term.stdout.utf8))
        #expect(s.stopReason == "interrupted" && s.error == nil)
        #expect(s.seams.map { "\($0.from.rawValue)>\($0.to.rawValue)" } == ["4x3>3x4"])
        #expect(s.clips.map { "\($0.width)x\($0.height)" } == ["4032x3024", "3024x4032"])
    }

    @Test func aSecondCtrlCQuitsAtOnceWith130AndPutsTheTerminalBack() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // 4032×4032 ProRes 4444 without real time: the writer is 8 frames behind and takes
        // seconds to finish after the first Ctrl-C, time enough for the second.
        let term = try TerminalRun(["record", "--duration", "60", "--source", "synthetic:4032", "--ratio", "4x3", "--codec", "prores:4444",
                                    "--no-realtime", "--plain", "--out", dir, "--name", "cc"])
        defer { term.finish() }
        let before = try term.settings()
        #expect(before.c_lflag & tcflag_t(ICANON | ECHO) == tcflag_t(ICANON | ECHO))
        _ = try #require(term.waitForProgress(60) { frames, _ in frames >= 10 }, "no progress line: \(term.screen)")
        #expect(try term.settings().c_lflag & tcflag_t(ICANON | ECHO) == 0)
        term.type("\u{03}")
        // The first SIGINT taken (not merged with the second while pending), then the second.
        usleep(20_000)
        waitUntil(60) { !term.isPending(SIGINT) }
        #expect(term.exited == nil, "the first Ctrl-C finishes the clip, which takes a while here")
        term.type("\u{03}")
        let end = term.waitForExit(60)
        #expect(end.status == 130 && end.signal == nil, "\(end) \(term.screen.suffix(300))")
        let after = try term.settings()
        #expect(after.c_lflag & tcflag_t(ICANON | ECHO) == tcflag_t(ICANON | ECHO), "the terminal was left in raw mode")
        #expect(after.snapshot == before.snapshot)
    }
}
