import Foundation
import Synchronization
import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// Watches the kernel's pressure stall information — and the thermal zones and cpufreq limits
/// where the machine has them — and reports level changes (`systemPressureState`): to a
/// callback, to `states()` (an AsyncStream) and into `timeline`.
///
/// The figures are the share of time stalled, from the files' cumulative `total` counters
/// (µs), since the oldest reading at most 10 s old — never before the monitor's first reading:
/// a 10-second average, like the kernel's `avg10`, that holds no work which ended before the
/// monitor started (the pool's creation, say; `avg10` holds it for tens of seconds). The first
/// level comes from the counters' movement over the first `startWindow` seconds (0.5 s), read
/// by the monitor's thread (or by `stop()` if that comes first). A figure without a counter (a
/// file that gives no `total`, or `total=0`) uses its `avg10`; when no figure has one, the
/// first level is read at once in `start()`.
///
/// Where the kernel takes PSI triggers (`sources.psiTriggers`), the monitor sleeps in `poll()`
/// until one fires (a 2 s window stalled about as much as `fair` asks of the 10 s average, see
/// `PSITriggers`) and then reads the files and decides as the timed reading does; it
/// also reads every `interval` seconds while the level is above `nominal` (to leave it after
/// the hold-down) or thermal zones/cpufreq are read (they cannot wake anyone), and every
/// `idleTimeout` seconds otherwise (to notice a file gone). Without triggers (a read-only file,
/// a kernel or privilege that refuses them, regular files under `REEL_PRESSURE_DIR`) it reads
/// every `interval` seconds, and `sources` says why. Where there is no PSI and no thermal
/// information (an old kernel, `psi=0`, a container without /proc/pressure) the level is
/// `unknown`, said once through `note`, and nothing else happens.
public final class PressureMonitor: Sendable {
    /// Where the files are: `cpu`, `io`, `memory` in `directory` (/proc/pressure), or the
    /// cgroup's `cpu.pressure`, … (`suffix` `.pressure`).
    public let directory: String
    /// The PSI files' name suffix: empty in /proc/pressure, `.pressure` in a cgroup.
    public let suffix: String
    /// Seconds between readings when reading by time.
    public let interval: Double
    /// Seconds the monitor sleeps at `nominal` when triggers (or wake sources) can wake it.
    public let idleTimeout: Double
    /// The sysfs root of the thermal zones and cpufreq (`/sys`); nil: not read.
    public let sysfsRoot: String?
    /// Seconds the counters are watched before the first level (0.5).
    public let startWindow: Double
    private let clock: PressureClock
    private let thresholds: PressureThresholds
    private let useTriggers: Bool
    private let note: @Sendable (String) -> Void
    private let onChange: (@Sendable (PressureState) -> Void)?

    private struct State {
        var tracker: PressureLevelTracker
        var thermal: ThermalReader?
        var timeline: [PressureState] = []
        var continuations: [Int: AsyncStream<PressureState>.Continuation] = [:]
        var nextID = 0
        /// Sampling: between start() and stop() (or the finding that there is nothing to read).
        var running = false
        var stopped = false
        var started: UInt64 = 0
        var saidUnknown = false
        var hasThermal = false
        var sources = PressureSources(psiTriggers: false, psiTriggersReason: "not started", triggers: [], thermal: "none")
        /// The loop's thread, while it runs.
        var loopThread: pthread_t? = nil
        /// stop() ran on the loop's thread: the loop closes the stop pipe's read end as it returns.
        var loopClosesStopPipe = false
        /// Earlier readings' times and stall counters: the first one, then those kept as bases
        /// of the 10 s window.
        var history: [(time: UInt64, totals: [String: UInt64])] = []
        /// The first level waits for the start window's second reading.
        var firstPending = false
    }
    private let state: Mutex<State>
    /// The wake sources the caller gave (descriptors it owns).
    private let wakeSources: [Int32]
    /// The stop pipe (read end, write end) and the loop's end, made by start().
    private let control = Mutex<(stopRead: Int32, stopWrite: Int32, done: DispatchSemaphore?)>((-1, -1, nil))

