import Foundation
import Synchronization
import Testing
import ReelCapture
import ReelCore

/// A delegate that keeps each frame's index and timestamp, counts drops by reason, and holds
/// the capture thread for `stall` seconds inside frame `at` (as a machine that took the CPU
/// away from it would).
private final class StallingDelegate: SourceDelegate, Sendable {
    let at: Int
    let stall: Double
    let frames = Mutex<[(index: Int, pts: Timestamp)]>([])
    let drops = Mutex<[DropReason: Int]>([:])
    init(at: Int, stall: Double) { self.at = at; self.stall = stall }
    func source(didCapture frame: SourceFrame) -> Bool {
        frames.withLock { $0.append((frame.index, frame.pts)) }
        if frame.index == at { MonotonicClock.sleep(until: MonotonicClock.now() + UInt64(stall * 1e9)) }
        return true
    }
    func source(didDrop count: Int, reason: DropReason, at index: Int) {
        drops.withLock { $0[reason, default: 0] += count }
    }
}

/// The synthetic camera in real time when its capture thread is held off: the frames a
/// driver's queue keeps (`SyntheticSource.driverQueue`) still come, each with its own time;
/// older ones are dropped as `late`.
@Suite(.serialized) struct RealtimeSyntheticStallTests {
    /// Captures 40 frames at 30 fps with the thread held `intervals` frame intervals in frame
    /// 10: the indices delivered, their timestamps, and the late drops.
    private func run(intervals: Double) throws -> (indices: [Int], ptsInFrames: [Int], late: Int) {
        let rate = FrameRate(frames: 30)!
        let source = try SyntheticSource(size: 1280, rate: rate, realtime: true, buffers: 40)
        let delegate = StallingDelegate(at: 10, stall: intervals / 30)
        try source.capture(frameLimit: 40, delegate: delegate)
        let frames = delegate.frames.withLock { $0 }
        let ticks = Int64(source.format.timescale) / 30
        return (frames.map(\.index), frames.map { Int($0.pts.value / ticks) },
                delegate.drops.withLock { $0[.late] ?? 0 })
    }

    /// A stall of 2.5 frame intervals (83 ms) inside frame 10: all 40 frames come, in order,
    /// each stamped with the time it was due; none is dropped.
    @Test func aStallShorterThanTheDriverQueueLosesNoFrame() throws {
        let r = try run(intervals: 2.5)
        #expect(r.late == 0)
        #expect(r.indices == Array(0..<40))
        #expect(r.ptsInFrames == Array(0..<40))
    }

    /// A stall of 12.5 intervals: the frames due more than 4 intervals before the thread came
    /// back are dropped as `late` (frames 11–18: 8), the 4 the queue kept and the rest come,
    /// each stamped with its own time. (A machine slower still only drops more, never fewer:
    /// the count is at least 8.)
    @Test func aLongerStallLosesOnlyWhatTheQueueCouldNotHold() throws {
        let r = try run(intervals: 12.5)
        #expect(r.late >= 8 && r.late <= 10, "\(r.late) late")
        #expect(r.indices.count + r.late == 40)
        #expect(Array(r.indices.prefix(11)) == Array(0...10))
        #expect(r.indices.last == 39)
        #expect(r.ptsInFrames == r.indices)
        // One gap: the dropped frames are consecutive, right after the stall.
        let gaps = zip(r.indices, r.indices.dropFirst()).filter { $1 != $0 + 1 }
        #expect(gaps.count == 1 && gaps.first.map { $0.1 - $0.0 - 1 } == r.late)
    }
}
