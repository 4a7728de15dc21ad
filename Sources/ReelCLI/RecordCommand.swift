import Foundation
import Synchronization
import ReelBench
import ReelCamera
import ReelCapacity
import ReelAudio
import ReelCapture
import ReelControl
import ReelCore
import ReelFraming
import ReelMedia
import ReelPhoto
import ReelPreview
import ReelStorage
import ReelWriter

enum RecordCommand {
    /// `reel record …` as options; no side effects.
    /// `spec`: `reel cost` parses the same options (issue 13).
    static func parse(_ argv: [String], spec: CommandSpec = CommandTable.record) throws -> (CameraConfiguration, json: Bool, report: String?) {
        var o = RecordOptions()
        var controls = ControlRequest()  // ReelControl
        var previewAddress: PreviewAddress? = nil
        var previewToken: String? = nil
        var json = false
        var report: String? = nil
        var sawDuration = false, sawFrames = false
        var photoDirectory: String? = nil, photoFormat: PhotoFileFormat? = nil
        var pressureHandler = true
        var mode: CaptureMode? = nil, burstRate = 5   // issue 14
        var strict = false, noAdjust = false, sawScene = false   // issue 24
        var smartFraming: SmartFramingRequest? = nil   // issue 29
        var centerStage: CenterStage.Mode? = nil
        var stabilization = StabilizationMode.off
        for (name, value) in try ScannedArguments(argv, spec: spec).options {
            let v = value ?? ""
            if try controls.take(name, v) { continue }  // ReelControl: --input, --grab, --keys
            switch name {
            case "--source":
                o.source = try SourceSpec(parsing: v)
            case "--fps":
                guard let r = FrameRate(parsing: v), r.perSecond >= 1, r.perSecond <= 240 else {
                    throw UsageError("--fps: '\(printable(v))' is not a frame rate from 1 to 240 (30, 29.97, 30000/1001)")
                }
                o.rate = r
            case "--duration":
                o.length = .seconds(try parseSeconds(v, option: name, range: 0.001...86_400))
                sawDuration = true
            case "--frames":
                o.length = .frames(try parseInt(v, option: name, range: 1...10_000_000))
                sawFrames = true
            case "--codec":
                guard let c = VideoCodec(parsing: v) else {
                    throw UsageError("unknown codec '\(printable(v))' (use prores[:proxy|lt|standard|hq|4444], h264, hevc or ffv1)")
                }
                o.codec = c
            case "--container":
                guard let c = Container(rawValue: v.lowercased()) else { throw UsageError("unknown container '\(printable(v))' (use mov, mp4 or mkv)") }
                o.container = c
            case "--ratio":
                guard let r = AspectRatio(parsing: v) else { throw UsageError("unknown ratio '\(printable(v))' (use 1x1, 4x3, 3x4, 16x9 or 9x16)") }
                o.ratio = r
            case "--ratio-at": o.ratioChanges.append(try parseRatioAt(v))
            case "--no-realtime": o.realtime = false
            case "--realtime": o.realtime = true
            case "--eager-start": o.deferredStart = false
            case "--standby": o.standby = true
            case "--out":
                guard !v.isEmpty else { throw UsageError("--out needs a directory") }
                o.outputDirectory = v
            case "--name":
                guard !v.isEmpty, !v.contains("/") else { throw UsageError("--name: '\(printable(v))' must be a file name prefix without '/'") }
                o.namePrefix = v
            case "--pool":
                guard !v.isEmpty else { throw UsageError("--pool needs a path") }
                o.storage = .pool(v)
            case "--plain": o.storage = .plain
            case "--fail-on-drop": o.failOnDrop = true
            case "--fragment": o.fragmentInterval = try parseSeconds(v, option: name, range: 0.1...600)
            case "--segment-duration": o.segmentDuration = try parseSeconds(v, option: name, range: CutPolicy.smallestSegmentDuration...86400)
            case "--segment-size": o.segmentSize = try parseSize(v, option: name, range: Recording.smallestSegmentSize...(64 << 40))
            case "--keep": o.loopBudget = try parseLoopBudget(v)
            case "--report":
                guard !v.isEmpty else { throw UsageError("--report needs a directory") }
                report = v
            case "--json": json = true
            case "--preview":
                guard let a = PreviewAddress(parsing: v) else {
                    throw UsageError("--preview: '\(printable(v))' is not [HOST:]PORT (PORT 0–65535, HOST an IP address)")
                }
                previewAddress = a
            case "--preview-token":
                guard !v.isEmpty, v.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
                    throw UsageError("--preview-token: use letters, digits, '-' and '_'")
                }
                previewToken = v
            case "--photos":
                guard !v.isEmpty else { throw UsageError("--photos needs a directory") }
                photoDirectory = v
            case "--photo-format":
                guard let f = PhotoFileFormat(rawValue: v.lowercased()) else {
                    throw UsageError("--photo-format: unknown photo format '\(printable(v))' (use jpeg, heic or png)")
                }
                photoFormat = f
            case "--mode":
                guard let m = CaptureMode(rawValue: v.lowercased()) else { throw UsageError("--mode: '\(printable(v))' is not video or photo") }
                mode = m
            case "--burst-rate": burstRate = try parseInt(v, option: name, range: 0...30)
            case "--secondary":
                guard let a = SecondaryAction(rawValue: v.lowercased()) else { throw UsageError("--secondary: '\(printable(v))' is not lock, marker or none") }
                controls.secondary = a
            case "--sensor-orientation":
                guard let m = SensorOrientation.allCases.first(where: { $0.rawValue.lowercased() == v.lowercased() }) else {
                    throw UsageError("--sensor-orientation: unknown orientation '\(printable(v))' (use landscape, portrait or landscapeLeft)")
                }
                o.sensorOrientation = m
            case "--scene": o.scene = try parseScene(v); sawScene = true
            case "--audio":
                guard !v.isEmpty else { throw UsageError("--audio needs none, synthetic or an ALSA device name") }
                o.audio = AudioSelection(parsing: v)
            case "--audio-codec":
                guard let c = AudioCodec(rawValue: v.lowercased()) else {
                    throw UsageError("--audio-codec: unknown audio codec '\(printable(v))' (use pcm, aac or opus)")
                }
                o.audioCodec = c
            case "--smart-framing": smartFraming = try parseSmartFraming(v)
            case "--center-stage":
                guard let m = CenterStage.Mode(rawValue: v.lowercased()) else { throw UsageError("--center-stage: '\(printable(v))' is not cooperative or app") }
                centerStage = m
            case "--stabilization":
                guard let m = StabilizationMode.allCases.first(where: { $0.rawValue.lowercased() == v.lowercased() }) else {
                    throw UsageError("--stabilization: '\(printable(v))' is not off, lowLatency, cinematic or baseline")
                }
                stabilization = m
            case "--shake":
                guard let n = Int(v), (0...64).contains(n) else { throw UsageError("--shake: '\(printable(v))' is not a number of pixels from 0 to 64") }
                o.shake = n
            case "--strict": strict = true
            case "--no-adjust": noAdjust = true
            case "--pressure-handler":
                switch v.lowercased() {
                case "on": pressureHandler = true
                case "off": pressureHandler = false
                default: throw UsageError("--pressure-handler: '\(printable(v))' is not on or off")
                }
            default: throw UsageError("record: unknown option '\(name)'")
            }
        }
        if sawDuration && sawFrames { throw UsageError("use either --duration or --frames, not both") }
        if strict && noAdjust { throw UsageError("use either --strict or --no-adjust, not both") }
        if o.sensorOrientation != .landscape {
            guard case .synthetic = o.source else {
                throw UsageError("--sensor-orientation: only the synthetic sensor can be mounted turned (a V4L2 camera says nothing of its mounting)")
            }
            guard o.container.carriesDisplayMatrix else {
                throw UsageError("--sensor-orientation \(o.sensorOrientation.rawValue): Matroska keeps no display matrix (libavformat 5.1 writes none); use mov or mp4")
            }
        }
        if o.shake > 0, case .v4l2 = o.source {
            throw UsageError("--shake: only the synthetic sensor can shake its scene (a V4L2 camera shakes as it is held)")
        }
        if o.shake > 0 && o.scene == .pattern {
            throw UsageError("--shake: the test pattern cannot shake; use --scene realistic or --scene people")
        }
        if sawScene, case .v4l2 = o.source {
            throw UsageError("--scene: only the synthetic sensor draws a scene (a V4L2 camera shows what it sees)")
        }
        if controls.secondary == .lock, case .synthetic = o.source {
            throw UsageError("--secondary lock: the synthetic sensor has no focus or exposure to lock (use marker or none)")
        }
        // Photo mode (--mode photo, or --photos without --mode): primary presses take photos,
        // into --photos DIR or OUT/photos. --mode video --photos DIR: the page's shutter takes
        // them, primary presses start and stop. --photo-format and --burst-rate alone do
        // nothing (README), as --preview-token alone.
        let photoMode = (mode ?? (photoDirectory != nil ? .photo : .video)) == .photo
        var photos: CameraPhotoRequest? = nil
        if photoDirectory != nil || photoMode {
            var r = CameraPhotoRequest(directory: photoDirectory ?? (o.outputDirectory as NSString).appendingPathComponent("photos"))
            if let photoFormat { r.format = photoFormat }
            r.takesPresses = photoMode
            r.burstRate = burstRate
            photos = r
        }
        // --preview-token alone does nothing (README): the token belongs to a preview.
        // The default pool's first preparation runs in a detached `reel pool _prepare`, which
        // outlives the recording (its progress: `reel pool status`).
        o.poolPreparationCommand = [selfExecutable, "pool", "_prepare", "--idle"]
        var configuration = CameraConfiguration(recording: o, preview: previewAddress.map { PreviewRequest(address: $0, token: previewToken) },
                                                controls: controls, photos: photos, pressureHandler: pressureHandler)
        // Tests write the PSI and sysfs figures they want the recording to see.
        let environment = ProcessInfo.processInfo.environment
        configuration.pressureDirectory = environment["REEL_PRESSURE_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        configuration.sysfsRoot = environment["REEL_SYSFS_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/sys"
        configuration.validation = strict ? .strict : noAdjust ? .asAsked : .adjust
        if centerStage != nil && smartFraming != nil { throw UsageError("use either --center-stage or --smart-framing, not both") }
        configuration.centerStage = centerStage
        if stabilization == .cinematic && (centerStage != nil || smartFraming != nil) {
            throw UsageError("--stabilization cinematic beside --center-stage or --smart-framing is not built yet: use lowLatency")
        }
        configuration.stabilization = stabilization
        if var framing = smartFraming {
            // Not in real time the detection is frame-stepped: on the capture thread, every 15th frame at 30 fps.
            framing.stepped = !o.realtime
            configuration.smartFraming = framing
        }
        return (configuration, json, report)
    }

