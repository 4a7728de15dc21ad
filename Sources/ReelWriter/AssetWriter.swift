import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelMetrics

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
    private enum Item { case frame(CapturedFrame, offeredAt: UInt64, held: Bool), split, close, begin(take: Int, firstFrame: Int), finish }

    // Guarded by `lock`.
    private let lock = NSCondition()
    private var queue: [Item] = []
    private var _status: WriterStatus = .unknown
    private var asyncWaiters: [CheckedContinuation<Void, Never>] = []
    private var finishWaiters: [CheckedContinuation<WriterResult, Never>] = []
    private var result: WriterResult?
    private var lastOfferedRatio: AspectRatio?
    private var seamWindowOpen = false
    private var longestSeamWait: UInt64 = 0
    private var queueHighWater = 0
    private var framesWritten = 0
    private var framesAccepted = 0
    private var drops = DropCounts()
    private var bytesFinished: Int64 = 0
    private var bytesCurrent: Int64 = 0
    /// Bytes of every packet the encoders made (what the bit rate is reckoned from: the
    /// muxer's bytes reach the file a fragment at a time).
    private var packetBytes: Int64 = 0
    private var finishRequested = false
    private var cancelRequested = false
    /// Ratios the session said it will switch to, in order (`expect`), not yet prepared.
    private var upcoming: [(AspectRatio, Size, Int32)] = []
    /// The first clip, opened before capture (`prepare`).
    private var preparedFirst: PreparedClip?
    /// The next clip, being opened ahead on the opener thread (`preparing`) or ready.
    private var preparing = false
    /// What the opener is opening: clip number, ratio, size.
    private var preparingFor: (Int, AspectRatio, Size)?
    private var preparedNext: PreparedClip?
    private var clipsOpenedAhead = 0
    private var openedClips = 0
    /// Encoders of finished clips that can start another (`VideoEncoder.canRestart`: FFV1,
    /// whose every new encoder zeroes a 300–545 MB buffer); the two most recent.
    private var idleEncoders: [VideoEncoder] = []
    private var encodersReused = 0
    private var discarding = 0
    /// How long the first frame took from its hand-over to the ready writer until it was
    /// encoded and muxed, and when that was (monotonic ns).
    private var firstFrameLatency: UInt64?
    private var firstFrameWrittenAt: UInt64?
    /// Deferred Start: the writer initialises after the first preview frame (`runDeferredStart`)
    /// and holds the frames offered until then in its queue (the hold ring).
    private var deferred = false
    /// The writer can encode: it was not deferred, or its deferred start has run.
    private var ready = true
    private var deferredRunning = false
    private var readyAt: UInt64?
    private var framesHeld = 0
    private var longestHold: UInt64 = 0
    /// Start/stop on a running session: whether offered frames are recorded now, the takes
    /// (one per start) so far, the toggles applied, the newest frame offered, frames offered
    /// while stopped, and the start toggle whose first frame has not come yet.
    private var standbyAtStart = false
    private var recordingOn = true
    private var takes = 1
    private var toggles: [RecordingToggle] = []
    private var lastOfferedIndex: Int?
    private var lastTakenIndex: Int?
    private var framesNotRecorded = 0
    private var awaitingFirstFrame: Int?
    /// Counts start and stop requests: a frame waiting for room across one is not recorded.
    private var toggleGeneration = 0
    /// The clips started at a segment boundary so far.
    private var segmentCuts: [SegmentCut] = []

    private let finaliser = Finaliser()

    /// - Throws: `WriterError.unsupportedPair` or `.encoderUnavailable` for settings that cannot work.
    public init(settings: WriterSettings, rate: FrameRate) throws(WriterError) {
        quietLibav()
        try settings.validate()
        self.settings = settings
        self.rate = rate
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
        get { lock.lock(); defer { lock.unlock() }; return deferred }
        set {
            lock.lock()
            if _status == .unknown && framesAccepted == 0 {
                deferred = newValue
                ready = !newValue
            }
            lock.unlock()
        }
    }

    /// Frames held before the writer was ready, and the longest any of them waited (seconds).
    public var holdCounters: (frames: Int, longest: Double) {
        lock.lock(); defer { lock.unlock() }
        return (framesHeld, Double(longestHold) / 1e9)
    }

    // MARK: Start and stop on a running session

    /// Standby: the writer starts stopped — frames offered are not recorded (and not dropped:
    /// `framesNotRecorded` counts them) until `startRecording`. Default false (recording from
    /// the first frame). Set it before `start()`.
    public var standby: Bool {
        get { lock.lock(); defer { lock.unlock() }; return standbyAtStart }
        set {
            lock.lock()
            if _status == .unknown && framesAccepted == 0 && toggles.isEmpty {
                standbyAtStart = newValue
                recordingOn = !newValue
                takes = newValue ? 0 : 1
            }
            lock.unlock()
        }
    }

    /// Whether the movie output is switched on: frames offered are recorded (false in standby
    /// and after a stop). Once the writer has finished it keeps its last value (what the
    /// recording was doing when it ended).
    public var isRecording: Bool {
        lock.lock(); defer { lock.unlock() }
        return recordingOn
    }

    /// The start and stop requests applied so far, in order (`atSeconds` 0: `Recording` fills it in).
    public var recordingToggles: [RecordingToggle] {
        lock.lock(); defer { lock.unlock() }
        return toggles
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
        guard !recordingOn else { throw .alreadyRecording }
        recordingOn = true
        toggleGeneration += 1
        takes += 1
        // The take's first frame is the next one captured: verify expects that index.
        let first = (lastOfferedIndex ?? -1) + 1
        let t = RecordingToggle(action: .start, source: source, time: Double(MonotonicClock.now()) / 1e9, atSeconds: 0,
                                take: takes, frameIndex: nil)
        toggles.append(t)
        awaitingFirstFrame = toggles.count - 1
        enqueue(.begin(take: takes, firstFrame: first))
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
        guard recordingOn else { throw .notRecording }
        recordingOn = false
        toggleGeneration += 1
        // The last frame of this take, unless none came since its start.
        let last = awaitingFirstFrame == nil ? lastTakenIndex : nil
        awaitingFirstFrame = nil
        let t = RecordingToggle(action: .stop, source: source, time: Double(MonotonicClock.now()) / 1e9, atSeconds: 0,
                                take: takes, frameIndex: last)
        toggles.append(t)
        enqueue(.close)
        return t
    }

    /// `stopRecording` while recording, `startRecording` otherwise (one decision under the lock's
    /// view at the time; a concurrent request may win, then this one throws).
    /// - Throws: what those throw.
    @discardableResult
    public func toggleRecording(source: String) throws(RecordToggleError) -> RecordingToggle {
        lock.lock(); let on = recordingOn; lock.unlock()
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
        guard !ready, !deferredRunning else { lock.unlock(); return }
        deferredRunning = true
        let open = (_status == .unknown || _status == .writing) && preparedFirst == nil && !finishRequested
        lock.unlock()
        let p = open ? try? PreparedClip(number: 1, ratio: ratio, size: size, timescale: timescale, settings: settings, rate: rate) : nil
        lock.lock()
        let keep = (_status == .unknown || _status == .writing) && !finishRequested && preparedFirst == nil
        if keep { preparedFirst = p }
        markReadyLocked()
        deferredRunning = false
        lock.broadcast()
        lock.unlock()
        if !keep, let p { discardPrepared([p]) }
    }

    /// Caller holds `lock`.
    private func markReadyLocked() {
        guard !ready else { return }
        ready = true
        readyAt = MonotonicClock.now()
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
        return drops.total
    }

    /// Frames encoded so far and the bytes of their packets (before the muxer's fragments),
    /// for the bit rate.
    public var encoded: (frames: Int, bytes: Int64) {
        lock.lock(); defer { lock.unlock() }
        return (framesWritten, packetBytes)
    }

    /// Frames written and bytes so far, for progress lines.
    public var progress: (frames: Int, bytes: Int64) {
        lock.lock(); defer { lock.unlock() }
        return (framesWritten, bytesFinished + bytesCurrent)
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
        finaliser.recycle = { [weak self] encoder in self?.recycle(encoder) }
        finaliser.keeper = settings.loopBudget.map(LoopKeeper.init(budget:))
        finaliser.index = settings.segmentIndex
        finaliser.start()
    }

    // MARK: Appending

    /// Takes `frame` if there is room; with `waiting`, blocks until there is (back-pressure).
    /// `.full` when there is no room in real time; `.closed` when not writing.
    public func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        lock.lock(); defer { lock.unlock() }
        guard _status == .writing, !finishRequested else { return .closed }
        lastOfferedIndex = frame.index
        // Stopped (standby, or after a stop request): the frame is not recorded — not a drop.
        guard recordingOn else { framesNotRecorded += 1; return .taken }
        noteRatio(frame.ratio)
        if queue.count >= settings.queueCapacity {
            // Not ready yet (Deferred Start) and the hold ring is full: no buffer for this frame.
            guard waiting else { return ready ? .full : .dropped(.outOfBuffers) }
            let t0 = MonotonicClock.now()
            let generation = toggleGeneration
            // Finishing (or cancelling) ends the wait too: nothing may queue behind `.finish`;
            // so does a stop request (the frame then belongs to no take).
            while queue.count >= settings.queueCapacity && _status == .writing && !finishRequested
                    && toggleGeneration == generation { lock.wait() }
            let waited = MonotonicClock.now() - t0
            if seamWindowOpen { longestSeamWait = max(longestSeamWait, waited) }
            guard _status == .writing, !finishRequested else { return .closed }
            // Stopped (and maybe started again) while it waited: it was not taken before the
            // stop, and a new take starts after it, so it is not recorded.
            if toggleGeneration != generation { framesNotRecorded += 1; return .taken }
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
        lastOfferedIndex = frame.index
        if let g = generation, g != toggleGeneration { framesNotRecorded += 1; return true }
        generation = toggleGeneration
        guard recordingOn else { framesNotRecorded += 1; return true }
        guard queue.count < settings.queueCapacity else { return false }
        noteRatio(frame.ratio)
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
        let open = (_status == .unknown || _status == .writing) && framesAccepted == 0 && preparedFirst == nil && !finishRequested
        lock.unlock()
        guard open else { return }
        let p = try? PreparedClip(number: 1, ratio: ratio, size: size, timescale: timescale, settings: settings, rate: rate)
        lock.lock()
        let keep = (_status == .unknown || _status == .writing) && !finishRequested && preparedFirst == nil
        if keep { preparedFirst = p }
        lock.unlock()
        if !keep, let p { discardPrepared([p]) }
    }

    /// The session will switch to `ratio` (frames cropped to `size`) after the ratios it
    /// announced before: the writer opens that clip ahead, on its own thread, while the
    /// current one records (one clip ahead at most). A change that comes otherwise is
    /// opened when its first frame arrives.
    public func expect(ratio: AspectRatio, size: Size, timescale: Int32) {
        lock.lock()
        upcoming.append((ratio, size, timescale))
        lock.unlock()
        prepareAhead()
    }

    /// Starts opening the next announced clip on an opener thread, unless one is open or
    /// opening already.
    private func prepareAhead() {
        lock.lock()
        guard _status == .writing, !finishRequested, openedClips > 0, !preparing, preparedNext == nil, !upcoming.isEmpty else {
            lock.unlock(); return
        }
        let (ratio, size, timescale) = upcoming.removeFirst()
        let number = openedClips + 1
        preparing = true
        preparingFor = (number, ratio, size)
        lock.unlock()
        let t = Thread { [self] in
            // The clip's storage (a pool slot claim: a locked manifest update with its syncs,
            // or a wait for a slot) is claimed here too, ahead of the seam, so that the encode
            // thread only opens the muxer there. Should the claim fail, the encoder alone is
            // opened ahead and the seam claims the storage (and reports the failure) itself.
            let idle = takeIdleEncoder(size, timescale, patience: 0.3)
            let p: PreparedClip?
            do {
                p = try PreparedClip(number: number, ratio: ratio, size: size, timescale: timescale, settings: settings, rate: rate,
                                     withFile: true, reusing: idle)
            } catch {
                p = try? PreparedClip(number: number, ratio: ratio, size: size, timescale: timescale, settings: settings, rate: rate,
                                      withFile: false, reusing: idle)
            }
            lock.lock()
            // The encode thread went past this clip (it did not fit): it goes, and the next opens.
            // An encoder that can start another clip is kept before the seam is woken: the seam
            // may be waiting for exactly this encoder (a later clip of its size).
            let stale = number <= openedClips
            if stale {
                discarding += 1
                if let p, p.encoder.canRestart { keepIdle(p.encoder) }
            } else { preparedNext = p }
            preparing = false
            preparingFor = nil
            lock.broadcast()
            lock.unlock()
            if stale {
                if let p { p.discard() }
                lock.lock(); discarding -= 1; lock.broadcast(); lock.unlock()
                prepareAhead()
            }
        }
        t.name = "reel.open"
        t.stackSize = 4 << 20
        t.start()
    }

    /// The clip opened ahead for clip `number` starting at `frame`, if there is one that fits
    /// (waiting for the opener when it is at work), else a kept encoder of its size if there
    /// is one; clips opened ahead that do not fit are thrown away (their restartable encoders
    /// kept, after this clip took its own: keeping them first could push out the very
    /// encoder this clip needs).
    private func takePrepared(number: Int, for frame: CapturedFrame) -> (prepared: PreparedClip?, idle: VideoEncoder?) {
        lock.lock()
        // Waiting for the opener is worth it only when it opens this very clip, or an FFV1
        // clip of this size that is already stale (its encoder will start this clip: opening
        // another here would take at least as long, and zero its buffer again).
        while preparing, let (n, r, z) = preparingFor, z == frame.crop.size,
              (n == number && r == frame.ratio) || (n < number && settings.codec == .ffv1) { lock.wait() }
        var candidates: [PreparedClip] = []
        if let p = preparedFirst { candidates.append(p); preparedFirst = nil }
        if let p = preparedNext { candidates.append(p); preparedNext = nil }
        var chosen: PreparedClip? = nil
        var unused: [PreparedClip] = []
        for p in candidates {
            if chosen == nil && p.number == number && p.fits(frame) { chosen = p } else { unused.append(p) }
        }
        var idle: VideoEncoder? = nil
        if chosen != nil {
            clipsOpenedAhead += 1
        } else {
            idle = takeIdleLocked(frame.crop.size, frame.pts.timescale)
        }
        lock.unlock()
        discardInBackground(unused)
        return (chosen, idle)
    }

    /// Keeps the encoder of a finished clip for a later clip of its size.
    private func recycle(_ encoder: VideoEncoder) {
        lock.lock()
        keepIdle(encoder)
        lock.unlock()
    }

    /// `recycle` with the lock held.
    private func keepIdle(_ encoder: VideoEncoder) {
        idleEncoders.append(encoder)
        if idleEncoders.count > 2 { idleEncoders.removeFirst() }
    }

    /// An idle encoder of `size` on `timescale`, if one is kept. `patience`: seconds to wait
    /// for one that a clip still closing will give back (the opener has time; the encode
    /// thread does not).
    private func takeIdleEncoder(_ size: Size, _ timescale: Int32, patience: Double) -> VideoEncoder? {
        let deadline = MonotonicClock.now() + UInt64(patience * 1e9)
        while true {
            lock.lock()
            if let e = takeIdleLocked(size, timescale) { lock.unlock(); return e }
            lock.unlock()
            guard MonotonicClock.now() < deadline, finaliser.isClosing(size: size) else { return nil }
            usleep(2_000)
        }
    }

    /// `takeIdleEncoder` without waiting, with the lock held.
    private func takeIdleLocked(_ size: Size, _ timescale: Int32) -> VideoEncoder? {
        guard let i = idleEncoders.lastIndex(where: { $0.settings.size == size && $0.settings.timescale == timescale }) else { return nil }
        encodersReused += 1
        return idleEncoders.remove(at: i)
    }

    /// Throws prepared clips away: their storage goes (a pool slot back to the pool), and an
    /// encoder that can start another clip (FFV1) is kept for a later clip of its size, as
    /// the encoder of a finished clip is — it holds no frame, and a new one would zero its
    /// 300–545 MB buffer again.
    private func discardPrepared(_ clips: [PreparedClip]) {
        for c in clips {
            c.discard()
            if c.encoder.canRestart { recycle(c.encoder) }
        }
    }

    /// Throws prepared clips away off the encode thread (an encoder's memory, a pool slot).
    /// An encoder that can start another clip is kept at once — a later clip of its size may
    /// start on the next frame, before a background thread would have got to it.
    private func discardInBackground(_ clips: [PreparedClip]) {
        guard !clips.isEmpty else { return }
        for c in clips where c.encoder.canRestart { recycle(c.encoder) }
        lock.lock(); discarding += 1; lock.unlock()
        let t = Thread { [self] in
            // The storage goes here; the other encoders' memory when `clips` is released.
            for c in clips { c.discard() }
            lock.lock(); discarding -= 1; lock.broadcast(); lock.unlock()
        }
        t.name = "reel.discard"
        t.start()
    }

    /// Waits for the opener, then throws away what was opened ahead and not used.
    private func discardUnused() {
        lock.lock()
        while preparing { lock.wait() }
        let unused = [preparedFirst, preparedNext].compactMap { $0 }
        preparedFirst = nil
        preparedNext = nil
        upcoming = []
        lock.unlock()
        discardPrepared(unused)
        lock.lock()
        while discarding > 0 { lock.wait() }
        lock.unlock()
    }

    /// Caller holds `lock`.
    private func noteRatio(_ ratio: AspectRatio) {
        if let last = lastOfferedRatio, last != ratio { seamWindowOpen = true }
        lastOfferedRatio = ratio
    }

    /// Caller holds `lock`.
    private func enqueueFrame(_ frame: CapturedFrame) {
        if !ready { framesHeld += 1 }
        if let t = awaitingFirstFrame { toggles[t].frameIndex = frame.index; awaitingFirstFrame = nil }
        lastTakenIndex = frame.index
        enqueue(.frame(frame, offeredAt: MonotonicClock.now(), held: !ready))
    }

    /// Caller holds `lock`.
    private func enqueue(_ item: Item) {
        if case .frame = item { framesAccepted += 1 }
        queue.append(item)
        queueHighWater = max(queueHighWater, queue.count)
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
            preparedFirst?.discard()
            preparedFirst = nil
            ready = true
            _status = .completed
            result = WriterResult(clips: [], framesWritten: 0, framesLost: 0, longestSeamWait: 0,
                                  longestClipOpen: 0, queueHighWater: 0, drops: DropCounts(), write: nil, error: nil,
                                  firstFrameLatency: nil, clipsOpenedAhead: 0, encodersReused: 0,
                                  framesHeldBeforeReady: 0, longestHold: 0, firstFrameWrittenAt: nil,
                                  framesNotRecorded: framesNotRecorded, toggles: toggles)
            lock.broadcast()
            return
        }
        if !finishRequested {
            finishRequested = true
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
                if ready { break }
                if case .frame = queue[0] {} else { break }
                // Held frames wait for Deferred Start. Should the writer be finished before
                // anyone ran it, it is ready now: the first frame opens its clip itself.
                if finishRequested && !deferredRunning { markReadyLocked(); break }
            }
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
        var policy = CutPolicy(segmentDuration: settings.segmentDuration)

        loop: while true {
            switch take() {
            case .finish:
                break loop
            case .split:
                splitNext = true
            case .close:
                // A stop request: the clip ends here and is published now; the session goes on.
                guard let c = current else { continue }
                finaliser.submit(c)
                current = nil
                lock.lock()
                bytesFinished += bytesCurrent; bytesCurrent = 0
                // The next start most likely records at this ratio: open that clip ahead.
                if upcoming.isEmpty { upcoming.append((c.ratio, c.size, c.sessionStart.timescale)) }
                lock.unlock()
                prepareAhead()
            case .begin(let t, let first):
                currentTake = t
                takeFirstFrame = first
                splitNext = true
            case .frame(let frame, let offeredAt, let held):
                if failure != nil { continue }   // counted as lost at the end
                lock.lock()
                // Held: it waited from its hand-over until the writer was ready.
                let handedOver = held ? max(offeredAt, readyAt ?? offeredAt) : offeredAt
                if held { longestHold = max(longestHold, handedOver - offeredAt) }
                lock.unlock()
                let cut = policy.cut(before: frame.pts, ratio: frame.ratio, size: frame.crop.size,
                                     clip: current.map { ($0.ratio, $0.size) })
                do {
                    if let c = current, cut == nil, !splitNext {
                        if settings.dropWhenStorageIsBehind && c.storageIsBehind {
                            lock.lock(); drops.add(.outOfBuffers); framesAccepted -= 1; lock.unlock()
                            continue
                        }
                        try c.append(frame)
                    } else {
                        if let c = current {
                            if let cut, let k = cut.boundary {
                                let at = SegmentCut(frameIndex: frame.index, pts: frame.pts.seconds,
                                                    boundarySeconds: policy.boundarySeconds(k) ?? 0, clip: clipNumber + 1,
                                                    ratioSeam: cut.reasons.contains(.ratio))
                                lock.lock(); segmentCuts.append(at); lock.unlock()
                            }
                            finaliser.submit(c)
                            current = nil
                            lock.lock(); bytesFinished += bytesCurrent; bytesCurrent = 0; lock.unlock()
                        }
                        splitNext = false
                        clipNumber += 1
                        // Not real time: clips still closing hold storage (a pool slot each);
                        // let the finaliser catch up before claiming more (real time never waits).
                        if !settings.dropWhenStorageIsBehind { finaliser.waitUntilBacklog(below: 2) }
                        let t0 = MonotonicClock.now()
                        let c: ClipRecorder
                        let (ready, idle) = takePrepared(number: clipNumber, for: frame)
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
                        lock.lock()
                        seamWindowOpen = false; openedClips = clipNumber
                        // Segments: the next clip most likely starts at the next boundary at this
                        // ratio — open it ahead, unless a ratio change was announced first.
                        if settings.segmentDuration != nil && upcoming.isEmpty {
                            upcoming.append((c.ratio, c.size, c.sessionStart.timescale))
                        }
                        lock.unlock()
                        prepareAhead()
                    }
                    lock.lock()
                    if firstFrameLatency == nil {
                        let now = MonotonicClock.now()
                        firstFrameLatency = now - min(now, handedOver)
                        firstFrameWrittenAt = now
                    }
                    framesWritten += 1
                    bytesCurrent = current?.bytes ?? 0
                    packetBytes += current?.takePacketBytes() ?? 0
                    lock.unlock()
                } catch {
                    // The failing frame is lost; the clip so far is salvaged by the finaliser.
                    failure = classify(error)
                    if let c = current { finaliser.submit(c, salvage: true) }
                    current = nil
                    lock.lock()
                    _status = .failed(failure!)
                    lock.broadcast()
                    for w in asyncWaiters { w.resume() }
                    asyncWaiters = []
                    lock.unlock()
                }
            }
        }
        discardUnused()
        lock.lock(); let cancelling = cancelRequested; lock.unlock()
        if let c = current {
            if cancelling { c.discard() } else { finaliser.submit(c) }
        }
        let (clips, finalError, write) = finaliser.finishAll()
        let loopDeletions = finaliser.loopDeletions
        lock.lock(); idleEncoders = []; lock.unlock()

        lock.lock()
        let error = failure ?? finalError.map(classify)
        let kept = clips.reduce(0) { $0 + $1.frames }
        // Frames the writer took in but no published clip holds.
        // (Cancelled: frames thrown away on purpose are not "lost".)
        let framesLostTotal = cancelRequested ? 0 : framesAccepted - kept
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
                             longestSeamWait: Double(longestSeamWait) / 1e9,
                             longestClipOpen: Double(longestOpen) / 1e9,
                             queueHighWater: queueHighWater, drops: drops, write: write, error: finalErrorWithKept,
                             firstFrameLatency: firstFrameLatency.map { Double($0) / 1e9 }, clipsOpenedAhead: clipsOpenedAhead,
                             encodersReused: encodersReused, framesHeldBeforeReady: framesHeld,
                             longestHold: Double(longestHold) / 1e9, firstFrameWrittenAt: firstFrameWrittenAt,
                             framesNotRecorded: framesNotRecorded, toggles: toggles, segmentCuts: segmentCuts,
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
