import Foundation
import ReelCore

/// Whether the monitor waits on kernel PSI triggers, and why not when it does not.
public struct PressureSources: Codable, Sendable, Equatable {
    /// True: the monitor sleeps in `poll()` until a PSI trigger fires (or a timeout);
    /// false: it reads the files every `interval` seconds.
    public var psiTriggers: Bool
    /// Why there are no triggers (`write of 'some 300000 2000000' to /proc/pressure/cpu: Permission denied`), else nil.
    public var psiTriggersReason: String?
    /// The triggers written, `cpu some 300000 2000000` (file, kind, stall µs, window µs).
    public var triggers: [String]
    /// What thermal information the machine has: `none`, or `2 thermal zones, 4 cpufreq CPUs`.
    public var thermal: String
    /// A description of the monitor's sources.
    public init(psiTriggers: Bool, psiTriggersReason: String?, triggers: [String], thermal: String) {
        self.psiTriggers = psiTriggers; self.psiTriggersReason = psiTriggersReason; self.triggers = triggers; self.thermal = thermal
    }
}

/// The kernel's PSI triggers (Documentation/accounting/psi.rst, "Userspace monitors"): one per
/// watched figure, each on its own descriptor of the PSI file opened `O_RDWR|O_NONBLOCK`, a
/// write of `some|full STALL_US WINDOW_US` (NUL included); the kernel then reports `POLLPRI`
/// at most once per window while the stall in the window exceeds STALL_US, and `POLLERR` when
/// the file goes away (a removed cgroup). The trigger goes when the descriptor is closed.
struct PSITriggers {
    /// The tracking window, µs: 2 s, the shortest an unprivileged process may use (windows of
    /// unprivileged triggers must be multiples of 2 s, since Linux 6.4); root gets the same.
    static let windowMicroseconds = 2_000_000

    /// An open trigger: its descriptor and what was written.
    struct Trigger {
        var descriptor: FileDescriptor
        var text: String
    }
    var triggers: [Trigger]

    /// The figures watched (name in `PressureThresholds`, file, kind).
    static let figures: [(name: String, file: String, kind: String)] = [
        ("cpu.some", "cpu", "some"), ("io.some", "io", "some"), ("io.full", "io", "full"),
        ("memory.some", "memory", "some"), ("memory.full", "memory", "full"),
    ]

    /// The stall per window (µs) at which the trigger of `figure` fires: the figure's lowest
    /// entry threshold (its `fair` one) times `exitFraction`, as a share of the window — so the
    /// monitor wakes when a 2 s window stalls a little less than `fair` asks of the 10 s
    /// average; nil when no level watches the figure.
    static func stallMicroseconds(for figure: String, thresholds: PressureThresholds) -> Int? {
        guard let lowest = thresholds.entry.values.compactMap({ $0[figure] }).filter({ $0 > 0 }).min() else { return nil }
        let share = min(100, lowest * thresholds.exitFraction) / 100
        return max(1, min(windowMicroseconds, Int((share * Double(windowMicroseconds)).rounded())))
    }

    /// Opens and writes every trigger, or none: the reason the first one failed.
    static func open(directory: String, suffix: String, thresholds: PressureThresholds) -> Result<PSITriggers, TriggerFailure> {
        var opened: [Trigger] = []
        func fail(_ reason: String) -> Result<PSITriggers, TriggerFailure> {
            for t in opened { t.descriptor.closeQuietly() }
            return .failure(TriggerFailure(reason: reason))
        }
        for figure in figures {
            guard let stall = stallMicroseconds(for: figure.name, thresholds: thresholds) else { continue }
            let path = "\(directory)/\(figure.file)\(suffix)"
            let fd: FileDescriptor
            do { fd = try FileDescriptor.open(path, O_RDWR | O_NONBLOCK) } catch { return fail("\(error)") }
            opened.append(Trigger(descriptor: fd, text: "\(figure.file) \(figure.kind) \(stall) \(windowMicroseconds)"))
            // Only the kernel's PSI files take triggers: a regular file (REEL_PRESSURE_DIR) would
            // have the trigger written into it.
            let type: String
            do { type = try filesystemType(of: fd) } catch { return fail("\(error)") }
            guard ["proc", "cgroup2", "cgroup"].contains(type) else {
                return fail("\(path) is not a kernel PSI file (a file on \(type) cannot take a trigger)")
            }
            let text = "\(figure.kind) \(stall) \(windowMicroseconds)"
            let bytes = Array(text.utf8) + [0]
            let written: Int
            do {
                written = try retryingInterrupts("write of '\(text)' to", path: path) { bytes.withUnsafeBytes { write(fd.rawValue, $0.baseAddress, $0.count) } }
            } catch { return fail("\(error)") }
            guard written == bytes.count else { return fail("write of '\(text)' to \(path): \(written) of \(bytes.count) bytes written") }
        }
        if opened.isEmpty { return .failure(TriggerFailure(reason: "no pressure figure has a threshold")) }
        return .success(PSITriggers(triggers: opened))
    }

