import Foundation
import Synchronization
import ReelCapacity
import ReelCapture
import ReelControl
import ReelAudio
import ReelCore
import ReelFraming
import ReelPhoto
import ReelPreview
import ReelStorage
import ReelWriter

/// A camera: a capture session with its movie output, and around it the outputs, controls
/// and policies of a camera app — the preview page, the photo output, capture events from
/// input devices, the socket and the page, the picture controls, the secondary action, the
/// hardware-cost admission and the system-pressure handler.
///
/// It is configured once (`CameraConfiguration`), made (`init`: everything opens, nothing is
/// captured), run (`run`, until its length or `stop`), operated while it runs (`send`,
/// `takePhoto`, `startRecording`, `stopRecording`, `set`, `setRatio`) and observed (the
/// observer given to `init`, or `events`). `reel record` is this type with options parsed
/// into a configuration and the summary printed.
///
/// ```swift
/// var configuration = CameraConfiguration()
/// configuration.recording.length = .frames(90)
/// let camera = try Camera(configuration)
/// let summary = camera.run()
/// ```
public final class Camera: Sendable {
    /// What the camera was made from.
    public let configuration: CameraConfiguration
    /// The capture session and its movie output.
    public let recording: Recording
    /// Capture events and controls.
    public let controls: CameraControls
    /// The photo output (nil: none configured).
    public let photos: CameraPhotos?
    /// The preview page's server (nil: none configured).
    public let preview: PreviewServer?
    /// The system-pressure handler.
    public let pressureHandler: PressureHandler
    /// The cost admitted at the configuration's commit.
    public let admission: CapacityAdmission
    /// What the validation changed (nil: the configuration is recorded as asked).
    public let adjustment: ConfigurationAdjustment?
    /// Events as they happen (the newest 256 kept for a reader that falls behind); finished
    /// when `run` returns.
    public let events: AsyncStream<CameraEvent>

    private let secondary: SecondaryPresses?
    private let framing: CameraSmartFraming?
    private let centerStage: CameraCenterStage?
    private let stabilization: CameraStabilization?
    private let shutterSound: ShutterSoundPlayer?
    private let clipWatcher: ClipWatcher?
    private let pending: PendingRecording
    private let monitor: PressureMonitor
    private let emit: @Sendable (CameraEvent) -> Void
    private let finishEvents: @Sendable () -> Void
    private let stoppedByApp = Atomic<Bool>(false)
    private let ended = Atomic<Bool>(false)

    /// The capture session.
    public var session: CaptureSession { recording.session }

