import ReelCore

/// Start and stop on a running session (the movie output switched on and off): whether
/// offered frames are recorded now, the takes (one per start) so far, the toggles applied,
/// and the frames offered while stopped (not recorded, and not drops).
///
/// A value the writer keeps under its lock; it decides nothing about clips (a stop closes
/// the clip in progress, a start opens one: the writer's encode thread does that).
struct RecordingTakes {
    /// Standby: the writer starts stopped.
    private(set) var standbyAtStart = false
    /// Offered frames are recorded now.
    private(set) var isOn = true
    /// Takes so far (0 in standby until the first start).
    private(set) var takes = 1
    /// The start and stop requests applied so far, in order.
    private(set) var toggles: [RecordingToggle] = []
    /// Frames offered while stopped, or that waited for room across a start or stop.
    private(set) var framesNotRecorded = 0
    /// Counts start and stop requests: a frame waiting for room across one is not recorded.
    private(set) var generation = 0
    /// The newest frame offered.
    private(set) var lastOfferedIndex: Int?
    /// The newest frame taken for recording.
    private var lastTakenIndex: Int?
    /// The start toggle whose first frame has not come yet.
    private var awaitingFirstFrame: Int?

    /// Sets standby, before anything was offered or toggled (false otherwise).
    mutating func setStandby(_ on: Bool) -> Bool {
        guard toggles.isEmpty else { return false }
        standbyAtStart = on
        isOn = !on
        takes = on ? 0 : 1
        return true
    }

    /// A start request: the next frame offered opens take `take`, whose first frame is
    /// `firstFrame` (the next index captured: what verify expects).
    /// - Throws: `.alreadyRecording`.
    mutating func start(source: String, at time: Double) throws(RecordToggleError) -> (toggle: RecordingToggle, take: Int, firstFrame: Int) {
        guard !isOn else { throw .alreadyRecording }
        isOn = true
        generation += 1
        takes += 1
        let first = (lastOfferedIndex ?? -1) + 1
        let t = RecordingToggle(action: .start, source: source, time: time, atSeconds: 0, take: takes, frameIndex: nil)
        toggles.append(t)
        awaitingFirstFrame = toggles.count - 1
        return (t, takes, first)
    }

    /// A stop request: the take ends with the last frame taken, unless none came since its start.
    /// - Throws: `.notRecording`.
    mutating func stop(source: String, at time: Double) throws(RecordToggleError) -> RecordingToggle {
        guard isOn else { throw .notRecording }
        isOn = false
        generation += 1
        let last = awaitingFirstFrame == nil ? lastTakenIndex : nil
        awaitingFirstFrame = nil
        let t = RecordingToggle(action: .stop, source: source, time: time, atSeconds: 0, take: takes, frameIndex: last)
        toggles.append(t)
        return t
    }

    /// Frame `index` was offered.
    mutating func offered(_ index: Int) { lastOfferedIndex = index }

    /// An offered frame is not recorded (stopped, or it waited across a start or stop).
    mutating func notRecorded() { framesNotRecorded += 1 }

    /// Frame `index` is taken for recording: the first of a take fills in its start toggle.
    mutating func taken(_ index: Int) {
        if let t = awaitingFirstFrame { toggles[t].frameIndex = index; awaitingFirstFrame = nil }
        lastTakenIndex = index
    }
}
