import Foundation
import Synchronization
import ReelAudio
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelMetrics

/// One `reel record`: source → session → writer, run to the end or until stopped.
public final class Recording: Sendable {
    /// The options it was created with.
    public let options: RecordOptions
    /// The capture session: the source and its outputs.
    public let session: CaptureSession
    /// The writer that encodes the session's frames into clips.
    public let writer: AssetWriter
    /// The microphone, when the recording has sound (`options.audio`).
    public var audioSource: (any AudioSource)? { audio?.source }
    private let audio: AudioCapture?
    /// The sound's level now (`AudioLevelMeter.decibels`: the peak of the last 300–400 ms,
    /// dBFS); nil without sound or before its first samples.
    public var audioLevelDecibels: Double? { audio == nil ? nil : writer.audioLevel.decibels() }
    /// Frames the source can hold at once (its pool's buffers, the photo ring's included):
    /// what an output that processes frames (the picture adjustments) needs as many of.
    public let sourceBuffers: Int
    /// The storage pool, once opened (under Deferred Start, after the first frame); nil with `--plain`.
    public var pool: StoragePool? { opened.withLock { $0.pool } }
    /// The default pool was created by this recording.
    public var poolCreated: Bool { opened.withLock { $0.created } }
    private struct OpenedStorage {
        var pool: StoragePool?
        var created = false
        var remainingBefore: Int64?
        var preparation: BackgroundPreparation?
    }
    /// What opening the storage found (a class: the storage's opener keeps it too).
    private final class OpenedBox: Sendable {
        let value = Mutex(OpenedStorage())
        func withLock<R>(_ body: (inout OpenedStorage) -> R) -> R { value.withLock { body(&$0) } }
    }
    private let opened = OpenedBox()
    private let storage: DeferredStorage
    private let frameCount: Int
    private let stopped = SetOnceFlag()
    private let sourceFailure = Mutex<(any UserFacingError)?>(nil)
    private let lastWrite = Mutex<WriteStats?>(nil)
    /// When `run` started (monotonic ns): the origin of `atSeconds`.
    private let runStart = Mutex<UInt64?>(nil)
    /// Bytes written over time, for the bit rate of the last 10 s.
    private let rate = BitrateWindow(seconds: 10)
    /// The pool's remaining capacity as last read (once a second while recording).
    private let poolRemaining = Mutex<Int64?>(nil)