    /// Closes every trigger's descriptor (the kernel removes the triggers).
    func close() {
        for t in triggers { t.descriptor.closeQuietly() }
    }
}

/// The type of the filesystem holding `fd` (`proc`, `cgroup2`, `ext4`, …): the line of
/// `/proc/self/mountinfo` whose device (major:minor) is the file's (`fstat`).
/// - Throws: ``SystemError`` for `fstat`; `TriggerFailure` when no mount has the device.
func filesystemType(of fd: FileDescriptor) throws -> String {
    var st = stat()
    try retryingInterrupts("fstat", path: fd.path) { fstat(fd.rawValue, &st) }
    let dev = UInt64(st.st_dev)
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~UInt64(0xfff))
    let minor = (dev & 0xff) | ((dev >> 12) & ~UInt64(0xff))
    let text = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
    for line in text.split(separator: "\n") {
        // ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTIONS
        let fields = line.split(separator: " ")
        guard fields.count > 3, fields[2] == "\(major):\(minor)", let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { continue }
        return String(fields[dash + 1])
    }
    throw TriggerFailure(reason: "\(fd.path): its device \(major):\(minor) is in no mount of /proc/self/mountinfo")
}

/// Why PSI triggers could not be set.
struct TriggerFailure: Error, CustomStringConvertible {
    var reason: String
    var description: String { reason }
}

/// What woke the monitor's wait.
enum PressureWake: Equatable {
    /// A PSI trigger fired, or a wake source was readable.
    case trigger
    /// The timeout passed.
    case timeout
    /// `stop()` was called.
    case stop
    /// A trigger's descriptor reported `POLLERR`/`POLLNVAL`/`POLLHUP`, or `poll` itself
    /// failed: the triggers are given up (the reason).
    case triggersFailed(String)
}

/// Waits in `poll()` on the triggers (`POLLPRI`), the wake sources (`POLLIN`, drained), and the
/// monitor's stop pipe, up to a timeout; EINTR is retried with the time left.
func waitForPressure(triggers: PSITriggers?, wakeSources: inout [Int32], stop: Int32, timeout seconds: Double) -> PressureWake {
    let deadline = MonotonicClock.now() + UInt64(max(0, seconds) * 1e9)
    while true {
        var fds = [pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        let triggerCount = triggers?.triggers.count ?? 0
        for t in triggers?.triggers ?? [] { fds.append(pollfd(fd: t.descriptor.rawValue, events: Int16(POLLPRI), revents: 0)) }
        for w in wakeSources { fds.append(pollfd(fd: w, events: Int16(POLLIN), revents: 0)) }
        let now = MonotonicClock.now()
        let ms = now >= deadline ? 0 : Int32(min(Double(Int32.max), (Double(deadline - now) / 1e6).rounded(.up)))
        let r = poll(&fds, nfds_t(fds.count), ms)
        if r < 0 {
            if errno == EINTR { continue }
            return .triggersFailed("\(SystemError.last("poll"))")
        }
        if r == 0 { return .timeout }
        if fds[0].revents != 0 { return .stop }
        let bad = Int16(POLLERR | POLLNVAL | POLLHUP)
        for (i, t) in (triggers?.triggers ?? []).enumerated() where fds[1 + i].revents & bad != 0 {
            let what = fds[1 + i].revents & Int16(POLLNVAL) != 0 ? "POLLNVAL" : fds[1 + i].revents & Int16(POLLERR) != 0 ? "POLLERR" : "POLLHUP"
            return .triggersFailed("poll: \(what) on \(t.descriptor.path) (the PSI file went away)")
        }
        var woke = (1..<(1 + triggerCount)).contains { fds[$0].revents & Int16(POLLPRI) != 0 }
        var keep: [Int32] = []
        for (i, w) in wakeSources.enumerated() {
            let re = fds[1 + triggerCount + i].revents
            if re & Int16(POLLIN) != 0 {
                // Drain what is there (one read of at most 64 bytes; more wakes again at once).
                var buffer = [UInt8](repeating: 0, count: 64)
                let n = buffer.withUnsafeMutableBytes { read(w, $0.baseAddress, $0.count) }
                if n > 0 { woke = true; keep.append(w); continue }
                if n < 0 && (errno == EINTR || errno == EAGAIN) { keep.append(w); continue }
                // End of file or an error: the source is given up.
                continue
            }
            if re & bad != 0 { continue }
            keep.append(w)
        }
        wakeSources = keep
        if woke { return .trigger }
    }
}
