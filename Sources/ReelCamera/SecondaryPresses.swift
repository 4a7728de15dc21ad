import Foundation
import Synchronization
import ReelCapture
import ReelControl
import ReelCore
import ReelWriter

/// One lock or unlock of the camera's focus and exposure: the summary's `locks`.
public struct LockRecord: Encodable, Sendable {
    /// The newest frame captured when the press was handled (nil before the first).
    public var frameIndex: Int?
    /// Locked (true) or unlocked (false) by it.
    public var locked: Bool
    /// The lock's controls as the camera reported them after (`VIDIOC_G_CTRL`), by v4l2-ctl name.
    public var controls: [String: Int32]
    /// When the press ended (CLOCK_MONOTONIC, s), or when the recording ended.
    public var time: Double
    /// Who sent the press; `end of recording` for the unlock at the end.
    public var source: String
}

/// The key the camera's summary adds: every lock and unlock (empty without a lock).
public struct LockSummary: Encodable, Sendable {
    /// In the order made.
    public var locks: [LockRecord]
}

/// Secondary presses of the camera on a V4L2 camera that can lock its focus and exposure:
/// each `ended` toggles the lock; the recording's end unlocks (the camera keeps its controls
/// after Reel closes it, so its auto modes are put back).
final class SecondaryPresses: Sendable {
    let lock: V4L2FocusExposureLock
    private let records = Mutex<[LockRecord]>([])
    private let session: CaptureSession
    private let notice: @Sendable (String) -> Void

    private init(lock: V4L2FocusExposureLock, session: CaptureSession, notice: @escaping @Sendable (String) -> Void) {
        self.lock = lock
        self.session = session
        self.notice = notice
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
    /// - Throws: `CameraError` (69) for `lock` on a camera with neither.
    static func attach(_ requested: SecondaryAction?, recording: Recording, dispatcher: CaptureEventDispatcher,
                       notice: @escaping @Sendable (String) -> Void) throws -> SecondaryPresses? {
        guard requested == nil || requested == .lock, let camera = recording.session.source as? V4L2Source else { return nil }
        switch V4L2FocusExposureLock.make(for: camera) {
        case .success(let lock):
            let secondary = SecondaryPresses(lock: lock, session: recording.session, notice: notice)
            dispatcher.setSecondaryHandler { [secondary] event, frame in secondary.handle(event, frame: frame) }
            return secondary
        case .failure(let why):
            if requested == .lock { throw CameraError(status: ExitStatus.unavailable, "--secondary lock: \(why.description)") }
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
            notice("\(locking ? "lock" : "unlock"): \((error as? any UserFacingError)?.description ?? "\(error)")")
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
            notice("unlock: \((error as? any UserFacingError)?.description ?? "\(error)")")
        }
    }

    /// Whether the focus and exposure are locked now.
    var isLocked: Bool { lock.isLocked }

    /// The summary's `locks`.
    var summary: LockSummary { LockSummary(locks: records.withLock { $0 }) }
}
