import Foundation
import Testing
import ReelCapacity

/// A sysfs tree the test writes (`REEL_SYSFS_DIR`'s layout): thermal zones and CPUs.
struct FakeSysfs {
    let root: String
    init(_ tag: String) { root = scratch("sysfs-\(tag)") }

    func write(_ relative: String, _ text: String) throws {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
    /// `class/thermal/thermal_zoneN` at `celsius` with `trips` (type, °C).
    func zone(_ n: Int, type: String, celsius: Double, trips: [(String, Double)]) throws {
        let dir = "class/thermal/thermal_zone\(n)"
        try write(dir + "/type", type + "\n")
        try write(dir + "/temp", "\(Int(celsius * 1000))\n")
        for (k, trip) in trips.enumerated() {
            try write(dir + "/trip_point_\(k)_type", trip.0 + "\n")
            try write(dir + "/trip_point_\(k)_temp", "\(Int(trip.1 * 1000))\n")
        }
    }
    /// `devices/system/cpu/cpuN/cpufreq` with these limits, kHz.
    func cpufreq(_ n: Int, current: Int, max: Int, hardwareMax: Int) throws {
        let dir = "devices/system/cpu/cpu\(n)/cpufreq"
        try write(dir + "/scaling_cur_freq", "\(current)\n")
        try write(dir + "/scaling_max_freq", "\(max)\n")
        try write(dir + "/cpuinfo_max_freq", "\(hardwareMax)\n")
    }
    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

/// Polls `condition` every 10 ms up to `seconds` (generous: CI is a loaded 2-core machine).
private func within(_ seconds: Double = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// Thermal zones and cpufreq throttling as pressure (issue 13, item 3), from trees the tests
/// write: this machine has neither.
@Suite struct ThermalPressureTests {
    static let package = [("passive", 95.0), ("critical", 105.0)]

    /// A zone at its passive trip is `serious`, the zone and trip named; cooled down, the level
    /// goes back to `nominal` only after the hold-down. PSI stays nominal all along.
    @Test func aZoneAtItsPassiveTripIsSeriousUntilItCools() throws {
        let sys = FakeSysfs("passive")
        defer { sys.remove() }
        let psi = scratch("psi-thermal")
        defer { try? FileManager.default.removeItem(atPath: psi) }
        for name in ["cpu", "io", "memory"] {
            try "some avg10=1.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                .write(toFile: "\(psi)/\(name)", atomically: true, encoding: .utf8)
        }
        try sys.zone(0, type: "x86_pkg_temp", celsius: 60, trips: Self.package)
        var thresholds = PressureThresholds.standard
        thresholds.holdDownSeconds = 0.5
        let monitor = PressureMonitor(directory: psi, interval: 0.02, sysfsRoot: sys.root, thresholds: thresholds)
        monitor.start()
        defer { monitor.stop() }
        #expect(monitor.level == .nominal)
        #expect(monitor.sources.thermal == "1 thermal zone")
        try sys.zone(0, type: "x86_pkg_temp", celsius: 95, trips: Self.package)
        #expect(within { monitor.level == .serious })
        #expect(monitor.timeline.last?.factors == ["thermal:x86_pkg_temp 95°C (passive 95°C)"])
        let cooled = Date()   // before the write: the monitor may read the new temp before it returns
        try sys.zone(0, type: "x86_pkg_temp", celsius: 60, trips: Self.package)
        #expect(within { monitor.level == .nominal })
        #expect(Date().timeIntervalSince(cooled) >= 0.5, "left serious before the hold-down")
        #expect(monitor.timeline.map(\.level) == [.nominal, .serious, .nominal])
    }

    /// The mapping, reading by reading: within 5 °C of passive → fair, at passive or hot →
    /// serious, within 5 °C of critical → critical; active (fan) trips do not count.
    @Test func zonesMapToLevelsByTheirTrips() throws {
        let t = ThermalThresholds.standard
        func level(_ c: Double, _ trips: [(String, Double)]) -> (PressureLevel, [String]) {
            t.level(of: ThermalSample(zones: [ThermalZoneReading(zone: "thermal_zone0", type: "acpitz", celsius: c,
                                                                  trips: trips.map { .init(type: $0.0, celsius: $0.1) })]))
        }
        #expect(level(89, Self.package).0 == .nominal)
        #expect(level(91, Self.package) == (.fair, ["thermal:acpitz 91°C (passive 95°C)"]))
        #expect(level(96.5, Self.package) == (.serious, ["thermal:acpitz 96.5°C (passive 95°C)"]))
        #expect(level(100, Self.package) == (.critical, ["thermal:acpitz 100°C (critical 105°C)"]))
        #expect(level(80, [("hot", 80)]).0 == .serious)
        #expect(level(99, [("active", 50)]).0 == .nominal)
        // Leaving: 2 °C further down than entering.
        #expect(t.level(of: ThermalSample(zones: [.init(zone: "z", type: "acpitz", celsius: 89, trips: [.init(type: "passive", celsius: 95)])]),
                        leaving: true).0 == .fair)
    }

    /// A CPU whose `scaling_max_freq` is below its `cpuinfo_max_freq` is `fair`, named with its
    /// cap; a `*_throttle_count` that rises between readings is `fair` too.
    @Test func aCappedCPUFrequencyOrARisingThrottleCountIsFair() throws {
        let sys = FakeSysfs("cpufreq")
        defer { sys.remove() }
        try sys.cpufreq(0, current: 1_100_000, max: 1_200_000, hardwareMax: 3_600_000)
        try sys.cpufreq(1, current: 3_000_000, max: 3_600_000, hardwareMax: 3_600_000)
        try sys.write("devices/system/cpu/cpu0/thermal_throttle/core_throttle_count", "7\n")
        var reader = ThermalReader(root: sys.root)
        let first = reader.read()
        #expect(first.sourcesDescription == "2 cpufreq CPUs, 1 throttle counter")
        var tracker = PressureLevelTracker()
        #expect(tracker.update(PressureSample(cpuSome: 1), thermal: first, at: 0).map { ($0.level, $0.factors) }
                ?? (.unknown, []) == (.fair, ["cpufreq:cpu0 capped 1.2/3.6 GHz"]))
        // The cap lifted, the throttle count rising: still fair, now for the throttling.
        try sys.cpufreq(0, current: 3_000_000, max: 3_600_000, hardwareMax: 3_600_000)
        try sys.write("devices/system/cpu/cpu0/thermal_throttle/core_throttle_count", "9\n")
        let second = reader.read()
        #expect(ThermalThresholds.standard.level(of: second) == (.fair, ["throttle:cpu0 core_throttle_count rose"]))
        // Nothing rises any more: nominal once the hold-down (5 s) has passed.
        let third = reader.read()
        #expect(ThermalThresholds.standard.level(of: third).0 == .nominal)
        #expect(tracker.update(PressureSample(cpuSome: 1), thermal: second, at: 1) == nil)
        #expect(tracker.update(PressureSample(cpuSome: 1), thermal: third, at: 2) == nil)
        #expect(tracker.update(PressureSample(cpuSome: 1), thermal: third, at: 7.5)?.level == .nominal)
    }

