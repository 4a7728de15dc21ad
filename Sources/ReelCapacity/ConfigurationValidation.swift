import Foundation
import ReelCore
import ReelMedia

/// One configuration the validation looked at: what it records and what it costs.
public struct CostedConfiguration: Codable, Sendable, Equatable {
    /// `prores:lt`, `h264`, … (`VideoCodec.description`).
    public var codec: String
    /// Frames per second it records at.
    public var framesPerSecond: Double
    /// `prores:hq 1920×1080 at 30 fps`.
    public var description: String
    /// Its hardware cost beside the live recordings (`HardwareCost.cost`).
    public var cost: Double
    /// The resource with the largest share: `encoder` or `disk`.
    public var bottleneck: String
    /// This recording's own share of the bottleneck.
    public var share: Double
    /// The other live Reel recordings' share of it.
    public var othersShare: Double
    /// How many other live Reel recordings there are.
    public var otherRecordings: Int

    /// `prores:hq 1920×1080 at 30 fps needs 1.13 of this machine (encoder)`, with the other
    /// recordings' part when there are any.
    public var needs: String {
        var text = "\(description) needs \(CostFormat.share(share)) of this machine (\(bottleneck))"
        if otherRecordings > 0 {
            let n = otherRecordings
            text += ", and \(n) other Reel recording\(n == 1 ? "" : "s") take\(n == 1 ? "s" : "") \(CostFormat.share(othersShare)) (\(CostFormat.share(cost)) in all)"
        }
        return text
    }
}

/// What the validation changed, as the summary's `adjusted` record and the warning line say it.
public struct ConfigurationAdjustment: Codable, Sendable, Equatable {
    /// What was asked for.
    public var requested: CostedConfiguration
    /// What is recorded instead: the first rung of the ladder that fits.
    public var chosen: CostedConfiguration
    /// The cost a real-time recording must stay within (`CostModel.realtimeTarget`).
    public var target: Double
    /// Where the costs come from: `measured` (`reel calibrate`) or `estimated` (the shipped
    /// table scaled by this machine's CPU probe).
    public var figures: String

    /// `prores:hq 1920×1080 at 30 fps needs 0.88 of this machine (encoder), more than the 0.75 … ; recording prores:standard … instead`.
    public var message: String {
        "\(requested.needs), more than the \(CostFormat.share(target)) a real-time recording may take (\(figures) figures); recording \(chosen.description) instead (\(CostFormat.share(chosen.cost))); --strict refuses instead"
    }
}

/// The answer of `CostModel.validate`, as libcamera's `CameraConfiguration::validate()` gives
/// Valid, Adjusted or Invalid.
public enum ConfigurationValidity: Sendable, Equatable {
    /// The configuration fits as asked.
    case valid(CostedConfiguration)
    /// It does not fit; the first rung of the ladder that does is `adjustment.chosen`.
    case adjusted(ConfigurationAdjustment, SessionDemand)
    /// Nothing on the ladder fits: the cost of what was asked.
    case invalid(CostedConfiguration)
}

extension CostModel {
    /// The largest cost a real-time recording is given: the encoder's CPU share, with room
    /// left for the sensor's drawing, the muxer, the writer and the rest of the machine. At
    /// 1.0 the cores are full and frames are late. The margin below 1 covers the estimate's
    /// error: the CPU probe varies from run to run (its scale is bounded below at 0.8×, docs/pressure.md), and on the realistic scene
    /// the model's ProRes HQ figure (75 ms a 1080p frame) is about 15 % under what a saturated
    /// recording spends (88 ms).
    public static let realtimeTarget = 0.75

    /// The ProRes profiles from the heaviest down; H.264 after them.
    static let proResLadder: [ProResProfile] = [.p4444, .hq, .standard, .lt, .proxy]

    /// The codecs tried after `codec`, in order: each lighter ProRes profile, then H.264 (for
    /// ProRes, HEVC and FFV1); nothing after H.264.
    public static func lighterCodecs(after codec: VideoCodec) -> [VideoCodec] {
        switch codec {
        case .prores(let p):
            let i = proResLadder.firstIndex(of: p) ?? 0
            return proResLadder.dropFirst(i + 1).map { VideoCodec.prores($0) } + [.h264]
        case .hevc, .ffv1: return [.h264]
        case .h264: return []
        }
    }

