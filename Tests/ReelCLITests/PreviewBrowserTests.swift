import Foundation
import ReelCore
import ReelWriter
import Testing

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
    /// The screenshots are kept in .build/test-artifacts/preview-ratio.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func ratioClickInABrowserMakesTheSeam() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-ratio")
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
        #expect(result["levelHidden"] as? Bool == true, "no sound, no level meter")
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

extension RealtimePreviewTests {
    /// The page's level meter with `--audio synthetic` (issue 28 item 7), in a real browser:
    /// the synthetic signal is a 1 kHz tone at a tenth of full scale (−20 dBFS) with a click
    /// near full scale (0.99: −0.1 dBFS) at every whole second, so over 5 s of readings a
    /// quarter second apart the meter reads −20 dB between clicks and 0 dB on one, never
    /// anything else, and the state line says the same. In real time: the sound arrives as
    /// it is captured. The screenshot is kept in .build/test-artifacts/preview-sound.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func theLevelMeterShowsTheSound() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-sound")
        let rec = try serve(["record", "--source", "synthetic:1280", "--codec", "prores:proxy", "--audio", "synthetic",
                             "--plain", "--json", "--out", dir] + untilSIGINT)
        let (status, text, why) = try runPreviewBrowser(rec.page, shots: shots, click: "sound")
        rec.process.signal(SIGINT)
        #expect(status == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        let levels = try #require(result["levels"] as? [[Any]])
        #expect(levels.count == 20)
        let values = levels.compactMap { $0.first as? Double }
        #expect(values.count == 20 && values.allSatisfy { (-20.5...0).contains($0) }, "\(levels)")
        #expect(values.contains { $0 <= -19.5 }, "the tone between clicks: \(values)")
        #expect(values.contains { $0 >= -1 }, "a click: \(values)")
        for l in levels {
            let shown = l.count == 3 ? (l[1] as? String ?? "") : ""
            #expect(["-20 dB", "0 dB"].contains(shown), "\(l)")
            #expect((l.count == 3 ? (l[2] as? String ?? "") : "").contains("sound "), "the state line: \(l)")
        }
        let run = rec.process.wait()
        #expect(run.status == 0, "\(run.stderr)")
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

extension RealtimePreviewTests {
    /// The page shows the controls' values and follows a change made elsewhere (the control
    /// socket) without a reload — no stale zoom: a real browser (Playwright, Debian's
    /// chromium) waits until the state line says `zoom 1×`, the test sets zoom 2 through
    /// `reel control`, and the same page then says `zoom 2×`; `/status` agrees.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func thePageFollowsAZoomSetThroughTheControlSocket() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-follow")
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