    /// `--smart-framing zoom,rotate|recommend`.
    static func parseSmartFraming(_ text: String) throws -> SmartFramingRequest {
        var parts = Set<SmartFramingRequest.Part>()
        for word in text.lowercased().split(separator: ",", omittingEmptySubsequences: false) {
            guard let p = SmartFramingRequest.Part(rawValue: word.trimmingCharacters(in: .whitespaces)) else {
                throw UsageError("--smart-framing: '\(printable(String(word)))' is not zoom, rotate or recommend (zoom,rotate applies both)")
            }
            parts.insert(p)
        }
        if parts.contains(.recommend) && parts.count > 1 {
            throw UsageError("--smart-framing: recommend applies nothing; use it alone, or zoom and rotate")
        }
        return SmartFramingRequest(parts: parts)
    }

    /// `T:RATIO` (seconds of media time) or `#N:RATIO` (frame index).
    /// `--keep`: a time with its unit (`600s`, `10min`, `1h`; 1 s – 8760 h) or a size
    /// with its unit (`500M`, `2G`, powers of 1024; 1M–64T). A bare number is refused: it
    /// would not say which.
    static func parseLoopBudget(_ text: String) throws -> LoopBudget {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        let bounds = "a time like 600s, 10min or 1h (1s–8760h) or a size like 500M or 2G (1M–64T)"
        for (suffix, scale) in [("min", 60.0), ("s", 1.0), ("h", 3600.0)] where t.hasSuffix(suffix) {
            guard let v = Double(t.dropLast(suffix.count)), v.isFinite else { break }
            let s = v * scale
            guard s >= 1, s <= 8760 * 3600 else { throw UsageError("--keep: \(printable(text)) is out of range (\(bounds))") }
            return .seconds(s)
        }
        guard let last = t.last, last.isLetter, let n = parseByteSize(t) else {
            throw UsageError("--keep: '\(printable(text))' is not \(bounds)")
        }
        guard n >= 1 << 20, n <= 64 << 40 else { throw UsageError("--keep: \(printable(text)) is out of range (\(bounds))") }
        return .bytes(n)
    }

