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
        let output = try PhotoOutput(settings: settings)
        // Deferred photos an earlier run left here are finished beside this run.
        final class Pending: @unchecked Sendable { var finished: [FinishedPhoto] = [] } // written before `pendingDone`
        let pending = Pending()
        let pendingDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            pending.finished = PhotoOutput.finishPending(directory: settings.directory).finished
            pendingDone.signal()
        }
        // A fresh session on the sensor's photo format; the ring and the copies hold a few
        // buffers, so the sensor gets that many more than a recording's.
        let rate = FrameRate(frames: Int32(p.fps))!   // 1–60, checked by the parser
        let source = try SyntheticSource(size: settings.photoFormat.size.width, rate: rate, realtime: true,
                                         buffers: settings.ringSize + 8)
        let session = try CaptureSession(source: source, ratio: settings.ratio)
        try session.addOutput(output)
        final class Box: @unchecked Sendable { var error: (any Error)? } // written by the capture thread before `done`
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let capture = Thread {
            do { _ = try session.run(frameLimit: nil) } catch { box.error = error }
            done.signal()
        }
        capture.name = "reel-photo-capture"
        capture.start()

        // Preview-first launch: the first press goes out with the first frame; the output
        // (deferred unless --eager) may still be initialising, so the press is buffered.
        var firstFrame: UInt64? = nil
        let waitStart = MonotonicClock.now()
        while output.sessionTime() == nil && MonotonicClock.seconds(since: waitStart) < 10 && box.error == nil {
            MonotonicClock.sleep(until: MonotonicClock.now() + 1_000_000)
        }
        if output.sessionTime() != nil { firstFrame = MonotonicClock.now() }
        var pressError: PhotoError? = nil
        var refused = 0, blocked = 0
        if let firstFrame {
            for i in 0..<p.count {
                MonotonicClock.sleep(until: firstFrame + UInt64(Double(i) * p.interval * 1e9))
                do { _ = try output.capture() } catch .overBudget { refused += 1 } catch .busy { blocked += 1 } catch { pressError = error; break }
            }
        }
        output.finish()
        session.stopRunning()
        done.wait()
        pendingDone.wait()

        let photos = output.photos.sorted { $0.pressTime < $1.pressTime }
        let failure: (any Error)? = box.error ?? pressError ?? output.errors.first ?? (firstFrame == nil ? PhotoError.noFrame : nil)
        let summary = PhotoSummary(photos: photos, presses: p.count, delivered: photos.count, refused: refused, blocked: blocked,
                                   failed: output.errors.count, format: settings.format, quality: settings.quality,
                                   prioritization: settings.fastCapturePrioritization,
                                   responsive: settings.responsiveCapture, shutter: settings.shutter,
                                   ring: settings.ringSize, ratio: settings.ratio.rawValue,
                                   source: "synthetic:\(settings.photoFormat.size.width)", fps: p.fps,
                                   deferredStart: settings.initialisation != .inPrepare,
                                   prepared: settings.prepared != nil,
                                   initialisationMs: output.initialisationMilliseconds,
                                   sensorNoise: settings.sensorNoise?.sigma,
                                   sensorOrientation: settings.sensorOrientation,
                                   compensation: settings.orientationCompensation && settings.format != .png,
                                   deferredProcessing: settings.deferredProcessing,
                                   framesCaptured: session.stats.framesCaptured, framesDropped: session.stats.drops.total,
                                   dropReasons: session.stats.drops.table, pendingFinished: pending.finished,
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
