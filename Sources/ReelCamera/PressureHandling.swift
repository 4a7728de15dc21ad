import Foundation
import Synchronization
import ReelCapacity
import ReelCapture
import ReelCore
import ReelMedia

/// The camera's pressure handling (issue 13): the system-pressure monitor's level changes go
/// through the policy (`FrameRateStepPolicy`, or nothing when the handler is off) into the
/// running session — a live frame-rate step, the preview thinned or paused, the recording
/// finished at `shutdown` — and every change and action into the summary's timeline.
public enum PressureHandling {
    /// The rates a recording at `rate` may step through under the default policy, with `rate`
    /// itself (what `RecordOptions.liveFrameRates` gets when the handler is on).
    public static func liveRates(for rate: FrameRate) -> [FrameRate] {
        [rate] + FrameRateStepPolicy().steps(below: rate.perSecond).compactMap(frameRate)
    }

    /// The exact rate of a whole number of frames per second (the ladder's steps), else the
    /// parsed decimal.
    static func frameRate(_ fps: Double) -> FrameRate? {
        fps == fps.rounded() && fps >= 1 && fps <= 1000 ? FrameRate(frames: Int32(fps)) : FrameRate(parsing: String(fps))
    }

    /// The monitor: of `directory` when it is set, else of this process's cgroup or
    /// /proc/pressure; thermal zones and cpufreq under `sysfsRoot`.
    static func monitor(directory: String?, sysfsRoot: String, note: @escaping @Sendable (String) -> Void,
                        onChange: @escaping @Sendable (PressureState) -> Void) -> PressureMonitor {
        if let directory, !directory.isEmpty {
            return PressureMonitor(directory: directory, sysfsRoot: sysfsRoot, note: note, onChange: onChange)
        }
        return PressureMonitor.forThisProcess(sysfsRoot: sysfsRoot, note: note, onChange: onChange)
    }
}

/// Thins the preview's frames under pressure: every frame, every `n`th, or none (paused).
/// Frames it lets pass go to the preview output it wraps; the others are taken and let go.
public final class PressurePreviewGate: FrameOutput, Sendable {
    /// The preview output.
    public let inner: any FrameOutput
    /// 1: every frame; n > 1: one in n; 0: paused.
    private let every = Atomic<Int>(1)
    private let counter = Atomic<Int>(0)

    /// A gate letting every frame through to `inner`.
    public init(_ inner: any FrameOutput) { self.inner = inner }

    /// One frame in `n` from now on (0: none).
    public func pass(every n: Int) { every.store(n, ordering: .releasing) }
    /// What the gate lets through: `full`, `reduced` (one frame in n) or `paused`.
    public var mode: String {
        switch every.load(ordering: .acquiring) {
        case 0: return "paused"
        case 1: return "full"
        default: return "reduced"
        }
    }

    /// Passes the frame to the preview output, or takes it and lets it go (thinned, paused).
    public func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        let n = every.load(ordering: .acquiring)
        if n == 0 { return .taken }
        if n > 1, counter.add(1, ordering: .relaxed).oldValue % n != 0 { return .taken }
        return inner.offer(frame, waiting: waiting)
    }
    /// The preview output's.
    public func prepare(ratio: AspectRatio, size: Size, timescale: Int32) { inner.prepare(ratio: ratio, size: size, timescale: timescale) }
    /// The preview output's.
    public func expect(ratio: AspectRatio, size: Size, timescale: Int32) { inner.expect(ratio: ratio, size: size, timescale: timescale) }
    /// The preview output's.
    public var deferredStartEnabled: Bool { inner.deferredStartEnabled }
    /// The preview output's.
    public func runDeferredStart(ratio: AspectRatio, size: Size, timescale: Int32) {
        inner.runDeferredStart(ratio: ratio, size: size, timescale: timescale)
    }
}

/// Applies the policy's action at each level change and keeps the timeline.
public final class PressureHandler: Sendable {
    /// One level change: the monitor's state, what the handler did (null when off), and why an
    /// action could not be taken.
    public struct Entry: Encodable, Sendable {
        /// The monitor's reading.
        public var state: PressureState
        /// What the handler did (nil when it is off).
        public var action: PressureAction?
        /// The frame from which a frame-rate step applied (filled in from the session's
        /// `frameRateChanges` when the recording ends).
        public var frameIndex: Int?
        /// The preview after the action: `full`, `reduced` or `paused` (null without a preview).
        public var preview: String?
        /// Why an action could not be taken as asked.
        public var note: String?

        enum Keys: String, CodingKey { case action, frameIndex, preview, note }
        /// The state's keys, then `action`, `frameIndex`, `preview` and `note` (nulls included).
        /// - Throws: the encoder's errors.
        public func encode(to encoder: any Encoder) throws {
            try state.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(action, forKey: .action)
            try c.encode(frameIndex, forKey: .frameIndex)
            try c.encode(preview, forKey: .preview)
            try c.encode(note, forKey: .note)
        }
    }

    private struct State {
        var current: PressureAction
        var entries: [Entry] = []
        var stoppedForPressure = false
        var level = PressureLevel.unknown
    }

