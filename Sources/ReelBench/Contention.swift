import CLinux
import Foundation
import ReelCore
import ReelStorage
import Synchronization

/// Set by SIGTERM in a load process: stop and clean up.
private let loadStop = Atomic<Bool>(false)

/// The competing loads `reel jitter` runs beside an arm, each in its own process.
public enum ContentionKind: String, CaseIterable, Sendable, Codable {
    /// A big buffered file written as fast as possible, never synced.
    case bulk
    /// Small random writes, each followed by fdatasync.
    case fsync
    /// Create, write, unlink many small files.
    case metadata
    /// Anonymous memory touched over and over, pushing the page cache out.
    case memory
}

/// Runs one load in the calling process until `seconds` have passed (the load's own bound,
/// whatever its parent does), then cleans up its files. This is the body of `reel _load`.
public func runContention(_ kind: ContentionKind, directory: String, seconds: Double) {
    let end = MonotonicClock.now() + UInt64(saturating: seconds * 1e9)
    signal(SIGTERM) { _ in loadStop.store(true, ordering: .relaxed) }
    let pid = getpid()
    switch kind {
    case .bulk:
        // The same writer a write-mode calibration runs beside each mode, in this process.
        guard let stop = try? WriteModeCalibration.Load.bulkWriterThread.start(directory, seconds) else { return }
        while going(end) { usleep(20_000) }
        stop()
    case .fsync:
        let path = "\(directory)/.reel-load-fsync-\(pid)"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd); unlink(path) }
        var block = [UInt8](repeating: 0x33, count: 4096)
        var x: UInt64 = 88172645463325252
        while going(end) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17
            let off = off_t((x % 16384) * 4096)   // within 64 MiB
            _ = block.withUnsafeMutableBytes { pwrite(fd, $0.baseAddress, 4096, off) }
            fdatasync(fd)
        }
    case .metadata:
        let dir = "\(directory)/.reel-load-meta-\(pid)"
        mkdir(dir, 0o755)
        defer { rmdir(dir) }
        var block = [UInt8](repeating: 0x44, count: 4096)
        var n = 0
        while going(end) {
            for k in 0..<64 {
                let p = "\(dir)/f\(n)-\(k)"
                let fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                if fd >= 0 { _ = block.withUnsafeMutableBytes { write(fd, $0.baseAddress, 4096) }; close(fd) }
            }
            for k in 0..<64 { unlink("\(dir)/f\(n)-\(k)") }
            n += 1
        }
    case .memory:
        // Half of the machine's memory, touched page by page, again and again.
        let total = Int64(sysconf(Int32(_SC_PHYS_PAGES))) * Int64(sysconf(Int32(_SC_PAGESIZE)))
        let size = Int(min(total / 2, 12 << 30))
        guard let mem = malloc(size) else { return }
        defer { free(mem) }
        let bytes = mem.assumingMemoryBound(to: UInt8.self)
        var pass: UInt8 = 1
        while going(end) {
            var i = 0
            while i < size && going(end) {
                bytes[i] = pass
                i += 4096
            }
            pass &+= 1
        }
    }
}

private func going(_ end: UInt64) -> Bool {
    !loadStop.load(ordering: .relaxed) && MonotonicClock.now() < end
}

/// A load running in a child process: `reel _load KIND --dir D --seconds S`.
final class ContentionProcess {
    let kind: ContentionKind
    let process: Process
    let directory: String

    init(_ kind: ContentionKind, executable: String, directory: String, seconds: Double) throws {
        self.kind = kind
        self.directory = directory
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["_load", kind.rawValue, "--dir", directory, "--seconds", String(seconds)]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Stops the load (SIGTERM, then SIGKILL after a second) and reaps it.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(1)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        process.waitUntilExit()
        // A load killed before it could clean up leaves its files: remove them.
        let pid = process.processIdentifier
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where name.hasPrefix(".reel-load-") && name.hasSuffix("-\(pid)") {
            try? FileManager.default.removeItem(atPath: directory + "/" + name)
        }
    }
}
