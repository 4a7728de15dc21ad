import Foundation
import ReelAudio
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelMetrics
import Synchronization

/// Encodes captured frames into clips, one clip per run of one ratio — and, with a segment
/// duration, per segment (`AVAssetWriter` with the cuts built in; where a clip ends is the
/// `CutPolicy`'s decision).
///
/// Capture hands frames over with `offer` (or `append`); they wait in a bounded queue that
/// one encode thread drains. When a frame's ratio differs from the clip's, the encode thread
/// hands the clip to the finaliser thread (flush, trailer, sync, publish) and opens the next
/// clip at that frame (likewise at the first frame at or after a segment boundary), keyframe
/// first — capture never waits for a clip to close. With a loop budget the finaliser also
/// deletes the oldest finished clips (`LoopKeeper`).
///
/// Thread safety: all mutable state is guarded by `lock` (an `NSCondition`), except what
/// only the encode thread touches (`EncodeState`).
public final class AssetWriter: FrameOutput, @unchecked Sendable {
    /// The settings it was created with (codec, container, directory, name prefix, queue capacity,
    /// …).
    public let settings: WriterSettings
    private let rate: FrameRate

    /// A frame, when it was offered, and whether it waited for the writer to be ready (Deferred Start).
    /// `close`: a stop request — the clip in progress ends and is published now; `begin`: a
    /// start request opened take `take`, whose first frame is `firstFrame` (the next captured).
    /// `audio`: sound arrived (it waits in `audioInbox`, not in the queue).
    private enum Item { case frame(CapturedFrame, offeredAt: UInt64, held: Bool), split, close, begin(take: Int, firstFrame: Int), finish, audio }

    // Guarded by `lock`.
    /// Guards the writer's state (the sound's methods, `AssetWriterAudio.swift`, take it too).
    let lock = NSCondition()
    private var queue: [Item] = []
    private var _status: WriterStatus = .unknown
    private var asyncWaiters: [CheckedContinuation<Void, Never>] = []
    private var finishWaiters: [CheckedContinuation<WriterResult, Never>] = []
    private var result: WriterResult?
    private var finishRequested = false
    private var cancelRequested = false
    private var counts = WriterCounters()
    private var hold = DeferredStartHold()
    private var takes = RecordingTakes()
    /// The clips started at a segment boundary so far.
    private var segmentCuts: [SegmentCut] = []
    /// Sound delivered (the feed has its own lock) and whether the encode thread has yet to look.
    let audioFeed = AudioFeed()
    /// The largest sample since the level meter last read it (−1: none since).
    let audioPeak = Atomic<Int>(-1)
    /// The sound's level over the last few tenths of a second, for any number of readers (the page).
    public let audioLevel = AudioLevelMeter()
    var audioWaiting = false
    /// Where the last frame taken ends on the session clock (ns): how far the video has got.
    var _videoReachedNs: Int64?
    /// What the encode thread counted of the sound, once it ends.
    var audioResult: AudioCounts?

    // The stages around the encode thread, each with its own lock.
    /// Opens clips ahead of the frames that start them.
    private let opener: ClipOpener
    /// Closes clips off the frame path and publishes them.
    private let finaliser = Finaliser()

    /// - Throws: `WriterError.unsupportedPair` or `.encoderUnavailable` for settings that cannot work.
    public init(settings: WriterSettings, rate: FrameRate) throws(WriterError) {
        quietLibav()
        try settings.validate()
        self.settings = settings
        self.rate = rate
        opener = ClipOpener(settings: settings, rate: rate, finaliser: finaliser)
        queue.reserveCapacity(settings.queueCapacity + 2)
    }

    /// Where the writer is: `unknown` until started, `writing`, then `completed`, `cancelled` or
    /// `failed`.
    public var status: WriterStatus { lock.lock(); defer { lock.unlock() }; return _status }

    /// Deferred Start (`AVCaptureOutput.deferredStartEnabled`): when true, the session does not
    /// `prepare` this writer before the source starts but calls `runDeferredStart` after the
    /// first preview frame; until then (and until it returns) the writer holds offered frames
    /// in its queue — a ring of `settings.queueCapacity` frames — and writes them once ready.
    /// A frame that finds the ring full is refused as `.dropped(.outOfBuffers)` in real time
    /// (it waits, not in real time). Default false. Set it before `start()`.
    public var deferredStartEnabled: Bool {
        get { lock.lock(); defer { lock.unlock() }; return hold.enabled }
        set {
            lock.lock()
            if _status == .unknown && counts.framesAccepted == 0 { hold.setEnabled(newValue) }
            lock.unlock()
        }
    }

