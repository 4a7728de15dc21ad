import Foundation
import Synchronization
import Testing
import ReelCapacity
import ReelCore

/// PSI files in `/proc/pressure`'s format, written whole into `dir`.
private func writePSIFiles(_ dir: String, cpuSome: Double) throws {
    for (name, v) in [("cpu", cpuSome), ("io", 0.0), ("memory", 0.0)] {
        try "some avg10=\(String(format: "%.2f", v)) avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
            .write(toFile: "\(dir)/\(name)", atomically: true, encoding: .utf8)
    }
}

/// The descriptors of this process open on paths under `prefix` (`/proc/self/fd`).
private func openDescriptors(under prefix: String) -> [String] {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return fds.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
        .filter { $0.hasPrefix(prefix) }
}

/// Polls `condition` every 10 ms up to `seconds` (generous: CI is a loaded 2-core machine).
private func eventually(_ seconds: Double = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a
/// hybrid system), if this process may make a cgroup there.
private let writableCgroup2: String? = {
    guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") {
        let f = line.split(separator: " ")
        guard let dash = f.firstIndex(of: "-"), dash + 1 < f.count, f[dash + 1] == "cgroup2", f.count > 4 else { continue }
        let mount = String(f[4])
        return access(mount, W_OK) == 0 ? mount : nil
    }
    return nil
}()

/// PSI kernel triggers (issue 13, item 3): the monitor sleeps in poll() until the kernel says a
/// window stalled, and falls back to timed reading where triggers cannot be set.
@Suite(.serialized) struct PSITriggerTests {
    static let havePSI = FileManager.default.fileExists(atPath: "/proc/pressure/cpu")

