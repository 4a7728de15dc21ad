import Foundation
import Synchronization
import ReelCamera
import ReelCapture
import ReelCore
import ReelPreview
import ReelWriter

/// `reel preview …` as parsed: the source, where to serve, and for how long.
public struct PreviewInvocation: Sendable {
    /// `--source`: the synthetic sensor by default.
    public var source: SourceSpec = .synthetic(size: SyntheticSource.defaultSize)
    /// `--fps`: 30 by default.
    public var rate: FrameRate = FrameRate(frames: 30)!
    /// `--ratio`: the preview's aspect ratio (nil: the source's own).
    public var ratio: AspectRatio? = nil
    /// `--preview` and `--preview-token`: where to serve and the token clients must give.
    public var request = PreviewRequest(address: PreviewAddress(host: "127.0.0.1", port: 8080), token: nil)
    /// Seconds of media time; nil: until SIGINT.
    public var duration: Double? = nil
}

/// `reel preview`: the capture session with the preview output alone (no recording).
enum PreviewCommand {
    static func parse(_ argv: [String]) throws -> PreviewInvocation {
        var p = PreviewInvocation()
        for (name, value) in try ScannedArguments(argv, spec: CommandTable.preview).options {
            let v = value ?? ""
            switch name {
            case "--source": p.source = try SourceSpec(parsing: v)
            case "--fps":
                guard let r = FrameRate(parsing: v), r.perSecond >= 1, r.perSecond <= 240 else {
                    throw UsageError("--fps: '\(printable(v))' is not a frame rate from 1 to 240 (30, 29.97, 30000/1001)")
                }
                p.rate = r
            case "--ratio":
                guard let r = AspectRatio(parsing: v) else { throw UsageError("unknown ratio '\(printable(v))' (use 1x1, 4x3, 3x4, 16x9 or 9x16)") }
                p.ratio = r
            case "--duration": p.duration = try parseSeconds(v, option: name, range: 0.001...86_400)
            case "--preview", "--preview-token":
                // The same checks as `reel record`'s.
                let (configuration, _, _) = try RecordCommand.parse(name == "--preview" ? [name, v]
                                                                    : ["--preview", p.request.address.description, name, v])
                if let request = configuration.preview {
                    if name == "--preview" { p.request.address = request.address } else { p.request.token = request.token }
                }
            default: throw UsageError("preview: unknown option '\(name)'")
            }
        }
        return p
    }

    /// Opens the source, serves the preview (printing `preview: URL` on stderr), runs the
    /// session for `duration` or until SIGINT. Exit 0; the preview's errors as `reel record`'s.
    static func run(_ p: PreviewInvocation) throws -> Int32 {
        // SIGINT stops the session (the first one), quits at once (a second one: 130). Set up
        // first, so a SIGINT while the camera opens is not lost.
        let interrupted = Interrupts()
        signal(SIGINT, SIG_IGN)
        let interrupts = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        interrupts.setEventHandler {
            if interrupted.count.add(1, ordering: .relaxed).newValue > 1 { _exit(130) }
            interrupted.session.withLock { $0 }?.stopRunning()
        }
        interrupts.resume()
        defer { interrupts.cancel() }
        let source: any VideoSource
        switch p.source {
        case .synthetic(let size):
            source = try SyntheticSource(size: size, rate: p.rate, realtime: true, buffers: Recording.sensorBuffers(side: size))
        case .v4l2(let path, let size, let fps, let fourcc):
            source = try V4L2Source(path: path, size: size, fps: fps, fourcc: fourcc)
        }
        let session = try CaptureSession(source: source, ratio: p.ratio)
        interrupted.session.withLock { $0 = session }
        let output = PreviewOutput()
        let started = DispatchTime.now().uptimeNanoseconds
        let server: PreviewServer
        do {
            server = try PreviewServer(address: p.request.address, token: p.request.token, output: output,
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
            throw CommandError(status: CameraPreview.exitStatus(error), error.description)
        }
        defer { server.stop() }
        try session.addOutput(output)
        writeStderr("preview: \(server.pageURL)\n")

        let limit = p.duration.map { Swift.max(1, Int(($0 * source.format.rate.perSecond).rounded())) }
        // A SIGINT before the session runs: nothing to stop, done.
        if interrupted.count.load(ordering: .relaxed) > 0 { return 0 }
        _ = try session.run(frameLimit: limit)
        return 0
    }
}

/// SIGINTs seen, and the session a SIGINT stops once there is one.
private final class Interrupts: Sendable {
    let count = Atomic<Int>(0)
    let session = Mutex<CaptureSession?>(nil)
}