    /// Checks every option and opens the output directory; nothing is recorded yet.
    /// - Throws: the source's error (`CaptureError`, `V4L2Error`), `CaptureError.unsupportedRatio`,
    ///   what `options.configurationCheck` throws,
    ///   `StorageError.outputDirectory`, `UsageError` for a length of 0 frames or a segment duration below 1 ms,
    ///   or a loop budget that is not positive,
    ///   `WriterError` for settings that cannot work (a codec the container cannot carry, no such
    ///   encoder); under `--eager-start` also the storage's errors (`PoolError`, `StorageError`).
    public init(options: RecordOptions) throws {
        self.options = options
        let source: any VideoSource
        switch options.source {
        case .synthetic(let size):
            sourceBuffers = Recording.sensorBuffers(side: size) + options.extraSensorBuffers
            source = try SyntheticSource(size: size, rate: options.rate, realtime: options.realtime, buffers: sourceBuffers,
                                         mounting: options.sensorOrientation, liveRates: options.liveFrameRates, scene: options.scene,
                                         shake: SceneShake(amplitude: options.shake))
        case .v4l2(let path, let size, let fps, let fourcc):
            let camera = try V4L2Source(path: path, size: size, fps: fps, fourcc: fourcc, poolBuffers: 12 + options.extraSensorBuffers,
                                        poolBudget: Recording.sensorBudget)
            sourceBuffers = camera.poolCount
            source = camera
        }
        session = try CaptureSession(source: source, ratio: options.ratio)
        if let check = options.configurationCheck {
            session.beginConfiguration()
            try session.setConfigurationCheck(check)
            try session.commitConfiguration()
        }
        for (trigger, ratio) in options.ratioChanges {
            try session.scheduleAspectRatio(ratio, at: trigger)
        }
        // The output directory is checked now in either mode (cheap, and a usage problem).
        let directory = try FileStorage(directory: options.outputDirectory)
        let opened = self.opened
        storage = DeferredStorage(destination: options.outputDirectory) {
            try Recording.openStorage(options, directory: directory, into: opened)
        }
        if !options.deferredStart {
            // Eager: the pool is opened (created, recovered) before anything is captured.
            try storage.open()
        }
        let prefix = options.namePrefix ?? Recording.defaultPrefix(unusedIn: options.outputDirectory)
        var settings = WriterSettings(codec: options.codec, container: options.container,
                                      storage: storage,
                                      namePrefix: prefix,
                                      fragmentInterval: options.fragmentInterval,
                                      queueCapacity: options.queueCapacity ?? Recording.holdFrames(sourceBuffers: sourceBuffers - options.extraSensorBuffers),
                                      dropWhenStorageIsBehind: options.realtime)
        settings.displayQuarterTurns = options.sensorOrientation.displayQuarterTurns
        if let d = options.segmentDuration {
            guard d.isFinite, d >= CutPolicy.smallestSegmentDuration, d <= 1e9 else {
                throw UsageError("segment duration \(d) s: use a number of seconds from \(CutPolicy.smallestSegmentDuration) up")
            }
            settings.segmentDuration = d
        }
        if let n = options.segmentSize {
            guard n >= Recording.smallestSegmentSize else {
                throw UsageError("segment size \(n) bytes: use at least \(Recording.smallestSegmentSize) bytes (64K)")
            }
            settings.segmentBytes = n
        }
        switch options.loopBudget {
        case .bytes(let n)? where n <= 0:
            throw UsageError("loop budget \(options.loopBudget!): use a positive size or time")
        case .seconds(let s)? where !(s.isFinite && s > 0):
            throw UsageError("loop budget \(options.loopBudget!): use a positive size or time")
        default: settings.loopBudget = options.loopBudget
        }
        // Segments and loop recording keep an index of what was recorded; a run with an
        // earlier run's index goes on in it (clip numbers after the earlier ones), and its
        // budget counts the earlier clips the index lists.
        if options.segmentDuration != nil || options.loopBudget != nil {
            let log = try SegmentIndexLog(directory: options.outputDirectory, prefix: prefix)
            settings.segmentIndex = log
            settings.firstClipNumber = log.firstSegment
            settings.storage = IndexedClipStorage(inner: storage, log: log)
            try session.addOutput(SessionClockAnchor(log: log))
        }
        // The microphone is opened now: a missing, busy or forbidden device is refused before
        // anything records.
        let microphone: (any AudioSource)?
        switch options.audio {
        case .synthetic where !options.realtime:
            // Not in real time: the synthetic sound keeps pace with the video's media time.
            let box = WriterBox()
            microphone = SyntheticAudioSource(pace: { box.writer?.videoReachedNs })
            settings.audio = AudioTrackSettings(codec: options.audioCodec ?? AudioCodec.defaultCodec(for: options.container),
                                                format: microphone!.format, onSessionClock: true)
            writer = try AssetWriter(settings: settings, rate: source.format.rate)
            box.writer = writer
        default:
            microphone = try options.audio.open()
            if let m = microphone {
                settings.audio = AudioTrackSettings(codec: options.audioCodec ?? AudioCodec.defaultCodec(for: options.container),
                                                    format: m.format, onSessionClock: m is SyntheticAudioSource)
            }
            writer = try AssetWriter(settings: settings, rate: source.format.rate)
        }
        if let microphone {
            let capture = AudioCapture(source: microphone, writer: writer, zero: { [source] in source.sessionZeroNs })
            audio = capture
            try session.addOutput(AudioStarter(capture: capture))
        } else {
            audio = nil
        }
        writer.deferredStartEnabled = options.deferredStart
        writer.standby = options.standby
        try session.addOutput(writer)
        frameCount = options.length.frameCount(at: source.format.rate)
        guard frameCount > 0 else { throw UsageError("nothing to record: the length is 0 frames") }
        if case .seconds = options.length, !options.liveFrameRates.isEmpty {
            // Media time, whatever rates the recording runs at (the frame limit is the most it can hold).
            session.mediaTimeLimit = Double(frameCount) * source.format.rate.interval
        }
    }