    /// The ladder as documented: the request; the lighter codecs at the asked rate
    /// (`lighterCodecs`, those `allowed`: a container that cannot hold one skips it); then
    /// (`lowerRates`) the last codec at each of `steps` below the asked rate. `validate` steps
    /// the rates down on the cheapest codec rung, which is the last where all cost the same.
    public static func ladder(_ demand: SessionDemand, allowed: (VideoCodec) -> Bool = { _ in true }, lowerRates: Bool = true) -> [SessionDemand] {
        guard let first = demand.outputs.first else { return [demand] }
        let codecs = [first.codec] + lighterCodecs(after: first.codec).filter(allowed)
        var rungs = codecs.map { c in SessionDemand(outputs: demand.outputs.map { $0.with(codec: c) }, preview: demand.preview, faceDetection: demand.faceDetection,
                                                          stabilization: demand.stabilization) }
        guard lowerRates else { return rungs }
        let asked = demand.outputs.map(\.framesPerSecond).max() ?? 0
        for fps in steps where fps < asked { rungs.append(rungs[codecs.count - 1].at(framesPerSecond: fps)) }
        return rungs
    }

    /// Valid when `demand` costs no more than `target` beside `others`; else the first rung of
    /// the ladder that does (adjusted); else invalid.
    /// - Throws: `CapacityError.notCalibrated` for a codec the figures lack.
    /// The codec rungs are tried in the ladder's order; then the lower rates, on the cheapest
    /// codec rung (the later one of equal cost: H.264 where all cost the same) — on the
    /// realistic scene ProRes Proxy costs less than H.264, so Proxy at 50 fps fits where H.264
    /// would need 30. `lowerRates` false (a V4L2 camera, which offers its own rates): codecs only.
    /// - Throws: `CapacityError.notCalibrated` for a codec the figures lack.
    public func validate(_ demand: SessionDemand, others: [RegisteredSession], target: Double = CostModel.realtimeTarget,
                         lowerRates: Bool = true, allowed: (VideoCodec) -> Bool = { _ in true }) throws(CapacityError) -> ConfigurationValidity {
        let codecs = CostModel.ladder(demand, allowed: allowed, lowerRates: false)
        let asked = try costed(codecs[0], others: others)
        if asked.cost <= target + 1e-9 { return .valid(asked) }
        let figures = calibration.isEstimate ? "estimated" : "measured"
        var cheapest = (codecs[0], asked)
        for rung in codecs.dropFirst() {
            let c = try costed(rung, others: others)
            if c.cost <= target + 1e-9 {
                return .adjusted(ConfigurationAdjustment(requested: asked, chosen: c, target: target, figures: figures), rung)
            }
            if c.cost <= cheapest.1.cost { cheapest = (rung, c) }
        }
        if lowerRates {
            let top = demand.outputs.map(\.framesPerSecond).max() ?? 0
            for fps in CostModel.steps where fps < top {
                let rung = cheapest.0.at(framesPerSecond: fps)
                let c = try costed(rung, others: others)
                if c.cost <= target + 1e-9 {
                    return .adjusted(ConfigurationAdjustment(requested: asked, chosen: c, target: target, figures: figures), rung)
                }
            }
        }
        return .invalid(asked)
    }

    private func costed(_ demand: SessionDemand, others: [RegisteredSession]) throws(CapacityError) -> CostedConfiguration {
        let c = try cost(demand, others: others)
        let first = demand.outputs.first
        let r = c.resources.first { $0.name == c.bottleneck }
        return CostedConfiguration(codec: first?.codec.description ?? "", framesPerSecond: demand.outputs.map(\.framesPerSecond).max() ?? 0,
                                   description: c.session.description, cost: c.cost, bottleneck: c.bottleneck,
                                   share: r?.share ?? c.cost, othersShare: r?.othersShare ?? 0, otherRecordings: others.count)
    }
}
