import Foundation
import Testing
import ReelWriter

/// The clip files a running `reel record` holds open (its `/proc/PID/fd` entries that name a
/// clip or a pool slot): nil once the process is gone.
private func openClipFiles(_ pid: Int32) -> [String]? {
    let dir = "/proc/\(pid)/fd"
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return nil }
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: dir + "/" + $0) }
        .filter { $0.hasSuffix(".mov") || ($0.contains("/slot-") && $0.hasSuffix(".bin")) }
}

/// Segments and loop recording over a long run hold as many clip files at a boundary as
/// between boundaries (issue 25's soak: descriptors constant): the clip closing, then the one
/// recording — the next segment is opened ahead only once the closing clip has let go of its
/// file, and loop recording takes a deleted clip back after that too.
@Suite(.serialized) struct RealtimeSegmentDescriptorTests {
    /// 1 s segments for 6 s with `--keep 3s` (deletions from the fourth boundary on), each
    /// fdatasync of the clips 300 ms slow (a busy disk: closing a clip takes that long at
    /// least), the clip files open read every few milliseconds: never more than 2 (before:
    /// the clip closing, the one recording and the next one opened ahead — 3 for as long as
    /// closing took), and 2 most of the time (the next clip is ready ahead of its boundary).
    @Test(.enabled(if: faultsLibrary != nil, "the fault library (scripts/faults --build) slows the syncs"))
    func aBoundaryHoldsNoMoreClipFilesThanTheRecordingBetweenThem() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        try FileManager.default.createDirectory(atPath: dir + "/out", withIntermediateDirectories: true)
        // Plain files: a pool copies a clip this short out of its slot (the slot and the
        // copy open at once, one clip), which the soak's minute-long segments never are.
        let rec = try launch(["record", "--plain", "--duration", "6", "--segment-duration", "1", "--keep", "3s", "--codec", "prores:proxy",
                              "--source", "synthetic:1280", "--out", dir + "/out", "--name", "d", "--json"],
                             environment: faultEnvironment("fdatasync:SLOW300:1+", under: dir + "/out", log: dir + "/faults.log"))
        var counts: [Int: Int] = [:], samples = 0
        while rec.process.isRunning, let open = openClipFiles(rec.process.processIdentifier) {
            if !open.isEmpty { counts[open.count, default: 0] += 1; samples += 1 }
            usleep(3_000)   // a sampling period, not a wait for readiness
        }
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.framesDropped == 0 && s.segments.count == 5 && !s.loopDeletions.isEmpty,
                "dropped \(s.framesDropped), segments \(s.segments.count), deleted \(s.loopDeletions.map(\.path))")
        #expect(samples > 100)
        #expect(counts.keys.allSatisfy { $0 <= 2 }, "clip files open: \(counts) (count: samples)")
        #expect(counts[2, default: 0] * 2 > samples, "\(counts)")
    }
}
