import Foundation
import Synchronization

/// A capture event as the recording saw it: the event and the newest frame captured when
/// Reel handled it (`null` before the first frame).
public struct CaptureEventRecord: Sendable, Hashable, Codable {
    /// began, cancelled or ended.
    public var phase: CaptureEvent.Phase
    /// primary or secondary.
    public var action: CaptureEvent.Action
    /// Who sent it (`evdev:/dev/input/event3 (KEY_VOLUMEDOWN)`, `terminal`, `socket`, `page`).
    public var source: String
    /// When it happened, in seconds on CLOCK_MONOTONIC.
    public var time: Double
    /// The newest frame captured when Reel handled it (nil before the first frame).
    public var frameIndex: Int?
    /// Photo mode: the burst (1, 2, … in the recording) a held primary press made — on its
    /// `began` once the burst has started, and on the `ended` or `cancelled` that closed it;
    /// nil for every other event.
    public var burst: Int? = nil
    /// Whether a confirmation sound should play when it captures (`CaptureEvent.shouldPlaySound`:
    /// a remote press), whether or not a shutter sound is set.
    public var shouldPlaySound: Bool = false

    /// Every key written, `frameIndex` and `burst` as `null` when there is none.
    /// - Throws: what `encoder` throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(phase, forKey: .phase)
        try c.encode(action, forKey: .action)
        try c.encode(source, forKey: .source)
        try c.encode(time, forKey: .time)
        try c.encode(frameIndex, forKey: .frameIndex)
        try c.encode(burst, forKey: .burst)
        try c.encode(shouldPlaySound, forKey: .shouldPlaySound)
    }
}

/// A marker laid by a secondary press (at its `ended`) at a frame of the recording.
public struct MarkerRecord: Sendable, Hashable, Codable {
    /// The frame the marker is at (nil before the first frame).
    public var frameIndex: Int?
    /// When the press ended, in seconds on CLOCK_MONOTONIC.
    public var time: Double
    /// Who sent the press.
    public var source: String

    /// Every key written, `frameIndex` as `null` when there is none.
    /// - Throws: what `encoder` throws.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(frameIndex, forKey: .frameIndex)
        try c.encode(time, forKey: .time)
        try c.encode(source, forKey: .source)
    }
}

