import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// The capture graph: one input (a source), its current dynamic aspect ratio, and outputs.
///
/// **Configuration.** `beginConfiguration()` / `commitConfiguration()` batch changes — outputs
/// added or removed, the input (and with it the format), the starting ratio, the frame rate —
/// and the graph is resolved once per commit whatever the batch holds (`graphResolutions`
/// counts resolutions). Outside a batch each change is resolved on its own. Batches nest;
/// the outermost commit resolves. A batch that cannot be resolved (a ratio the format lacks,
/// a rate the source cannot take) is refused whole by `commitConfiguration()`, and the graph
/// stays as it was.
///
/// **Running.** `startRunning(frameLimit:)` returns at once: the run goes on on the session's
/// own thread ("reel.session"); `stopRunning()` only asks the run to end and returns at once;
/// `waitUntilStopped()` (or `stopped()`) waits for it. `run(frameLimit:)` runs on the caller's
/// thread instead. Outputs that are not deferred `prepare` before the source starts; deferred
/// ones initialise after the first frame (Deferred Start, see `FrameOutput`).
///
/// `setDynamicAspectRatio` returns the timestamp of the first frame produced at the new
/// ratio; calls complete in the order they were made, one frame apart at most one change per
/// frame, so every requested ratio owns at least one frame.
public final class CaptureSession: SourceDelegate, Sendable {
    /// What a configuration holds.
    private struct Graph {
        var source: any VideoSource
        var ratio: AspectRatio
        var outputs: [any FrameOutput]
        /// A frame rate the source takes at the next resolution.
        var rate: FrameRate?
        /// Run at each resolution while the session does not run (`setConfigurationCheck`).
        var check: ConfigurationCheck?
    }
    private enum DeferredPhase { case idle, running, done }
    private struct WeakDelegate { weak var value: (any CaptureSessionDelegate)? }

    private struct State {
        var graph: Graph
        /// The batch being built (`beginConfiguration`), and how deep the batches nest.
        var staged: Graph?
        var depth = 0
        var changes = 0
        var resolutions = 0
        var automaticallyRunsDeferredStart = true
        var delegate = WeakDelegate()
        var pending: [(AspectRatio, @Sendable (Timestamp) -> Void)] = []
        var schedule: [(RatioTrigger, AspectRatio)] = []
        var stats = CaptureStats()
        var running = false
        /// `stopRunning()` came during this run (before or after the source started).
        var stopRequested = false
        /// `stopRunning(beforeRun: true)` came while no run was under way: the next run ends
        /// as it begins.
        var stopBeforeRun = false
        /// The deferred outputs of this run, and how far their start has come.
        var deferredOutputs: [any FrameOutput] = []
        var deferredPhase = DeferredPhase.idle
        var deferredAsked = false
        var deferredDone: DispatchSemaphore?
        var deferredStarts = 0
        /// The last run started with `startRunning`.
        var lastResult: Result<CaptureStats, any Error>?
        /// The rate of the last frame of this run (nil before its first).
        var frameRate: FrameRate?
        /// The run ends at the first frame this many seconds of media time after the first.
        var mediaTimeLimit: Double?
    }
    private let state: Mutex<State>
    private let runGroup = DispatchGroup()
    /// Zoom, brightness and the picture effect, applied to each frame before the outputs get it.
    public let adjustments = ImageAdjustments()
    /// See each sensor frame before zoom and the effect (face detection: the whole sensor;
    /// stabilisation's motion), in the order of their `SensorTapKind`.
    private let sensorTaps = Mutex<[SensorTapKind: @Sendable (SourceFrame) -> Void]>([:])

    /// Calls `tap` with every sensor frame as the source delivers it, before zoom, the effect
    /// and the ratio's crop, on the capture thread: it must not wait (keep a reference to the
    /// frame and return). One tap of each kind; the kinds run in their order (stabilisation's
    /// first: framing reads the correction it made). nil removes that kind's.
    public func setSensorTap(_ kind: SensorTapKind, _ tap: (@Sendable (SourceFrame) -> Void)?) { sensorTaps.withLock { $0[kind] = tap } }
    /// Holds frames back between the sensor and processing (cinematic stabilisation's look-ahead).
    private let frameDelay = Mutex<(any FrameDelay)?>(nil)

