import Foundation
import ReelCapacity
import ReelCapture
import ReelCore
import ReelPreview
import ReelWriter

/// The camera's live preview: the page's server, bound before capture starts, and its output
/// on the session (behind the pressure handler's gate).
public enum CameraPreview {
    /// Binds the preview's server and adds `gate` (around its output) to the session. With
    /// `photos`, the page's shutter takes a photo through it; without, it answers 501.
    /// `pressure` gives the level for the page's status; `controls` the picture controls it shows.
    /// - Throws: `CameraError` (75: port in use; 77: no permission; 64: bad address; else 69),
    ///   or the session's refusal of the output (the server is stopped first).
    static func start(_ request: PreviewRequest, recording: Recording, photos: CameraPhotos?, gate: PressurePreviewGate,
                      pressure: @escaping @Sendable () -> PressureLevel, controls: CameraControls) throws -> PreviewServer {
        let output = (gate.inner as? PreviewOutput) ?? PreviewOutput()
        let session = recording.session
        let started = DispatchTime.now().uptimeNanoseconds
        let server: PreviewServer
        var shutter: (@Sendable () throws -> Data)? = nil
        if let photos { shutter = { try photos.pageShutter() } }
        do {
            server = try PreviewServer(address: request.address, token: request.token, output: output,
                                       controls: PreviewControls(setRatio: PreviewControls.ratio(of: session), shutter: shutter,
                                                                 record: RecordingToggles.page(recording))) {
                let stats = session.stats
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                let media: Double
                if let first = stats.startPTS, let last = stats.lastPTS { media = last.seconds - first.seconds } else { media = 0 }
                var status = PreviewStatus(recording: recording.writer.isRecording, elapsed: media, frames: stats.framesCaptured,
                                           fps: elapsed > 0 ? Double(stats.framesCaptured) / elapsed : 0,
                                           drops: stats.drops.total, ratio: session.ratio.description,
                                           // Read each time: under Deferred Start the pool opens after the first frame.
                                           poolRemainingCapacity: recording.pool?.remainingCapacity)
                status.poolRemainingSeconds = recording.remainingTime.remainingSeconds
                status.pressure = pressure().rawValue   // [issue 13]
                controls.fillPicture(&status)   // zoom, exposure, effect as last applied
                return status
            }
        } catch let error as PreviewError {
            throw CameraError(status: exitStatus(error), error.description)
        }
        do {
            try session.addOutput(gate)
        } catch {
            server.stop()   // refused (the configuration check): nothing is left listening
            throw error
        }
        return server
    }

    /// Port in use: 75 (try another port, or later); no permission: 77; bad address: 64; else 69.
    public static func exitStatus(_ error: PreviewError) -> Int32 {
        switch error {
        case .listen(_, let e) where e == EADDRINUSE: return ExitStatus.busy
        case .listen(_, let e) where e == EACCES: return ExitStatus.permission
        case .badAddress: return ExitStatus.usage
        default: return ExitStatus.unavailable
        }
    }
}
