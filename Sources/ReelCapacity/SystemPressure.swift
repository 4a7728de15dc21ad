import Foundation
import Synchronization
import ReelCore

/// How hard-pressed the machine is, as AVFoundation's `AVCaptureDevice.SystemPressureState`
/// names the levels; `unknown` where the kernel gives no pressure figures (no PSI).
public enum PressureLevel: String, Codable, Sendable, Comparable, CaseIterable {
    /// `unknown` (no PSI, or no reading yet), then from `nominal` up to `shutdown`.
    case unknown, nominal, fair, serious, critical, shutdown

    var rank: Int { PressureLevel.allCases.firstIndex(of: self)! }
    /// Orders the levels from `unknown` to `shutdown`.
    public static func < (a: PressureLevel, b: PressureLevel) -> Bool { a.rank < b.rank }
}

/// One reading of the kernel's pressure stall information (PSI): the `avg10` figures of
/// `cpu`, `io` and `memory` (`some`: share of the last 10 s in which at least one task
/// stalled on the resource; `full`: in which all non-idle tasks did), in percent. A figure
/// the kernel does not give is nil.
public struct PressureSample: Codable, Sendable, Equatable {
    /// `cpu` `some avg10`, in percent.
    public var cpuSome: Double?
    /// `io` `some avg10`, in percent.
    public var ioSome: Double?
    /// `io` `full avg10`, in percent.
    public var ioFull: Double?
    /// `memory` `some avg10`, in percent.
    public var memorySome: Double?
    /// `memory` `full avg10`, in percent.
    public var memoryFull: Double?

    /// A reading of these figures; a missing one is nil.
    public init(cpuSome: Double? = nil, ioSome: Double? = nil, ioFull: Double? = nil, memorySome: Double? = nil, memoryFull: Double? = nil) {
        self.cpuSome = cpuSome; self.ioSome = ioSome; self.ioFull = ioFull; self.memorySome = memorySome; self.memoryFull = memoryFull
    }

    var isEmpty: Bool { cpuSome == nil && ioSome == nil && ioFull == nil && memorySome == nil && memoryFull == nil }

    /// The figures by name (`cpu.some`, …), those present only.
    public var figures: [(String, Double)] {
        [("cpu.some", cpuSome), ("io.some", ioSome), ("io.full", ioFull), ("memory.some", memorySome), ("memory.full", memoryFull)]
            .compactMap { name, v in v.map { (name, $0) } }
    }

    /// `some avg10=… ` of a PSI file's text (`/proc/pressure/cpu`): (some, full) avg10.
    public static func parse(_ text: String) -> (some: Double?, full: Double?) {
        var some: Double? = nil, full: Double? = nil
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let kind = fields.first,
                  let avg = fields.first(where: { $0.hasPrefix("avg10=") }).flatMap({ Double($0.dropFirst(6)) }),
                  avg.isFinite, avg >= 0 else { continue }
            if kind == "some" { some = avg } else if kind == "full" { full = avg }
        }
        return (some, full)
    }
}

/// The avg10 percentages at which each level starts (`PressureThresholds.standard`), and the
/// hysteresis: a level is entered at once when a figure reaches its entry threshold, and left
/// only when every figure has stayed below `exitFraction` of it for `holdDownSeconds`.
public struct PressureThresholds: Sendable, Equatable {
    /// Entry thresholds per level (fair, serious, critical, shutdown) per figure (`cpu.some`, …);
    /// a figure missing from a level never raises it there.
    public var entry: [PressureLevel: [String: Double]]
    /// A level is left only when every figure is below this fraction of its entry threshold…
    public var exitFraction: Double
    /// …for this many seconds.
    public var holdDownSeconds: Double

    /// The thresholds Reel uses (README: System pressure):
    ///
    /// | level | cpu.some | io.some | io.full | memory.some | memory.full |
    /// |---|---|---|---|---|---|
    /// | fair | 20 | 10 | 5 | 5 | 2 |
    /// | serious | 50 | 30 | 15 | 7 | 5 |
    /// | critical | 80 | 60 | 40 | 30 | 20 |
    /// | shutdown | — | — | — | — | 60 |
    ///
    /// memory.some 7 % is Android lmkd's partial-stall threshold (70 ms per 1 s window,
    /// `ro.lmk.psi_partial_stall_ms`); memory.full 60 % over 10 s is systemd-oomd's default
    /// `ManagedOOMMemoryPressureLimit` (60 %, there over 20 s), where it starts killing. CPU
    /// and I/O have no such reference: 50 % `some` means a task was waiting half the time,
    /// i.e. a 33 ms frame budget loses ~17 ms on average — where this machine's 1080p30
    /// recordings began to drop frames.
    public static let standard = PressureThresholds(entry: [
        .fair: ["cpu.some": 20, "io.some": 10, "io.full": 5, "memory.some": 5, "memory.full": 2],
        .serious: ["cpu.some": 50, "io.some": 30, "io.full": 15, "memory.some": 7, "memory.full": 5],
        .critical: ["cpu.some": 80, "io.some": 60, "io.full": 40, "memory.some": 30, "memory.full": 20],
        .shutdown: ["memory.full": 60],
    ], exitFraction: 0.75, holdDownSeconds: 5)