    /// Opens everything the configuration asks for, in the order that lets each refuse before
    /// anything is recorded: the photo directory (73), the input devices and the socket (77 for
    /// permission), the validation and the session's cost check (69), storage and encoder, the photo output, the
    /// secondary action (69 for a lock the camera cannot take), the preview's port (75, 77).
    /// What opened before a refusal is closed again.
    /// - Parameter observer: told every `CameraEvent` as it happens, on the thread that
    ///   caused it (also sent to `events`).
    public init(_ configuration: CameraConfiguration, observer: @escaping @Sendable (CameraEvent) -> Void = { _ in }) throws {
        self.configuration = configuration
        let (stream, continuation) = AsyncStream.makeStream(of: CameraEvent.self, bufferingPolicy: .bufferingNewest(256))
        events = stream
        let emit: @Sendable (CameraEvent) -> Void = { event in
            observer(event)
            continuation.yield(event)
        }
        self.emit = emit
        finishEvents = { continuation.finish() }
        let notice: @Sendable (String) -> Void = { emit(.notice($0)) }
        // glibc's allocator set for hours of recording: big buffers freed go back (ProcessMemory).
        if let why = ProcessMemory.tunedForLongRecordings { notice("memory: \(why); the process's memory may grow with long recordings") }

        var options = configuration.recording
        if let photoRequest = configuration.photos {
            try CameraPhotos.check(photoRequest)
            options.extraSensorBuffers = CameraPhotos.ringSize   // the ring's frames are extra
        }
        if options.storage == .defaultPool && !FileManager.default.fileExists(atPath: StoragePool.defaultPath + "/manifest.json") {
            let size = try DefaultPoolSize.forDefaultPool(at: StoragePool.defaultPath)
            emit(.warning("creating the default storage pool at \(StoragePool.defaultPath): \(formatBytes(size.capacity)) in \(formatBytes(size.slotSize)) slots (\(size.reason)), prepared in the background; clips go to plain files until its slots are ready (see reel pool, or --plain)"))
        }
        var undo: [() -> Void] = []
        do {
            // Input devices open before anything is made.
            let controls = try CameraControls.open(configuration.controls, notice: notice, opened: { emit(.controlSocket($0)) })
            undo.append { controls.stop() }
            // The shutter sound of remote presses: its file and playback device checked now.
            let shutterSound = try configuration.controls.shutterSound.map {
                try CameraShutterSound.attach($0, to: controls.dispatcher, notice: notice)
            }
            // Video mode: a primary press stops and starts recording; one that comes before the
            // recording exists waits for it (and is dropped if it never comes).
            let pending = PendingRecording()
            undo.append { pending.settle(nil) }
            let videoPresses = RecordingToggles.events(pending, notice: notice)
            if !(configuration.photos?.takesPresses ?? false) {
                controls.dispatcher.setHandler(videoPresses)
            }
            SecondaryPresses.prepare(configuration.controls.secondary, source: options.source, dispatcher: controls.dispatcher)
            // Face detection (smart framing, Center Stage) runs 2 times a second: charged in the cost model.
            if configuration.smartFraming != nil || configuration.centerStage != nil { options.faceDetectionsPerSecond = 2 }
            if configuration.centerStage != nil { options.faceProfilesEvery = CenterStage.profilesEvery }
            // Stabilisation measures and resamples every frame: charged too.
            switch configuration.stabilization {
            case .off: break
            case .cinematic: options.stabilizationCost = .lookAhead
            case .lowLatency, .baseline: options.stabilizationCost = .causal
            }
            // Validated against the cost model (libcamera's validate()): a real-time recording
            // that would not keep up records the first rung of the ladder that does, and says so
            // once the camera is made; under `.strict` it is refused here (69), before storage,
            // encoder or preview open.
            let (validated, adjustment, asAsked) = try CapacityGate.validate(options, preview: configuration.preview != nil,
                                                                              policy: configuration.validation)
            options = validated
            // The pressure handler steps the rate live: the session may switch to these rates (the
            // sensor's clock is chosen for them). Empty: the handler is off.
            options.liveFrameRates = configuration.pressureHandler ? PressureHandling.liveRates(for: options.rate) : []
            // The session's configuration check: refused at its commit (69) when this machine
            // cannot take it, before storage, encoder or preview open; else registered among the
            // live sessions until the camera ends.
            let admission = CapacityAdmission()
            undo.append { admission.release() }
            let checked = options, withPreview = configuration.preview != nil
            options.configurationCheck = { c in
                try admission.admit(checked, preview: withPreview, framesPerSecond: c.format.rate.perSecond,
                                    refuses: configuration.validation != .asAsked)
            }
            let recording = try Recording(options: options)
            let session = recording.session
            controls.attach(currentFrame: { let n = session.stats.framesCaptured; return n > 0 ? n - 1 : nil },
                            ratios: session.source.format.supportedRatios.map(\.description), selected: session.ratio.description,
                            setRatio: { text in setRatioAndWait(session, text, notice: notice) })
            controls.setRecordHandler(RecordingToggles.socket(recording))
            pending.settle(recording)
            // Zoom, exposure and the effect act on the picture; markers become the clips' chapters.
            controls.attachPicture(session: session, buffers: recording.sourceBuffers)
            recording.writer.settings.chapterMarks.setSource { [dispatcher = controls.dispatcher] in dispatcher.markers.compactMap(\.frameIndex) }
            let photos = try configuration.photos.map { try CameraPhotos.attach($0, to: recording, controls: controls, notice: notice) }
            if let photos {
                // The mode dial: presses record or take photos, switched live.
                controls.attachMode(photoMode: configuration.photos?.takesPresses ?? false, video: videoPresses,
                                    photo: { [photos] event, _ in photos.handle(event) })
            }
            // Smart framing refuses here without the 4032 photo format (64) or OpenCV's cascades (69).
            let framing = try configuration.smartFraming.map { try CameraSmartFraming.attach($0, to: recording, controls: controls, emit: emit) }
            undo.append { framing?.stop() }
            if configuration.centerStage != nil && configuration.smartFraming != nil {
                throw FramingError("use either Center Stage or smart framing, not both", status: ExitStatus.usage)
            }
            if configuration.stabilization == .cinematic && (configuration.centerStage != nil || configuration.smartFraming != nil) {
                throw FramingError("--stabilization cinematic beside Center Stage or smart framing is not built yet: use lowLatency", status: ExitStatus.usage)
            }
            // Stabilisation before Center Stage: the faces Center Stage finds are put in the
            // steadied picture's coordinates.
            let stabilization = try configuration.stabilization == .off ? nil
                : CameraStabilization.attach(configuration.stabilization, to: recording)
            undo.append { stabilization?.stop() }
            let centerStage = try configuration.centerStage.map {
                try CameraCenterStage.attach($0, stepped: !options.realtime, to: recording, controls: controls, stabilization: stabilization)
            }
            undo.append { centerStage?.stop() }
            let secondary = try SecondaryPresses.attach(configuration.controls.secondary, recording: recording,
                                                        dispatcher: controls.dispatcher, notice: notice)
            undo.append { secondary?.finish() }
            let gate = configuration.preview.map { _ in PressurePreviewGate(PreviewOutput()) }
            let handler = PressureHandler(enabled: configuration.pressureHandler, session: session, preview: gate,
                                          stop: { recording.stop() }, rateChanged: { admission.update(framesPerSecond: $0) })
            // The preview listens before capture starts: a port in use ends here.
            let served = try configuration.preview.map { request in
                try CameraPreview.start(request, recording: recording, photos: photos, gate: gate!, pressure: { handler.level },
                                        secondary: { [dispatcher = controls.dispatcher] in
                                            secondary.map { $0.isLocked ? "unlock" : "lock" } ?? (dispatcher.laysSecondaryMarkers ? "marker" : "none")
                                        },
                                        controls: controls, notice: notice)
            }
            let preview = served?.0
            if let served { undo.append { served.1?.stop(); served.0.stop() } }
            if let preview { emit(.preview(preview.pageURL)) }
            if let secondary, let preview {
                // A lock or an unlock changes what the page's second button says: pushed at once.
                controls.dispatcher.setSecondaryHandler { [secondary, preview] event, frame in
                    secondary.handle(event, frame: frame)
                    preview.statusChanged()
                }
            }
            try session.addOutput(FirstFrameSignal(emit))
            monitor = PressureHandling.monitor(directory: configuration.pressureDirectory, sysfsRoot: configuration.sysfsRoot,
                                               note: notice, onChange: { change in
                                                   handler.handle(change)
                                                   emit(.pressure(change.level))
                                               })
            // Said once the camera is made: a request refused for another reason says only that.
            if let adjustment { emit(.warning(adjustment.message)) }
            if let asAsked { emit(.warning(asAsked)) }
            self.adjustment = adjustment
            self.controls = controls
            self.pending = pending
            self.admission = admission
            self.recording = recording
            self.photos = photos
            self.secondary = secondary
            self.framing = framing
            self.centerStage = centerStage
            self.stabilization = stabilization
            self.shutterSound = shutterSound
            self.pressureHandler = handler
            self.preview = preview
            self.clipWatcher = served?.1 ?? nil
        } catch {
            for step in undo.reversed() { step() }
            continuation.finish()
            throw error
        }
    }

