import Foundation
import Synchronization
import ReelCapacity
import ReelCapture
import ReelCore
import ReelStorage
import ReelWriter

/// The camera's cost check (issue 13): its demand, the check against the machine's
/// calibration and the live sessions, and its registration. The camera runs it as the
/// session's configuration check (`CaptureSession.setConfigurationCheck`, at the commit,
/// before anything opens); `reel cost` calls it directly.
public enum CapacityGate {
    /// The recording's outputs at their largest frame size (of every ratio it will record) and
    /// its frame rate (`framesPerSecond`: the configuration's, else the options'); nil for a
    /// V4L2 camera whose size is not given.
    public static func demand(_ o: RecordOptions, preview: Bool, framesPerSecond: Double? = nil) -> SessionDemand? {
        let sensor: Size, supported: [AspectRatio], fps: Double, pattern: Bool
        switch o.source {
        case .synthetic(let side):
            sensor = Size(width: side, height: side)
            supported = SyntheticSource.supportedRatios(size: side)
            fps = o.rate.perSecond
            pattern = o.scene == .pattern
        case .v4l2(_, let size, let rate, _):
            guard let size else { return nil }
            sensor = size
            supported = AspectRatio.allCases
            fps = rate.map(Double.init) ?? o.rate.perSecond
            pattern = false
        }
        let first = o.ratio ?? (supported.contains(.landscape16x9) ? .landscape16x9 : supported[0])
        let ratios = ([first] + o.ratioChanges.map(\.1)).filter { supported.contains($0) }
        let largest = ratios.map { $0.crop(in: sensor).size }.max { $0.width * $0.height < $1.width * $1.height } ?? sensor
        let faces = o.faceDetectionsPerSecond > 0 ? FaceDetectionDemand(sensorSide: max(sensor.width, sensor.height), perSecond: o.faceDetectionsPerSecond,
                                                                                     profilesEvery: o.faceProfilesEvery) : nil
        return SessionDemand(outputs: [OutputDemand(codec: o.codec, size: largest, framesPerSecond: framesPerSecond ?? fps, pattern: pattern)],
                             preview: preview, faceDetection: faces,
                             stabilization: o.stabilizationCost == .none ? nil
                                : StabilizationDemand(sensorSide: max(sensor.width, sensor.height), framesPerSecond: framesPerSecond ?? fps,
                                                      looksAhead: o.stabilizationCost == .lookAhead))
    }

    /// The figures costs are counted with: the cached `reel calibrate` measurement when it is
    /// usable, else Reel's shipped table scaled by this machine's CPU probe (about 15 ms,
    /// `CostTable.estimate`); nil only if neither exists.
    public static func calibration() -> Calibration? {
        Calibration.cached().0 ?? estimated
    }

    /// The shipped table scaled to this machine, probed once a process.
    private static let estimated: Calibration? = CostTable.estimate()

