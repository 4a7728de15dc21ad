import Foundation
import Testing
import ReelBench
import ReelMetrics

/// A sink that takes no time, except one write that sleeps.
final class StallingSink: PacedSink, @unchecked Sendable {
    // Only the pacing thread (the test's) touches `count`.
    var count = 0
    let stallAt: Int
    let stall: Double
    init(stallAt: Int, stall: Double) { self.stallAt = stallAt; self.stall = stall }
    func write(_ block: UnsafeRawPointer, count n: Int) throws {
        if count == stallAt { Thread.sleep(forTimeInterval: stall) }
        count += 1
    }
    func complete() throws -> [UInt64]? { nil }
}

/// Timed against the real clock, so it runs in the real-time pass of `scripts/test`, where
/// nothing competes with the pacing thread.
@Suite(.serialized) struct RealtimePacedWriterTests {
    /// A 300 ms stall at 100 writes/s must count against every write it delays (about 30 of
    /// them, late by 300, 290, 280 … ms), not once: no coordinated omission.
    @Test func aStallCountsAgainstEveryWriteItDelays() throws {
        var o = JitterOptions(directory: "/tmp", executable: "/bin/false")
        o.bytesPerSecond = 100 << 20   // 1 MiB blocks: 100 writes a second, 10 ms apart
        o.seconds = 1.5
        o.fps = 30
        let (due, done) = try pacedRun(StallingSink(stallAt: 20, stall: 0.3), options: o)
        #expect(due.count == 150)
        let late = zip(due, done).map { Double($1 &- $0) / 1e6 }
        #expect(late[20] >= 299)
        #expect(late[21] >= 285 && late[21] < 300)
        #expect(late[40] >= 90 && late[40] < 120, "write 40 was due 200 ms after the stall began: \(late[40])")
        // Writes 20 … ~49 are all later than 10 ms; writes well after the stall are on time.
        let delayed = late.filter { $0 > 10 }.count
        #expect(delayed >= 27 && delayed <= 33, "\(delayed) writes delayed")
        #expect(late[60] < 5 && late[149] < 5)

        let r = Jitter.summarize(arm: "test", contention: "none", due: due, done: done, options: o, psi: (0, 0, 0, 0), peaks: (0, 0))
        #expect(r.longestStallMs >= 299 && r.longestStallMs < 340)
        // Over the 33 ms frame budget: writes 20 … ~47.
        #expect(r.writesOverFrameBudget >= 25 && r.writesOverFrameBudget <= 29, "\(r.writesOverFrameBudget)")
        #expect(r.latencyMs.p90 > 30)   // 10 % of writes are more than 30 ms late
    }

    @Test func aSmallRingInFrontOfAStallDropsFrames() throws {
        var o = JitterOptions(directory: "/tmp", executable: "/bin/false")
        o.bytesPerSecond = 100 << 20
        o.seconds = 1.5
        o.ringBytes = 8 << 20   // 80 ms of data
        let (due, done) = try pacedRun(StallingSink(stallAt: 20, stall: 0.3), options: o)
        let small = Jitter.summarize(arm: "t", contention: "none", due: due, done: done, options: o, psi: (0, 0, 0, 0), peaks: (0, 0))
        #expect(small.framesDroppedByRing >= 5, "\(small.framesDroppedByRing)")
        o.ringBytes = 64 << 20   // 640 ms: absorbs the 300 ms stall
        let big = Jitter.summarize(arm: "t", contention: "none", due: due, done: done, options: o, psi: (0, 0, 0, 0), peaks: (0, 0))
        #expect(big.framesDroppedByRing == 0)
    }
}
