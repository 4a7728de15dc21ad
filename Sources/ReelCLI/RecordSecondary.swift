import Foundation
import Synchronization
import ReelCapture
import ReelControl
import ReelCore
import ReelWriter

/// `reel record --secondary lock|marker|none`: what a secondary press (volume up, the
/// socket's `marker`) does at its `ended`.
public enum SecondaryAction: String, Sendable, Hashable, CaseIterable {
    /// Lock or unlock a V4L2 camera's focus and exposure (`V4L2FocusExposureLock`).
    case lock
    /// Lay a marker at the frame (a chapter of an MKV clip).
    case marker
    /// Nothing (the event is still logged): `none`.
    case ignore = "none"
}

/// One lock or unlock of the camera's focus and exposure: the summary's `locks`.
struct LockRecord: Encodable {
    /// The newest frame captured when the press was handled (nil before the first).
    var frameIndex: Int?
    /// Locked (true) or unlocked (false) by it.
    var locked: Bool
    /// The lock's controls as the camera reported them after (`VIDIOC_G_CTRL`), by v4l2-ctl name.
    var controls: [String: Int32]
    /// When the press ended (CLOCK_MONOTONIC, s), or when the recording ended.
    var time: Double
    /// Who sent the press; `end of recording` for the unlock at the end.
    var source: String
}

/// The key `reel record --json` adds: every lock and unlock (empty without a lock).
struct LockSummary: Encodable {
    var locks: [LockRecord]
}

/// Secondary presses of one `reel record` on a camera that can lock its focus and exposure:
/// each `ended` toggles the lock; the recording's end unlocks (the camera keeps its controls
/// after Reel closes it, so its auto modes are put back).
final class RecordSecondary: Sendable {
    let lock: V4L2FocusExposureLock
    private let records = Mutex<[LockRecord]>([])
    private let session: CaptureSession

    private init(lock: V4L2FocusExposureLock, session: CaptureSession) {
        self.lock = lock
        self.session = session
    }

    /// Before the recording exists: `none` lays no markers; `lock`, and the default on a V4L2
    /// camera, neither (until `attach` finds the camera cannot lock). A `--secondary lock`
    /// on the synthetic sensor is refused before that, when parsing.
    static func prepare(_ requested: SecondaryAction?, source: SourceSpec, dispatcher: CaptureEventDispatcher) {
        switch requested {
        case .ignore?: dispatcher.setSecondaryMarkers(false)
        case .marker?: dispatcher.setSecondaryMarkers(true)
        case .lock?: dispatcher.setSecondaryMarkers(false)
        case nil:
            if case .v4l2 = source { dispatcher.setSecondaryMarkers(false) }
        }
    }

    /// Once the recording exists: with `lock` (or by default) on a V4L2 camera that has auto
    /// exposure or continuous autofocus, secondary presses lock and unlock; by default on one
    /// that has neither, they lay markers.
    /// - Throws: `CommandError` (69) for `--secondary lock` on a camera with neither.
    static func attach(_ requested: SecondaryAction?, recording: Recording, dispatcher: CaptureEventDispatcher) throws -> RecordSecondary? {
        guard requested == nil || requested == .lock, let camera = recording.session.source as? V4L2Source else { return nil }
        switch V4L2FocusExposureLock.make(for: camera) {
        case .success(let lock):
            let secondary = RecordSecondary(lock: lock, session: recording.session)
            dispatcher.setSecondaryHandler { [secondary] event, frame in secondary.handle(event, frame: frame) }
            return secondary
        case .failure(let why):
            if requested == .lock { throw CommandError(status: ExitStatus.unavailable, "--secondary lock: \(why.description)") }
            dispatcher.setSecondaryMarkers(true)
            return nil
        }
    }

    /// A secondary `ended` locks when unlocked and unlocks when locked; other phases do
    /// nothing. A camera that refuses is said on stderr; the recording goes on.
    func handle(_ event: CaptureEvent, frame: Int?) {
        guard event.action == .secondary, event.phase == .ended else { return }
        let locking = !lock.isLocked
        do {
            let values = locking ? try lock.lock() : try lock.unlock()
            records.withLock { $0.append(LockRecord(frameIndex: frame, locked: locking, controls: values, time: event.time, source: event.source)) }
        } catch {
            printError("\(locking ? "lock" : "unlock"): \((error as? any UserFacingError)?.description ?? "\(error)")")
        }
    }

    /// The recording has ended (no press comes any more): a lock still held is undone.
    func finish() {
        guard lock.isLocked else { return }
        let n = session.stats.framesCaptured
        do {
            let values = try lock.unlock()
            records.withLock {
                $0.append(LockRecord(frameIndex: n > 0 ? n - 1 : nil, locked: false, controls: values,
                                     time: Double(MonotonicClock.now()) / 1e9, source: "end of recording"))
            }
        } catch {
            printError("unlock: \((error as? any UserFacingError)?.description ?? "\(error)")")
        }
    }

    /// The summary's `locks`.
    var summary: LockSummary { LockSummary(locks: records.withLock { $0 }) }

    /// The text summary's line for each lock and unlock.
    static func printLocks(_ s: LockSummary) {
        for l in s.locks {
            let values = l.controls.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            print("  \(l.locked ? "lock" : "unlock") at frame \(l.frameIndex.map(String.init) ?? "-") (\(values)) from \(l.source)")
        }
    }
}
