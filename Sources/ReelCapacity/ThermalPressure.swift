import Foundation

/// One thermal zone of `/sys/class/thermal/thermal_zoneN`: its `type`, its `temp` and its trip
/// points (`trip_point_K_type`, `trip_point_K_temp`), temperatures in °C (sysfs gives m°C).
public struct ThermalZoneReading: Sendable, Equatable, Codable {
    /// One trip point: `passive`, `hot`, `critical` (or `active`, a fan, not used) and its temperature.
    public struct Trip: Sendable, Equatable, Codable {
        /// `passive`, `hot`, `critical`, `active`.
        public var type: String
        /// °C.
        public var celsius: Double
        /// A trip point of `type` at `celsius`.
        public init(type: String, celsius: Double) { self.type = type; self.celsius = celsius }
    }
    /// `thermal_zone0`.
    public var zone: String
    /// The zone's `type` (`x86_pkg_temp`, `acpitz`, …), else the zone's directory name.
    public var type: String
    /// The zone's temperature, °C.
    public var celsius: Double
    /// Its trip points that could be read.
    public var trips: [Trip]
    /// A reading of `zone`.
    public init(zone: String, type: String, celsius: Double, trips: [Trip]) {
        self.zone = zone; self.type = type; self.celsius = celsius; self.trips = trips
    }
}

/// One CPU's cpufreq limits (`/sys/devices/system/cpu/cpuN/cpufreq`), in kHz as sysfs gives them.
public struct CPUFrequencyReading: Sendable, Equatable, Codable {
    /// `cpu0`.
    public var cpu: String
    /// `scaling_cur_freq`, when readable.
    public var currentKHz: Int?
    /// `scaling_max_freq`: the most the governor may use now.
    public var maxKHz: Int
    /// `cpuinfo_max_freq`: the most the hardware can do.
    public var hardwareMaxKHz: Int
    /// A CPU's limits.
    public init(cpu: String, currentKHz: Int?, maxKHz: Int, hardwareMaxKHz: Int) {
        self.cpu = cpu; self.currentKHz = currentKHz; self.maxKHz = maxKHz; self.hardwareMaxKHz = hardwareMaxKHz
    }
    /// `scaling_max_freq` below `cpuinfo_max_freq`: the CPU is held below what it can do
    /// (a thermal or power limit, or a user's setting).
    public var capped: Bool { maxKHz < hardwareMaxKHz }
}

/// What the thermal side of the machine says at one reading: its zones, its CPUs' cpufreq
/// limits, and the CPUs whose `thermal_throttle/*_throttle_count` rose since the previous reading.
public struct ThermalSample: Sendable, Equatable, Codable {
    /// The zones with a readable temperature.
    public var zones: [ThermalZoneReading]
    /// The CPUs with readable cpufreq limits.
    public var cpufreq: [CPUFrequencyReading]
    /// How many `*_throttle_count` files were read.
    public var throttleCounters: Int
    /// `cpu0 core_throttle_count` for each counter that rose since the previous reading.
    public var throttled: [String]
    /// A reading.
    public init(zones: [ThermalZoneReading] = [], cpufreq: [CPUFrequencyReading] = [], throttleCounters: Int = 0, throttled: [String] = []) {
        self.zones = zones; self.cpufreq = cpufreq; self.throttleCounters = throttleCounters; self.throttled = throttled
    }
    /// Nothing to read: no zones, no cpufreq, no throttle counters.
    public var isEmpty: Bool { zones.isEmpty && cpufreq.isEmpty && throttleCounters == 0 }

    /// `2 thermal zones, 4 cpufreq CPUs, 8 throttle counters`, or `none`.
    public var sourcesDescription: String {
        if isEmpty { return "none" }
        var parts: [String] = []
        if !zones.isEmpty { parts.append("\(zones.count) thermal zone\(zones.count == 1 ? "" : "s")") }
        if !cpufreq.isEmpty { parts.append("\(cpufreq.count) cpufreq CPU\(cpufreq.count == 1 ? "" : "s")") }
        if throttleCounters > 0 { parts.append("\(throttleCounters) throttle counter\(throttleCounters == 1 ? "" : "s")") }
        return parts.joined(separator: ", ")
    }
}

