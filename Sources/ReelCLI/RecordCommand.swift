import Foundation
import Synchronization
import ReelBench
import ReelCapacity
import ReelCapture
import ReelControl
import ReelCore
import ReelMedia
import ReelPhoto
import ReelPreview
import ReelStorage
import ReelWriter

enum RecordCommand {
    /// `reel record …` as options; no side effects.
    /// `spec`: `reel cost` parses the same options (issue 13).
    static func parse(_ argv: [String], spec: CommandSpec = CommandTable.record) throws -> (RecordOptions, json: Bool, report: String?, preview: PreviewRequest?, controls: ControlRequest, photos: RecordPhotoRequest?) {
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
        if o.sensorOrientation != .landscape {
            guard case .synthetic = o.source else {
                throw UsageError("--sensor-orientation: only the synthetic sensor can be mounted turned (a V4L2 camera says nothing of its mounting)")
            }
            guard o.container.carriesDisplayMatrix else {
                throw UsageError("--sensor-orientation \(o.sensorOrientation.rawValue): Matroska keeps no display matrix (libavformat 5.1 writes none); use mov or mp4")
            }
        }
        // The pressure handler (on by default) steps the rate live: the session may switch to
        // these rates (the sensor's clock is chosen for them). Empty: the handler is off.
        o.liveFrameRates = pressureHandler ? RecordPressure.liveRates(for: o.rate) : []
        if controls.secondary == .lock, case .synthetic = o.source {
            throw UsageError("--secondary lock: the synthetic sensor has no focus or exposure to lock (use marker or none)")
        }
        // Photo mode (--mode photo, or --photos without --mode): primary presses take photos,
        // into --photos DIR or OUT/photos. --mode video --photos DIR: the page's shutter takes
        // them, primary presses start and stop. --photo-format and --burst-rate alone do
        // nothing (README), as --preview-token alone.
        let photoMode = (mode ?? (photoDirectory != nil ? .photo : .video)) == .photo
        var photos: RecordPhotoRequest? = nil
        if photoDirectory != nil || photoMode {
            var r = RecordPhotoRequest(directory: photoDirectory ?? (o.outputDirectory as NSString).appendingPathComponent("photos"))
            if let photoFormat { r.format = photoFormat }
            r.takesPresses = photoMode
            r.burstRate = burstRate
            photos = r
        }
        // --preview-token alone does nothing (README): the token belongs to a preview.
        return (o, json, report, previewAddress.map { PreviewRequest(address: $0, token: previewToken) }, controls, photos)
    }

    /// `T:RATIO` (seconds of media time) or `#N:RATIO` (frame index).
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

