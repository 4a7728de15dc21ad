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

    /// Refuses (`CapacityError.exceeds`, exit 69) a recording whose cost beside the live
    /// sessions is above 1, else registers it. Without a usable calibration (`reel calibrate`
    /// never run here, or its cache stale) nothing is checked or registered: recording never
    /// stops to measure. Returns the registration (release it when the recording ends) and the cost.
    /// - Throws: `CapacityError.exceeds` when it does not fit; the registry's errors.
    public static func admit(_ options: RecordOptions, preview: Bool, framesPerSecond: Double? = nil) throws -> (Registration?, HardwareCost?) {
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
public final class CapacityAdmission: Sendable {
    /// Nothing admitted yet.
    public init() {}
    private let state = Mutex<(registration: Registration?, cost: HardwareCost?)>((nil, nil))
    /// What was admitted, for `update`.
    private let admitted = Mutex<(options: RecordOptions, preview: Bool)?>(nil)

    /// Checks and registers the recording at `framesPerSecond`.
    /// - Throws: `CapacityError.exceeds` (exit 69) when it does not fit; the registry's errors.
    public func admit(_ options: RecordOptions, preview: Bool, framesPerSecond: Double) throws {
        release()
        let (registration, cost) = try CapacityGate.admit(options, preview: preview, framesPerSecond: framesPerSecond)
        state.withLock { $0 = (registration, cost) }
        admitted.withLock { $0 = (options, preview) }
    }

    /// The recording now runs at `framesPerSecond` (a pressure step, or back): its entry in the
    /// registry takes the share at that rate, under the registry's lock (issue 13). Nothing
    /// when it is not registered. Returns what went wrong (for the pressure timeline's note).
    public func update(framesPerSecond: Double) -> String? {
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
