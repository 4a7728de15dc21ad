import Foundation
import Testing
import ReelCLI

/// The page's Auto Zoom and Auto Rotate toggles (issue 29), in a real browser.
@Suite struct SmartFramingPageTests {
    struct Smart: Decodable { var enabledFramings: [String] }
    struct Summary: Decodable { var smartFraming: Smart; var controlChanges: [ControlChangeJSON] }

    /// `--smart-framing zoom,rotate` on the 4032² people scene, served with the preview:
    /// the page shows both toggles on; a click turns Auto Zoom off (`POST /control`, 200, the
    /// `framing` picker now `rotate`) and the status stream leaves the boxes so. Then `reel
    /// control framing off` turns both off. The summary has both changes, in order, and the
    /// framings `off` enables: all eight.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func theTogglesTurnAutoZoomOff() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-framing")
        let socket = dir + "/control.sock"
        let rec = try serve(["record", "--control-socket", socket, "--source", "synthetic:4032", "--scene", "people", "--smart-framing", "zoom,rotate",
                             "--codec", "h264", "--no-adjust", "--plain", "--json", "--out", dir] + untilSIGINT)
        let (status, text, why) = try runPreviewBrowser(rec.page, shots: shots, click: "framing")
        #expect(status == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any], "\(String(decoding: text, as: UTF8.self))")
        #expect(result["framingBefore"] as? [Bool] == [true, true], "\(result)")
        #expect(result["framingStatus"] as? Int == 200 && (result["framingAnswer"] as? [String: Any])?["title"] as? String == "rotate", "\(result)")
        #expect(result["framingAfter"] as? [Bool] == [false, true], "\(result)")
        let off = try reel(["control", "--socket", socket, "framing", "off"])
        #expect(off.status == 0 && off.stdout.contains("\"title\":\"off\""), "\(off.stdout)\(off.stderr)")
        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(Summary.self)
        #expect(summary.controlChanges.filter { $0.control == "framing" }.map(\.title) == ["rotate", "off"], "\(summary.controlChanges)")
        #expect(summary.smartFraming.enabledFramings.count == 8, "\(summary.smartFraming.enabledFramings)")
    }
}
