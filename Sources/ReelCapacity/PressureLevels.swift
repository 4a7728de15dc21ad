import Foundation
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

/// Pressure stall information (PSI) figures of `cpu`, `io` and `memory` (`some`: share of
/// the time in which at least one task stalled on the resource; `full`: in which all non-idle
/// tasks did), in percent: the files' `avg10` (`PressureMonitor.read()`), or the monitor's own
/// shares from the cumulative `total` counters (`PressureState.sample`). A figure the kernel
/// does not give is nil.
public struct PressureSample: Codable, Sendable, Equatable {
    /// `cpu` `some`, in percent.
    public var cpuSome: Double?
    /// `io` `some`, in percent.
    public var ioSome: Double?
    /// `io` `full`, in percent.
    public var ioFull: Double?
    /// `memory` `some`, in percent.
    public var memorySome: Double?
    /// `memory` `full`, in percent.
    public var memoryFull: Double?

    /// A reading of these figures; a missing one is nil.
    public init(cpuSome: Double? = nil, ioSome: Double? = nil, ioFull: Double? = nil, memorySome: Double? = nil, memoryFull: Double? = nil) {
        self.cpuSome = cpuSome; self.ioSome = ioSome; self.ioFull = ioFull; self.memorySome = memorySome; self.memoryFull = memoryFull
    }

    var isEmpty: Bool { cpuSome == nil && ioSome == nil && ioFull == nil && memorySome == nil && memoryFull == nil }

    /// The figure called `name` (`cpu.some`, …).
    subscript(figure name: String) -> Double? {
        get {
            switch name {
            case "cpu.some": return cpuSome
            case "io.some": return ioSome
            case "io.full": return ioFull
            case "memory.some": return memorySome
            case "memory.full": return memoryFull
            default: return nil
            }
        }
        set {
            switch name {
            case "cpu.some": cpuSome = newValue
            case "io.some": ioSome = newValue
            case "io.full": ioFull = newValue
            case "memory.some": memorySome = newValue
            case "memory.full": memoryFull = newValue
            default: break
            }
        }
    }

    /// The figures of a reading at `now` (ns) whose cumulative stall counters (µs, by figure
    /// name) are `totals`: each figure with a counter that is not 0 is the share of the time
    /// stalled since `base` (an earlier reading: its time and counters), in percent; a figure
    /// without one — a file that gives no `total`, or 0 (on a real kernel its avg10 is 0 too),
    /// or a counter that went back — keeps its avg10 (`avg`).
    static func stallShares(avg: PressureSample, totals: [String: UInt64], now: UInt64,
                            since base: (time: UInt64, totals: [String: UInt64])) -> PressureSample {
        var shares = avg
        let elapsedMicroseconds = Double(now &- base.time) / 1000
        for (name, total) in totals where total > 0 {
            guard let before = base.totals[name], total >= before, now > base.time else { continue }
            shares[figure: name] = min(100, Double(total - before) / elapsedMicroseconds * 100)
        }
        return shares
    }

    /// The figures by name (`cpu.some`, …), those present only.
    public var figures: [(String, Double)] {
        [("cpu.some", cpuSome), ("io.some", ioSome), ("io.full", ioFull), ("memory.some", memorySome), ("memory.full", memoryFull)]
            .compactMap { name, v in v.map { (name, $0) } }
    }

    /// `some … total=…` of a PSI file's text: the (some, full) cumulative stall counters, µs.
    public static func parseTotals(_ text: String) -> (some: UInt64?, full: UInt64?) {
        var some: UInt64? = nil, full: UInt64? = nil
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let kind = fields.first,
                  let total = fields.first(where: { $0.hasPrefix("total=") }).flatMap({ UInt64($0.dropFirst(6)) }) else { continue }
            if kind == "some" { some = total } else if kind == "full" { full = total }
        }
        return (some, full)
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
    /// The figures that caused the change: the shares of time stalled over the monitor's
    /// window (from the `total` counters; `avg10` for a figure without one).
    public var sample: PressureSample

    /// A state with these fields (a monitor makes them; an app or a test may feed its own to
    /// a handler).
    public init(atSeconds: Double, level: PressureLevel, factors: [String] = [], cost: Double = 0, sample: PressureSample = PressureSample()) {
        self.atSeconds = atSeconds
        self.level = level
        self.factors = factors
        self.cost = cost
        self.sample = sample
    }
}

/// The hysteresis alone, fed one reading at a time (the monitor's logic, testable with any
/// clock): returns the new state when the level changes. A reading is PSI figures and, where
/// the machine has them, thermal zones and cpufreq limits; the level is the higher of the two.
public struct PressureLevelTracker: Sendable {
    /// The thresholds and hysteresis it applies.
    public let thresholds: PressureThresholds
    /// How thermal readings map to levels.
    public let thermalThresholds: ThermalThresholds
    /// The current level (`unknown` before the first reading).
    public private(set) var level: PressureLevel = .unknown
    /// Since when the figures allow a lower level (nil while they do not).
    private var lowerSince: Double? = nil

    /// A tracker at `unknown` with `thresholds` (and `thermal`).
    public init(thresholds: PressureThresholds = .standard, thermal: ThermalThresholds = .standard) {
        self.thresholds = thresholds; self.thermalThresholds = thermal
    }

    /// The level of a PSI reading and a thermal one together (the higher; the factors of both
    /// where both give it); `unknown` when neither has anything.
    func combined(_ sample: PressureSample, _ thermal: ThermalSample?, leaving: Bool) -> (PressureLevel, [String]) {
        let thermal = thermal.flatMap { $0.isEmpty ? nil : $0 }
        if sample.isEmpty && thermal == nil { return (.unknown, []) }
        let (p, pf) = sample.isEmpty ? (PressureLevel.nominal, []) : thresholds.level(of: sample, scale: leaving ? thresholds.exitFraction : 1)
        let (t, tf) = thermal.map { thermalThresholds.level(of: $0, leaving: leaving) } ?? (.nominal, [])
        let l = max(p, t)
        return (l, (p == l ? pf : []) + (t == l ? tf : []))
    }

    /// The state after `sample` (and `thermal`) at `time` seconds if the level changed, else nil.
    public mutating func update(_ sample: PressureSample, thermal: ThermalSample? = nil, at time: Double) -> PressureState? {
        let (raw, factors) = combined(sample, thermal, leaving: false)
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
        // (every zone exitMarginCelsius further from its trips) for holdDownSeconds; then the
        // level drops to what those lower thresholds give.
        let (relaxed, relaxedFactors) = combined(sample, thermal, leaving: true)
        guard relaxed < level else { lowerSince = nil; return nil }
        let since = lowerSince ?? time
        lowerSince = since
        guard time - since >= thresholds.holdDownSeconds else { return nil }
        lowerSince = nil
        level = relaxed
        return state(relaxed, relaxedFactors)
    }
}

/// The monitor's clock: monotonic nanoseconds (tests drive their own).
public struct PressureClock: Sendable {
    /// Now, in nanoseconds on a monotonic clock.
    public let now: @Sendable () -> UInt64
    /// A clock reading `now`.
    public init(now: @escaping @Sendable () -> UInt64) { self.now = now }
    /// `CLOCK_MONOTONIC`.
    public static let monotonic = PressureClock { MonotonicClock.now() }
}