    /// Thresholds of your own (tests; `standard` is Reel's).
    public init(entry: [PressureLevel: [String: Double]], exitFraction: Double, holdDownSeconds: Double) {
        self.entry = entry; self.exitFraction = exitFraction; self.holdDownSeconds = holdDownSeconds
    }

    /// The highest level `sample` reaches with thresholds scaled by `scale`, and the figures
    /// that put it there (`cpu.some 63.2%`).
    public func level(of sample: PressureSample, scale: Double = 1) -> (PressureLevel, [String]) {
        guard !sample.isEmpty else { return (.unknown, []) }
        for level in [PressureLevel.shutdown, .critical, .serious, .fair] {
            let limits = entry[level] ?? [:]
            let over = sample.figures.filter { name, v in limits[name].map { v >= $0 * scale } ?? false }
            if !over.isEmpty { return (level, over.map { "\($0.0) \(String(format: "%.1f", $0.1))%" }) }
        }
        return (.nominal, [])
    }

    /// 0…1: the largest figure as a share of its `critical` threshold.
    public func cost(of sample: PressureSample) -> Double {
        let critical = entry[.critical] ?? [:]
        return min(1, sample.figures.compactMap { name, v in critical[name].map { v / $0 } }.max() ?? 0)
    }
}

/// A level the monitor reported: when (seconds since it started), the level, the figures
/// that raised it, the pressure cost and the PSI reading.
public struct PressureState: Codable, Sendable, Equatable {
    /// Seconds since the monitor started.
    public var atSeconds: Double
    /// The level entered.
    public var level: PressureLevel
    /// The figures that raised it (`cpu.some 63.2%`); empty for `nominal` and `unknown`.
    public var factors: [String]
    /// 0…1: the largest figure as a share of its `critical` threshold.
    public var cost: Double
    /// The PSI reading that caused the change.
    public var sample: PressureSample
}

/// The hysteresis alone, fed one reading at a time (the monitor's logic, testable with any
/// clock): returns the new state when the level changes.
public struct PressureLevelTracker: Sendable {
    /// The thresholds and hysteresis it applies.
    public let thresholds: PressureThresholds
    /// The current level (`unknown` before the first reading).
    public private(set) var level: PressureLevel = .unknown
    /// Since when the figures allow a lower level (nil while they do not).
    private var lowerSince: Double? = nil

    /// A tracker at `unknown` with `thresholds`.
    public init(thresholds: PressureThresholds = .standard) { self.thresholds = thresholds }

    /// The state after `sample` at `time` seconds if the level changed, else nil.
    public mutating func update(_ sample: PressureSample, at time: Double) -> PressureState? {
        let (raw, factors) = thresholds.level(of: sample)
        let cost = thresholds.cost(of: sample)
        func state(_ l: PressureLevel, _ f: [String]) -> PressureState {
            PressureState(atSeconds: time, level: l, factors: f, cost: cost, sample: sample)
        }
        if raw == .unknown || level == .unknown || raw > level {
            lowerSince = nil
            guard raw != level else { return nil }
            level = raw
            return state(raw, factors)
        }
        // Leaving a level: every figure must stay below exitFraction of the entry thresholds
        // for holdDownSeconds; then the level drops to what those lower thresholds give.
        let (relaxed, relaxedFactors) = thresholds.level(of: sample, scale: thresholds.exitFraction)
        guard relaxed < level else { lowerSince = nil; return nil }
        let since = lowerSince ?? time
        lowerSince = since
        guard time - since >= thresholds.holdDownSeconds else { return nil }
        lowerSince = nil
        level = relaxed
        return state(relaxed, relaxedFactors)
    }
}

/// Watches the kernel's pressure stall information and reports level changes
/// (`systemPressureState`): to a callback, to `states()` (an AsyncStream) and into `timeline`.
///
/// Reads the three PSI files once a second (three `read`s of a few bytes; PSI's own `avg10`
/// is already a 10 s average, so a faster poll adds nothing). Where there is no PSI (an old
/// kernel, `psi=0`, a container without /proc/pressure) the level is `unknown`, said once
/// through `note`, and nothing else happens.
public final class PressureMonitor: Sendable {
    /// Where the files are: `cpu`, `io`, `memory` in `directory` (/proc/pressure), or the
    /// cgroup's `cpu.pressure`, … (`suffix` `.pressure`).
    public let directory: String
    /// The PSI files' name suffix: empty in /proc/pressure, `.pressure` in a cgroup.
    public let suffix: String
    /// Seconds between readings.
    public let interval: Double
    private let thresholds: PressureThresholds
    private let note: @Sendable (String) -> Void
    private let onChange: (@Sendable (PressureState) -> Void)?