    /// - Parameters:
    ///   - directory: the PSI files' directory (default `/proc/pressure`).
    ///   - sysfsRoot: where `class/thermal` and `devices/system/cpu` are (`/sys`); nil: no
    ///     thermal reading.
    ///   - triggers: false: never set PSI triggers (read by time).
    ///   - wakeSources: descriptors (the caller's, left open) whose readability wakes the monitor
    ///     as a trigger would: what is readable is read and dropped (tests: a pipe).
    ///   - startWindow: seconds over which the stall counters' movement gives the first level.
    ///   - clock: where time comes from (tests: one they move).
    ///   - onChange: called on the monitor's thread with every level change (the first
    ///     reading included: on the thread that calls `start()` when it is read at once, on
    ///     the one that calls `stop()` when that comes before the start window has passed).
    public init(directory: String = "/proc/pressure", suffix: String = "", interval: Double = 1,
                idleTimeout: Double = 10, sysfsRoot: String? = "/sys", triggers: Bool = true, wakeSources: [Int32] = [],
                thresholds: PressureThresholds = .standard, startWindow: Double = 0.5, clock: PressureClock = .monotonic,
                note: @escaping @Sendable (String) -> Void = { _ in },
                onChange: (@Sendable (PressureState) -> Void)? = nil) {
        self.startWindow = startWindow; self.clock = clock
        self.directory = directory; self.suffix = suffix; self.interval = interval; self.idleTimeout = idleTimeout
        self.sysfsRoot = sysfsRoot; self.useTriggers = triggers; self.wakeSources = wakeSources
        self.thresholds = thresholds; self.note = note; self.onChange = onChange
        state = Mutex(State(tracker: PressureLevelTracker(thresholds: thresholds), thermal: sysfsRoot.map { ThermalReader(root: $0) }))
    }