    /// Validates a real-time recording against the cost model, as libcamera's
    /// `CameraConfiguration::validate()` does: when it would take more than
    /// `CostModel.realtimeTarget` of this machine beside the live recordings, the options of
    /// the first rung of the ladder that fits (a lighter ProRes profile, then H.264, then a
    /// lower rate: `CostModel.ladder`) and the adjustment; else the options as they are and
    /// nil. A recording that is not paced in real time (`--no-realtime`) cannot fall behind
    /// and is never adjusted. With `.asAsked` the options come back unchanged and the third
    /// value is the warning that says the request does not fit (nil when it does).
    /// - Throws: `CapacityError.exceeds` (exit 69) under `.strict`, with the cost and the
    ///   options of an alternative that fits, or when nothing on the ladder fits (never under
    ///   `.asAsked`).
    public static func validate(_ options: RecordOptions, preview: Bool, policy: ValidationPolicy) throws -> (RecordOptions, ConfigurationAdjustment?, String?) {
        let strict = policy == .strict
        guard options.realtime, isWellFormed(options), let calibration = calibration(), let demand = demand(options, preview: preview) else { return (options, nil, nil) }
        let model = model(calibration, options: options)
        // A V4L2 camera offers the rates it offers: only its codec steps down.
        var lowerRates = true
        if case .v4l2 = options.source { lowerRates = false }
        let validity = try model.validate(demand, others: try SessionRegistry().live(), lowerRates: lowerRates,
                                          allowed: { options.container.supports($0) })
        if policy == .asAsked {
            switch validity {
            case .valid: return (options, nil, nil)
            case .adjusted(let a, _): return (options, nil, "\(a.requested.needs), more than the \(CostFormat.share(a.target)) a real-time recording may take (\(a.figures) figures); recording it as asked (--no-adjust): frames may be dropped")
            case .invalid(let asked): return (options, nil, "\(asked.needs), more than the \(CostFormat.share(CostModel.realtimeTarget)) a real-time recording may take; recording it as asked (--no-adjust): frames may be dropped")
            }
        }
        switch validity {
        case .valid: return (options, nil, nil)
        case .invalid where !lowerRates:
            // A V4L2 camera is checked when it opens (a size or rate it does not offer is a
            // usage error, 64); the admission at the session's commit refuses it after that.
            return (options, nil, nil)
        case .invalid(let asked):
            throw CapacityError.exceeds("\(asked.needs); nothing down the ladder (lighter codecs, then lower rates) fits within the \(CostFormat.share(CostModel.realtimeTarget)) a real-time recording may take")
        case .adjusted(let adjustment, let rung):
            let adjusted = applying(rung, to: options)
            if strict {
                throw CapacityError.exceeds("\(adjustment.requested.needs), more than the \(CostFormat.share(adjustment.target)) a real-time recording may take (\(adjustment.figures) figures); \(adjustment.chosen.description) fits (\(CostFormat.share(adjustment.chosen.cost))): \(alternative(adjusted, from: options))")
            }
            return (adjusted, adjustment, nil)
        }
    }

    /// A sensor size and ratios the synthetic sensor takes (a V4L2 camera's are checked when it
    /// opens): a request that is refused as a usage error anyway is not costed first.
    static func isWellFormed(_ options: RecordOptions) -> Bool {
        // A codec the container cannot hold is a usage error (64), never stepped past.
        guard options.container.supports(options.codec) else { return false }
        guard case .synthetic(let side) = options.source else { return true }
        guard SyntheticSource.sizeRange.contains(side), side % 2 == 0 else { return false }
        let supported = SyntheticSource.supportedRatios(size: side)
        return ([options.ratio].compactMap { $0 } + options.ratioChanges.map(\.1)).allSatisfy(supported.contains)
    }

    /// `options` recording `rung`'s codec at its rate.
    static func applying(_ rung: SessionDemand, to options: RecordOptions) -> RecordOptions {
        var o = options
        guard let output = rung.outputs.first else { return o }
        o.codec = output.codec
        // Only a rate rung changes the rate (its rates are whole: `CostModel.steps`); a codec
        // rung keeps the asked rate exactly, 29.97 included.
        let asked = demand(options, preview: rung.preview)?.outputs.first?.framesPerSecond ?? 0
        let fps = Int(output.framesPerSecond.rounded())
        if output.framesPerSecond != asked, let rate = FrameRate(frames: Int32(clamping: fps)) {
            switch o.source {
            case .synthetic: o.rate = rate
            case .v4l2(let path, let size, _, let fourcc): o.source = .v4l2(path: path, size: size, fps: fps, fourcc: fourcc)
            }
        }
        return o
    }

    /// The options that differ between `adjusted` and `options`, as typed: `--codec prores:lt`,
    /// `--fps 24` (a V4L2 source: its `--source` with the rate).
    static func alternative(_ adjusted: RecordOptions, from options: RecordOptions) -> String {
        var parts: [String] = []
        if adjusted.codec != options.codec { parts.append("--codec \(adjusted.codec)") }
        if adjusted.rate != options.rate { parts.append("--fps \(CostFormat.fps(adjusted.rate.perSecond))") }
        if adjusted.source != options.source { parts.append("--source \(adjusted.source)") }
        return parts.joined(separator: " ")
    }

    /// The cost model with the pool's measured write bandwidth (none for `--plain`).
    public static func model(_ calibration: Calibration, options: RecordOptions) -> CostModel {
        let pool: String?
        switch options.storage {
        case .defaultPool: pool = StoragePool.defaultPath
        case .pool(let p): pool = p
        case .plain: pool = nil
        }
        let (bandwidth, source) = CostModel.diskBandwidth(forPoolAt: pool)
        return CostModel(calibration: calibration, diskBytesPerSecond: bandwidth, diskSource: source)
    }

