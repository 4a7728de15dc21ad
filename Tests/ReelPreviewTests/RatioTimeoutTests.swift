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

/// `POST /ratio` while no frame comes (issue 11's leftover): the 503 docs/preview.md documents.
@Suite("RealtimeRatioTimeoutTests", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "needs curl (scripts/test installs it)"))
struct RealtimeRatioTimeoutTests {
    /// A running session whose source sends no frame: `POST /ratio?to=9x16` waits the 5 s
    /// docs/preview.md states for the frame the change would land on, then answers 503 with a JSON
    /// `error` saying so (not a hang, not 200).
    @Test func aRatioChangeNoFrameCarriesAnswers503() throws {
        let (session, server) = try silentSessionAndServer()
        defer { server.stop() }
        session.startRunning()
        defer { session.stopRunning(); _ = try? session.waitUntilStopped() }
        let (code, body, took) = try post("http://127.0.0.1:\(server.address.port)/ratio?to=9x16&token=\(server.token)")
        #expect(code == "503", "\(body) after \(took) s")
        #expect(body == "{\"error\":\"no frame came within 5 s to carry the ratio change\"}", "\(body)")
        #expect(took > 4.5 && took < 20, "answered after \(took) s (the wait is 5 s)")
    }

    /// A ratio the camera does not keep is refused (422) on the request's own thread, at
    /// once, even while every thread of Swift's task pool is busy: the request used to wait
    /// for a task to ask the session, and when the pool was held (by the app, or by a test
    /// process's synchronous tests) it answered 503 after 5 s instead.
    @Test func aRefusedRatioIs422AtOnceWhileTheTaskPoolIsHeld() throws {
        let (session, server) = try silentSessionAndServer()
        defer { server.stop() }
        session.startRunning()
        defer { session.stopRunning(); _ = try? session.waitUntilStopped() }
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let width = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<width {
            Task.detached { held.signal(); release.wait(); release.signal() }
        }
        defer { release.signal() }
        // Every pool thread but this test's own (when it runs on one) is held.
        for _ in 0..<max(1, width - 1) { #expect(held.wait(timeout: .now() + 10) == .success) }
        let (code, body, took) = try post("http://127.0.0.1:\(server.address.port)/ratio?to=4x3&token=\(server.token)")
        #expect(code == "422", "\(body) after \(took) s")
        #expect(body.contains("4x3"), "\(body)")
        #expect(took < 2.5, "answered after \(took) s")
    }

    /// A running-to-be session on a source that sends nothing, and a preview server whose
    /// ratio control is `PreviewControls.ratio(of:)`.
    private func silentSessionAndServer() throws -> (CaptureSession, PreviewServer) {
        let session = try CaptureSession(source: SilentSource(), ratio: .landscape16x9)
        let server = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), token: nil, output: PreviewOutput(),
                                       controls: PreviewControls(setRatio: PreviewControls.ratio(of: session))) {
            PreviewStatus(recording: false, elapsed: 0, frames: 0, fps: 0, drops: 0, ratio: session.ratio.description)
        }
        return (session, server)
    }

    /// `curl -X POST url`: the status code, the body, and how long the answer took (s).
    private func post(_ url: String) throws -> (code: String, body: String, took: Double) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        p.arguments = ["-s", "-m", "30", "-X", "POST", "-o", "-", "-w", "\n%{http_code}", url]
        let out = Pipe()
        p.standardOutput = out
        let start = Date()
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n"), Date().timeIntervalSince(start))
    }
}
