import Foundation
import ReelCamera
import ReelCapture
import ReelCore
import ReelMedia
import ReelPhoto

/// `reel photo …` as parsed: the output's settings and the presses to make.
public struct PhotoInvocation: Sendable {
    /// The photo output's settings (format, quality, shutter, ring, noise, output directory and
    /// name, …).
    public var settings = PhotoSettings()
    /// `--count`: photos to take, one press each.
    public var count = 1
    /// `--interval`: seconds between presses.
    public var interval = 0.5
    /// `--fps`: the synthetic sensor's frame rate.
    public var fps = 30
    /// `--json`: print the photos as JSON.
    public var json = false
    /// `--name` was given (otherwise `run` names the photos `reel-` and the UTC start time).
    public var nameGiven = false
    /// `--finish-pending`: only finish the deferred photos left in the output directory.
    public var finishPendingOnly = false
    /// `--scene`: what the synthetic sensor shows.
    public var scene: SyntheticScene = .realistic
}

/// The JSON object `reel photo --finish-pending --json` prints.
struct FinishPendingSummary: Encodable {
    var finished: [FinishedPhoto]
    var failed: Int
    var error: String?
}

/// The JSON object `reel photo --json` prints.
struct PhotoSummary: Encodable {
    var photos: [Photo]
    var presses: Int
    var delivered: Int
    var refused: Int
    var blocked: Int
    var failed: Int
    var format: PhotoFileFormat
    var quality: PhotoQuality
    var prioritization: Bool
    var responsive: Bool
    var shutter: ShutterMode
    var ring: Int
    var ratio: String
    var source: String
    var fps: Int
    var deferredStart: Bool
    /// Prepared settings (`--unprepared`: false): encoders and copy buffers made ahead.
    var prepared: Bool
    var initialisationMs: Double
    var sensorNoise: Double?
    var sensorOrientation: SensorOrientation
    var compensation: Bool
    var deferredProcessing: Bool
    /// The sensor's frames during the run, and those it dropped, by reason (a press whose
    /// nearest frame was dropped gets the nearest one kept: `lagFrames` ≠ 0).
    var framesCaptured: Int
    var framesDropped: Int
    var dropReasons: [String: Int]
    /// Deferred photos of earlier runs finished at this start.
    var pendingFinished: [FinishedPhoto]
    var error: String?
}

enum PhotoCommand {
    static func parse(_ argv: [String]) throws -> PhotoInvocation {
        var p = PhotoInvocation()
        p.settings.directory = "photos"
        p.settings.initialisation = .afterFirstFrame
        for (name, value) in try ScannedArguments(argv, spec: CommandTable.photo).options {
            let v = value ?? ""
            switch name {
            case "--count": p.count = try parseInt(v, option: name, range: 1...1000)
            case "--interval": p.interval = try parseSeconds(v, option: name, range: 0.001...60)
            case "--format":
                guard let f = PhotoFileFormat(rawValue: v.lowercased()) else {
                    throw UsageError("--format: unknown photo format '\(printable(v))' (use jpeg, heic or png)")
                }
                p.settings.format = f
            case "--quality":
                guard let q = PhotoQuality(rawValue: v.lowercased()) else {
                    throw UsageError("--quality: unknown level '\(printable(v))' (use speed, balanced or quality)")
                }
                p.settings.quality = q
            case "--no-prioritization": p.settings.fastCapturePrioritization = false
            case "--ratio":
                guard let r = AspectRatio(parsing: v) else { throw UsageError("unknown ratio '\(printable(v))' (use 4x3 or 3x4)") }
                _ = try p.settings.photoFormat.crop(for: r)
                p.settings.ratio = r
            case "--ring": p.settings.ringSize = try parseInt(v, option: name, range: 1...30)
            case "--shutter":
                guard let s = ShutterMode(rawValue: v.lowercased()) else {
                    throw UsageError("--shutter: unknown shutter '\(printable(v))' (use zsl or next-frame)")
                }
                p.settings.shutter = s
            case "--sensor-noise":
                guard let sigma = Double(v.trimmingCharacters(in: .whitespaces)), sigma.isFinite, SensorNoise.range.contains(sigma) else {
                    throw UsageError("--sensor-noise: '\(printable(v))' is not a noise level from 0.1 to 50 (luma levels)")
                }
                p.settings.sensorNoise = SensorNoise(sigma: sigma)
            case "--sensor-orientation":
                guard let o = SensorOrientation.allCases.first(where: { $0.rawValue.lowercased() == v.lowercased() }) else {
                    throw UsageError("--sensor-orientation: unknown orientation '\(printable(v))' (use landscape, portrait or landscapeLeft)")
                }
                p.settings.sensorOrientation = o
            case "--scene": p.scene = try parseScene(v)
            case "--no-deferred": p.settings.deferredProcessing = false
            case "--finish-pending": p.finishPendingOnly = true
            case "--no-responsive": p.settings.responsiveCapture = false
            case "--no-compensation": p.settings.orientationCompensation = false
            case "--eager": p.settings.initialisation = .inPrepare
            case "--unprepared": p.settings.prepared = nil
            case "--fps": p.fps = try parseInt(v, option: name, range: 1...60)
            case "--out":
                guard !v.isEmpty else { throw UsageError("--out needs a directory") }
                p.settings.directory = v
            case "--name":
                guard !v.isEmpty, !v.contains("/") else { throw UsageError("--name: '\(printable(v))' must be a file name prefix without '/'") }
                p.settings.namePrefix = v
                p.nameGiven = true
            case "--json": p.json = true
            default: throw UsageError("photo: unknown option '\(name)'")
            }
        }
        return p
    }

