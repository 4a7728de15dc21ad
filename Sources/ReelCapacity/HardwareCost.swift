import Foundation
import ReelCore
import ReelMedia
import ReelStorage

/// One encoded output of a recording: the codec, the largest frame size it will encode (a
/// recording that changes ratio encodes one clip at a time, so its largest clip counts) and
/// the frame rate: the format's maximum, or the frame-rate override when one lowers it.
public struct OutputDemand: Sendable, Equatable {
    /// The codec the output encodes with.
    public var codec: VideoCodec
    /// The largest frame it encodes, in pixels.
    public var size: Size
    /// Frames per second it encodes.
    public var framesPerSecond: Double
    /// The synthetic sensor's flat test pattern (`--scene pattern`), far cheaper to encode
    /// than a camera's picture; false: the realistic scene or a camera.
    public var pattern: Bool
    /// A demand of `codec` at `size` and `framesPerSecond` (of the flat `pattern`, or a camera's picture).
    public init(codec: VideoCodec, size: Size, framesPerSecond: Double, pattern: Bool = false) {
        self.codec = codec; self.size = size; self.framesPerSecond = framesPerSecond; self.pattern = pattern
    }
    /// `ffv1 1920×1920 at 30 fps`.
    public var description: String { "\(codec) \(size.width)×\(size.height) at \(CostFormat.fps(framesPerSecond)) fps" }
    /// The same output with another codec or rate.
    public func with(codec: VideoCodec? = nil, framesPerSecond: Double? = nil) -> OutputDemand {
        OutputDemand(codec: codec ?? self.codec, size: size, framesPerSecond: framesPerSecond ?? self.framesPerSecond, pattern: pattern)
    }
}

/// What one recording asks of the machine, before it is turned into shares.
public struct SessionDemand: Sendable, Equatable {
    /// The encoded outputs (one per movie output).
    public var outputs: [OutputDemand]
    /// The live preview runs (it encodes at most one JPEG per captured frame, newest only).
    public var preview: Bool
    /// Face detection on the sensor's frames (smart framing, Center Stage), nil: none.
    public var faceDetection: FaceDetectionDemand? = nil
    /// Video stabilisation on the sensor's frames, nil: none.
    public var stabilization: StabilizationDemand? = nil
    /// A demand of `outputs`, with or without the live preview, face detection and stabilisation.
    public init(outputs: [OutputDemand], preview: Bool, faceDetection: FaceDetectionDemand? = nil, stabilization: StabilizationDemand? = nil) {
        self.outputs = outputs; self.preview = preview; self.faceDetection = faceDetection; self.stabilization = stabilization
    }

    /// The same demand with every output (and stabilisation) at `fps` (a frame-rate override).
    public func at(framesPerSecond fps: Double) -> SessionDemand {
        var s = stabilization
        s?.framesPerSecond = fps
        return SessionDemand(outputs: outputs.map { $0.with(framesPerSecond: fps) }, preview: preview, faceDetection: faceDetection, stabilization: s)
    }
}

/// A recording's demand as shares of this machine (what the session registry keeps).
public struct SessionShares: Codable, Sendable, Equatable {
    /// Share of the machine's CPU the encoders take (CPU seconds per frame × frames per second
    /// ÷ cores).
    public var encoder: Double
    /// Share of the machine's CPU the preview's JPEG work takes.
    public var preview: Double
    /// Bytes per second the outputs write.
    public var diskBytesPerSecond: Double
    /// `prores:hq 1920×1080 at 30 fps` (outputs, `+ preview`).
    public var description: String
    /// Shares as computed by `CostModel.shares(_:)`.
    public init(encoder: Double, preview: Double, diskBytesPerSecond: Double, description: String) {
        self.encoder = encoder; self.preview = preview; self.diskBytesPerSecond = diskBytesPerSecond; self.description = description
    }
}

/// What the cost is made of: one line per resource, and the sessions counted.
public struct HardwareCost: Codable, Sendable, Equatable {
    /// One resource's line of the cost: the shares asked of it and what they are shares of.
    public struct Resource: Codable, Sendable, Equatable {
        /// `encoder` (CPU: every output's encoder and the preview's JPEG work) or `disk`.
        public var name: String
        /// This recording's share.
        public var share: Double
        /// The other live Reel recordings' share.
        public var othersShare: Double
        /// `share + othersShare`.
        public var total: Double
        /// The capacity the shares are of, in words (`2 cores: 1920×1080 prores:hq at 128 fps …`,
        /// `150 MB/s (pool write-mode measurement)`), or why it is not known.
        public var capacity: String
        /// False when the resource could not be measured (then it is not counted).
        public var measured: Bool
    }

