import Synchronization
import ReelCapture

/// An output that takes no frame but tells the camera's observer of the first one
/// (`CameraEvent.firstFrame`): when the picture is there, as a camera app shows it. It lets
/// every frame go at once (its lease is released when the offered frame is).
final class FirstFrameSignal: FrameOutput, Sendable {
    private let seen = Atomic<Bool>(false)
    private let emit: @Sendable (CameraEvent) -> Void

    init(_ emit: @escaping @Sendable (CameraEvent) -> Void) { self.emit = emit }

    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        if !seen.load(ordering: .relaxed), !seen.exchange(true, ordering: .acquiringAndReleasing) {
            emit(.firstFrame(frame.index))
        }
        return .taken
    }
}
