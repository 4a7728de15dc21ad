import Foundation
import Testing

/// `REEL_IO_CLASS=realtime` (for measuring, as root) puts the pool's writer and syncer
/// threads in the real-time I/O class; without it they are best-effort, levels 0 and 4.
/// Every other thread of `reel` keeps the default (`none`).
@Suite(.serialized) struct RecordingIOClassTests {
    /// The I/O classes `ionice` reports for the threads of `pid` that set one, sorted, once
    /// there are two (the writer's and the syncer's).
    func threadClasses(_ pid: Int32) throws -> [String]? {
        var found: [String] = []
        let ok = try waitUntil(20) {
            found = []
            for tid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
                let (status, out) = try runTool("ionice", ["-p", tid])
                let text = String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                if status == 0 && !text.hasPrefix("none") { found.append(text) }
            }
            return found.count >= 2
        }
        return ok ? found.sorted() : nil
    }

    @Test(.enabled(if: getuid() == 0, "the real-time I/O class needs root"), arguments: [true, false])
    func theWriterThreadsTakeTheClassAsked(realtime: Bool) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try launch(["jitter", "--dir", dir, "--duration", "30", "--rate", "4M", "--contention", "none", "--arms", "pool", "--no-floor"],
                             environment: realtime ? ["REEL_IO_CLASS": "realtime"] : [:])
        let classes = try threadClasses(run.process.processIdentifier)
        kill(run.process.processIdentifier, SIGKILL)   // a measurement: nothing of it is kept
        _ = run.wait()
        let expected = realtime ? ["realtime: prio 0", "realtime: prio 4"] : ["best-effort: prio 0", "best-effort: prio 4"]
        #expect(classes == expected)
    }
}