    /// Frames held before the writer was ready, and the longest any of them waited (seconds).
    public var holdCounters: (frames: Int, longest: Double) {
        lock.lock(); defer { lock.unlock() }
        return (hold.framesHeld, Double(hold.longestHold) / 1e9)
    }

    // MARK: Start and stop on a running session

    /// Standby: the writer starts stopped — frames offered are not recorded (and not dropped:
    /// `framesNotRecorded` counts them) until `startRecording`. Default false (recording from
    /// the first frame). Set it before `start()`.
    public var standby: Bool {
        get { lock.lock(); defer { lock.unlock() }; return takes.standbyAtStart }
        set {
            lock.lock()
            if _status == .unknown && counts.framesAccepted == 0 { _ = takes.setStandby(newValue) }
            lock.unlock()
        }
    }

    /// Whether the movie output is switched on: frames offered are recorded (false in standby
    /// and after a stop). Once the writer has finished it keeps its last value (what the
    /// recording was doing when it ended).
    public var isRecording: Bool {
        lock.lock(); defer { lock.unlock() }
        return takes.isOn
    }

    /// The start and stop requests applied so far, in order (`atSeconds` 0: `Recording` fills it in).
    public var recordingToggles: [RecordingToggle] {
        lock.lock(); defer { lock.unlock() }
        return takes.toggles
    }

    /// Starts recording on a running session: the next frame offered (the first captured
    /// after this call) opens a new clip, the first of a new take. `source` says who asked
    /// (`page`, `socket`, an event's source).
    /// A request before `start()` applies from the first frame.
    /// - Throws: `RecordToggleError.alreadyRecording`, or `.notWriting` once the writer
    ///   finishes or fails.
    @discardableResult
    public func startRecording(source: String) throws(RecordToggleError) -> RecordingToggle {
        lock.lock(); defer { lock.unlock() }
        guard _status == .writing || _status == .unknown, !finishRequested else { throw .notWriting }
        let (t, take, first) = try takes.start(source: source, at: Double(MonotonicClock.now()) / 1e9)
        enqueue(.begin(take: take, firstFrame: first))
        return t
    }

    /// Stops recording on a running session: the clip in progress ends with the last frame
    /// offered before this call and is published at once (by the finaliser thread); the session
    /// keeps running and later frames are not recorded until `startRecording`.
    /// - Throws: `RecordToggleError.notRecording`, or `.notWriting` (see `startRecording`).
    @discardableResult
    public func stopRecording(source: String) throws(RecordToggleError) -> RecordingToggle {
        lock.lock(); defer { lock.unlock() }
        guard _status == .writing || _status == .unknown, !finishRequested else { throw .notWriting }
        let t = try takes.stop(source: source, at: Double(MonotonicClock.now()) / 1e9)
        enqueue(.close)
        return t
    }

    /// `stopRecording` while recording, `startRecording` otherwise (one decision under the lock's
    /// view at the time; a concurrent request may win, then this one throws).
    /// - Throws: what those throw.
    @discardableResult
    public func toggleRecording(source: String) throws(RecordToggleError) -> RecordingToggle {
        lock.lock(); let on = takes.isOn; lock.unlock()
        if on { return try stopRecording(source: source) }
        return try startRecording(source: source)
    }

    /// Deferred Start: initialises the writer now — its storage (through `settings.storage`,
    /// which for `reel record` opens, creates or recovers the pool on first use), the first
    /// clip's slot or file and its encoder — then releases the frames held meanwhile to the
    /// encode thread. A failure is not reported here: the first frame opens the clip again
    /// and reports it then. Once; later calls return at once.
    public func runDeferredStart(ratio: AspectRatio, size: Size, timescale: Int32) {
        lock.lock()
        guard !hold.ready, !hold.running else { lock.unlock(); return }
        hold.running = true
        let open = (_status == .unknown || _status == .writing) && !finishRequested && !opener.hasFirst
        lock.unlock()
        let p = open ? opener.openFirst(ratio: ratio, size: size, timescale: timescale) : nil
        lock.lock()
        let kept = (_status == .unknown || _status == .writing) && !finishRequested && p.map(opener.keepFirst) == true
        hold.markReady(at: MonotonicClock.now())
        hold.running = false
        lock.broadcast()
        lock.unlock()
        if !kept, let p { opener.discard([p]) }
    }

