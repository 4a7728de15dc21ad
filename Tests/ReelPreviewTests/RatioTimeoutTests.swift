import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import ReelPreview
import Synchronization
import Testing

/// A camera that opened and then sends nothing, without failing (the session keeps running):
/// `capture` waits until `stop()`.
private final class SilentSource: VideoSource {
    let format = SourceFormat(size: Size(width: 640, height: 640), pixelFormat: .yuv420p, rate: FrameRate(frames: 30)!, timescale: 30,
                              supportedRatios: [.landscape16x9, .portrait9x16, .square])
    let isRealtime = true
    private let stopped = DispatchSemaphore(value: 0)
    func capture(frameLimit: Int?, delegate: any SourceDelegate) throws { stopped.wait() }
    func stop() { stopped.signal() }
}

/// `POST /ratio` while no frame comes (issue 11's leftover): the README's 503.
@Suite("RealtimeRatioTimeoutTests", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "needs curl (scripts/test installs it)"))
struct RealtimeRatioTimeoutTests {
    /// A running session whose source sends no frame: `POST /ratio?to=9x16` waits the 5 s
    /// the README states for the frame the change would land on, then answers 503 with a JSON
    /// `error` saying so (not a hang, not 200).
    @Test func aRatioChangeNoFrameCarriesAnswers503() throws {
        let session = try CaptureSession(source: SilentSource(), ratio: .landscape16x9)
        let server = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), token: nil, output: PreviewOutput(),
                                       controls: PreviewControls(setRatio: PreviewControls.ratio(of: session))) {
            PreviewStatus(recording: false, elapsed: 0, frames: 0, fps: 0, drops: 0, ratio: session.ratio.description)
        }
        defer { server.stop() }
        session.startRunning()
        defer { session.stopRunning(); _ = try? session.waitUntilStopped() }
        let url = "http://127.0.0.1:\(server.address.port)/ratio?to="
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-s", "-m", "30", "-X", "POST", "-o", "-", "-w", "\n%{http_code}", url + "9x16"]
        let out = Pipe()
        p.standardOutput = out
        let start = Date()
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let took = Date().timeIntervalSince(start)
        let lines = text.split(separator: "\n")
        #expect(lines.last == "503", "\(text) after \(took) s")
        #expect(lines.first == "{\"error\":\"no frame came within 5 s to carry the ratio change\"}", "\(text)")
        #expect(took > 4.5 && took < 20, "answered after \(took) s (the wait is 5 s)")
    }
}