    /// Puts `delay` between the sensor (after the tap) and processing: each sensor frame goes to
    /// it, and the frames it gives back go on, in its order; the frames it still holds when
    /// capture ends go on then. Set it before the run (nil: none).
    public func setFrameDelay(_ delay: (any FrameDelay)?) { frameDelay.withLock { $0 = delay } }

    /// - Throws: `CaptureError.unsupportedRatio` when the source's format lacks `ratio`.
    public init(source: any VideoSource, ratio: AspectRatio? = nil) throws {
        let supported = source.format.supportedRatios
        let chosen = ratio ?? (supported.contains(.landscape16x9) ? .landscape16x9 : supported[0])
        try CaptureSession.check(chosen, in: source.format)
        state = Mutex(State(graph: Graph(source: source, ratio: chosen, outputs: [])))
    }

    private static func check(_ ratio: AspectRatio, in format: SourceFormat) throws {
        guard format.supportedRatios.contains(ratio) else {
            throw CaptureError.unsupportedRatio(ratio, supported: format.supportedRatios,
                                                format: "the \(format.size) sensor format")
        }
    }

    /// The input.
    public var source: any VideoSource { state.withLock { $0.graph.source } }
    /// The ratio in force (the next run's first, when not running).
    public var ratio: AspectRatio { state.withLock { $0.graph.ratio } }
    /// The counters, since the session was made.
    public var stats: CaptureStats { state.withLock { $0.stats } }
    /// The outputs of the resolved graph, in the order frames go to them.
    public var outputs: [any FrameOutput] { state.withLock { $0.graph.outputs } }
    /// Between the start of a run and its end.
    public var isRunning: Bool { state.withLock { $0.running } }

    // MARK: Configuration

    /// How many times the graph was resolved: once per outermost `commitConfiguration()` of a
    /// batch with changes, once per change made outside a batch.
    public var graphResolutions: Int { state.withLock { $0.resolutions } }

    /// Starts a batch of changes; they take effect together at the matching `commitConfiguration()`.
    public func beginConfiguration() {
        state.withLock { s in
            if s.depth == 0 { s.staged = s.graph; s.changes = 0 }
            s.depth += 1
        }
    }

    /// Ends a batch; the outermost commit resolves the graph once with every change of the batch.
    /// - Throws: `CaptureError.unsupportedRatio` or `.notConfigurable`, or what the
    ///   configuration check throws: the whole batch is refused and the graph is unchanged.
    public func commitConfiguration() throws {
        try state.withLock { s in
            guard s.depth > 0 else { return }
            s.depth -= 1
            guard s.depth == 0, let staged = s.staged else { return }
            s.staged = nil
            guard s.changes > 0 else { return }
            s.changes = 0
            try CaptureSession.resolve(staged, into: &s)
        }
    }

    /// Makes `change` to the batch being built, or — outside a batch — applies it at once
    /// with one resolution.
    private func configure(_ change: (inout Graph) throws -> Void) throws {
        try state.withLock { s in
            if s.depth > 0, var g = s.staged {
                try change(&g)
                s.staged = g
                s.changes += 1
            } else {
                var g = s.graph
                try change(&g)
                try CaptureSession.resolve(g, into: &s)
            }
        }
    }

    /// Checks the configuration `g` and makes it the graph: the source takes a new frame rate
    /// (while running, a live change the source takes from its next frame, or refuses), the
    /// ratio must be one its format supports, and — when the session does not run — the
    /// configuration check must pass. Caller holds the lock.
    private static func resolve(_ g: Graph, into s: inout State) throws {
        var g = g
        if g.source !== s.graph.source, s.running {
            throw CaptureError.notConfigurable("the input cannot change while the session runs")
        }
        if g.ratio != s.graph.ratio, s.running {
            throw CaptureError.notConfigurable("the ratio changes with setDynamicAspectRatio while the session runs")
        }
        try check(g.ratio, in: g.source.format)
        if !s.running, let configurationCheck = g.check {
            var format = g.source.format
            if let rate = g.rate { format.rate = rate }
            try configurationCheck(CaptureConfiguration(format: format, ratio: g.ratio, outputs: g.outputs))
        }
        if let rate = g.rate {
            try g.source.setFrameRate(rate)
            g.rate = nil
        }
        try check(g.ratio, in: g.source.format)
        // An output is in the graph once.
        var seen = Set<ObjectIdentifier>()
        g.outputs = g.outputs.filter { seen.insert(ObjectIdentifier($0)).inserted }
        s.graph = g
        s.resolutions += 1
    }

