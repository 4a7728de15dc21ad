import Synchronization
import ReelCapture
import ReelCore

/// An output that takes nothing: it notes when the first frame arrives, less its pts, as the
/// monotonic time of the session clock's 0 (`SegmentIndexLog.noteSessionZero`), so that each
/// clip's wall-clock start is its first frame's, not the run's start. Every frame is let go
/// at once (its buffer lease ends when the session's copy does).
final class SessionClockAnchor: FrameOutput, Sendable {
    private let log: SegmentIndexLog
    private let noted = Atomic(false)

    init(log: SegmentIndexLog) { self.log = log }

    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        if !noted.load(ordering: .relaxed), noted.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            let now = Int64(MonotonicClock.now())
            let pts = Int64((frame.pts.seconds * 1e9).rounded())
            log.noteSessionZero(monotonicNs: now - pts)
        }
        return .taken
    }
}
