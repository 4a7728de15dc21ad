import Foundation
import Synchronization
import ReelCapacity
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelWriter

/// `reel cost [record options] [--json]`: the hardware cost of a recording on this machine
/// (the largest share any resource is asked for, counting the other live Reel recordings),
/// without recording. Exit 0 when it fits (cost ≤ 1), 69 when `reel record` would refuse it.
enum CostCommand {
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        let (o, json, _, preview, _, _) = try RecordCommand.parse(argv, spec: CommandTable.cost)
        return .cost(o, json: json, preview: preview != nil)
    }

    static func run(_ options: RecordOptions, json: Bool, preview: Bool) throws -> Int32 {
        guard let demand = CapacityGate.demand(options, preview: preview) else {
            throw UsageError("cost: a V4L2 camera's cost needs its size (v4l2:/dev/videoN:WxH)")
        }
        // Measured on first use (the cache missing, damaged or stale), silently: stderr stays
        // one line when the cost is refused.
        let (calibration, _) = try Calibration.load(measure: { try Calibrator().measure() })
        let model = CapacityGate.model(calibration, options: options)
        let cost = try model.cost(demand, others: try SessionRegistry().live())
        if json {
            printJSON(cost)
        } else {
            print("hardware cost \(CostFormat.share(cost.cost)) (\(cost.bottleneck)): \(cost.session.description)")
            for r in cost.resources {
                let figures = r.measured
                    ? "this \(CostFormat.share(r.share))  others \(CostFormat.share(r.othersShare))  total \(CostFormat.share(r.total))"
                    : "not counted"
                print("  \(r.name.padding(toLength: 8, withPad: " ", startingAt: 0)) \(figures)  (\(r.capacity))")
            }
            for o in cost.others {
                print("  other recording: pid \(o.pid): \(o.shares.description) (encoder \(CostFormat.share(o.shares.encoder + o.shares.preview)))")
            }
        }
        if let refusal = cost.refusal {
            printError(refusal)
            return ExitStatus.unavailable
        }
        return 0
    }
}

/// The cost check of `reel record` (issue 13): its demand, the check against the machine's
/// calibration and the live sessions, and its registration. `reel record` runs it as the
/// session's configuration check (`CaptureSession.setConfigurationCheck`, at the commit,
/// before anything opens); `reel cost` calls it directly.
enum CapacityGate {
    /// The recording's outputs at their largest frame size (of every ratio it will record) and
    /// its frame rate (`framesPerSecond`: the configuration's, else the options'); nil for a
    /// V4L2 camera whose size is not given.
    static func demand(_ o: RecordOptions, preview: Bool, framesPerSecond: Double? = nil) -> SessionDemand? {
        let sensor: Size, supported: [AspectRatio], fps: Double
        switch o.source {
        case .synthetic(let side):
            sensor = Size(width: side, height: side)
            supported = SyntheticSource.supportedRatios(size: side)
            fps = o.rate.perSecond
        case .v4l2(_, let size, let rate, _):
            guard let size else { return nil }
            sensor = size
            supported = AspectRatio.allCases
            fps = rate.map(Double.init) ?? o.rate.perSecond
        }
        let first = o.ratio ?? (supported.contains(.landscape16x9) ? .landscape16x9 : supported[0])
        let ratios = ([first] + o.ratioChanges.map(\.1)).filter { supported.contains($0) }
        let largest = ratios.map { $0.crop(in: sensor).size }.max { $0.width * $0.height < $1.width * $1.height } ?? sensor
        return SessionDemand(outputs: [OutputDemand(codec: o.codec, size: largest, framesPerSecond: framesPerSecond ?? fps)], preview: preview)
    }

    /// The cost model with the pool's measured write bandwidth (none for `--plain`).
    static func model(_ calibration: Calibration, options: RecordOptions) -> CostModel {
        let pool: String?
        switch options.storage {
        case .defaultPool: pool = StoragePool.defaultPath
        case .pool(let p): pool = p
        case .plain: pool = nil
        }
        let (bandwidth, source) = CostModel.diskBandwidth(forPoolAt: pool)
        return CostModel(calibration: calibration, diskBytesPerSecond: bandwidth, diskSource: source)
    }