    private struct State {
        var tracker: PressureLevelTracker
        var timeline: [PressureState] = []
        var continuations: [Int: AsyncStream<PressureState>.Continuation] = [:]
        var nextID = 0
        /// Sampling: between start() and stop() (or the finding that there is no PSI).
        var running = false
        var stopped = false
        var everStarted = false
        var started: UInt64 = 0
        var saidUnknown = false
    }
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "reel.pressure")
    /// Driven on `queue`; started once, cancelled once (DispatchSource is thread-safe).
    nonisolated(unsafe) private let timer: any DispatchSourceTimer

    /// - Parameters:
    ///   - directory: the PSI files' directory (default `/proc/pressure`).
    ///   - onChange: called on the monitor's queue with every level change (the first
    ///     reading included).
    public init(directory: String = "/proc/pressure", suffix: String = "", interval: Double = 1,
                thresholds: PressureThresholds = .standard, note: @escaping @Sendable (String) -> Void = { _ in },
                onChange: (@Sendable (PressureState) -> Void)? = nil) {
        self.directory = directory; self.suffix = suffix; self.interval = interval; self.thresholds = thresholds
        self.note = note; self.onChange = onChange
        state = Mutex(State(tracker: PressureLevelTracker(thresholds: thresholds)))
        timer = DispatchSource.makeTimerSource(queue: queue)
    }

    /// The monitor of this process's own cgroup when it has PSI files (cgroup v2, not the
    /// root), else the system's `/proc/pressure`.
    public static func forThisProcess(note: @escaping @Sendable (String) -> Void = { _ in },
                                      onChange: (@Sendable (PressureState) -> Void)? = nil) -> PressureMonitor {
        if let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
           let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") }) {
            let path = String(line.dropFirst(3))
            let dir = "/sys/fs/cgroup" + path
            if path != "/", FileManager.default.isReadableFile(atPath: dir + "/cpu.pressure") {
                return PressureMonitor(directory: dir, suffix: ".pressure", note: note, onChange: onChange)
            }
        }
        return PressureMonitor(note: note, onChange: onChange)
    }

    deinit {
        // A dispatch source must not be released suspended: one never started is resumed
        // after its cancellation (its handler never runs).
        if !state.withLock({ $0.everStarted }) {
            timer.cancel()
            timer.resume()
        }
    }

    /// One reading of the files now.
    public func read() -> PressureSample {
        func file(_ name: String) -> (some: Double?, full: Double?) {
            guard let text = try? String(contentsOfFile: "\(directory)/\(name)\(suffix)", encoding: .utf8) else { return (nil, nil) }
            return PressureSample.parse(text)
        }
        let cpu = file("cpu"), io = file("io"), memory = file("memory")
        // cpu `full` is not a stall of the whole system (the kernel reports it since 5.13 as 0
        // at the system level): not used.
        return PressureSample(cpuSome: cpu.some, ioSome: io.some, ioFull: io.full, memorySome: memory.some, memoryFull: memory.full)
    }

    /// Starts sampling: the first reading now (reported before `start()` returns), then every
    /// `interval` seconds. A monitor runs once: `start()` after `stop()` does nothing.
    public func start() {
        let go: Bool = state.withLock { s in
            guard !s.running && !s.stopped else { return false }
            s.running = true
            s.everStarted = true
            s.started = MonotonicClock.now()
            return true
        }
        guard go else { return }
        timer.setEventHandler { [weak self] in self?.sample() }
        // The first reading on the monitor's queue now: a short recording has its level.
        queue.sync { sample() }
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.resume()
    }

    /// Stops sampling and ends every `states()` stream.
    public func stop() {
        let (wasRunning, continuations) = state.withLock { s in
            let r = s.running, c = s.continuations
            s.running = false
            s.stopped = true
            s.continuations = [:]
            return (r, c)
        }
        if wasRunning { timer.cancel() }
        // Wait for a sample in progress, so nothing is reported after stop() returns.
        queue.sync {}
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

    private func sample() {
        let reading = read()
        let (change, continuations, sayUnknown): (PressureState?, [AsyncStream<PressureState>.Continuation], Bool) = state.withLock { s in
            guard s.running else { return (nil, [], false) }
            let t = Double(MonotonicClock.now() - s.started) / 1e9
            var change = s.tracker.update(reading, at: t)
            if reading.isEmpty && s.timeline.isEmpty {
                // No PSI: one `unknown` state, said once; the timer stops below.
                change = PressureState(atSeconds: t, level: .unknown, factors: [], cost: 0, sample: reading)
            }
            if let change { s.timeline.append(change) }
            let say = reading.isEmpty && !s.saidUnknown
            if say { s.saidUnknown = true; s.running = false }
            return (change, Array(s.continuations.values), say)
        }
        if sayUnknown {
            timer.cancel()
            note("system pressure unknown: no pressure stall information at \(directory) (a kernel without PSI)")
        }
        guard let change else { return }
        onChange?(change)
        for c in continuations { c.yield(change) }
    }
}