    /// Adds an output (frames go to outputs in the order they were added). While running, it
    /// gets frames from the next one on (its first frame opens what it needs).
    /// - Throws: what the configuration check throws for the graph with the output (outside a
    ///   batch, when the session does not run; in a batch, `commitConfiguration()` throws it):
    ///   the output is not added.
    public func addOutput(_ output: any FrameOutput) throws {
        try configure { $0.outputs.append(output) }
    }

    /// Removes an output; it gets no more frames.
    /// - Throws: what the configuration check throws for the graph without the output
    ///   (outside a batch, when the session does not run): the output stays.
    public func removeOutput(_ output: any FrameOutput) throws {
        try configure { g in g.outputs.removeAll { $0 === output } }
    }

    /// Replaces the input (a new sensor or camera, and with it the format). Not while running.
    /// - Throws: `CaptureError.notConfigurable` while running; `.unsupportedRatio` when the
    ///   new format lacks the session's ratio (outside a batch; in a batch, at the commit).
    public func setSource(_ source: any VideoSource) throws {
        try configure { $0.source = source }
    }

    /// The ratio of the first frames of the next run (a configuration change; while running use
    /// `setDynamicAspectRatio`).
    /// - Throws: `CaptureError.unsupportedRatio`, or `.notConfigurable` while running (at the
    ///   commit in a batch).
    public func setRatio(_ ratio: AspectRatio) throws {
        try configure { $0.ratio = ratio }
    }

    /// The source's frame rate (`VideoSource.setFrameRate`): from the next run on, or — while
    /// running, for a source that can (the synthetic sensor made with `liveRates`; a V4L2
    /// camera, lower than it opened at, by S_PARM or decimation) — from its next frame on: the recording goes on at a variable frame rate, every frame stamped at
    /// its capture time, and the change is noted in `stats.frameRateChanges` at that frame.
    /// - Throws: `CaptureError.notConfigurable` for a source that cannot take the rate (while
    ///   running: one that cannot change it live) — at the commit in a batch.
    public func setFrameRate(_ rate: FrameRate) throws {
        try configure { $0.rate = rate }
    }

    /// The rate of the frames now being captured (the configured one before a run).
    public var activeFrameRate: FrameRate {
        state.withLock { $0.frameRate ?? $0.graph.source.format.rate }
    }

    /// Installs (or, with nil, removes) the check every configuration must pass before it runs
    /// — the hardware cost of the graph, say. Installing it is a configuration change: the
    /// graph is checked with it at the commit of the batch (or at once outside a batch), then at
    /// every resolution while the session does not run. Changes made while running (outputs
    /// added, live rates) are not checked.
    /// - Throws: what the check throws (outside a batch; in one, at the commit).
    public func setConfigurationCheck(_ check: ConfigurationCheck?) throws {
        try configure { $0.check = check }
    }

    /// Seconds of media time after which a run ends (at the first frame that far from the
    /// first, which is not captured): a recording's length whatever rates it runs at. Nil: no
    /// limit but the run's frame limit.
    public var mediaTimeLimit: Double? {
        get { state.withLock { $0.mediaTimeLimit } }
        set { state.withLock { $0.mediaTimeLimit = newValue } }
    }

    // MARK: Deferred Start

    /// Whether the session initialises deferred outputs by itself right after the first frame
    /// went to the others (the preview). Default true; when false the app calls
    /// `runDeferredStartWhenNeeded()`.
    public var automaticallyRunsDeferredStart: Bool {
        get { state.withLock { $0.automaticallyRunsDeferredStart } }
        set { state.withLock { $0.automaticallyRunsDeferredStart = newValue } }
    }