    static func parseRatioAt(_ text: String) throws -> (RatioTrigger, AspectRatio) {
        guard let colon = text.firstIndex(of: ":") else { throw UsageError("--ratio-at: '\(printable(text))' is not T:RATIO or #N:RATIO") }
        let when = String(text[..<colon]), what = String(text[text.index(after: colon)...])
        guard let ratio = AspectRatio(parsing: what) else { throw UsageError("unknown ratio '\(printable(what))' (use 1x1, 4x3, 3x4, 16x9 or 9x16)") }
        if when.hasPrefix("#") {
            return (.frame(try parseInt(String(when.dropFirst()), option: "--ratio-at #N", range: 0...Int(Int32.max))), ratio)
        }
        guard let t = Double(when), t.isFinite else { throw UsageError("--ratio-at: '\(printable(when))' is not a time in seconds (0–86400) or #FRAME") }
        return (.seconds(try parseSeconds(String(t), option: "--ratio-at T", range: 0...86_400)), ratio)
    }

    /// Makes the camera, runs it with the terminal's keys and signals, prints its summary.
    static func run(_ configuration: CameraConfiguration, json: Bool, report: String?) throws -> Int32 {
        if let dir = report {
            // Refuse before recording, not after.
            guard canWriteInDirectory(dir) else { throw UsageError("--report: cannot write to \(dir)") }
        }
        // SIGINT (and SIGTERM) finishes the clip and keeps it; a second one quits at once (exit
        // 130), with the terminal put back first. Ctrl-Z (SIGTSTP) puts the terminal back
        // before the process stops, and takes the keys' settings again when it continues.
        let keys = LiveKeys()
        let showProgress = isatty(STDERR_FILENO) == 1
        let camera = try Camera(configuration) { event in
            if showProgress, event.isMessage { writeStderr("\r\u{1B}[K") }   // over the progress line
            switch event {
            case .warning(let text): printWarning(text)
            case .notice(let text): printError(text)
            case .controlSocket(let path): writeStderr("control: \(path)\n")
            case .preview(let url): writeStderr("preview: \(url)\n")
            case .pressure, .firstFrame, .framing: break   // the level is on the progress line; framings in the summary
            }
        }
        let count = Atomic<Int>(0)
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let interrupts = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            interrupts.setEventHandler {
                if count.add(1, ordering: .relaxed).newValue > 1 {
                    keys.stop()
                    _exit(130)
                }
                camera.stop()
            }
            interrupts.resume()
            sources.append(interrupts)
        }
        signal(SIGTSTP, SIG_IGN)
        let suspends = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: .global())
        suspends.setEventHandler { keys.suspendProcess() }
        suspends.resume()
        sources.append(suspends)
        signal(SIGCONT, SIG_IGN)   // still continues the process; the source hears of it
        let continues = DispatchSource.makeSignalSource(signal: SIGCONT, queue: .global())
        continues.setEventHandler { keys.continued() }
        continues.resume()
        sources.append(continues)
        defer { for source in sources { source.cancel() } }
        keys.sendCaptureEvents { camera.send($0) }
        keys.start(session: camera.session, stop: { camera.stop() })
        let progress: @Sendable (RecordingProgress) -> Void = { p in
            // The system-pressure level and what the handler did, before the ratio (the last word).
            let line = "\(fixed(p.elapsed)) s  \(p.framesCaptured) frames  \(fixed(p.fps)) fps  "
                + "\(p.framesDropped) dropped  \(megabytes(p.bytesWritten))  "
                + (p.remainingSeconds.map { "pool \(clock($0)) left  " } ?? "")
                + (p.audioPeakDb.map { "sound \($0.isFinite ? String(Int($0.rounded())) : "-inf") dB  " } ?? "")
                + "\(recordingStateWord(camera.recording.writer))  "
                + "\(camera.pressureHandler.progressText)  \(p.ratio)"
            writeStderr("\r\u{1B}[K" + line)
        }
        let result = camera.run(progress: showProgress ? progress : nil)
        keys.stop()
        let summary = result.recording
        if let dir = report, let write = camera.recording.writeStats {
            writeReport(of: write, summary: summary, fps: camera.session.source.format.rate.perSecond,
                        outputDirectory: configuration.recording.outputDirectory, to: dir)
        }
        if showProgress { writeStderr("\n") }
        if json {
            printJSON(result)
        } else {
            RecordSummaryText.print(result)
        }
        if let failure = camera.recording.failure {
            printWarnings(summary, dropsToo: false)
            printError(failure.description)
            return failure.exitStatus
        }
        if configuration.recording.failOnDrop, let drops = RecordWarnings.drops(summary) {
            printWarnings(summary, dropsToo: false)
            printError(drops)
            return ExitStatus.busy
        }
        printWarnings(summary, dropsToo: true)
        // A photo that could not be saved: the recording is kept, the status says so.
        for e in result.photoErrors { printError(e.description) }
        if let e = result.photoErrors.first { return e.exitStatus }
        return 0
    }

    /// `--report DIR`: the recording's own writes (service time of each) as record.json and
    /// record.svg, drawn with the jitter report's code (ReelBench, above the library).
    static func writeReport(of write: WriteStats, summary: RecordingSummary, fps: Double, outputDirectory: String, to dir: String) {
        let report = Jitter.recordingReport(samples: write.samples, label: "\(summary.storage.mode) (\(write.writeMode))",
                                            directory: outputDirectory, fps: fps,
                                            ringBytes: write.ringBytes, bytesWritten: write.bytesWritten)
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let enc = JSONEncoder()
        enc.outputFormatting = [.prettyPrinted, .sortedKeys]
        try? enc.encode(report).write(to: URL(fileURLWithPath: dir + "/record.json"))
        try? SVGReport.render(report, title: "Storage write latency of the recording (service time of each write)")
            .write(toFile: dir + "/record.svg", atomically: true, encoding: .utf8)
    }
}