    static func run(_ options: RecordOptions, json: Bool, report: String?, preview request: PreviewRequest? = nil,
                    controls controlRequest: ControlRequest = ControlRequest(),
                    photos photoRequest: RecordPhotoRequest? = nil) throws -> Int32 {
        var options = options
        if let photoRequest {
            // Before anything is made: the directory writable (73).
            try RecordPhotos.check(photoRequest, options: options)
            options.extraSensorBuffers = RecordPhotos.ringSize   // the ring's frames are extra
        }
        if let dir = report {
            // Refuse before recording, not after.
            guard canWriteInDirectory(dir) else { throw UsageError("--report: cannot write to \(dir)") }
        }
        if options.storage == .defaultPool && !FileManager.default.fileExists(atPath: StoragePool.defaultPath + "/manifest.json") {
            let size = try DefaultPoolSize.forDefaultPool(at: StoragePool.defaultPath)
            printWarning("creating the default storage pool at \(StoragePool.defaultPath): \(formatBytes(size.capacity)) in \(formatBytes(size.slotSize)) slots (\(size.reason)), prepared in the background; clips go to plain files until its slots are ready (see reel pool, or --plain)")
        }
        // The default pool's first preparation runs in a detached `reel pool _prepare`, which
        // outlives the recording (its progress: `reel pool status`).
        options.poolPreparationCommand = [selfExecutable, "pool", "_prepare", "--idle"]
        // ReelControl: input devices open before anything is made (no permission: exit 77).
        let controls = try ControlHooks.open(controlRequest)
        defer { controls.stop() }
        // Video mode: a primary press stops and starts recording; one that comes before the
        // recording exists waits for it (and is dropped if it never comes: this defer runs
        // before controls.stop() drains the events). With --photos, presses take photos.
        let pendingRecording = PendingRecording()
        defer { pendingRecording.settle(nil) }
        if !(photoRequest?.takesPresses ?? false) { controls.dispatcher.setHandler(RecordToggles.events(pendingRecording)) }
        // Secondary presses: markers, nothing, or the camera's focus-exposure lock (issue 14).
        RecordSecondary.prepare(controlRequest.secondary, source: options.source, dispatcher: controls.dispatcher)
        // [issue 13: capacity] The session's configuration check: refused at its commit (exit
        // 69) when this machine cannot take it — before storage, encoder or preview open —,
        // else registered among the live sessions until the recording ends.
        let admission = CapacityAdmission()
        defer { admission.release() }
        let checked = options, withPreview = request != nil
        options.configurationCheck = { configuration in
            try admission.admit(checked, preview: withPreview, framesPerSecond: configuration.format.rate.perSecond)
        }
        let recording = try Recording(options: options)
        let session = recording.session  // ReelControl: frame indices and the ratio picker
        controls.attach(currentFrame: { let n = session.stats.framesCaptured; return n > 0 ? n - 1 : nil },
                        ratios: session.source.format.supportedRatios.map(\.description), selected: session.ratio.description,
                        setRatio: { text in setRatioAndWait(session, text) })
        // Start and stop on the running session: the socket, and the presses that waited.
        controls.setRecordHandler(RecordToggles.socket(recording))
        pendingRecording.settle(recording)
        // Zoom, exposure and the effect act on the picture; markers become the clips' chapters.
        controls.attachPicture(session: session, buffers: recording.sourceBuffers)
        recording.writer.settings.chapterMarks.setSource { [dispatcher = controls.dispatcher] in dispatcher.markers.compactMap(\.frameIndex) }
        // --photos: a photo output after the movie output; primary presses take photos.
        let photos = try photoRequest.map { try RecordPhotos.attach($0, to: recording, controls: controls) }
        let secondary = try RecordSecondary.attach(controlRequest.secondary, recording: recording, dispatcher: controls.dispatcher)
        // The preview listens before capture starts: a port in use ends the command here.
        let previewGate = request.map { _ in PressurePreviewGate(PreviewOutput()) }
        let pressureHandler = RecordPressureHandler(enabled: !options.liveFrameRates.isEmpty, session: session,
                                                    preview: previewGate, stop: { recording.stop() },
                                                    rateChanged: { admission.update(framesPerSecond: $0) })
        let preview = try request.map { try startPreview($0, recording: recording, photos: photos, gate: previewGate,
                                                         pressure: { pressureHandler.level }, controls: controls) }
        defer { preview?.stop() }
        // [issue 13: pressure] The monitor's level changes go to the handler, from now until the recording ends.
        let pressure = RecordPressure.monitor(note: { printError($0) }, onChange: { pressureHandler.handle($0) })
        pressure.start()
        defer { pressure.stop() }

        // SIGINT (and SIGTERM) finishes the clip and keeps it; a second one quits at once (exit
        // 130), with the terminal put back first. Ctrl-Z (SIGTSTP) puts the terminal back
        // before the process stops, and takes the keys' settings again when it continues.
        let keys = LiveKeys()
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
                recording.stop()
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
        keys.sendCaptureEvents { [dispatcher = controls.dispatcher] in dispatcher.send($0) }  // ReelControl
        keys.start(session: recording.session, stop: { recording.stop() })
        let showProgress = isatty(STDERR_FILENO) == 1
        let progress: @Sendable (RecordingProgress) -> Void = { p in
            // [issue 13] the system-pressure level and what the handler did, before the ratio (the last word)
            let line = "\(fixed(p.elapsed)) s  \(p.framesCaptured) frames  \(fixed(p.fps)) fps  "
                + "\(p.framesDropped) dropped  \(megabytes(p.bytesWritten))  "
                + (p.remainingSeconds.map { "pool \(clock($0)) left  " } ?? "")
                + "\(recordingStateWord(recording.writer))  "   // issue 11
                + "\(pressureHandler.progressText)  \(p.ratio)"
            writeStderr("\r\u{1B}[K" + line)
        }
        var summary = recording.run(progress: showProgress ? progress : nil)
        pressure.stop()   // [issue 13]
        // A recording the handler finished at `shutdown` says so.
        if pressureHandler.stoppedForPressure && summary.stopReason == "interrupted" && count.load(ordering: .relaxed) == 0 {
            summary.stopReason = "pressure"
        }
        if let dir = report, let write = recording.writeStats {
            writeReport(of: write, summary: summary, fps: recording.session.source.format.rate.perSecond,
                        outputDirectory: options.outputDirectory, to: dir)
        }
        keys.stop()
        controls.stop()  // ReelControl: the event log is final
        secondary?.finish()   // a lock still held: the camera's auto modes back
        let taken = photos?.finish() ?? (photos: [], errors: [])   // the photos still encoding are saved
        if showProgress { writeStderr("\n") }

        // [issue 13] hardwareCost and the pressure timeline join the summary; ReelControl its events.
        if json {
            printJSON(MergedJSON(MergedJSON(RecordingSummaryWithPressure(summary: summary, hardwareCost: admission.cost?.cost,
                                                                         pressure: .init(level: pressureHandler.level,
                                                                                         handler: pressureHandler.enabled ? "on" : "off",
                                                                                         timeline: pressureHandler.timeline(changes: summary.frameRateChanges),
                                                                                         psiTriggers: pressure.sources.psiTriggers,      // [issue 13 item 3]
                                                                                         psiTriggersReason: pressure.sources.psiTriggersReason,
                                                                                         thermal: pressure.sources.thermal)),
                                            controls.summary),
                                 MergedJSON(RecordPhotosSummary(photos: taken.photos), secondary?.summary ?? LockSummary(locks: []))))
        } else {
            printText(summary); printEvents(controls.summary); RecordPhotos.printPhotos(taken.photos)
            RecordSecondary.printLocks(secondary?.summary ?? LockSummary(locks: []))
        }
        if let failure = recording.failure {
            printWarnings(summary, dropsToo: false)
            printError(failure.description)
            return failure.exitStatus
        }
        if options.failOnDrop, let drops = RecordWarnings.drops(summary) {
            printWarnings(summary, dropsToo: false)
            printError(drops)
            return ExitStatus.busy
        }
        printWarnings(summary, dropsToo: true)
        // A photo that could not be saved: the recording is kept, the status says so.
        for e in taken.errors { printError(e.description) }
        if let e = taken.errors.first { return e.exitStatus }
        return 0
    }