    /// Runs the session until the recording's length, `stop`, a failure or the pressure
    /// handler's `shutdown`; then closes the inputs, unlocks the camera, waits for the photos
    /// still encoding, stops the preview and leaves the session registry. Call it once.
    /// - Parameter progress: called about twice a second while it runs.
    public func run(progress: (@Sendable (RecordingProgress) -> Void)? = nil) -> CameraSummary {
        monitor.start()
        var summary = recording.run(progress: progress)
        monitor.stop()
        framing?.stop()
        centerStage?.stop()
        stabilization?.stop()
        // A recording the handler finished at `shutdown` says so.
        if pressureHandler.stoppedForPressure && summary.stopReason == "interrupted" && !stoppedByApp.load(ordering: .acquiring) {
            summary.stopReason = "pressure"
        }
        ended.store(true, ordering: .releasing)
        controls.stop()   // the event log is final
        shutterSound?.drain(timeout: 2)   // the last press's sound has played (a hung device: not waited for)
        secondary?.finish()   // a lock still held: the camera's auto modes back
        let taken = photos?.finish() ?? (photos: [], errors: [])   // the photos still encoding are saved
        clipWatcher?.stop()
        preview?.stop()
        pending.settle(nil)
        admission.release()
        var result = CameraSummary(recording: summary, hardwareCost: admission.cost?.cost,
                                   pressure: .init(level: pressureHandler.level, handler: pressureHandler.enabled ? "on" : "off",
                                                   timeline: pressureHandler.timeline(changes: summary.frameRateChanges),
                                                   psiTriggers: monitor.sources.psiTriggers,
                                                   psiTriggersReason: monitor.sources.psiTriggersReason,
                                                   thermal: monitor.sources.thermal),
                                   controls: controls.summary, photos: taken.photos,
                                   locks: secondary?.summary.locks ?? [], photoErrors: taken.errors)
        result.adjusted = adjustment
        result.framingRecommendations = framing?.monitor.recommendations
        result.smartFraming = framing?.summary
        result.centerStage = centerStage?.summary
        result.stabilization = stabilization?.summary
        if let shutterSound {
            let p = shutterSound.played
            result.shutterSound = ShutterSoundSummary(device: shutterSound.device, sound: shutterSound.sound.name,
                                                      played: p.count, failed: p.failed, lastError: p.lastError)
        }
        finishEvents()
        return result
    }