    /// Refuses (`CapacityError.exceeds`, exit 69) a real-time recording whose cost beside the
    /// live sessions is above 1, else registers it. The figures are `calibration()`'s: the
    /// cached measurement, else the shipped table scaled by the CPU probe, so recording never
    /// stops to measure. Returns the registration (release it when the recording ends) and the cost.
    /// - Throws: `CapacityError.exceeds` when it does not fit; the registry's errors.
    public static func admit(_ options: RecordOptions, preview: Bool, framesPerSecond: Double? = nil, refuses: Bool = true) throws -> (Registration?, HardwareCost?) {
        // A request refused as a usage error anyway (a ratio the sensor lacks) is not costed first.
        guard isWellFormed(options), let calibration = calibration(),
              let demand = demand(options, preview: preview, framesPerSecond: framesPerSecond) else { return (nil, nil) }
        let model = model(calibration, options: options)
        var cost: HardwareCost? = nil
        let registration = try SessionRegistry().admit { others in
            let c = try model.cost(demand, others: others)
            // A recording not paced in real time cannot fall behind: registered, never refused.
            if refuses, options.realtime, let refusal = c.refusal { throw CapacityError.exceeds(refusal) }
            cost = c
            return c.session
        }
        return (registration, cost)
    }
}

/// What the camera does with a real-time request its cost model says this machine cannot keep
/// up with (`CameraConfiguration.validation`).
public enum ValidationPolicy: String, Sendable, Hashable {
    /// Record the first configuration down the ladder that fits, and say so (the default).
    case adjust
    /// Refuse it (exit 69), naming the options of one that fits (`reel record --strict`).
    case strict
    /// Record it as asked, and say it does not fit (`reel record --no-adjust`: benchmarks, or
    /// a machine the model misjudges); the admission's refusal above 1 is off too.
    case asAsked
}

/// What the session's configuration check admitted: the registration among the live sessions
/// (released when the recording ends) and the cost. A second check (a configuration committed
/// again before the run) replaces the first.
public final class CapacityAdmission: Sendable {
    /// Nothing admitted yet.
    public init() {}
    private let state = Mutex<(registration: Registration?, cost: HardwareCost?)>((nil, nil))
    /// What was admitted, for `update`.
    private let admitted = Mutex<(options: RecordOptions, preview: Bool)?>(nil)

    /// Checks and registers the recording at `framesPerSecond`.
    /// - Throws: `CapacityError.exceeds` (exit 69) when it does not fit; the registry's errors.
    public func admit(_ options: RecordOptions, preview: Bool, framesPerSecond: Double, refuses: Bool = true) throws {
        release()
        let (registration, cost) = try CapacityGate.admit(options, preview: preview, framesPerSecond: framesPerSecond, refuses: refuses)
        state.withLock { $0 = (registration, cost) }
        admitted.withLock { $0 = (options, preview) }
    }

    /// The recording now runs at `framesPerSecond` (a pressure step, or back): its entry in the
    /// registry takes the share at that rate, under the registry's lock (issue 13). Nothing
    /// when it is not registered. Returns what went wrong (for the pressure timeline's note).
    public func update(framesPerSecond: Double) -> String? {
        guard let registration = state.withLock({ $0.registration }), let (options, preview) = admitted.withLock({ $0 }),
              let calibration = CapacityGate.calibration(),
              let demand = CapacityGate.demand(options, preview: preview, framesPerSecond: framesPerSecond) else { return nil }
        do {
            try registration.update(shares: try CapacityGate.model(calibration, options: options).shares(demand))
            return nil
        } catch {
            return "the session registry keeps the share at the rate before: \(error)"
        }
    }

    /// The cost admitted (nil without a calibration).
    public var cost: HardwareCost? { state.withLock { $0.cost } }

    /// Leaves the registry.
    public func release() {
        let r = state.withLock { s -> Registration? in
            let r = s.registration
            s.registration = nil
            return r
        }
        r?.release()
    }
}