    /// Receives `sessionWillRunDeferredStart` / `sessionDidRunDeferredStart` (held weakly).
    public var delegate: (any CaptureSessionDelegate)? {
        get { state.withLock { $0.delegate.value } }
        set { state.withLock { $0.delegate = WeakDelegate(value: newValue) } }
    }

    /// Runs Deferred Start now if the session runs and the first frame has gone out, or else
    /// right after the first frame of the run (running or next). Once per run.
    public func runDeferredStartWhenNeeded() {
        let go = state.withLock { s -> Bool in
            s.deferredAsked = true
            return s.running && s.deferredPhase == .idle && s.stats.framesCaptured > 0 && beginDeferredLocked(&s)
        }
        if go { launchDeferredStart() }
    }

    /// Deferred Starts run (one per run that had deferred outputs and started them).
    public var deferredStartsRun: Int { state.withLock { $0.deferredStarts } }

    /// Caller holds the lock: marks the deferred start as running; false when there is nothing to start.
    private func beginDeferredLocked(_ s: inout State) -> Bool {
        guard s.deferredPhase == .idle, !s.deferredOutputs.isEmpty else { return false }
        s.deferredPhase = .running
        s.deferredDone = DispatchSemaphore(value: 0)
        return true
    }

    private func launchDeferredStart() {
        let (outputs, ratio, format, delegate, done) = state.withLock { s in
            (s.deferredOutputs, s.graph.ratio, s.graph.source.format, s.delegate.value, s.deferredDone)
        }
        let t = Thread { [self] in
            delegate?.sessionWillRunDeferredStart(self)
            for o in outputs {
                o.runDeferredStart(ratio: ratio, size: ratio.crop(in: format.size).size, timescale: format.timescale)
            }
            delegate?.sessionDidRunDeferredStart(self)
            state.withLock { s in s.deferredPhase = .done; s.deferredStarts += 1 }
            done?.signal()
        }
        t.name = "reel.deferred"
        t.stackSize = 4 << 20
        t.start()
    }

    // MARK: Ratios

    /// Crops the sensor to `ratio` from the next frame on and returns that frame's
    /// timestamp (the seam, where a writer cuts). Setting the current ratio again returns
    /// the next frame's timestamp and changes nothing.
    /// - Throws: `CaptureError.unsupportedRatio`; the session goes on unchanged.
    ///
    /// When the session is not running, the ratio applies from the first frame of the next
    /// run, and the call returns at once with the time the next frame would have had.
    public func setDynamicAspectRatio(_ ratio: AspectRatio) async throws -> Timestamp {
        try await withCheckedThrowingContinuation { continuation in
            do { try setDynamicAspectRatio(ratio) { continuation.resume(returning: $0) } } catch { continuation.resume(throwing: error) }
        }
    }

    /// `setDynamicAspectRatio(_:)` for callers on a thread of their own (an HTTP server's, a
    /// control's): checks `ratio` at once, on the calling thread, and calls `applied` with the
    /// seam's timestamp from the session's capture thread when the first frame at the new
    /// ratio arrives (at once when the session is not running; at the end of the run when
    /// no frame came). `applied` must not block.
    /// - Throws: `CaptureError.unsupportedRatio`, before anything changes.
    public func setDynamicAspectRatio(_ ratio: AspectRatio, applied: @escaping @Sendable (Timestamp) -> Void) throws {
        let format = source.format
        try CaptureSession.check(ratio, in: format)
        let idle: Timestamp? = state.withLock { s in
            if s.running {
                // Announced unless it repeats the ratio in force once the requests before it apply.
                let before = s.pending.last?.0 ?? s.graph.ratio
                s.pending.append((ratio, applied))
                if ratio != before {
                    for o in s.graph.outputs { o.expect(ratio: ratio, size: ratio.crop(in: format.size).size, timescale: format.timescale) }
                }
                return nil
            }
            s.graph.ratio = ratio
            guard let last = s.stats.lastPTS else { return Timestamp.zero(timescale: format.timescale) }
            return Timestamp(value: last.value + format.frameDuration, timescale: last.timescale)
        }
        if let idle { applied(idle) }
    }