    /// Opens the recording's storage: the plain output directory, or the pool (the default one
    /// created on first use), checked for a free slot and not adjusting its capacity, healed
    /// when slots are missing. Under Deferred Start this runs after the first frame.
    private static func openStorage(_ options: RecordOptions, directory: FileStorage,
                                    into opened: OpenedBox) throws -> any ClipStorage {
        let storage: any ClipStorage
        var created = false
        let pool: StoragePool?
        let remainingBefore: Int64?
        var preparation: BackgroundPreparation? = nil
        switch options.storage {
        case .plain:
            pool = nil
            storage = directory
        case .pool(let path):
            let p = try StoragePool.open(at: path)
            pool = p
            storage = try PoolStorage(pool: p, directory: options.outputDirectory, reclaimsDeletedClips: options.loopBudget != nil)
        case .defaultPool:
            let (p, made) = try StoragePool.openDefault()
            pool = p
            created = made != nil
            // Never holds a recording up: clips that find no free slot (yet) go to plain files.
            storage = try PoolStorage(pool: p, directory: options.outputDirectory, claimWhileAdjusting: true,
                                      reclaimsDeletedClips: options.loopBudget != nil)
            if made != nil { preparation = p.startPreparing(command: options.poolPreparationCommand) }
            p.handReplenishingOver(to: options.poolPreparationCommand)   // slots are prepared in a detached process
        }
        if let pool {
            // Like isProVideoStorageSupported plus the busy check: refuse before recording
            // (a pool of `--pool` only; the default pool records beside its preparation).
            let status = try pool.status()
            if options.storage != .defaultPool && status.busyReasons.contains("adjustingCapacity") {
                let pct = Int(saturating: 100 * (status.progress["adjustingCapacity"] ?? 0))
                throw PoolError.busy("adjusting capacity (\(pct)% done); `reel pool wait` waits until it is ready")
            }
            remainingBefore = status.remainingCapacity
            // Slots missing (released, a dead process's, a failed preparation): made again in
            // the background — the default pool's paced in a detached process, as on first
            // use; meanwhile clips that find no free slot are plain files.
            if preparation == nil && pool.needsReplenishing {
                if options.storage == .defaultPool {
                    try pool.replenish(reason: "replenishing", preallocate: false)
                    preparation = pool.startPreparing(command: options.poolPreparationCommand)
                } else {
                    pool.replenishInBackground()
                }
            }
        } else {
            remainingBefore = nil
        }
        opened.withLock { $0 = OpenedStorage(pool: pool, created: created, remainingBefore: remainingBefore, preparation: preparation) }
        return storage
    }

    /// The smallest segment size (`--segment-size`): 64 KiB.
    public static let smallestSegmentSize: Int64 = 64 << 10

    /// Memory the synthetic sensor's buffers may take: what lets the writer hold about a
    /// second of 1920×1920 frames while a clip opens (FFV1 needs 300–600 ms here).
    public static let sensorBudget = 192 << 20

    /// Buffers of the synthetic sensor of side `side`: as many as `sensorBudget` holds, 12 to 40.
    public static func sensorBuffers(side: Int) -> Int {
        let frameBytes = side * side * 3 / 2
        return min(40, max(12, sensorBudget / max(1, frameBytes)))
    }

    /// Frames the writer may hold: the source's buffers (not counting a photo ring's) but 4
    /// (capture keeps filling while the writer holds the rest): about a second of frames.
    public static func holdFrames(sourceBuffers: Int) -> Int { max(1, sourceBuffers - 4) }

    /// `holdFrames` for the synthetic sensor of `side`.
    public static func holdFrames(synthetic side: Int) -> Int { holdFrames(sourceBuffers: sensorBuffers(side: side)) }

    /// `reel-YYYYMMDD-HHMMSS` in local time, or `…-2`, `…-3`, … when a file in `directory`
    /// already starts with that prefix (two recordings started in the same second).
    public static func defaultPrefix(unusedIn directory: String) -> String {
        let base = defaultPrefix()
        // An unreadable directory is reported by the writer when it creates the clip.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var prefix = base
        var n = 1
        while names.contains(where: { $0.hasPrefix(prefix + "-") || $0 == SegmentIndex.fileName(prefix: prefix) }) {
            n += 1
            prefix = "\(base)-\(n)"
        }
        return prefix
    }