    /// The smart-framing monitor (nil: `smartFraming` not configured): its recommendations,
    /// enabled framings, `startMonitoring`/`stopMonitoring` on the running session.
    public var smartFramingMonitor: SmartFramingMonitor? { framing?.monitor }

    /// Finishes the recording: the clip open is closed and kept; `run` returns.
    public func stop() {
        stoppedByApp.store(true, ordering: .releasing)
        recording.stop()
    }

    /// A capture event (a press of the shutter or volume key, from any source), handled as
    /// the camera's input devices' are. Ignored once `run` has returned.
    public func send(_ event: CaptureEvent) {
        guard !ended.load(ordering: .acquiring) else { return }
        controls.dispatcher.send(event)
    }

    /// Takes a photo now and waits until it is saved.
    /// - Throws: `CameraError` (69) without a photo output; else what the photo output throws.
    public func takePhoto() throws -> Photo {
        guard let photos else { throw CameraError(status: ExitStatus.unavailable, "photo: the camera has no photo output") }
        return try photos.takePhoto()
    }

    /// Starts the movie output (in standby, or after `stopRecording`); `source` names who asked.
    /// - Throws: `RecordToggleError` when refused (it records already, or the recording ends).
    public func startRecording(source: String = "app") throws(RecordToggleError) -> RecordingToggle {
        try RecordingToggles.apply("start", source: source, to: recording)
    }

    /// Stops the movie output (the session keeps running); `source` names who asked.
    /// - Throws: `RecordToggleError` when refused (it does not record, or the recording ends).
    public func stopRecording(source: String = "app") throws(RecordToggleError) -> RecordingToggle {
        try RecordingToggles.apply("stop", source: source, to: recording)
    }

    /// Sets a control by its identifier (`zoom`, `exposure`, `effect`, `ratio`) to `value` (a
    /// number, or a picker's title), as the control socket does. Applied on the controls'
    /// queue, from the session's next frame.
    public func set(_ control: String, to value: String) -> ControlSetResult {
        guard let c = controls.controls.control(control) else {
            return ControlSetResult(ok: false, control: control, error: "no control '\(control)'")
        }
        return c.set(value, on: controls.controls.queue)
    }
}