    /// False: level changes are only recorded.
    public let enabled: Bool
    private let policy: any PressurePolicy
    private let nominal: PressureAction
    private let nominalRate: FrameRate
    private let session: CaptureSession
    private let preview: PressurePreviewGate?
    private let stop: @Sendable () -> Void
    /// Told the new rate after each step taken (the registry's share follows it); returns
    /// what went wrong, for the timeline's note.
    private let rateChanged: @Sendable (Double) -> String?
    private let state: Mutex<State>

    /// - Parameters:
    ///   - enabled: false: level changes are only recorded (`--pressure-handler off`).
    ///   - stop: finishes the recording (at `shutdown`).
    ///   - rateChanged: told the frames-per-second after each step taken (the recording's
    ///     share in the session registry follows it); a text it returns joins the note.
    public init(enabled: Bool, session: CaptureSession, preview: PressurePreviewGate?, stop: @escaping @Sendable () -> Void,
         rateChanged: @escaping @Sendable (Double) -> String? = { _ in nil }) {
        self.rateChanged = rateChanged
        self.enabled = enabled
        policy = enabled ? FrameRateStepPolicy() : NoPressurePolicy()
        nominalRate = session.source.format.rate
        nominal = PressureAction(framesPerSecond: nominalRate.perSecond)
        self.session = session
        self.preview = preview
        self.stop = stop
        state = Mutex(State(current: nominal))
    }

    /// The current level (`unknown` before the first reading).
    public var level: PressureLevel { state.withLock { $0.level } }
    /// What the recorder does now.
    public var current: PressureAction { state.withLock { $0.current } }
    /// Whether the recording was finished because of `shutdown`.
    public var stoppedForPressure: Bool { state.withLock { $0.stoppedForPressure } }

    /// Called by the monitor (on its queue, one change at a time) with every level change.
    public func handle(_ change: PressureState) {
        let current = state.withLock { $0.current }
        guard enabled else {
            state.withLock { s in s.level = change.level; s.entries.append(Entry(state: change, action: nil)) }
            return
        }
        var next = policy.action(for: change.level, current: current, nominal: nominal)
        var note: String? = nil
        if next.framesPerSecond != current.framesPerSecond {
            let rate = next.framesPerSecond == nominal.framesPerSecond ? nominalRate : PressureHandling.frameRate(next.framesPerSecond)
            do {
                guard let rate else { throw CaptureError.notConfigurable("\(next.framesPerSecond) fps is not a frame rate") }
                try session.setFrameRate(rate)
                // A V4L2 camera steps by S_PARM or decimation, perhaps to a lower rate than asked.
                if let camera = session.source as? V4L2Source, let step = camera.lastRateStep {
                    next.framesPerSecond = step.rate.perSecond
                    note = step.method + (step.note.map { ": " + $0 } ?? (step.keepEvery > 1 ? ": one frame in \(step.keepEvery) kept" : ""))
                }
                if let problem = rateChanged(next.framesPerSecond) {
                    note = (note.map { $0 + "; " } ?? "") + problem
                }
            } catch {
                note = "the frame rate stays at \(CostFormat.fps(current.framesPerSecond)) fps: \(error)"
                next.framesPerSecond = current.framesPerSecond
            }
        }
        if let preview {
            preview.pass(every: next.previewPaused ? 0 : next.framesPerSecond < nominal.framesPerSecond ? 2 : 1)
        }
        let stopNow = state.withLock { s -> Bool in
            s.level = change.level
            s.current = next
            s.entries.append(Entry(state: change, action: next, preview: preview?.mode, note: note))
            let first = next.stop && !s.stoppedForPressure
            if next.stop { s.stoppedForPressure = true }
            return first
        }
        if stopNow { finish() }
    }

    /// Stops the recording once it has a frame: a `shutdown` read before capture started (the
    /// monitor's first reading) would otherwise be lost, the source clearing its stop flag as
    /// it starts.
    private func finish() {
        if session.stats.framesCaptured > 0 { stop(); return }
        let (session, stop) = (self.session, self.stop)
        DispatchQueue.global().async {
            let deadline = MonotonicClock.now() + 30_000_000_000
            while session.stats.framesCaptured == 0 && MonotonicClock.now() < deadline { usleep(10_000) }
            stop()
        }
    }

    /// The timeline, each frame-rate step given the frame it applied from (`changes`, the
    /// session's, in order).
    public func timeline(changes: [FrameRateChange]) -> [Entry] {
        var entries = state.withLock { $0.entries }
        var fps = nominal.framesPerSecond
        var remaining = changes[...]
        for i in entries.indices {
            guard let action = entries[i].action, action.framesPerSecond != fps else { continue }
            fps = action.framesPerSecond
            if let k = remaining.firstIndex(where: { abs($0.to - fps) < 1e-6 }) {
                entries[i].frameIndex = remaining[k].frameIndex
                remaining = remaining[(k + 1)...]
            }
        }
        return entries
    }

    /// `pressure serious, 24 fps, preview reduced` for the progress line.
    public var progressText: String {
        let (level, action) = state.withLock { ($0.level, $0.current) }
        var text = "pressure \(level.rawValue)"
        if action.framesPerSecond != nominal.framesPerSecond { text += " \(CostFormat.fps(action.framesPerSecond)) fps" }
        if action.previewPaused, preview != nil { text += " preview paused" }
        return text
    }
}