    /// The largest total share any resource is asked for: above 1 the machine cannot do it.
    public var cost: Double
    /// The resource with the largest share.
    public var bottleneck: String
    /// One line per resource: `encoder`, then `disk`.
    public var resources: [Resource]
    /// This recording: outputs and preview.
    public var session: SessionShares
    /// The other live Reel recordings on this machine (session registry).
    public var others: [RegisteredSession]
    /// A frame rate at which the same recording would fit (cost ≤ 1), when the asked one does not.
    public var fittingFramesPerSecond: Double?
    /// Why it does not fit, as the error says it; nil when it fits.
    public var refusal: String?
}

/// Turns a demand into shares of this machine with its calibration and the pool's measured
/// write bandwidth, and finds the largest share.
public struct CostModel: Sendable {
    /// This machine's measured encoding costs and core count (`reel calibrate`).
    public var calibration: Calibration
    /// Bytes per second the pool is known to sustain; nil when not measured (disk not counted).
    public var diskBytesPerSecond: Double?
    /// Where `diskBytesPerSecond` came from, or why there is none.
    public var diskSource: String

    /// A model of `calibration` and the pool's write bandwidth (nil: not measured, disk not
    /// counted).
    public init(calibration: Calibration, diskBytesPerSecond: Double?, diskSource: String) {
        self.calibration = calibration; self.diskBytesPerSecond = diskBytesPerSecond; self.diskSource = diskSource
    }

    /// The disk side from the pool's own write-mode measurement (`WriteModeMeasurement`, cached
    /// per filesystem by `reel pool create`/`calibrate`): the paced rate it wrote at, when the
    /// chosen mode kept up with it (no ring drops) — a floor of what the pool sustains, so the
    /// disk share is never underestimated. Nil (disk not counted) when there is no measurement
    /// or the chosen mode did not keep up.
    public static func diskBandwidth(forPoolAt path: String?) -> (Double?, String) {
        guard let path else { return (nil, "not measured (writing plain files)") }
        guard let m = WriteModeMeasurement.cached(for: path) else {
            return (nil, "not measured (no write-mode measurement for the pool's filesystem: reel pool calibrate)")
        }
        guard let chosen = m.modes.first(where: { $0.name == m.chosen }), chosen.ringDrops == 0, m.rateMBps > 0 else {
            return (nil, "not measured (the pool's write-mode measurement did not keep up with \(CostFormat.fps(m.rateMBps)) MB/s)")
        }
        return (m.rateMBps * 1_000_000, "\(CostFormat.fps(m.rateMBps)) MB/s sustained by the pool's \(m.chosen) writes (\(m.filesystem))")
    }

    /// The shares `demand` takes; throws `CapacityError.notCalibrated` for a codec the
    /// calibration lacks.
    /// - Throws: `CapacityError.notCalibrated` for a codec the calibration lacks.
    public func shares(_ demand: SessionDemand) throws(CapacityError) -> SessionShares {
        var encoder = 0.0, disk = 0.0
        for o in demand.outputs {
            guard let spf = calibration.cpuSecondsPerFrame(o.codec, o.size, pattern: o.pattern),
                  let bpf = calibration.bytesPerFrame(o.codec, o.size, pattern: o.pattern) else {
                throw .notCalibrated(o.codec.description)
            }
            encoder += spf * o.framesPerSecond / calibration.capacity
            disk += bpf * o.framesPerSecond
        }
        var preview = 0.0
        if demand.preview {
            let fps = demand.outputs.map(\.framesPerSecond).max() ?? 0
            // One thread: at most one core's worth, of `cores`.
            preview = min(fps * calibration.previewMillisecondsPerPicture / 1000, 1) / calibration.capacity
        }
        if let d = demand.faceDetection {
            // One thread (OpenCV's set to one): at most one core's worth.
            encoder += min(d.perSecond * d.cpuSecondsPerDetection(scale: calibration.cpuScale), 1) / calibration.capacity
        }
        if let s = demand.stabilization {
            // The capture thread: at most one core's worth.
            encoder += min(s.framesPerSecond * s.cpuSecondsPerFrame(scale: calibration.cpuScale), 1) / calibration.capacity
        }
        var text = demand.outputs.map(\.description).joined(separator: ", ")
        if demand.preview { text += " + preview" }
        if let d = demand.faceDetection { text += " + face detection \(CostFormat.fps(d.perSecond))/s" }
        if let s = demand.stabilization { text += s.looksAhead ? " + cinematic stabilisation" : " + stabilisation" }
        return SessionShares(encoder: encoder, preview: preview, diskBytesPerSecond: disk, description: text)
    }