/// How thermal readings map to pressure levels (README: System pressure), after Apple's
/// thermal states (`ProcessInfo.ThermalState`: fair "slightly elevated", serious "performance
/// impacted", critical "needs to cool down") and Android's thermal HAL
/// (`ThrottlingSeverity` LIGHT / SEVERE / CRITICAL), placed on the kernel's own trip points
/// (`passive`: the kernel starts throttling; `hot`: it tells user space; `critical`: it shuts
/// the machine down):
///
/// | level | when |
/// |---|---|
/// | fair | a zone within `marginCelsius` (5 °C) of a `passive` or `hot` trip; a CPU's `scaling_max_freq` below its `cpuinfo_max_freq`; a `*_throttle_count` rose |
/// | serious | a zone at or above a `passive` or `hot` trip |
/// | critical | a zone within `marginCelsius` of its `critical` trip, or above it |
///
/// Leaving a level (the same hold-down as PSI's) needs the zone `exitMarginCelsius` (2 °C)
/// further below than entering it did.
public struct ThermalThresholds: Sendable, Equatable {
    /// How far below a trip a zone counts as near it, °C.
    public var marginCelsius: Double
    /// How much further below a trip a zone must be to leave a level, °C.
    public var exitMarginCelsius: Double
    /// Reel's: 5 °C and 2 °C.
    public static let standard = ThermalThresholds(marginCelsius: 5, exitMarginCelsius: 2)
    /// Margins of your own.
    public init(marginCelsius: Double, exitMarginCelsius: Double) {
        self.marginCelsius = marginCelsius; self.exitMarginCelsius = exitMarginCelsius
    }

    /// The level `sample` gives and the readings that put it there
    /// (`thermal:x86_pkg_temp 91°C (passive 95°C)`, `cpufreq:cpu0 capped 1.2/3.6 GHz`); with
    /// `leaving`, the level as judged for leaving one (trips `exitMarginCelsius` lower).
    public func level(of sample: ThermalSample, leaving: Bool = false) -> (PressureLevel, [String]) {
        let lower = leaving ? exitMarginCelsius : 0
        var found: [(PressureLevel, String)] = []
        for zone in sample.zones {
            var best: (PressureLevel, ThermalZoneReading.Trip)? = nil
            for trip in zone.trips {
                let l: PressureLevel
                switch trip.type {
                case "critical":
                    l = zone.celsius >= trip.celsius - marginCelsius - lower ? .critical : .nominal
                case "passive", "hot":
                    l = zone.celsius >= trip.celsius - lower ? .serious
                        : zone.celsius >= trip.celsius - marginCelsius - lower ? .fair : .nominal
                default:
                    l = .nominal
                }
                if l > .nominal, l > (best?.0 ?? .nominal) { best = (l, trip) }
            }
            if let (l, trip) = best {
                found.append((l, "thermal:\(zone.type) \(Self.degrees(zone.celsius)) (\(trip.type) \(Self.degrees(trip.celsius)))"))
            }
        }
        let capped = sample.cpufreq.filter(\.capped)
        if let first = capped.first {
            let more = capped.count > 1 ? " (+\(capped.count - 1) more)" : ""
            found.append((.fair, "cpufreq:\(first.cpu)\(more) capped \(Self.gigahertz(first.maxKHz))/\(Self.gigahertz(first.hardwareMaxKHz)) GHz"))
        }
        if let first = sample.throttled.first {
            let more = sample.throttled.count > 1 ? " (+\(sample.throttled.count - 1) more)" : ""
            found.append((.fair, "throttle:\(first) rose\(more)"))
        }
        let level = found.map(\.0).max() ?? .nominal
        return (level, found.filter { $0.0 == level && level > .nominal }.map(\.1))
    }

