import Foundation
import ReelControl
import ReelCore
import ReelWriter

/// Start and stop on a running camera (in standby, or recording): `Camera.startRecording`
/// and `stopRecording`, the preview page's record button (`POST /record`), the control socket's `{"record": …}`
/// (`reel control record start|stop`), and — in video mode, without `--photos` — a primary
/// capture event's `ended` (a `cancelled` press never toggles). Every applied request is in
/// the summary's `recordingToggles`.
enum RecordingToggles {
    /// Applies `action` (`start`, `stop` or `toggle`) from `source`.
    /// - Throws: `RecordToggleError` when refused.
    static func apply(_ action: String, source: String, to recording: Recording) throws(RecordToggleError) -> RecordingToggle {
        switch action {
        case "start": return try recording.startRecording(source: source)
        case "stop": return try recording.stopRecording(source: source)
        default: return try recording.toggleRecording(source: source)
        }
    }

    /// What `POST /record` answers: the request as the summary lists it, with `recording`.
    struct PageAnswer: Encodable {
        let toggle: RecordingToggle
        let recording: Bool
        func encode(to encoder: any Encoder) throws {
            try toggle.encode(to: encoder)
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(recording, forKey: .recording)
        }
        enum CodingKeys: String, CodingKey { case recording }
    }

    /// The page's `POST /record`: the JSON answer, or the refusal thrown (409).
    static func page(_ recording: Recording) -> @Sendable (String) throws -> Data {
        { action in
            let t = try apply(action, source: "page", to: recording)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return try encoder.encode(PageAnswer(toggle: t, recording: recording.writer.isRecording))
        }
    }

    /// The control socket's `{"record": ACTION}` (`status`: the state alone).
    static func socket(_ recording: Recording) -> ControlSocket.RecordHandler {
        { action in
            if action == "status" { return RecordReply(ok: true, recording: recording.writer.isRecording) }
            do {
                let t = try apply(action, source: "socket", to: recording)
                return RecordReply(ok: true, recording: recording.writer.isRecording, action: t.action.rawValue,
                                   take: t.take, frameIndex: t.frameIndex)
            } catch {
                return RecordReply(ok: false, recording: recording.writer.isRecording, error: "\(error)")
            }
        }
    }

    /// Video mode: a primary `ended` toggles recording; `began`, `cancelled` and secondary
    /// presses do nothing here (secondary `ended` lays its marker in the dispatcher). A press
    /// that ends before the recording exists waits for it (on the dispatcher's queue, so
    /// presses stay in order); none is handled if it never comes. A refused toggle (the
    /// recording is ending) is said on stderr.
    static func events(_ pending: PendingRecording, notice: @escaping @Sendable (String) -> Void) -> CaptureEventDispatcher.Handler {
        { event, _ in
            guard event.action == .primary, event.phase == .ended, let recording = pending.wait() else { return }
            do { _ = try apply("toggle", source: event.source, to: recording) } catch {
                notice("record: \(error)")
            }
        }
    }
}

/// The camera's recording once it is made (the input devices are read from before):
/// `wait` blocks until `settle` says which, or that none will come (nil).
final class PendingRecording: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var recording: Recording?
    private var settled = false

    /// The recording (nil: none will come); only the first call counts.
    func settle(_ r: Recording?) {
        condition.lock()
        if !settled { recording = r; settled = true; condition.broadcast() }
        condition.unlock()
    }

    /// Waits until `settle`; the recording, or nil when none came.
    func wait() -> Recording? {
        condition.lock(); defer { condition.unlock() }
        while !settled { condition.wait() }
        return recording
    }
}