    /// `reel-YYYYMMDD-HHMMSS` in local time.
    public static func defaultPrefix() -> String {
        var t = time(nil)
        var tm = tm()
        localtime_r(&t, &tm)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "reel-\(tm.tm_year + 1900)\(two(tm.tm_mon + 1))\(two(tm.tm_mday))-\(two(tm.tm_hour))\(two(tm.tm_min))\(two(tm.tm_sec))"
    }

    /// Starts recording on the running session (`AssetWriter.startRecording`): the next frame
    /// captured opens the first clip of a new take. Returns the request as the summary lists it.
    /// - Throws: `RecordToggleError` (already recording; the recording is not running).
    @discardableResult
    public func startRecording(source: String) throws(RecordToggleError) -> RecordingToggle {
        clocked(try writer.startRecording(source: source))
    }

    /// Stops recording (`AssetWriter.stopRecording`): the clip ends with the last frame
    /// captured before the request and is published; the session keeps running.
    /// - Throws: `RecordToggleError` (not recording; the recording is not running).
    @discardableResult
    public func stopRecording(source: String) throws(RecordToggleError) -> RecordingToggle {
        clocked(try writer.stopRecording(source: source))
    }

    /// Stops when recording, starts otherwise.
    /// - Throws: `RecordToggleError`.
    @discardableResult
    public func toggleRecording(source: String) throws(RecordToggleError) -> RecordingToggle {
        clocked(try writer.toggleRecording(source: source))
    }

    /// `toggle` with `atSeconds` since `run` started.
    private func clocked(_ toggle: RecordingToggle) -> RecordingToggle {
        var t = toggle
        if let start = runStart.withLock({ $0 }) { t.atSeconds = max(0, t.time - Double(start) / 1e9) }
        return t
    }

    /// Ends the recording early (SIGINT): the clip so far is finished and kept. Before `run`
    /// has started the session, the run ends as it begins.
    public func stop() {
        stopped.set()
        session.stopRunning(beforeRun: true)
    }