    /// There is room for another frame (`isReadyForMoreMediaData`).
    public var isReadyForMoreMediaData: Bool {
        lock.lock(); defer { lock.unlock() }
        return _status == .writing && queue.count < settings.queueCapacity
    }

    /// Frames the writer dropped so far (`outOfBuffers`: storage behind in real time), for
    /// progress lines; the capture's own drops are in the session's stats.
    public var framesDroppedSoFar: Int {
        lock.lock(); defer { lock.unlock() }
        return counts.drops.total
    }

    /// Frames encoded so far and the bytes of their packets (before the muxer's fragments),
    /// for the bit rate.
    public var encoded: (frames: Int, bytes: Int64) {
        lock.lock(); defer { lock.unlock() }
        return (counts.framesWritten, counts.packetBytes)
    }

    /// Frames written and bytes so far, for progress lines.
    public var progress: (frames: Int, bytes: Int64) {
        lock.lock(); defer { lock.unlock() }
        return (counts.framesWritten, counts.bytesFinished + counts.bytesCurrent)
    }

    /// Starts the session: frames may be appended from now on. The clip timelines start at
    /// each clip's first frame; `time` is kept for symmetry with `AVAssetWriter` and ignored.
    public func start(at time: Timestamp? = nil) {
        lock.lock()
        guard _status == .unknown else { lock.unlock(); return }
        _status = .writing
        lock.unlock()
        let thread = Thread { [self] in encodeLoop() }
        thread.name = "reel.encode"
        thread.stackSize = 4 << 20
        thread.start()
        finaliser.recycle = { [opener] encoder in opener.recycle(encoder) }
        finaliser.keeper = settings.loopBudget.map(LoopKeeper.init(budget:))
        finaliser.storage = settings.storage
        finaliser.index = settings.segmentIndex
        finaliser.start()
    }

    // MARK: Appending

