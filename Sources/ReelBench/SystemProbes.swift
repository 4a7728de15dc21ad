import Foundation
import ReelCore
import Synchronization

/// Readings of /proc that say how the system fared during an arm.
struct SystemSample {
    /// `total=` of the `some` and `full` lines of /proc/pressure/io and /memory, in µs.
    var ioSome: Int64 = 0, ioFull: Int64 = 0, memSome: Int64 = 0, memFull: Int64 = 0
    var dirtyKiB: Int64 = 0, writebackKiB: Int64 = 0

    static func read() -> SystemSample {
        var s = SystemSample()
        (s.ioSome, s.ioFull) = pressure("/proc/pressure/io")
        (s.memSome, s.memFull) = pressure("/proc/pressure/memory")
        if let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8) {
            for line in text.split(separator: "\n") {
                let f = line.split(separator: " ", omittingEmptySubsequences: true)
                guard f.count >= 2, let v = Int64(f[1]) else { continue }
                if f[0] == "Dirty:" { s.dirtyKiB = v }
                if f[0] == "Writeback:" { s.writebackKiB = v }
            }
        }
        return s
    }

    private static func pressure(_ path: String) -> (Int64, Int64) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return (0, 0) }
        var some: Int64 = 0, full: Int64 = 0
        for line in text.split(separator: "\n") {
            guard let t = line.split(separator: " ").first(where: { $0.hasPrefix("total=") }), let v = Int64(t.dropFirst(6)) else { continue }
            if line.hasPrefix("some") { some = v } else if line.hasPrefix("full") { full = v }
        }
        return (some, full)
    }
}

/// Samples Dirty and Writeback every 100 ms on its own thread and keeps the peaks.
final class MeminfoPeaks: Sendable {
    private struct Peaks { var dirty: Int64 = 0, writeback: Int64 = 0, running = true }
    private let peaks = Mutex(Peaks())

    init() {
        Thread { [self] in
            while true {
                let s = SystemSample.read()
                let go = peaks.withLock { p in
                    p.dirty = max(p.dirty, s.dirtyKiB); p.writeback = max(p.writeback, s.writebackKiB)
                    return p.running
                }
                if !go { return }
                usleep(100_000)
            }
        }.start()
    }

    func stop() -> (dirtyKiB: Int64, writebackKiB: Int64) {
        peaks.withLock { p in
            p.running = false
            return (p.dirty, p.writeback)
        }
    }
}

/// The filesystem type and mount options of the mount holding `path` (/proc/self/mountinfo).
func mountInfo(for path: String) -> (filesystem: String, device: String, options: String) {
    let real = (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) ?? path
    let target = URL(fileURLWithPath: real).standardizedFileURL.resolvingSymlinksInPath().path
    guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return ("unknown", "", "") }
    var best: (Int, String, String, String) = (-1, "unknown", "", "")
    for line in text.split(separator: "\n") {
        let parts = line.components(separatedBy: " - ")
        guard parts.count == 2 else { continue }
        let left = parts[0].split(separator: " "), right = parts[1].split(separator: " ")
        guard left.count >= 6, right.count >= 3 else { continue }
        let mountPoint = String(left[4])
        let matches = target == mountPoint || target.hasPrefix(mountPoint == "/" ? "/" : mountPoint + "/")
        if matches && mountPoint.count > best.0 {
            best = (mountPoint.count, String(right[0]), String(right[1]), String(left[5]) + "," + String(right[2]))
        }
    }
    return (best.1, best.2, best.3)
}