    /// Records on the calling thread; `progress` is called about twice a second from another.
    public func run(progress: (@Sendable (RecordingProgress) -> Void)? = nil) -> RecordingSummary {
        let start = MonotonicClock.now()
        let ageAtStart = Recording.processAgeNanoseconds()
        runStart.withLock { $0 = start }
        writer.settings.segmentIndex?.takeAnchor()
        writer.start()
        let monitorDone = SetOnceFlag()
        let monitor = Thread { [self] in
            var ticks = 0
            while !monitorDone.isSet {
                usleep(100_000)
                if case .failed = writer.status { session.stopRunning() }
                let (framesNow, bytesNow) = writer.encoded
                rate.add(bytes: bytesNow, at: mediaNanoseconds(frames: framesNow))
                // The pool's free bytes once a second (a manifest read), for the time left.
                if ticks % 10 == 0, let pool { poolRemaining.withLock { $0 = pool.remainingCapacity } }
                ticks += 1
                if let progress { progress(snapshot(since: start)) }
            }
        }
        monitor.start()
        var sourceError: (any Error)? = nil
        do { _ = try session.run(frameLimit: frameCount) } catch { sourceError = error }
        let result = writer.finishAndWait()
        audio?.stopAndWait()
        writer.settings.segmentIndex?.runEnded()
        monitorDone.set()
        let (framesEncoded, bytesEncoded) = writer.encoded
        rate.add(bytes: bytesEncoded, at: mediaNanoseconds(frames: framesEncoded))
        // The default pool's background preparation is handed over (or begun) before the end.
        if let preparation = opened.withLock({ $0.preparation }) {
            preparation.hurry()
            preparation.wait()
        }
        pool?.waitForReplenishing()
        let stats = session.stats
        var drops = stats.drops
        for (reason, n) in result.drops.byReason { drops.add(reason, count: n) }
        let write = result.write ?? WriteStats(writeMode: options.storage == .plain ? "plain" : "buffered")
        let storageSummary = StorageSummary(
            mode: options.storage == .plain ? "plain" : "pool", pool: pool?.path, poolCreated: poolCreated,
            writeMode: write.writeMode, remainingCapacityBefore: opened.withLock { $0.remainingBefore },
            remainingCapacityAfter: pool?.remainingCapacity, writeLatencyMs: write.histogram.summary,
            longestStallMs: Double(write.histogram.maxNanos) / 1e6, ringBytes: write.ringBytes,
            ringHighWaterBytes: write.ringHighWater, ringFullWaits: write.ringFullWaits, slotGrowths: write.slotGrowths,
            bitrate: nil, remainingSeconds: nil, leftPool: nil)
        let reason: String
        var errorText: String? = nil
        if let e = result.error {
            reason = "failed"; errorText = e.description
        } else if let e = sourceError {
            reason = "failed"
            let kept = result.clips.reduce(0) { $0 + $1.frames }
            let secs = result.clips.reduce(0.0) { $0 + $1.durationSeconds }
            errorText = "\(e); kept \(kept) frames (\(formatted(secs)) s) in \(result.clips.count) clip\(result.clips.count == 1 ? "" : "s")"
                + (result.clips.last.map { ", last \($0.path)" } ?? "")
            let status = (e as? any UserFacingError)?.exitStatus ?? ExitStatus.ioError
            sourceFailure.withLock { $0 = SourceFailure(description: errorText!, exitStatus: status) }
        } else {
            reason = stopped.isSet ? "interrupted" : "completed"
        }
        lastWrite.withLock { $0 = write }
        // Start and stop requests on the recording's clock, and on the clips they began or ended.
        let origin = Double(start) / 1e9
        let toggles = result.toggles.map { t -> RecordingToggle in
            var t = t
            t.atSeconds = max(0, t.time - origin)
            return t
        }
        var clips = result.clips
        for i in clips.indices {
            // Media time since the recording's first frame, as `leftPool.atSeconds` counts plain clips.
            if let t = clips[i].leftPoolSeconds { clips[i].leftPoolSeconds = max(0, t - (result.clips.first?.firstPTS ?? t)) }
            let c = clips[i]
            if let t = toggles.first(where: { $0.action == .start && $0.take == c.take && $0.frameIndex == c.firstFrameIndex }) {
                clips[i].startRequestSeconds = t.atSeconds
            }
            if let t = toggles.first(where: { $0.action == .stop && $0.take == c.take && $0.frameIndex == c.lastFrameIndex }) {
                clips[i].stopRequestSeconds = t.atSeconds
            }
        }
        var summary = RecordingSummary(
            clips: clips, framesCaptured: stats.framesCaptured, framesWritten: result.framesWritten,
            framesDropped: drops.total, dropReasons: drops.table, framesLost: result.framesLost,
            seams: stats.seams, frameRateChanges: stats.frameRateChanges, longestSeamWaitMs: result.longestSeamWait * 1000,
            longestClipOpenMs: result.longestClipOpen * 1000,
            firstFrameLatencyMs: (result.firstFrameLatency ?? 0) * 1000, clipsOpenedAhead: result.clipsOpenedAhead,
            writerQueueHighWater: result.queueHighWater, writerQueueCapacity: writer.settings.queueCapacity,
            startMode: options.deferredStart ? "deferred" : "eager",
            framesHeldBeforeReady: result.framesHeldBeforeReady, longestHoldMs: result.longestHold * 1000,
            firstFrameWrittenMs: result.firstFrameWrittenAt.flatMap { at in
                ageAtStart.map { Double($0 + (at - min(at, start))) / 1e6 }
            },
            storage: storageSummary,
            // What the source actually delivers: a camera's rate is the one S_PARM settled on,
            // and a camera is always real time.
            source: options.source.description, fps: session.source.format.rate.description, realtime: session.source.isRealtime,
            elapsedSeconds: MonotonicClock.seconds(since: start), stopReason: reason, error: errorText)
        summary.storage.bitrate = rate.bitsPerSecond
        if let pool, let bitrate = summary.storage.bitrate {
            summary.storage.remainingSeconds = summary.storage.remainingCapacityAfter.map { Double($0) * 8 / bitrate }
            // What `reel pool status` reckons its remaining time at; the pool is fine without it.
            do { try pool.noteBitrate(bitrate) } catch {}
        }
        if pool != nil { summary.storage.leftPool = Recording.leftPool(clips, origin: clips.first?.firstPTS ?? 0) }
        summary.framesNotRecorded = result.framesNotRecorded
        summary.sensorDrawingCPUSeconds = (session.source as? SyntheticSource)?.drawingCPUSeconds
        summary.framesDecimated = stats.framesDecimated
        summary.recordingToggles = toggles
        // Clip numbers as in the names (a run after earlier ones in its index goes on after them).
        summary.segments = result.segmentCuts.map { var c = $0; c.clip = writer.settings.fileNumber(c.clip); return c }
        summary.loopDeletions = result.loopDeletions
        summary.index = writer.settings.segmentIndex?.summary
        if let a = audio, let counts = writer.audioCounts, let track = writer.settings.audio {
            summary.audio = AudioSummary(device: a.source.name, sampleRate: track.format.sampleRate, channels: track.format.channels,
                                         codec: track.codec.rawValue, counts: counts,
                                         sessionZeroMonotonicNs: a.sessionZeroNs.map { Int64($0) })
            if writer.settings.audio?.onSessionClock == true {
                summary.audio?.avOffset = MeasuredAVOffset.readBack(clips, frameRate: session.source.format.rate.perSecond)
            }
        }
        return summary
    }