    /// On a kernel with PSI (this machine, as root — and any user, the windows being 2 s), the
    /// monitor of /proc/pressure sets one trigger per figure it watches, at 75 % of the figure's
    /// `fair` threshold per 2 s window, and holds a descriptor per trigger until stop().
    @Test(.enabled(if: havePSI, "the kernel has no /proc/pressure"))
    func theRealPressureFilesTakeTriggers() throws {
        let monitor = PressureMonitor(directory: "/proc/pressure", sysfsRoot: nil)
        let before = openDescriptors(under: "/proc/pressure/").count
        monitor.start()
        let sources = monitor.sources
        #expect(sources.psiTriggers, "\(sources.psiTriggersReason ?? "")")
        #expect(sources.psiTriggersReason == nil)
        #expect(sources.triggers == ["cpu some 300000 2000000", "io some 150000 2000000", "io full 75000 2000000",
                                     "memory some 75000 2000000", "memory full 30000 2000000"])
        #expect(openDescriptors(under: "/proc/pressure/").count == before + 5)
        monitor.stop()
        // The first level comes from the counters' movement since start() (stop() reads it when
        // the 0.5 s window has not passed yet).
        #expect(monitor.level != .unknown)
        #expect(openDescriptors(under: "/proc/pressure/").count == before, "the trigger descriptors are closed at stop()")
    }

    /// Regular files (`REEL_PRESSURE_DIR`) cannot take a trigger: the monitor says so, writes
    /// nothing into them, and reads them by time — following a level the test writes.
    @Test func regularFilesFallBackToTimedReading() throws {
        let dir = scratch("psi-regular")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writePSIFiles(dir, cpuSome: 1)
        let original = try String(contentsOfFile: dir + "/cpu", encoding: .utf8)
        let monitor = PressureMonitor(directory: dir, interval: 0.02, sysfsRoot: nil)
        monitor.start()
        defer { monitor.stop() }
        let sources = monitor.sources
        #expect(!sources.psiTriggers && sources.triggers.isEmpty)
        #expect(sources.psiTriggersReason?.contains("is not a kernel PSI file") == true, "\(sources.psiTriggersReason ?? "nil")")
        #expect(try String(contentsOfFile: dir + "/cpu", encoding: .utf8) == original, "nothing was written into the file")
        #expect(monitor.level == .nominal)
        try writePSIFiles(dir, cpuSome: 60)
        #expect(eventually { monitor.level == .serious })
        #expect(monitor.timeline.last?.factors == ["cpu.some 60.0%"])
    }

    /// The wake path, without the kernel: a wake source (a pipe the test makes readable stands
    /// for a trigger's POLLPRI) makes the monitor read the files at once, long before its
    /// 600 s idle timeout; above `nominal` it reads by time again, and leaves the level after
    /// the hold-down.
    @Test func aWakeReadsTheFilesBeforeTheTimeout() throws {
        let dir = scratch("psi-wake")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writePSIFiles(dir, cpuSome: 1)
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { FileDescriptor(rawValue: fd, path: "pipe").closeQuietly() } }
        var thresholds = PressureThresholds.standard
        thresholds.holdDownSeconds = 0.3
        let monitor = PressureMonitor(directory: dir, interval: 0.02, idleTimeout: 600, sysfsRoot: nil,
                                      wakeSources: [fds[0]], thresholds: thresholds)
        monitor.start()
        defer { monitor.stop() }
        #expect(monitor.level == .nominal)
        try writePSIFiles(dir, cpuSome: 60)
        // At nominal with a wake source the monitor does not read by time (20 ms): after 0.5 s
        // the new figures are still unread.
        usleep(500_000)
        #expect(monitor.level == .nominal, "the monitor read the files without being woken")
        var byte: UInt8 = 1
        try #require(write(fds[1], &byte, 1) == 1)
        #expect(eventually { monitor.level == .serious }, "a wake did not read the files")
        // Above nominal it reads by time: figures back down → nominal after the 0.3 s hold-down.
        try writePSIFiles(dir, cpuSome: 1)
        #expect(eventually { monitor.level == .nominal })
        #expect(monitor.timeline.map(\.level) == [.nominal, .serious, .nominal])
    }

    /// At `nominal` a monitor that can be woken still reads every `idleTimeout` seconds (10 by
    /// default: a file gone is noticed) — not sooner without a wake.
    @Test func atNominalItStillReadsEveryIdleTimeout() throws {
        #expect(PressureMonitor(sysfsRoot: nil).idleTimeout == 10)
        let dir = scratch("psi-idle")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writePSIFiles(dir, cpuSome: 1)
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { FileDescriptor(rawValue: fd, path: "pipe").closeQuietly() } }
        let monitor = PressureMonitor(directory: dir, interval: 0.02, idleTimeout: 1, sysfsRoot: nil, wakeSources: [fds[0]])
        let started = Date()
        monitor.start()
        defer { monitor.stop() }
        try writePSIFiles(dir, cpuSome: 60)
        #expect(eventually { monitor.level == .serious }, "never read again without a wake")
        #expect(Date().timeIntervalSince(started) >= 1, "read before the idle timeout")
    }

    /// A trigger whose file goes away (its cgroup removed) reports POLLERR: the monitor gives
    /// the triggers up, says why, and reads by time (finding nothing: `unknown`, said once).
    @Test(.enabled(if: havePSI && writableCgroup2 != nil, "no cgroup v2 hierarchy this process may make a cgroup in"))
    func aRemovedCgroupEndsTheTriggers() throws {
        let group = try #require(writableCgroup2) + "/reel-test-psi-\(getpid())"
        try #require(mkdir(group, 0o755) == 0, "mkdir \(group): \(String(cString: strerror(errno)))")
        var removed = false
        defer { if !removed { rmdir(group) } }
        let notes = Mutex<[String]>([])
        let monitor = PressureMonitor(directory: group, suffix: ".pressure", interval: 0.05, sysfsRoot: nil,
                                      note: { n in notes.withLock { $0.append(n) } })
        monitor.start()
        defer { monitor.stop() }
        #expect(monitor.sources.psiTriggers, "\(monitor.sources.psiTriggersReason ?? "")")
        #expect(monitor.sources.triggers.count == 5)
        try #require(rmdir(group) == 0)
        removed = true
        #expect(eventually { !monitor.sources.psiTriggers }, "POLLERR did not end the triggers")
        let reason = monitor.sources.psiTriggersReason ?? ""
        #expect(reason.contains("POLLERR") && reason.contains(group), "\(reason)")
        #expect(eventually { monitor.level == .unknown })
        #expect(eventually { notes.withLock { $0.count } == 1 })
    }
}