    /// Schedules a change at a frame or media time (deterministic, for `--ratio-at`).
    /// - Throws: `CaptureError.unsupportedRatio` when the source's format does not keep `ratio`.
    public func scheduleAspectRatio(_ ratio: AspectRatio, at trigger: RatioTrigger) throws {
        try CaptureSession.check(ratio, in: source.format)
        state.withLock { $0.schedule.append((trigger, ratio)) }
    }

    // MARK: Running

    /// Starts a run on the session's own thread ("reel.session") and returns at once: the
    /// outputs get ready and the source runs there until `frameLimit` frames or
    /// `stopRunning()`. `waitUntilStopped()` / `stopped()` give the run's counters. A call
    /// while running does nothing.
    public func startRunning(frameLimit: Int? = nil) {
        guard beginRun() else { return }
        runGroup.enter()
        let t = Thread { [self] in
            let result = Result { try runBegun(frameLimit: frameLimit) }
            state.withLock { $0.lastResult = result }
            runGroup.leave()
        }
        t.name = "reel.session"
        t.stackSize = 4 << 20
        t.start()
    }

    /// Blocks until the run started by `startRunning` ends; its counters.
    /// - Throws: what the source threw.
    @discardableResult
    public func waitUntilStopped() throws -> CaptureStats {
        runGroup.wait()
        return try state.withLock { $0.lastResult }?.get() ?? stats
    }