    /// Media time of `frames` frames at the source's rate, in ns: the bit rate is of media
    /// time, so that it says how long the pool lasts whether or not the source runs in real time.
    private func mediaNanoseconds(frames: Int) -> UInt64 {
        UInt64(max(0, Double(frames) * session.source.format.rate.interval * 1e9))
    }

    /// What of `clips` went outside the pool's slots: clips grown beyond it and plain clips,
    /// from the first of them (`origin`: the recording's first frame on the session clock).
    static func leftPool(_ clips: [ClipSummary], origin: Double) -> LeftPool? {
        var left: LeftPool? = nil
        for c in clips where c.storage == "plain" || c.bytesBeyondPool > 0 {
            let at = c.storage == "plain" ? max(0, c.firstPTS - origin) : (c.leftPoolSeconds ?? 0)
            let bytes = c.storage == "plain" ? c.bytes : c.bytesBeyondPool
            if left == nil { left = LeftPool(atSeconds: at, bytes: 0, clips: 0) }
            left!.atSeconds = min(left!.atSeconds, at)
            left!.bytes += bytes
            left!.clips += 1
        }
        return left
    }

    /// The bit rate over the last 10 s and, through a pool, the time its free slots hold at
    /// it (free bytes as last read, at most a second ago).
    public var remainingTime: (bitrate: Double?, remainingSeconds: Double?) {
        let bitrate = rate.bitsPerSecond
        guard let bitrate, let free = poolRemaining.withLock({ $0 }) else { return (bitrate, nil) }
        return (bitrate, Double(free) * 8 / bitrate)
    }

    private func snapshot(since start: UInt64) -> RecordingProgress {
        let stats = session.stats
        let (frames, bytes) = writer.progress
        let elapsed = MonotonicClock.seconds(since: start)
        var p = RecordingProgress(elapsed: elapsed, framesCaptured: stats.framesCaptured, framesWritten: frames,
                                  fps: elapsed > 0 ? Double(stats.framesCaptured) / elapsed : 0,
                                  framesDropped: stats.drops.total + writer.framesDroppedSoFar, bytesWritten: bytes, ratio: session.ratio)
        (p.bitrate, p.remainingSeconds) = remainingTime
        if audio != nil, let peak = writer.takeAudioPeak() {
            p.audioPeakDb = peak == 0 ? -.infinity : 20 * log10(Double(peak) / 32768)
        }
        return p
    }

    /// Nanoseconds since this process started (`/proc/self/stat` field 22, in clock ticks since
    /// boot, against `CLOCK_BOOTTIME`): 10 ms resolution. Nil when /proc cannot be read.
    static func processAgeNanoseconds() -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields after the command name (which may hold spaces): state is field 3, starttime 22.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let ticks = UInt64(fields[19]) else { return nil }
        let hz = sysconf(Int32(_SC_CLK_TCK))
        var now = timespec()
        guard hz > 0, clock_gettime(CLOCK_BOOTTIME, &now) == 0 else { return nil }
        let started = ticks * 1_000_000_000 / UInt64(hz)
        let current = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        return current > started ? current - started : 0
    }

    /// The storage layer's figures of the last `run` (every write's service time, the ring),
    /// for reports drawn above the library (`reel record --report`); nil before `run` ends.
    public var writeStats: WriteStats? { lastWrite.withLock { $0 } }

    /// The error a failed summary stands for, with its exit status.
    public var failure: (any UserFacingError)? {
        if case .failed(let e) = writer.status { return e }
        return sourceFailure.withLock { $0 }
    }
}