    static func run(_ invocation: PhotoInvocation) throws -> Int32 {
        var p = invocation
        guard canWriteInDirectory(p.settings.directory) else {
            throw CommandError(status: ExitStatus.cantCreate, "photo: cannot create or write the output directory '\(printable(p.settings.directory))'")
        }
        if !p.nameGiven {
            let f = DateFormatter()
            f.dateFormat = "yyyyMMdd-HHmmss"
            f.timeZone = TimeZone(identifier: "UTC")
            p.settings.namePrefix = "reel-" + f.string(from: Date())
        }
        if p.finishPendingOnly {
            let (finished, errors) = PhotoOutput.finishPending(directory: p.settings.directory)
            let failure = errors.first.map { ReelCLI.report($0).line }
            if p.json {
                printJSON(FinishPendingSummary(finished: finished, failed: errors.count, error: failure))
            } else {
                for f in finished { print("\(f.path): final of frame #\(f.frameIndex), \(f.mergedFrames) frames merged, PSNR \(fixed(f.psnrProxy, 2)) → \(fixed(f.psnrFinal, 2)) dB") }
                if finished.isEmpty && errors.isEmpty { print("nothing pending in \(p.settings.directory)") }
            }
            if let e = errors.first { throw e }
            return 0
        }
        if p.settings.initialisation == .inPrepare {
            // Prepared before capture (--eager): the copy buffers too, where they cost no frame.
            p.settings.prepared?.buffers = 2
        }
        let settings = p.settings
        let shot = try StillCamera.shoot(settings: settings, count: p.count, interval: p.interval, fps: p.fps, scene: p.scene)
        let photos = shot.photos
        let failure = shot.failure
        let summary = PhotoSummary(photos: photos, presses: p.count, delivered: photos.count, refused: shot.refused, blocked: shot.blocked,
                                   failed: shot.failed, format: settings.format, quality: settings.quality,
                                   prioritization: settings.fastCapturePrioritization,
                                   responsive: settings.responsiveCapture, shutter: settings.shutter,
                                   ring: settings.ringSize, ratio: settings.ratio.rawValue,
                                   source: "synthetic:\(settings.photoFormat.size.width)", fps: p.fps,
                                   deferredStart: settings.initialisation != .inPrepare,
                                   prepared: settings.prepared != nil,
                                   initialisationMs: shot.initialisationMilliseconds,
                                   sensorNoise: settings.sensorNoise?.sigma,
                                   sensorOrientation: settings.sensorOrientation,
                                   compensation: settings.orientationCompensation && settings.format != .png,
                                   deferredProcessing: settings.deferredProcessing,
                                   framesCaptured: shot.stats.framesCaptured, framesDropped: shot.stats.drops.total,
                                   dropReasons: shot.stats.drops.table, pendingFinished: shot.pendingFinished,
                                   error: failure.map { ReelCLI.report($0).line })
        if p.json {
            printJSON(summary)
        } else {
            for ph in photos {
                print("\(ph.path): \(ph.width)x\(ph.height) \(ph.format.rawValue), frame #\(ph.frameIndex) (pressed #\(ph.pressedFrameIndex), lag \(ph.lagFrames)), \(ph.quality.rawValue)\(ph.buffered ? ", buffered" : ""), \(megabytes(Int64(ph.bytes)))")
            }
        }
        if let failure { throw failure }
        return 0
    }
}