    /// The monitor of this process's own cgroup when it has PSI files (cgroup v2, not the
    /// root), else the system's `/proc/pressure`; thermal zones and cpufreq under `sysfsRoot`.
    public static func forThisProcess(sysfsRoot: String? = "/sys", note: @escaping @Sendable (String) -> Void = { _ in },
                                      onChange: (@Sendable (PressureState) -> Void)? = nil) -> PressureMonitor {
        if let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
           let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) {
            let path = String(line.dropFirst(3))
            let dir = "/sys/fs/cgroup" + path
            if path != "/", FileManager.default.isReadableFile(atPath: dir + "/cpu.pressure") {
                return PressureMonitor(directory: dir, suffix: ".pressure", sysfsRoot: sysfsRoot, note: note, onChange: onChange)
            }
        }
        return PressureMonitor(sysfsRoot: sysfsRoot, note: note, onChange: onChange)
    }

    /// One reading of the files' `avg10` figures now.
    public func read() -> PressureSample { readFiles().avg }

    /// The files' `avg10` figures and their stall counters (µs, by figure name) now.
    private func readFiles() -> (avg: PressureSample, totals: [String: UInt64]) {
        var avg = PressureSample()
        var totals: [String: UInt64] = [:]
        for name in ["cpu", "io", "memory"] {
            guard let text = try? String(contentsOfFile: "\(directory)/\(name)\(suffix)", encoding: .utf8) else { continue }
            let (some, full) = PressureSample.parse(text)
            let (someTotal, fullTotal) = PressureSample.parseTotals(text)
            avg[figure: name + ".some"] = some
            if some != nil, let someTotal { totals[name + ".some"] = someTotal }
            // cpu `full` is not a stall of the whole system (the kernel reports it since 5.13
            // as 0 at the system level): not used.
            guard name != "cpu" else { continue }
            avg[figure: name + ".full"] = full
            if full != nil, let fullTotal { totals[name + ".full"] = fullTotal }
        }
        return (avg, totals)
    }

    /// What the monitor reads and how it waits: PSI triggers or timed (and why), thermal sources.
    public var sources: PressureSources { state.withLock { $0.sources } }

    /// Starts sampling: the first reading now — the stall counters, whose movement over the
    /// start window gives the first level (read by the thread), or, where no figure has a
    /// counter, the level at once (reported before `start()` returns) —, the PSI triggers set
    /// (`sources` says whether), then a thread that waits and reads. A monitor runs once:
    /// `start()` after `stop()` does nothing. Call `stop()` when done: the thread holds the
    /// monitor until then.
    public func start() {
        let go: Bool = state.withLock { s in
            guard !s.running && !s.stopped else { return false }
            s.running = true
            s.started = clock.now()
            return true
        }
        guard go else { return }
        let first = readFiles()
        let counted = first.totals.values.contains { $0 > 0 }
        state.withLock { s in
            s.history = [(s.started, first.totals)]
            s.firstPending = counted
        }
        if !counted { sample() }
        guard state.withLock({ $0.running }) else { return }   // nothing to read
        var triggers: PSITriggers? = nil
        let reason: String?
        if !useTriggers {
            reason = "triggers not asked for"
        } else if read().isEmpty {
            reason = "no pressure stall information at \(directory)"
        } else {
            switch PSITriggers.open(directory: directory, suffix: suffix, thresholds: thresholds) {
            case .success(let t): triggers = t; reason = nil
            case .failure(let f): reason = f.reason
            }
        }
        var pipeFDs: [Int32] = [-1, -1]
        // The stop pipe, close-on-exec (a child the recorder starts must not hold it).
        let made = pipe(&pipeFDs) == 0
        let failed: SystemError? = !made ? SystemError.last("pipe")
            : fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC) != 0 ? SystemError.last("fcntl") : nil
        if let error = failed {
            // No stop pipe: no thread; the first reading stands, said once.
            if made { for fd in pipeFDs { FileDescriptor(rawValue: fd, path: "pressure stop pipe").closeQuietly() } }
            triggers?.close()
            state.withLock { s in
                s.running = false
                s.sources.psiTriggers = false
                s.sources.psiTriggersReason = "\(error)"
            }
            note("system pressure is read once only: \(error)")
            return
        }
        let done = DispatchSemaphore(value: 0)
        control.withLock { $0 = (pipeFDs[0], pipeFDs[1], done) }
        state.withLock { s in
            s.sources.psiTriggers = triggers != nil
            s.sources.psiTriggersReason = reason
            s.sources.triggers = triggers?.triggers.map(\.text) ?? []
        }
        let stopRead = pipeFDs[0]
        let opened = triggers
        let thread = Thread { [self] in
            loop(triggers: opened, stop: stopRead)
            done.signal()
        }
        thread.name = "reel.pressure"
        thread.start()
    }

    private func loop(triggers initial: PSITriggers?, stop: Int32) {
        state.withLock { $0.loopThread = pthread_self() }
        var triggers = initial
        var wake = wakeSources
        defer {
            triggers?.close()
            // The stop pipe's read end stays open until stop() (a write to a pipe without a
            // reader raises SIGPIPE); stop() called from the loop leaves it to the loop.
            if state.withLock({ $0.loopClosesStopPipe }) { FileDescriptor(rawValue: stop, path: "pressure stop pipe").closeQuietly() }
        }
        while true {
            let (level, hasThermal, pending, started) = state.withLock { ($0.tracker.level, $0.hasThermal, $0.firstPending, $0.started) }
            let canWake = triggers != nil || !wake.isEmpty
            // The first level waits for the start window (a wake before it is waited through).
            let windowLeft = startWindow - Double(clock.now() &- started) / 1e9
            let timeout = pending ? max(0, windowLeft) : canWake && level <= .nominal && !hasThermal ? idleTimeout : interval
            switch waitForPressure(triggers: triggers, wakeSources: &wake, stop: stop, timeout: timeout) {
            case .stop:
                return
            case .triggersFailed(let reason):
                let hadTriggers = triggers != nil || !wake.isEmpty
                triggers?.close()
                triggers = nil
                wake = []
                state.withLock { s in
                    if s.sources.psiTriggers { s.sources.psiTriggersReason = reason }
                    s.sources.psiTriggers = false
                }
                // poll itself failed with nothing but the stop pipe to wait on: sleep instead.
                if !hadTriggers { MonotonicClock.sleep(until: MonotonicClock.now() + UInt64(interval * 1e9)) }
            case .trigger, .timeout:
                if pending && Double(clock.now() &- started) / 1e9 < startWindow { continue }
            }
            guard state.withLock({ $0.running }) else { return }
            sample()
            guard state.withLock({ $0.running }) else { return }
        }
    }

    /// Stops sampling, closes the triggers and ends every `states()` stream. Before the start
    /// window has passed, the first level is read first, from the counters' movement so far.
    public func stop() {
        if state.withLock({ $0.running && $0.firstPending }) { sample() }
        let (continuations, fromLoop) = state.withLock { s in
            let c = s.continuations
            s.running = false
            s.stopped = true
            s.continuations = [:]
            let fromLoop = s.loopThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
            if fromLoop { s.loopClosesStopPipe = true }
            return (c, fromLoop)
        }
        let (stopRead, stopWrite, done) = control.withLock { c in
            let v = c
            c = (-1, -1, nil)
            return v
        }
        if let done {
            var byte: UInt8 = 1
            // The pipe is empty (only stop() writes it, once) and its read end open: the write
            // cannot block, be short or raise SIGPIPE. Should it fail, the loop still ends at
            // its next wake (running is false).
            do { try retryingInterrupts("write", path: "pressure stop pipe") { write(stopWrite, &byte, 1) } } catch {
                note("system pressure monitor: \(error); it stops at its next reading")
            }
            // Wait for a sample in progress, so nothing is reported after stop() returns —
            // unless stop() is called from the loop itself (a callback).
            if !fromLoop { done.wait() }
            // A pipe's close reports nothing anyone could lose.
            FileDescriptor(rawValue: stopWrite, path: "pressure stop pipe").closeQuietly()
            if !fromLoop { FileDescriptor(rawValue: stopRead, path: "pressure stop pipe").closeQuietly() }
        }
        for c in continuations.values { c.finish() }
    }

    /// The current level (`unknown` before the first reading or without PSI).
    public var level: PressureLevel { state.withLock { $0.tracker.level } }

    /// Every level change so far, the first reading included.
    public var timeline: [PressureState] { state.withLock { $0.timeline } }

    /// Level changes from now on (the current state first, if there is one), until `stop()`.
    public func states() -> AsyncStream<PressureState> {
        let (stream, continuation) = AsyncStream<PressureState>.makeStream()
        let id: Int = state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            if let last = s.timeline.last { continuation.yield(last) }
            s.continuations[id] = continuation
            return id
        }
        do {
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
            }
        }
        return stream
    }

    /// How far back the figures reach: 10 s, as the kernel's `avg10`.
    private static let averageWindow: UInt64 = 10_000_000_000

    private func sample() {
        let files = readFiles()
        let now = clock.now()
        var reader = state.withLock { $0.thermal }
        let thermal = reader?.read()
        let (change, continuations, sayUnknown): (PressureState?, [AsyncStream<PressureState>.Continuation], Bool) = state.withLock { s in
            guard s.running else { return (nil, [], false) }
            s.firstPending = false
            // The window: from the newest reading at least 10 s old, else the first.
            let base = s.history.last { now &- $0.time >= Self.averageWindow } ?? s.history.first ?? (now, files.totals)
            let reading = PressureSample.stallShares(avg: files.avg, totals: files.totals, now: now, since: base)
            s.history = s.history.filter { $0.time >= base.time } + [(now, files.totals)]
            s.thermal = reader
            if s.timeline.isEmpty { s.sources.thermal = thermal?.sourcesDescription ?? "none" }
            s.hasThermal = !(thermal?.isEmpty ?? true)
            let t = Double(now &- s.started) / 1e9
            var change = s.tracker.update(reading, thermal: thermal, at: t)
            let nothing = reading.isEmpty && !s.hasThermal
            if nothing && s.timeline.isEmpty {
                // Nothing to read: one `unknown` state, said once; the loop stops.
                change = PressureState(atSeconds: t, level: .unknown, factors: [], cost: 0, sample: reading)
            }
            if let change { s.timeline.append(change) }
            let say = nothing && !s.saidUnknown
            if say { s.saidUnknown = true; s.running = false }
            return (change, Array(s.continuations.values), say)
        }
        if sayUnknown {
            note("system pressure unknown: no pressure stall information at \(directory) (a kernel without PSI)")
        }
        guard let change else { return }
        onChange?(change)
        for c in continuations { c.yield(change) }
    }
}