    /// Binds the preview's server and adds its output to the session; prints the page's address.
    /// With `photos`, the page's shutter takes a photo through it; without, it answers 501.
    /// `gate`: the handler's gate around the preview output (issue 13), `pressure` the level for
    /// the page's status; `controls` the picture controls the status shows.
    static func startPreview(_ request: PreviewRequest, recording: Recording, photos: RecordPhotos? = nil,
                             gate: PressurePreviewGate? = nil, pressure: (@Sendable () -> PressureLevel)? = nil,
                             controls: ControlHooks? = nil) throws -> PreviewServer {
        let output = (gate?.inner as? PreviewOutput) ?? PreviewOutput()
        let session = recording.session
        let started = DispatchTime.now().uptimeNanoseconds
        let server: PreviewServer
        var shutter: (@Sendable () throws -> Data)? = nil
        if let photos { shutter = { try photos.pageShutter() } }
        do {
            server = try PreviewServer(address: request.address, token: request.token, output: output,
                                       controls: PreviewControls(setRatio: PreviewControls.ratio(of: session), shutter: shutter,
                                                                 record: RecordToggles.page(recording))) {
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
                status.pressure = pressure?().rawValue   // [issue 13]
                controls?.fillPicture(&status)   // zoom, exposure, effect as last applied
                return status
            }
        } catch let error as PreviewError {
            throw CommandError(status: previewExitStatus(error), error.description)
        }
        do {
            if let gate { try recording.session.addOutput(gate) } else { try recording.session.addOutput(output) }
        } catch {
            server.stop()   // refused (the configuration check): nothing is left listening
            throw error
        }
        writeStderr("preview: \(server.pageURL)\n")
        return server
    }

    /// Port in use: 75 (try another port, or later); no permission: 77; bad address: 64; else 69.
    static func previewExitStatus(_ error: PreviewError) -> Int32 {
        switch error {
        case .listen(_, let e) where e == EADDRINUSE: return ExitStatus.busy
        case .listen(_, let e) where e == EACCES: return ExitStatus.permission
        case .badAddress: return ExitStatus.usage
        default: return ExitStatus.unavailable
        }
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

    static func printText(_ s: RecordingSummary) {
        let frames = s.clips.reduce(0) { $0 + $1.frames }
        print("recorded \(s.clips.count) clip\(s.clips.count == 1 ? "" : "s"), \(frames) frames, \(s.framesDropped) dropped, in \(fixed(s.elapsedSeconds)) s (\(s.stopReason))")
        for c in s.clips {
            print("  \(c.path)  \(c.width)x\(c.height) \(c.ratio) \(c.codec)/\(c.container)  \(c.frames) frames #\(c.firstFrameIndex)-\(c.lastFrameIndex)  \(fixed(c.durationSeconds, 2)) s  \(megabytes(c.bytes))\(c.salvaged ? "  (salvaged)" : "")")
        }
        let st = s.storage
        var line = "  storage: \(st.mode)"
        if let pool = st.pool { line += " \(pool) (\(st.writeMode))" }
        line += ", write p99 \(fixed(st.writeLatencyMs.p99, 2)) ms, max \(fixed(st.longestStallMs, 2)) ms"
        if let before = st.remainingCapacityBefore, let after = st.remainingCapacityAfter {
            line += ", remaining \(formatBytes(before)) -> \(formatBytes(after))"
        }
        print(line)
        for seam in s.seams {
            print("  seam at frame \(seam.frameIndex) (\(fixed(seam.pts, 3)) s): \(seam.from) -> \(seam.to)")
        }
        for t in s.recordingToggles {
            print("  record \(t.action.rawValue) at \(fixed(t.atSeconds, 2)) s (take \(t.take), frame \(t.frameIndex.map(String.init) ?? "-")) from \(t.source)")
        }
        if s.framesDropped > 0 {
            print("  drops: " + s.dropReasons.filter { $0.value > 0 }.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))
        }
    }
}

/// `--preview [HOST:]PORT` and `--preview-token TOKEN`.
public struct PreviewRequest: Sendable, Hashable {
    /// Where to serve (`127.0.0.1:8080` when HOST is left out).
    public var address: PreviewAddress
    /// The access token every request must carry (nil: a fresh random one for the session).
    public var token: String?
}