    /// Takes `frame` if there is room; with `waiting`, blocks until there is (back-pressure).
    /// `.full` when there is no room in real time; `.closed` when not writing.
    public func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        lock.lock(); defer { lock.unlock() }
        guard _status == .writing, !finishRequested else { return .closed }
        takes.offered(frame.index)
        // Stopped (standby, or after a stop request): the frame is not recorded — not a drop.
        guard takes.isOn else { takes.notRecorded(); return .taken }
        counts.noteRatio(frame.ratio)
        if queue.count >= settings.queueCapacity {
            // Not ready yet (Deferred Start) and the hold ring is full: no buffer for this frame.
            guard waiting else { return hold.ready ? .full : .dropped(.outOfBuffers) }
            let t0 = MonotonicClock.now()
            let generation = takes.generation
            // Finishing (or cancelling) ends the wait too: nothing may queue behind `.finish`;
            // so does a stop request (the frame then belongs to no take).
            while queue.count >= settings.queueCapacity && _status == .writing && !finishRequested
                    && takes.generation == generation { lock.wait() }
            counts.waited(MonotonicClock.now() - t0)
            guard _status == .writing, !finishRequested else { return .closed }
            // Stopped (and maybe started again) while it waited: it was not taken before the
            // stop, and a new take starts after it, so it is not recorded.
            if takes.generation != generation { takes.notRecorded(); return .taken }
        }
        enqueueFrame(frame)
        return .taken
    }

    /// Appends `frame`, suspending while the writer is full.
    /// - Throws: `WriterError.notWriting` when the writer has not started, has finished or failed.
    public func append(_ frame: CapturedFrame) async throws(WriterError) {
        var generation: Int? = nil
        while true {
            if try tryEnqueue(frame, generation: &generation) { return }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                lock.lock()
                if queue.count < settings.queueCapacity || _status != .writing { lock.unlock(); c.resume() }
                else { asyncWaiters.append(c); lock.unlock() }
            }
        }
    }

    /// `generation`: the start/stop count at the first try (a frame that waited across a
    /// stop is not recorded, as in `offer`).
    private func tryEnqueue(_ frame: CapturedFrame, generation: inout Int?) throws(WriterError) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard _status == .writing, !finishRequested else { throw errorForNotWriting() }
        takes.offered(frame.index)
        if let g = generation, g != takes.generation { takes.notRecorded(); return true }
        generation = takes.generation
        guard takes.isOn else { takes.notRecorded(); return true }
        guard queue.count < settings.queueCapacity else { return false }
        counts.noteRatio(frame.ratio)
        enqueueFrame(frame)
        return true
    }

    private func errorForNotWriting() -> WriterError {
        if case .failed(let e) = _status { return e }
        return .notWriting
    }

    /// Ends the current clip after the frames appended so far; the next frame starts a new one.
    public func split() {
        lock.lock(); defer { lock.unlock() }
        guard _status == .writing, !finishRequested else { return }
        enqueue(.split)
    }

    // MARK: Opening clips ahead

    /// Opens the first clip (storage, encoder; FFV1's first-frame allocation) now, before
    /// frames flow, for frames of `ratio` cropped to `size` on a clock of `timescale` — so
    /// that the first frames wait for nothing. `CaptureSession.run` calls it before its
    /// source starts. A failure here is not reported: the first frame opens the clip again
    /// and reports it then. Frames of another ratio or size throw the prepared clip away.
    public func prepare(ratio: AspectRatio, size: Size, timescale: Int32) {
        lock.lock()
        let open = (_status == .unknown || _status == .writing) && counts.framesAccepted == 0 && !finishRequested && !opener.hasFirst
        lock.unlock()
        guard open, let p = opener.openFirst(ratio: ratio, size: size, timescale: timescale) else { return }
        lock.lock()
        let kept = (_status == .unknown || _status == .writing) && !finishRequested && opener.keepFirst(p)
        lock.unlock()
        if !kept { opener.discard([p]) }
    }

    /// The session will switch to `ratio` (frames cropped to `size`) after the ratios it
    /// announced before: the writer opens that clip ahead, on its own thread, while the
    /// current one records (one clip ahead at most). A change that comes otherwise is
    /// opened when its first frame arrives.
    public func expect(ratio: AspectRatio, size: Size, timescale: Int32) {
        opener.expect(ratio: ratio, size: size, timescale: timescale)
    }

    /// Caller holds `lock`.
    private func enqueueFrame(_ frame: CapturedFrame) {
        let end = (Int128(frame.pts.value + frame.duration) * 1_000_000_000) / Int128(frame.pts.timescale)
        _videoReachedNs = Int64(end)
        if !hold.ready { hold.framesHeld += 1 }
        takes.taken(frame.index)
        enqueue(.frame(frame, offeredAt: MonotonicClock.now(), held: !hold.ready))
    }

    /// Caller holds `lock`.
    private func enqueue(_ item: Item) {
        if case .frame = item { counts.framesAccepted += 1 }
        queue.append(item)
        counts.queueHighWater = max(counts.queueHighWater, queue.count)
        lock.broadcast()
    }

    // MARK: Finishing

    /// Closes the last clip and waits for every clip to be published.
    public func finish() async -> WriterResult {
        await withCheckedContinuation { (c: CheckedContinuation<WriterResult, Never>) in
            lock.lock()
            // A writer that never started has its result at once.
            if result == nil { requestFinishLocked() }
            if let result { lock.unlock(); c.resume(returning: result); return }
            finishWaiters.append(c)
            lock.unlock()
        }
    }

    /// Stops writing at once (`cancelWriting`): frames still queued are not written and the
    /// clip in progress is thrown away; clips already closed at a seam stay. Status `cancelled`.
    @discardableResult
    public func cancel() -> WriterResult {
        lock.lock(); defer { lock.unlock() }
        switch _status {
        case .writing where !finishRequested:
            cancelRequested = true
            queue.removeAll()
            requestFinishLocked()
        case .unknown:
            requestFinishLocked()
            _status = .cancelled
        default:
            // Failed (the encode thread waits for `.finish` to close up) or already finishing.
            requestFinishLocked()
        }
        while result == nil { lock.wait() }
        return result!
    }

    /// `finish()` for callers on a plain thread.
    public func finishAndWait() -> WriterResult {
        lock.lock(); defer { lock.unlock() }
        requestFinishLocked()
        while result == nil { lock.wait() }
        return result!
    }

    private func requestFinishLocked() {
        if _status == .unknown {
            // Never started: nothing to write (a clip prepared ahead goes; its storage goes back).
            opener.discardFirst()
            hold.ready = true
            _status = .completed
            result = WriterResult(clips: [], framesWritten: 0, framesLost: 0, longestSeamWait: 0,
                                  longestClipOpen: 0, queueHighWater: 0, drops: DropCounts(), write: nil, error: nil,
                                  firstFrameLatency: nil, clipsOpenedAhead: 0, encodersReused: 0,
                                  framesHeldBeforeReady: 0, longestHold: 0, firstFrameWrittenAt: nil,
                                  framesNotRecorded: takes.framesNotRecorded, toggles: takes.toggles)
            lock.broadcast()
            return
        }
        if !finishRequested {
            finishRequested = true
            opener.stopOpening()
            queue.append(.finish)
            lock.broadcast()
            // Producers suspended in `append` learn at once that the writer takes no more.
            for w in asyncWaiters { w.resume() }
            asyncWaiters = []
        }
    }

    // MARK: The encode thread

    private func take() -> Item {
        lock.lock(); defer { lock.unlock() }
        while true {
            if !queue.isEmpty {
                if hold.ready { break }
                if case .frame = queue[0] {} else { break }
                // Held frames wait for Deferred Start. Should the writer be finished before
                // anyone ran it, it is ready now: the first frame opens its clip itself.
                if finishRequested && !hold.running { hold.markReady(at: MonotonicClock.now()); break }
            }
            if audioWaiting { audioWaiting = false; return .audio }
            lock.wait()
        }
        let item = queue.removeFirst()
        lock.broadcast()
        if !asyncWaiters.isEmpty { asyncWaiters.removeFirst().resume() }
        return item
    }

    private func encodeLoop() {
        var current: ClipRecorder? = nil
        var clipNumber = 0
        var splitNext = false
        var failure: WriterError? = nil
        var longestOpen: UInt64 = 0
        // The take of the clips opened now, and the index of its first frame (what verify expects).
        var currentTake = 1
        var takeFirstFrame = 0
        // Where clips end: ratio changes and the segment grid.
        // The mean inter-frame packet of the last clip handed over (segment sizes: `projectedBytes`).
        var earlierInterMean: Double? = nil
        var policy = CutPolicy(segmentDuration: settings.segmentDuration, segmentBytes: settings.segmentBytes)
        // The clips' sound, cut where the video is cut.
        var sound = settings.audio.map { AudioTrackWriter(settings: $0, feed: audioFeed) }
        // Where the current clip's last frame starts and ends on the session clock.
        var lastPTS: Timestamp? = nil
        var lastEnd: Timestamp? = nil
        /// Closes `c`'s sound at `end` (failures are the clip's: the finaliser salvages it).
        func closeSound(_ c: ClipRecorder, at end: Timestamp?) throws {
            if let end { try sound?.close(c, at: end) }
        }

        loop: while true {
            switch take() {
            case .finish:
                break loop
            case .audio:
                sound?.pull(recording: current != nil)
                if let c = current, let p = lastPTS, failure == nil {
                    do { try sound?.write(c, upTo: p) } catch {
                        failure = classify(error)
                        finaliser.submit(c, salvage: true)
                        current = nil
                        opener.stopOpening()
                        lock.lock(); _status = .failed(failure!); lock.broadcast(); lock.unlock()
                    }
                }
            case .split:
                splitNext = true
            case .close:
                // A stop request: the clip ends here and is published now; the session goes on.
                guard let c = current else { continue }
                do { try closeSound(c, at: lastEnd) } catch { finaliser.submit(c, salvage: true); current = nil; continue }
                finaliser.submit(c)
                current = nil
                lock.lock(); counts.clipHandedOver(); lock.unlock()
                // The next start most likely records at this ratio: open that clip ahead.
                opener.expectUnlessAnnounced(ratio: c.ratio, size: c.size, timescale: c.sessionStart.timescale, afterSettled: false)
            case .begin(let t, let first):
                currentTake = t
                takeFirstFrame = first
                splitNext = true
            case .frame(let frame, let offeredAt, let held):
                if failure != nil { continue }   // counted as lost at the end
                // Held: it waited from its hand-over until the writer was ready.
                lock.lock(); let handedOver = hold.handedOver(offeredAt: offeredAt, held: held); lock.unlock()
                let cut = policy.cut(before: frame.pts, ratio: frame.ratio, size: frame.crop.size,
                                     clip: current.map { ($0.ratio, $0.size) },
                                     projectedBytes: settings.segmentBytes == nil ? nil : current?.projectedBytes(earlierInterMean: earlierInterMean))
                do {
                    if let c = current, cut == nil, !splitNext {
                        if settings.dropWhenStorageIsBehind && c.storageIsBehind {
                            lock.lock(); counts.drops.add(.outOfBuffers); counts.framesAccepted -= 1; lock.unlock()
                            continue
                        }
                        try c.append(frame)
                    } else {
                        if let c = current {
                            if let cut, cut.boundary != nil || cut.reasons.contains(.size) {
                                let reason = [cut.boundary != nil ? "duration" : nil, cut.reasons.contains(.size) ? "size" : nil]
                                    .compactMap { $0 }.joined(separator: "+")
                                let at = SegmentCut(frameIndex: frame.index, pts: frame.pts.seconds,
                                                    boundarySeconds: cut.boundary.flatMap(policy.boundarySeconds), reason: reason,
                                                    clip: clipNumber + 1, ratioSeam: cut.reasons.contains(.ratio))
                                lock.lock(); segmentCuts.append(at); lock.unlock()
                            }
                            earlierInterMean = c.interMean ?? earlierInterMean
                            // The sound is cut at the new clip's first frame.
                            try closeSound(c, at: frame.pts)
                            finaliser.submit(c)
                            current = nil
                            lock.lock(); counts.clipHandedOver(); lock.unlock()
                        }
                        splitNext = false
                        clipNumber += 1
                        // Not real time: clips still closing hold storage (a pool slot each);
                        // let the finaliser catch up before claiming more (real time never waits).
                        if !settings.dropWhenStorageIsBehind { finaliser.waitUntilBacklog(below: 2) }
                        let t0 = MonotonicClock.now()
                        let c: ClipRecorder
                        let (ready, idle) = opener.take(number: clipNumber, for: frame)
                        if let ready {
                            c = try ClipRecorder(prepared: ready, first: frame, settings: settings,
                                                 take: currentTake, takeFirstFrame: takeFirstFrame)
                        } else {
                            c = try ClipRecorder(number: clipNumber, first: frame, settings: settings, rate: rate,
                                                 reusing: idle, take: currentTake, takeFirstFrame: takeFirstFrame)
                        }
                        current = c
                        try c.append(frame)
                        longestOpen = max(longestOpen, MonotonicClock.now() - t0)
                        sound?.pull(recording: true)
                        lock.lock(); counts.clipOpened(); lock.unlock()
                        opener.opened(clip: clipNumber)
                        // Segments: the next clip most likely starts at the next boundary at this
                        // ratio — open it ahead, unless a ratio change was announced first.
                        if settings.segmentDuration != nil || settings.segmentBytes != nil {
                            opener.expectUnlessAnnounced(ratio: c.ratio, size: c.size, timescale: c.sessionStart.timescale, afterSettled: true)
                        }
                    }
                    lastPTS = frame.pts
                    lastEnd = Timestamp(value: frame.pts.value + frame.duration, timescale: frame.pts.timescale)
                    // The sound that came meanwhile, up to this frame (a busy writer may see no
                    // `.audio` item for a while: frames come first in the queue).
                    if let c = current {
                        sound?.pull(recording: true)
                        try sound?.write(c, upTo: frame.pts)
                    }
                    lock.lock()
                    counts.written(handedOver: handedOver, now: MonotonicClock.now())
                    counts.bytesCurrent = current?.bytes ?? 0
                    counts.packetBytes += current?.takePacketBytes() ?? 0
                    lock.unlock()
                } catch {
                    // The failing frame is lost; the clip so far is salvaged by the finaliser.
                    failure = classify(error)
                    if let c = current { finaliser.submit(c, salvage: true) }
                    current = nil
                    opener.stopOpening()
                    lock.lock()
                    _status = .failed(failure!)
                    lock.broadcast()
                    for w in asyncWaiters { w.resume() }
                    asyncWaiters = []
                    lock.unlock()
                }
            }
        }
        opener.closeAndDiscardUnused()
        lock.lock(); let cancelling = cancelRequested; lock.unlock()
        if let c = current {
            if cancelling { c.discard() } else {
                do { try closeSound(c, at: lastEnd) } catch { failure = failure ?? classify(error) }
                finaliser.submit(c)
            }
        }
        let (clips, finalError, write) = finaliser.finishAll()
        let loopDeletions = finaliser.loopDeletions
        opener.releaseIdleEncoders()
        let (openedAhead, encodersReused) = opener.counts

        lock.lock()
        audioResult = sound?.counts
        let error = failure ?? finalError.map(classify)
        let kept = clips.reduce(0) { $0 + $1.frames }
        // Frames the writer took in but no published clip holds.
        // (Cancelled: frames thrown away on purpose are not "lost".)
        let framesLostTotal = cancelRequested ? 0 : counts.framesAccepted - kept
        var finalErrorWithKept = error
        if let e = error {
            finalErrorWithKept = e.with(kept: KeptSummary(
                frames: kept, seconds: clips.reduce(0) { $0 + $1.durationSeconds },
                bytes: clips.reduce(0) { $0 + $1.bytes }, clips: clips.count, lastPath: clips.last?.path,
                framesLost: framesLostTotal))
            _status = .failed(finalErrorWithKept!)
        } else {
            _status = cancelRequested ? .cancelled : .completed
        }
        let r = WriterResult(clips: clips, framesWritten: kept, framesLost: framesLostTotal,
                             longestSeamWait: Double(counts.longestSeamWait) / 1e9,
                             longestClipOpen: Double(longestOpen) / 1e9,
                             queueHighWater: counts.queueHighWater, drops: counts.drops, write: write, error: finalErrorWithKept,
                             firstFrameLatency: counts.firstFrameLatency.map { Double($0) / 1e9 }, clipsOpenedAhead: openedAhead,
                             encodersReused: encodersReused, framesHeldBeforeReady: hold.framesHeld,
                             longestHold: Double(hold.longestHold) / 1e9, firstFrameWrittenAt: counts.firstFrameWrittenAt,
                             framesNotRecorded: takes.framesNotRecorded, toggles: takes.toggles, segmentCuts: segmentCuts,
                             loopDeletions: loopDeletions)
        result = r
        for w in asyncWaiters { w.resume() }
        asyncWaiters = []
        let waiters = finishWaiters
        finishWaiters = []
        lock.broadcast()
        lock.unlock()
        for w in waiters { w.resume(returning: r) }
    }

    private func classify(_ error: any Error) -> WriterError {
        let none = KeptSummary(frames: 0, seconds: 0, bytes: 0, clips: 0, lastPath: nil, framesLost: 0)
        switch error {
        case let e as WriterError: return e
        case let e as SystemError where e.isOutOfSpace: return .outOfSpace(e, kept: none)
        case let e as SystemError: return .storage(e.description, kept: none, status: ExitStatus.ioError)
        case let e as StorageError:
            if case .io(let s) = e, s.isOutOfSpace { return .outOfSpace(s, kept: none) }
            return .storage(e.description, kept: none, status: e.exitStatus)
        case let e as MediaError: return .media(e, kept: none)
        case let e as any UserFacingError: return .storage(e.description, kept: none, status: e.exitStatus)
        default: return .storage(String(describing: error), kept: none, status: ExitStatus.ioError)
        }
    }
}

extension WriterError {
    func with(kept: KeptSummary) -> WriterError {
        switch self {
        case .outOfSpace(let e, _): return .outOfSpace(e, kept: kept)
        case .storage(let s, _, let status): return .storage(s, kept: kept, status: status)
        case .media(let e, _): return .media(e, kept: kept)
        default: return self
        }
    }
}