    /// The hardware cost of `demand` beside `others` (the live sessions of the registry).
    /// - Throws: `CapacityError.notCalibrated` for a codec the calibration lacks.
    public func cost(_ demand: SessionDemand, others: [RegisteredSession]) throws(CapacityError) -> HardwareCost {
        var result = try evaluate(demand, others: others)
        if result.cost > 1 + 1e-9 {   // (rounding of shares that sum to exactly 1)
            result.fittingFramesPerSecond = fittingRate(demand, others: others)
            result.refusal = refusal(result, demand: demand)
        }
        return result
    }

    private func evaluate(_ demand: SessionDemand, others: [RegisteredSession]) throws(CapacityError) -> HardwareCost {
        let mine = try shares(demand)
        let othersCPU = others.reduce(0) { $0 + $1.shares.encoder + $1.shares.preview }
        let othersDisk = others.reduce(0) { $0 + $1.shares.diskBytesPerSecond }
        let cpu = mine.encoder + mine.preview
        var resources = [HardwareCost.Resource(
            name: "encoder", share: cpu, othersShare: othersCPU, total: cpu + othersCPU,
            capacity: "\(calibration.cores) cores' CPU time, per frame " + (calibration.isEstimate ? "estimated" : "as measured by reel calibrate"),
            measured: true)]
        if let bw = diskBytesPerSecond, bw > 0 {
            let d = mine.diskBytesPerSecond / bw, od = othersDisk / bw
            resources.append(.init(name: "disk", share: d, othersShare: od, total: d + od, capacity: diskSource, measured: true))
        } else {
            resources.append(.init(name: "disk", share: 0, othersShare: 0, total: 0, capacity: diskSource, measured: false))
        }
        let top = resources.filter(\.measured).max { $0.total < $1.total }!
        return HardwareCost(cost: top.total, bottleneck: top.name, resources: resources, session: mine, others: others,
                            fittingFramesPerSecond: nil, refusal: nil)
    }

    /// The common frame rates below the asked one, highest first.
    public static let steps: [Double] = [120, 60, 50, 48, 30, 25, 24, 20, 15, 12, 10, 5, 2, 1]

    /// The highest of `steps` below the asked rate at which `demand` fits; nil if none does.
    func fittingRate(_ demand: SessionDemand, others: [RegisteredSession]) -> Double? {
        let asked = demand.outputs.map(\.framesPerSecond).max() ?? 0
        for fps in CostModel.steps where fps < asked {
            if let c = try? evaluate(demand.at(framesPerSecond: fps), others: others), c.cost <= 1 + 1e-9 { return fps }
        }
        return nil
    }

    /// `ffv1 1920×1920 at 30 fps needs 1.25 of this machine's encoder capacity; 24 fps fits`.
    func refusal(_ c: HardwareCost, demand: SessionDemand) -> String {
        let r = c.resources.first { $0.name == c.bottleneck }!
        let what = c.bottleneck == "disk" ? "the pool's write bandwidth (\(r.capacity))" : "this machine's encoder capacity"
        var text = "\(c.session.description) needs \(CostFormat.share(r.share)) of \(what)"
        if !c.others.isEmpty {
            let n = c.others.count
            text += ", and \(n) other Reel recording\(n == 1 ? "" : "s") take\(n == 1 ? "s" : "") \(CostFormat.share(r.othersShare)) (\(CostFormat.share(r.total)) in all)"
        }
        if let fps = c.fittingFramesPerSecond {
            text += "; \(CostFormat.fps(fps)) fps fits"
        } else {
            text += c.others.isEmpty ? "; no frame rate fits" : "; nothing fits until one of them ends"
        }
        return text
    }
}

/// Why a cost cannot be had or is refused.
public enum CapacityError: UserFacingError, Equatable {
    /// The configuration needs more than the machine has (exit 69).
    case exceeds(String)
    /// The calibration has no figures for this codec (exit 69): run `reel calibrate`.
    case notCalibrated(String)
    /// The calibration is missing or stale and was not measured (exit 69).
    case noCalibration(String)

    /// Always `ExitStatus.unavailable` (69).
    public var exitStatus: Int32 { ExitStatus.unavailable }
    /// The one-line message shown after `reel: `.
    public var description: String {
        switch self {
        case .exceeds(let s): return s
        case .notCalibrated(let c): return "\(c) was never calibrated on this machine: run reel calibrate --refresh"
        case .noCalibration(let why): return "\(why): run reel calibrate"
        }
    }
}

/// Number formats of cost messages.
public enum CostFormat {
    /// `1.25`.
    public static func share(_ x: Double) -> String { String(format: "%.2f", x) }
    /// `30`, `29.97`.
    public static func fps(_ x: Double) -> String {
        x == x.rounded() ? String(Int(x)) : String(format: "%.2f", x)
    }
}
