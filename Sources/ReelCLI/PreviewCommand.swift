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
    /// `--scene`: what the synthetic sensor shows.
    public var scene: SyntheticScene = .realistic
}

/// `reel preview`: the capture session with the preview output alone (no recording).
enum PreviewCommand {
    static func parse(_ argv: [String]) throws -> PreviewInvocation {
        var sawScene = false
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
            case "--scene": p.scene = try parseScene(v); sawScene = true
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
        if sawScene, case .v4l2 = p.source {
            throw UsageError("--scene: only the synthetic sensor draws a scene (a V4L2 camera shows what it sees)")
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
            interrupted.camera.withLock { $0 }?.stop()
        }
        interrupts.resume()
        defer { interrupts.cancel() }
        let camera = try PreviewCamera(source: p.source, rate: p.rate, ratio: p.ratio, scene: p.scene, preview: p.request)
        interrupted.camera.withLock { $0 = camera }
        writeStderr("preview: \(camera.server.pageURL)\n")
        // A SIGINT before the camera was made: nothing to run, done.
        if interrupted.count.load(ordering: .relaxed) > 0 { camera.server.stop(); return 0 }
        try camera.run(duration: p.duration)
        return 0
    }
}

/// SIGINTs seen, and the camera a SIGINT stops once there is one.
private final class Interrupts: Sendable {
    let count = Atomic<Int>(0)
    let camera = Mutex<PreviewCamera?>(nil)
}