    /// `waitUntilStopped()` without blocking a thread.
    /// - Throws: what the source threw.
    @discardableResult
    public func stopped() async throws -> CaptureStats {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            runGroup.notify(queue: .global()) { c.resume() }
        }
        return try state.withLock { $0.lastResult }?.get() ?? stats
    }

    /// Runs the source on the calling thread until `frameLimit` frames or `stopRunning()`.
    /// - Throws: `CaptureError.notConfigurable` when the session runs already; what the source
    ///   threw.
    public func run(frameLimit: Int?) throws -> CaptureStats {
        guard beginRun() else { throw CaptureError.notConfigurable("the session is running already") }
        return try runBegun(frameLimit: frameLimit)
    }

    /// Marks the session running (a stop from now on ends this run); false when it runs already.
    private func beginRun() -> Bool {
        state.withLock { s in
            guard !s.running else { return false }
            s.running = true
            s.stopRequested = s.stopBeforeRun
            s.stopBeforeRun = false
            s.frameRate = nil
            s.deferredPhase = .idle
            s.deferredDone = nil
            s.deferredOutputs = []
            return true
        }
    }

    private func runBegun(frameLimit: Int?) throws -> CaptureStats {
        // The outputs that are not deferred get ready for the first frames before the source
        // starts; all learn the ratio changes scheduled so far (in the order they will come,
        // repeats left out).
        let (source, first, eager, all, coming) = state.withLock { s -> (any VideoSource, AspectRatio, [any FrameOutput], [any FrameOutput], [AspectRatio]) in
            let format = s.graph.source.format
            func order(_ t: RatioTrigger) -> Double {
                switch t {
                case .frame(let n): return Double(n)
                case .seconds(let x): return x * format.rate.perSecond
                }
            }
            var coming: [AspectRatio] = []
            var last = s.graph.ratio
            for (_, r) in s.schedule.enumerated().sorted(by: { (order($0.element.0), $0.offset) < (order($1.element.0), $1.offset) }).map(\.element) where r != last {
                coming.append(r)
                last = r
            }
            s.deferredOutputs = s.graph.outputs.filter { $0.deferredStartEnabled }
            return (s.graph.source, s.graph.ratio, s.graph.outputs.filter { !$0.deferredStartEnabled }, s.graph.outputs, coming)
        }
        let format = source.format
        for o in eager {
            o.prepare(ratio: first, size: first.crop(in: format.size).size, timescale: format.timescale)
        }
        for o in all {
            for r in coming { o.expect(ratio: r, size: r.crop(in: format.size).size, timescale: format.timescale) }
        }
        // Requests still pending when the run ends are answered with the time the next
        // frame would have had: their ratio applies from the next run.
        defer {
            // Deferred Start, once begun, ends before the run does.
            state.withLock { $0.deferredDone }?.wait()
            let leftovers = state.withLock { s -> [(AspectRatio, @Sendable (Timestamp) -> Void)] in
                s.running = false
                s.stopRequested = false
                s.deferredAsked = false
                s.deferredOutputs = []
                s.deferredDone = nil
                let p = s.pending
                s.pending = []
                return p
            }
            let next = stats.lastPTS.map { Timestamp(value: $0.value + format.frameDuration, timescale: $0.timescale) }
                ?? Timestamp.zero(timescale: format.timescale)
            if let last = leftovers.last { state.withLock { $0.graph.ratio = last.0 } }
            for (_, applied) in leftovers { applied(next) }
        }
        // A stop asked while the outputs got ready ends the run before the source starts.
        // (One that comes after this check is caught at the first frame: see `source(didCapture:)`.)
        if state.withLock({ $0.stopRequested }) { return stats }
        do {
            try source.capture(frameLimit: frameLimit, delegate: self)
        } catch {
            drainDelay()
            throw error
        }
        drainDelay()
        return stats
    }

    /// Asks the run to end after the frame in progress; returns at once (safe from any thread,
    /// a signal handler's queue included). A stop before the source starts ends the run there.
    /// - Parameter beforeRun: true: when no run is under way, the next run ends as it begins
    ///   (a stop that comes just before `run` is not lost); false: it does nothing then.
    public func stopRunning(beforeRun: Bool = false) {
        let source = state.withLock { s -> any VideoSource in
            if s.running { s.stopRequested = true } else if beforeRun { s.stopBeforeRun = true }
            return s.graph.source
        }
        source.stop()
    }

    // MARK: SourceDelegate

    /// Hands the source's frame to every output at the current ratio (applying a due ratio change
    /// first); false when one could not take it. Runs on the source's capture thread.
    public func source(didCapture frame: SourceFrame) -> Bool {
        for tap in sensorTaps.withLock({ taps in SensorTapKind.allCases.compactMap { taps[$0] } }) { tap(frame) }
        guard let delay = frameDelay.withLock({ $0 }) else { return deliver(frame) == .taken }
        // A frame held back is not late: the source goes on. A frame let go that an output
        // could not take is counted as dropped, and the next goes on; once the run has ended
        // (its length reached, an output closed), none does.
        var taken = true
        for d in delay.take(frame) {
            d.prepare()
            switch deliver(d.frame) {
            case .taken: continue
            case .dropped: taken = false
            case .ended: return false
            }
        }
        return taken
    }

    /// The frames a delay still holds, once capture has ended (or failed): they go on in order,
    /// each waited for by the outputs (the source has stopped: nothing is late), until the run
    /// has ended.
    private func drainDelay() {
        guard let delay = frameDelay.withLock({ $0 }) else { return }
        for d in delay.drain() {
            d.prepare()
            guard deliver(d.frame, waiting: true) != .ended else { break }
        }
    }

    /// What became of a frame handed to the outputs.
    private enum Delivery { case taken, dropped, ended }

    /// Processes `frame` and hands it to every output at the current ratio (applying a due
    /// ratio change first): taken, dropped (one could not take it; counted), or ended (the
    /// run's length reached, or an output closed). `waiting`: the outputs wait for room (nil:
    /// when the source is not real-time).
    private func deliver(_ frame: SourceFrame, waiting: Bool? = nil) -> Delivery {
        // Zoom, brightness and the effect, before any output sees the frame (ImageAdjustments).
        guard let frame = adjustments.process(frame, format: self.source.format) else {
            self.source(didDrop: 1, reason: .outOfBuffers, at: frame.index)
            return .dropped
        }
        let (source, ratio, outputs, resumed, stopAsked, ended) = state.withLock { s -> (any VideoSource, AspectRatio, [any FrameOutput], (@Sendable (Timestamp) -> Void)?, Bool, Bool) in
            // The length in media time: the frame that reaches it is not captured.
            if let limit = s.mediaTimeLimit, let first = s.stats.startPTS, (frame.pts - first).seconds + 1e-9 >= limit {
                return (s.graph.source, s.graph.ratio, [], nil, true, true)
            }
            let rate = frame.rate ?? s.graph.source.format.rate
            if let before = s.frameRate, before != rate, s.stats.startPTS != nil {
                s.stats.frameRateChanges.append(FrameRateChange(frameIndex: frame.index, pts: frame.pts.seconds,
                                                                from: before.perSecond, to: rate.perSecond, method: frame.rateMethod))
            }
            s.frameRate = rate
            var next = s.graph.ratio
            var resume: (@Sendable (Timestamp) -> Void)? = nil
            // Scheduled changes first (all that are due), then at most one live request.
            var remaining: [(RatioTrigger, AspectRatio)] = []
            for (trigger, r) in s.schedule {
                let due: Bool
                switch trigger {
                case .frame(let n): due = frame.index >= n
                case .seconds(let t): due = frame.pts.seconds + 1e-9 >= t
                }
                if due { next = r } else { remaining.append((trigger, r)) }
            }
            s.schedule = remaining
            if !s.pending.isEmpty {
                let (r, c) = s.pending.removeFirst()
                next = r
                resume = c
            }
            if next != s.graph.ratio {
                // Before the first frame a change is just the starting ratio, not a seam.
                if s.stats.startPTS != nil {
                    s.stats.seams.append(Seam(frameIndex: frame.index, pts: frame.pts.seconds, from: s.graph.ratio, to: next))
                }
                s.graph.ratio = next
            }
            s.stats.framesCaptured += 1
            if s.stats.startPTS == nil { s.stats.startPTS = frame.pts }
            s.stats.lastPTS = frame.pts
            return (s.graph.source, next, s.graph.outputs, resume, s.stopRequested, false)
        }
        if ended {
            source.stop()
            return .ended
        }
        // A stop that came between the run's last check and the source clearing its own stop
        // flag as it started would be lost: the source is told again (this frame still goes out).
        if stopAsked { source.stop() }
        resumed?(frame.pts)
        let sourceFormat = source.format
        // One frame of the rate the frame was captured at, on the frame's clock.
        let rate = frame.rate ?? sourceFormat.rate
        let duration = Int64((Double(frame.pts.timescale) * rate.interval).rounded())
        let pan = adjustments.settings.pan
        let captured = CapturedFrame(lease: frame.lease, index: frame.index, pts: frame.pts,
                                     duration: duration, ratio: ratio,
                                     crop: ratio.crop(in: sourceFormat.size, pan: (pan.x, pan.y)))
        var taken = true, closed = false
        var dropReason = DropReason.late
        for output in outputs {
            switch output.offer(captured, waiting: waiting ?? !source.isRealtime) {
            case .taken: break
            case .full: taken = false
            case .dropped(let reason): taken = false; dropReason = reason
            case .closed: closed = true
            }
        }
        if closed {
            // An output failed or finished: capture ends here, and this frame never existed.
            state.withLock { $0.stats.framesCaptured -= 1 }
            source.stop()
            return .ended
        }
        let deferNow = state.withLock { s -> Bool in
            if taken { s.stats.framesDelivered += 1 } else { s.stats.drops.add(dropReason) }
            // Deferred Start: right after the first frame went to the outputs (the preview).
            return (s.automaticallyRunsDeferredStart || s.deferredAsked) && beginDeferredLocked(&s)
        }
        if deferNow { launchDeferredStart() }
        return taken ? .taken : .dropped
    }

    /// Counts frames a V4L2 camera sent that were let go on purpose (decimation).
    public func source(didDecimate count: Int) {
        state.withLock { $0.stats.framesDecimated += count }
    }

    /// Counts frames the source dropped before they became frames (`reason`), from frame `index`.
    public func source(didDrop count: Int, reason: DropReason, at index: Int) {
        state.withLock {
            $0.stats.drops.add(reason, count: count)
            $0.stats.framesCaptured += count
        }
    }
}