    /// Empty, non-numeric and missing files are skipped: a zone without a temperature is no
    /// zone, a trip without a number no trip, a zone without trips raises nothing, cpufreq
    /// without both limits no CPU — and nothing crashes.
    @Test func malformedFilesAreIgnored() throws {
        let sys = FakeSysfs("malformed")
        defer { sys.remove() }
        try sys.write("class/thermal/thermal_zone0/type", "empty_temp\n")
        try sys.write("class/thermal/thermal_zone0/temp", "")
        try sys.write("class/thermal/thermal_zone1/type", "words\n")
        try sys.write("class/thermal/thermal_zone1/temp", "hot\n")
        try sys.write("class/thermal/thermal_zone2/temp", "99000\n")   // no type, no trips
        try sys.write("class/thermal/thermal_zone3/type", "bad_trips\n")
        try sys.write("class/thermal/thermal_zone3/temp", "99000\n")
        try sys.write("class/thermal/thermal_zone3/trip_point_0_type", "passive\n")
        try sys.write("class/thermal/thermal_zone3/trip_point_0_temp", "ninety\n")
        try sys.write("class/thermal/thermal_zone3/trip_point_1_type", "\n")
        try sys.write("class/thermal/thermal_zone3/trip_point_1_temp", "50000\n")
        try sys.write("class/thermal/thermal_zone3/trip_point_2_type", "critical\n")
        try sys.write("class/thermal/thermal_zone3/trip_point_2_temp", "\n")
        try sys.write("class/thermal/thermal_zoneX/temp", "99000\n")
        try sys.write("class/thermal/cooling_device0/type", "Fan\n")
        try sys.write("devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "\n")
        try sys.write("devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3600000\n")
        try sys.write("devices/system/cpu/cpu1/cpufreq/scaling_max_freq", "1.2GHz\n")
        try sys.write("devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq", "3600000\n")
        try sys.write("devices/system/cpu/cpu2/thermal_throttle/core_throttle_count", "many\n")
        try sys.write("devices/system/cpu/cpufreq/policy0/scaling_max_freq", "1\n")
        var reader = ThermalReader(root: sys.root)
        let sample = reader.read()
        #expect(sample.zones.map(\.zone) == ["thermal_zone2", "thermal_zone3"])
        #expect(sample.zones.map(\.type) == ["thermal_zone2", "bad_trips"])
        #expect(sample.zones.allSatisfy { $0.trips.isEmpty })
        #expect(sample.cpufreq.isEmpty && sample.throttleCounters == 0)
        #expect(ThermalThresholds.standard.level(of: sample) == (.nominal, []))
        // And the monitor over it: nominal from PSI alone, the zones counted.
        let monitor = PressureMonitor(directory: "/nonexistent/pressure", interval: 0.02, sysfsRoot: sys.root)
        monitor.start()
        defer { monitor.stop() }
        #expect(monitor.level == .nominal && monitor.sources.thermal == "2 thermal zones")
    }

    /// A machine without thermal zones or cpufreq (this one): the monitor says `thermal: none`
    /// and reads PSI as before.
    @Test func aMachineWithoutThermalInformationSaysNone() throws {
        let sys = FakeSysfs("none")
        defer { sys.remove() }
        try sys.write("devices/system/cpu/cpu0/topology/core_id", "0\n")
        var reader = ThermalReader(root: sys.root)
        #expect(reader.read().isEmpty)
        let psi = scratch("psi-none")
        defer { try? FileManager.default.removeItem(atPath: psi) }
        for name in ["cpu", "io", "memory"] {
            try "some avg10=1.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                .write(toFile: "\(psi)/\(name)", atomically: true, encoding: .utf8)
        }
        let monitor = PressureMonitor(directory: psi, interval: 0.02, sysfsRoot: sys.root)
        monitor.start()
        defer { monitor.stop() }
        #expect(monitor.sources.thermal == "none" && monitor.level == .nominal)
    }
}
