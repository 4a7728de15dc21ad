import Foundation
import ReelCapture
import ReelCore
import ReelPreview
import ReelWriter

/// A camera that only shows its picture: a capture session with the preview output alone (no
/// recording), its page served (`reel preview`).
public final class PreviewCamera: Sendable {
    /// The session: the source and the preview output.
    public let session: CaptureSession
    /// The page's server.
    public let server: PreviewServer

    /// Opens the source (`source` at `rate`, `ratio` or the source's own), binds the page's
    /// server at `request` and adds the preview output. Nothing is captured yet.
    /// - Throws: the source's errors (`CaptureError`, `V4L2Error`); `CameraError` for the
    ///   preview (75: port in use; 77: no permission; 64: bad address; else 69).
    public init(source spec: SourceSpec, rate: FrameRate, ratio: AspectRatio?, scene: SyntheticScene = .realistic,
                preview request: PreviewRequest) throws {
        let source: any VideoSource
        switch spec {
        case .synthetic(let size):
            source = try SyntheticSource(size: size, rate: rate, realtime: true, buffers: Recording.sensorBuffers(side: size), scene: scene)
        case .v4l2(let path, let size, let fps, let fourcc):
            source = try V4L2Source(path: path, size: size, fps: fps, fourcc: fourcc)
        }
        let session = try CaptureSession(source: source, ratio: ratio)
        let output = PreviewOutput()
        let started = DispatchTime.now().uptimeNanoseconds
        let server: PreviewServer
        do {
            server = try PreviewServer(address: request.address, token: request.token, output: output,
                                       controls: PreviewControls(setRatio: PreviewControls.ratio(of: session))) {
                let stats = session.stats
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                let media: Double
                if let first = stats.startPTS, let last = stats.lastPTS { media = last.seconds - first.seconds } else { media = 0 }
                return PreviewStatus(recording: false, elapsed: media, frames: stats.framesCaptured,
                                     fps: elapsed > 0 ? Double(stats.framesCaptured) / elapsed : 0,
                                     drops: stats.drops.total, ratio: session.ratio.description)
            }
        } catch let error as PreviewError {
            throw CameraError(status: CameraPreview.exitStatus(error), error.description)
        }
        do {
            try session.addOutput(output)
        } catch {
            server.stop()
            throw error
        }
        self.session = session
        self.server = server
    }

    /// Runs the session on the calling thread for `duration` seconds of media time (at least
    /// one frame), or until `stop`; then stops the server.
    /// - Throws: the source's errors while capturing.
    public func run(duration: Double?) throws {
        defer { server.stop() }
        let limit = duration.map { Swift.max(1, Int(($0 * session.source.format.rate.perSecond).rounded())) }
        _ = try session.run(frameLimit: limit)
    }

    /// Ends the run (or the next one as it begins); the server stops when `run` returns.
    public func stop() { session.stopRunning(beforeRun: true) }
}