/// Every source's events go through one dispatcher: it logs each event (the JSON summary's
/// `captureEvents`), lays a marker for each secondary `ended` (unless `setSecondaryMarkers(false)`:
/// `--secondary lock|none`), and hands the event to the handler — replaceable, so photo mode
/// can take pictures on primary `ended` — and secondary events to the secondary handler when
/// there is one (the focus-exposure lock), on one serial queue, in arrival order. `cancelled` never reaches an action as a capture: the handler
/// sees it, and the default handler does nothing with it.
public final class CaptureEventDispatcher: Sendable {
    /// What an event does: called on the dispatcher's queue with the event and its frame.
    public typealias Handler = @Sendable (CaptureEvent, _ frameIndex: Int?) -> Void
    private struct State {
        var log: [CaptureEventRecord] = []
        var markers: [MarkerRecord] = []
        var handler: Handler
        var secondaryHandler: Handler? = nil
        var secondaryMarkers = true
        /// The handler each open primary press (by source) began with: its `ended` or
        /// `cancelled` goes there too, whatever handler was set since (a mode switched mid-press).
        var pressHandlers: [String: Handler] = [:]
        /// Plays a remote press's confirmation sound (`setShutterSound`).
        var shutterSound: (@Sendable (CaptureEvent) -> Void)? = nil
    }
    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "reel.capture-events")
    private let frameSource: Mutex<@Sendable () -> Int?>

    /// `currentFrame`: the newest captured frame's index (nil before the first).
    public init(currentFrame: @escaping @Sendable () -> Int? = { nil }, handler: @escaping Handler = { _, _ in }) {
        frameSource = Mutex(currentFrame)
        state = Mutex(State(handler: handler))
    }

    /// Where the newest frame's index comes from, once the recording exists (events sent
    /// before have `frameIndex` nil).
    public func setCurrentFrame(_ currentFrame: @escaping @Sendable () -> Int?) {
        frameSource.withLock { $0 = currentFrame }
    }

    private func currentFrame() -> Int? { frameSource.withLock { $0 }() }

    /// The newest captured frame's index now (nil before the first, or before the recording exists).
    public var newestFrame: Int? { currentFrame() }

    /// Replaces what events do (the lead wires photo capture and record start/stop here).
    public func setHandler(_ handler: @escaping Handler) {
        state.withLock { $0.handler = handler }
    }

    /// Secondary events go to `handler` (nil: to the main handler, as before).
    public func setSecondaryHandler(_ handler: Handler?) {
        state.withLock { $0.secondaryHandler = handler }
    }

    /// Whether a secondary `ended` lays a marker (default true; false with the focus-exposure
    /// lock or `--secondary none`), from the next event on.
    public func setSecondaryMarkers(_ on: Bool) {
        state.withLock { $0.secondaryMarkers = on }
    }

    /// Marks the logged event of `source` at `time` in `phase` as part of burst `burst` (the
    /// newest such event; nothing when there is none).
    public func annotate(source: String, time: Double, phase: CaptureEvent.Phase, burst: Int) {
        state.withLock { s in
            if let i = s.log.lastIndex(where: { $0.source == source && $0.time == time && $0.phase == phase && $0.action == .primary }) {
                s.log[i].burst = burst
            }
        }
    }

    /// Whether a secondary `ended` lays a marker now (see `setSecondaryMarkers`).
    public var laysSecondaryMarkers: Bool { state.withLock { $0.secondaryMarkers } }

    /// Takes one event from any source: logged at once with the current frame, then handled
    /// on the dispatcher's queue. A primary press's `ended` or `cancelled` goes to the handler
    /// its `began` went to (a handler set mid-press takes the next press).
    public func send(_ event: CaptureEvent) {
        let frame = currentFrame()
        let handler = state.withLock { s -> Handler in
            s.log.append(CaptureEventRecord(phase: event.phase, action: event.action, source: event.source, time: event.time, frameIndex: frame,
                                            shouldPlaySound: event.shouldPlaySound))
            if event.action == .secondary && event.phase == .ended && s.secondaryMarkers {
                s.markers.append(MarkerRecord(frameIndex: frame, time: event.time, source: event.source))
            }
            if event.action == .secondary, let h = s.secondaryHandler { return h }
            if event.action == .primary {
                switch event.phase {
                case .began: s.pressHandlers[event.source] = s.handler
                case .ended, .cancelled: if let h = s.pressHandlers.removeValue(forKey: event.source) { return h }
                }
            }
            return s.handler
        }
        let sound = event.action == .primary && event.phase == .ended && event.shouldPlaySound ? state.withLock { $0.shutterSound } : nil
        queue.async {
            handler(event, frame)
            // The press has captured (a photo taken, a recording started or stopped): a remote
            // press hears so.
            sound?(event)
        }
    }

    /// What plays the confirmation sound of a remote press (`CaptureEvent.shouldPlaySound`):
    /// called on the dispatcher's queue once the primary press's `ended` was handled; nil:
    /// no sound (the default). It must return at once (`ShutterSoundPlayer.play`).
    public func setShutterSound(_ play: (@Sendable (CaptureEvent) -> Void)?) {
        state.withLock { $0.shutterSound = play }
    }

    /// Waits until every event sent so far has been handled.
    public func drain() { queue.sync {} }

    /// Every event so far, in arrival order.
    public var events: [CaptureEventRecord] { state.withLock { $0.log } }
    /// The markers so far.
    public var markers: [MarkerRecord] { state.withLock { $0.markers } }
}
