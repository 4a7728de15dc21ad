import Foundation
import ReelCore

/// The open-loop paced writer — the one owner of that loop, for the write-mode calibration
/// (``WriteModeCalibration``, through the pool's write path) and `reel jitter`'s arms
/// (`pacedRun`): write `i` of `count` is due at `start + i × blockSize / bytesPerSecond`
/// (`start` 10 ms from now, on `CLOCK_MONOTONIC`); the loop sleeps until each is due
/// (`clock_nanosleep`, absolute) and never skips one to catch up, so a caller that measures
/// each write's latency from its due time counts a stall against every write it delays (no
/// coordinated omission). Each block is `blockSize` bytes of 0xa5, 4096-aligned (O_DIRECT
/// takes it as it is), its first 8 bytes the write's index (every block differs).
/// - Returns: when each write was due (monotonic ns), one per write `write` made.
/// - Throws: what `write` throws; the writes after it are not made.
public func pacedWrites(count: Int, blockSize: Int, bytesPerSecond: Int64,
                        _ write: (UnsafeRawBufferPointer) throws -> Void) rethrows -> [UInt64] {
    let interval = Double(blockSize) / Double(bytesPerSecond) * 1e9
    let block = Sys.alignedAlloc(blockSize)
    defer { free(block) }
    memset(block, 0xa5, blockSize)
    var due: [UInt64] = []
    due.reserveCapacity(count)
    let start = MonotonicClock.now() + 10_000_000
    for i in 0..<count {
        let t = start + UInt64(saturating: Double(i) * interval)
        if MonotonicClock.now() < t { MonotonicClock.sleep(until: t) }
        block.storeBytes(of: UInt64(i), as: UInt64.self)   // every block differs
        try write(UnsafeRawBufferPointer(start: block, count: blockSize))
        due.append(t)
    }
    return due
}
