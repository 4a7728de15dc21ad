import ReelCapacity
import ReelCore
import ReelFraming
import ReelPhoto
import ReelWriter

/// What a camera's run made: the recording's summary (clips, seams, drops, storage), with what
/// the camera around it adds: `hardwareCost`, the `pressure` timeline, the capture events,
/// markers and control changes, the photos and the locks. Encoded, it is `reel record
/// --json`'s object (docs/json.md), one object with every key at the top.
public struct CameraSummary: Encodable, Sendable {
    /// Clips, seams, drops, storage, the stop reason (`pressure` when the handler finished it).
    public var recording: RecordingSummary
    /// The admitted cost (nil without a calibration).
    public var hardwareCost: Double?
    /// What the camera's validation changed: the configuration asked for, the one recorded
    /// instead, and their costs (nil: recorded as asked).
    public var adjusted: ConfigurationAdjustment? = nil
    /// The system-pressure timeline.
    public var pressure: PressureTimeline
    /// Capture events, markers and control changes.
    public var controls: ControlSummary
    /// The photos taken during the recording.
    public var photos: [CameraPhoto]
    /// Locks and unlocks of the camera's focus and exposure.
    public var locks: [LockRecord]
    /// The photos pressed for that could not be saved (not encoded: `reel record` says each
    /// on stderr and exits with the first one's status).
    public var photoErrors: [PhotoError] = []
    /// Every recommendation of the smart-framing monitor (nil: smart framing off).
    public var framingRecommendations: [FramingRecommendation]? = nil
    /// How smart framing's detection ran (nil: off).
    public var smartFraming: SmartFramingSummary? = nil
    /// How Center Stage ran (nil: off).
    public var centerStage: CenterStageSummary? = nil
    /// How stabilisation ran (nil: off).
    public var stabilization: StabilizationSummary? = nil
    /// The remote presses' confirmation sounds (nil: no `--shutter-sound`).
    public var shutterSound: ShutterSoundSummary? = nil

    /// The `pressure` key.
    public struct PressureTimeline: Encodable, Sendable {
        /// The last level reported (`unknown` without PSI).
        public var level: PressureLevel
        /// `on` or `off`: the configuration's `pressureHandler`.
        public var handler: String
        /// Every level change, the first reading included, with the handler's action.
        public var timeline: [PressureHandler.Entry]
        /// Whether the monitor waits on PSI triggers (else it reads on a timer).
        public var psiTriggers: Bool = false
        /// Why it does not (null when it does).
        public var psiTriggersReason: String? = nil
        /// The thermal sources read (`none`, or what was found).
        public var thermal: String = "none"
        enum CodingKeys: String, CodingKey { case level, handler, timeline, psiTriggers, psiTriggersReason, thermal }
        /// Every key, nulls included.
        /// - Throws: the encoder's errors.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(level, forKey: .level)
            try c.encode(handler, forKey: .handler)
            try c.encode(timeline, forKey: .timeline)
            try c.encode(psiTriggers, forKey: .psiTriggers)
            try c.encode(psiTriggersReason, forKey: .psiTriggersReason)   // null when there are triggers
            try c.encode(thermal, forKey: .thermal)
        }
    }

    enum Keys: String, CodingKey { case hardwareCost, adjusted, pressure, photos, locks, framingRecommendations, smartFraming, centerStage, stabilization, shutterSound }

    /// The recording's keys, then `hardwareCost`, `adjusted`, `pressure`, `captureEvents`, `markers`,
    /// `controlChanges`, `photos` and `locks`, in one object.
    /// - Throws: the encoder's errors.
    public func encode(to encoder: any Encoder) throws {
        try recording.encode(to: encoder)
        try controls.encode(to: encoder)
        var c = encoder.container(keyedBy: Keys.self)
        if let hardwareCost { try c.encode(hardwareCost, forKey: .hardwareCost) } else { try c.encodeNil(forKey: .hardwareCost) }
        try c.encode(adjusted, forKey: .adjusted)   // null when recorded as asked
        try c.encode(pressure, forKey: .pressure)
        try c.encode(photos, forKey: .photos)
        try c.encode(locks, forKey: .locks)
        if let framingRecommendations { try c.encode(framingRecommendations, forKey: .framingRecommendations) }
        if let smartFraming { try c.encode(smartFraming, forKey: .smartFraming) }
        if let centerStage { try c.encode(centerStage, forKey: .centerStage) }
        if let stabilization { try c.encode(stabilization, forKey: .stabilization) }
        if let shutterSound { try c.encode(shutterSound, forKey: .shutterSound) }
    }
}