    static func degrees(_ c: Double) -> String {
        c == c.rounded() ? "\(Int(c))°C" : String(format: "%.1f°C", c)
    }
    static func gigahertz(_ kHz: Int) -> String { String(format: "%.1f", Double(kHz) / 1e6) }
}

/// Reads thermal zones, cpufreq limits and throttle counters under a sysfs root (`/sys`, or
/// `REEL_SYSFS_DIR` in tests). Files that are missing, empty or not numbers are skipped: a zone
/// without a readable temperature is not a zone, a trip without a type or temperature is not a
/// trip. Keeps the throttle counts between readings (a count that rose is throttling).
public struct ThermalReader: Sendable {
    /// The sysfs root (`/sys`).
    public let root: String
    private var counts: [String: Int] = [:]

    /// A reader of `root` (`/sys`).
    public init(root: String = "/sys") { self.root = root }

    /// One reading (`ThermalSample.isEmpty` when there is nothing to read).
    public mutating func read() -> ThermalSample {
        let fm = FileManager.default
        func text(_ path: String) -> String? {
            (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func int(_ path: String) -> Int? { text(path).flatMap { Int($0) } }
        func entries(_ dir: String, prefix: String) -> [String] {
            ((try? fm.contentsOfDirectory(atPath: dir)) ?? [])
                .filter { $0.hasPrefix(prefix) && Int($0.dropFirst(prefix.count)) != nil }
                .sorted { Int($0.dropFirst(prefix.count))! < Int($1.dropFirst(prefix.count))! }
        }
        // m°C in a plausible range: sensors that are absent often read 0 or a sentinel.
        func celsius(_ path: String) -> Double? {
            guard let m = int(path), m > -100_000, m < 500_000 else { return nil }
            return Double(m) / 1000
        }
        var sample = ThermalSample()
        let thermal = root + "/class/thermal"
        for zone in entries(thermal, prefix: "thermal_zone") {
            let dir = thermal + "/" + zone
            guard let temp = celsius(dir + "/temp") else { continue }
            var trips: [ThermalZoneReading.Trip] = []
            for k in 0..<64 {
                guard let type = text("\(dir)/trip_point_\(k)_type") else { break }
                guard !type.isEmpty, let t = celsius("\(dir)/trip_point_\(k)_temp"), t > 0 else { continue }
                trips.append(.init(type: type, celsius: t))
            }
            let type = text(dir + "/type").flatMap { $0.isEmpty ? nil : $0 } ?? zone
            sample.zones.append(ThermalZoneReading(zone: zone, type: type, celsius: temp, trips: trips))
        }
        let cpus = root + "/devices/system/cpu"
        var seen: Set<String> = []
        for cpu in entries(cpus, prefix: "cpu") {
            let dir = cpus + "/" + cpu
            if let max = int(dir + "/cpufreq/scaling_max_freq"), let hw = int(dir + "/cpufreq/cpuinfo_max_freq"), max > 0, hw > 0 {
                sample.cpufreq.append(CPUFrequencyReading(cpu: cpu, currentKHz: int(dir + "/cpufreq/scaling_cur_freq"), maxKHz: max, hardwareMaxKHz: hw))
            }
            let throttle = dir + "/thermal_throttle"
            for file in ((try? fm.contentsOfDirectory(atPath: throttle)) ?? []).sorted() where file.hasSuffix("_throttle_count") {
                guard let n = int(throttle + "/" + file), n >= 0 else { continue }
                let key = "\(cpu) \(file)"
                seen.insert(key)
                sample.throttleCounters += 1
                if let before = counts[key], n > before { sample.throttled.append(key) }
                counts[key] = n
            }
        }
        counts = counts.filter { seen.contains($0.key) }
        return sample
    }
}
