import Foundation
import Testing
import ReelBench

/// `reel jitter --block`: the pool arms time each write of the asked size, whatever the size
/// of the pool's ring blocks (1 MiB). Light loads (20–40 MB/s, 1–2 s, no contention).
@Suite struct JitterBlockSizeTests {
    func jitter(block: String, rate: Int, seconds: Double, arms: String) throws -> JitterReport {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try boundedReel(["jitter", "--dir", dir, "--arms", arms, "--no-floor", "--duration", String(seconds),
                                   "--rate", "\(rate / 1_000_000)M", "--block", block, "--json"], timeout: 120)
        try #require(run.signal == nil && !run.timedOut && run.status == 0, "jitter --block \(block): \(run.status) \(run.stderr)")
        return try JSONDecoder().decode(JitterReport.self, from: Data(run.stdout.utf8))
    }

    /// 4 KiB writes through the pool's ring (they used to fail with a false "the storage
    /// pool is full"): every write is timed, and a write is done only once the 1 MiB block
    /// holding it has been written, so the median write waits at least about half the time
    /// the block takes to fill at this rate.
    @Test func smallBlocksRunThePoolArmsAndCountTheBlockFill() throws {
        let rate = 20_000_000, seconds = 1.0
        let report = try jitter(block: "4K", rate: rate, seconds: seconds, arms: "pool,pool-fallocate,buffered")
        let writes = Int(Double(rate) * seconds / 4096)
        #expect(report.arms.count == 3)
        for arm in report.arms {
            #expect(arm.latencyMs.count == writes, "\(arm.arm): \(arm.latencyMs.count) writes timed of \(writes)")
            #expect(arm.throughputMBps > 10, "\(arm.arm)")
        }
        let fillMs = Double(1 << 20) / Double(rate) * 1000   // 52 ms at 20 MB/s
        for arm in report.arms where arm.arm.hasPrefix("pool") {
            let l = arm.latencyMs
            #expect(l.p50 >= 0.4 * fillMs && l.p50 < 10_000, "\(arm.arm): p50 \(l.p50) ms, the block fills in \(fillMs) ms")
            #expect(l.max >= fillMs * 0.9 && l.max < 10_000, "\(arm.arm): max \(l.max) ms")
        }
    }

    /// 4 MiB writes: each spans four ring blocks and is done when the last is written. The
    /// old pairing (write i with ring block i) put most writes' completion before they were
    /// even due, so the median was 0.
    @Test func largeBlocksAreTimedToTheirLastRingBlock() throws {
        let rate = 40_000_000, seconds = 2.0
        let report = try jitter(block: "4M", rate: rate, seconds: seconds, arms: "pool")
        let writes = Int(Double(rate) * seconds / Double(4 << 20))
        let l = try #require(report.arms.first).latencyMs
        #expect(l.count == writes)
        // Copying 4 MiB into the ring and writing the last MiB take well over 50 µs.
        #expect(l.p50 >= 0.05 && l.mean >= 0.05, "p50 \(l.p50) ms, mean \(l.mean) ms")
    }
}
