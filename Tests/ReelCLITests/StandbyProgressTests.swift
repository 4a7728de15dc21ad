import Foundation
import Testing

/// The last progress line the terminal shows (nil before the first).
private func lastProgressLine(_ term: TerminalRun) -> String? {
    term.screen.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).last { $0.contains(" frames ") }.map(String.init)
}

/// Waits (at most `seconds`) until the last progress line holds the word `word` and at least
/// `frames` frames; returns that line (nil: it never did, or the process ended).
private func waitForState(_ term: TerminalRun, _ word: String, frames: Int = 0, _ seconds: Double = 60) -> String? {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline, term.exited == nil {
        if let line = lastProgressLine(term), line.split(separator: " ").contains(Substring(word)),
           let p = term.progress, p.frames >= frames { return line }
        usleep(20_000)
    }
    return nil
}

/// Issue 11's leftover: the progress line says what the movie output does.
@Suite struct StandbyProgressTests {
    /// `reel record --standby` in a terminal: the progress line says `standby` until `reel
    /// control record start`, then `recording`, then `stopped` after `record stop` — the ratio
    /// still its last word; Ctrl-C ends it with exit 0 and one clip.
    @Test func theProgressLineSaysStandbyRecordingAndStopped() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let socket = dir + "/control.sock"
        // Until Ctrl-C (an hour at most).
        let term = try TerminalRun(["record", "--standby", "--duration", "3600", "--source", "synthetic:1280", "--codec", "h264",
                                    "--plain", "--out", dir + "/out", "--control-socket", socket, "--json"])
        defer { term.finish() }
        let standby = try #require(waitForState(term, "standby", frames: 3), "no 'standby' progress line: \(term.screen.suffix(400))")
        #expect(standby.hasSuffix(" 16x9"), "the ratio is the last word: \(standby)")
        #expect(try waitUntilListening(socket))
        let start = try reel(["control", "--socket", socket, "record", "start"])
        #expect(start.status == 0, "\(start.stdout) \(start.stderr)")
        let recording = try #require(waitForState(term, "recording"), "no 'recording' progress line after start: \(term.screen.suffix(400))")
        #expect(!recording.contains("standby") && !recording.contains("stopped"), "\(recording)")
        let frames = try #require(term.progress).frames
        let stop = try reel(["control", "--socket", socket, "record", "stop"])
        #expect(stop.status == 0, "\(stop.stdout) \(stop.stderr)")
        let stopped = try #require(waitForState(term, "stopped", frames: frames + 3), "no 'stopped' progress line after stop: \(term.screen.suffix(400))")
        #expect(stopped.hasSuffix(" 16x9") && !stopped.contains("recording"), "\(stopped)")
        term.type("\u{03}")
        let end = term.waitForExit(60)
        #expect(end.status == 0, "\(end) \(term.screen.suffix(300))")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(term.stdout.utf8)) as? [String: Any])
        #expect((summary["clips"] as? [Any])?.count == 1, "\(term.stdout.prefix(400))")
    }
}

/// Issue 28's level meter: with `--audio`, the progress line shows the sound's peak. The
/// synthetic signal's tone is at 0.1 of full scale (−20 dBFS) and its clicks at 0.99 (0 dB).
@Suite struct AudioMeterProgressTests {
    @Test func theProgressLineShowsTheSoundsPeak() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let term = try TerminalRun(["record", "--audio", "synthetic", "--duration", "3600", "--source", "synthetic:1280", "--codec", "h264",
                                    "--plain", "--out", dir + "/out", "--json"])
        defer { term.finish() }
        let line = try #require(waitForState(term, "sound", frames: 15), "no 'sound' progress line: \(term.screen.suffix(400))")
        let words = line.split(separator: " ")
        let at = try #require(words.firstIndex(of: "sound"))
        #expect(["-20", "0"].contains(words[at + 1]) && words[at + 2] == "dB", "\(line)")
        term.type("\u{03}")
        #expect(term.waitForExit(60).status == 0)
    }
}