    /// Refuses (`CapacityError.exceeds`, exit 69) a recording whose cost beside the live
    /// sessions is above 1, else registers it. Without a usable calibration (`reel calibrate`
    /// never run here, or its cache stale) nothing is checked or registered: recording never
    /// stops to measure. Returns the registration (release it when the recording ends) and the cost.
    static func admit(_ options: RecordOptions, preview: Bool, framesPerSecond: Double? = nil) throws -> (Registration?, HardwareCost?) {
        guard let calibration = Calibration.cached().0,
              let demand = demand(options, preview: preview, framesPerSecond: framesPerSecond) else { return (nil, nil) }
        let model = model(calibration, options: options)
        var cost: HardwareCost? = nil
        let registration = try SessionRegistry().admit { others in
            let c = try model.cost(demand, others: others)
            if let refusal = c.refusal { throw CapacityError.exceeds(refusal) }
            cost = c
            return c.session
        }
        return (registration, cost)
    }
}

/// What the session's configuration check admitted: the registration among the live sessions
/// (released when the recording ends) and the cost. A second check (a configuration committed
/// again before the run) replaces the first.
final class CapacityAdmission: Sendable {
    private let state = Mutex<(registration: Registration?, cost: HardwareCost?)>((nil, nil))
    /// What was admitted, for `update`.
    private let admitted = Mutex<(options: RecordOptions, preview: Bool)?>(nil)

    /// Checks and registers the recording at `framesPerSecond`.
    /// - Throws: `CapacityError.exceeds` (exit 69) when it does not fit; the registry's errors.
    func admit(_ options: RecordOptions, preview: Bool, framesPerSecond: Double) throws {
        release()
        let (registration, cost) = try CapacityGate.admit(options, preview: preview, framesPerSecond: framesPerSecond)
        state.withLock { $0 = (registration, cost) }
        admitted.withLock { $0 = (options, preview) }
    }

    /// The recording now runs at `framesPerSecond` (a pressure step, or back): its entry in the
    /// registry takes the share at that rate, under the registry's lock (issue 13). Nothing
    /// when it is not registered. Returns what went wrong (for the pressure timeline's note).
    func update(framesPerSecond: Double) -> String? {
        guard let registration = state.withLock({ $0.registration }), let (options, preview) = admitted.withLock({ $0 }),
              let calibration = Calibration.cached().0,
              let demand = CapacityGate.demand(options, preview: preview, framesPerSecond: framesPerSecond) else { return nil }
        do {
            try registration.update(shares: try CapacityGate.model(calibration, options: options).shares(demand))
            return nil
        } catch {
            return "the session registry keeps the share at the rate before: \(error)"
        }
    }

    /// The cost admitted (nil without a calibration).
    var cost: HardwareCost? { state.withLock { $0.cost } }

    /// Leaves the registry.
    func release() {
        let r = state.withLock { s -> Registration? in
            let r = s.registration
            s.registration = nil
            return r
        }
        r?.release()
    }
}

/// The JSON summary of `reel record` with what issue 13 adds: `hardwareCost` (null without a
/// calibration) and `pressure` (the system-pressure timeline).
struct RecordingSummaryWithPressure: Encodable {
    var summary: RecordingSummary
    var hardwareCost: Double?
    var pressure: PressureTimeline

    struct PressureTimeline: Encodable {
        /// The last level reported (`unknown` without PSI).
        var level: PressureLevel
        /// `on` or `off` (`--pressure-handler`).
        var handler: String
        /// Every level change, the first reading included, with the handler's action.
        var timeline: [RecordPressureHandler.Entry]
        /// How the monitor waited (PSI triggers or timed, and why) and the thermal sources.
        var psiTriggers: Bool = false
        var psiTriggersReason: String? = nil
        var thermal: String = "none"
        enum CodingKeys: String, CodingKey { case level, handler, timeline, psiTriggers, psiTriggersReason, thermal }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(level, forKey: .level)
            try c.encode(handler, forKey: .handler)
            try c.encode(timeline, forKey: .timeline)
            try c.encode(psiTriggers, forKey: .psiTriggers)
            try c.encode(psiTriggersReason, forKey: .psiTriggersReason)   // null when there are triggers
            try c.encode(thermal, forKey: .thermal)
        }
    }

    enum Keys: String, CodingKey { case hardwareCost, pressure }

    func encode(to encoder: any Encoder) throws {
        try summary.encode(to: encoder)
        var c = encoder.container(keyedBy: Keys.self)
        if let hardwareCost { try c.encode(hardwareCost, forKey: .hardwareCost) } else { try c.encodeNil(forKey: .hardwareCost) }
        try c.encode(pressure, forKey: .pressure)
    }
}
