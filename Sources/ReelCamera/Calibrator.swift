import Foundation
import ReelCapacity
import ReelCapture
import ReelCore
import ReelMedia
import ReelPreview

/// Runs the short real encodes `Calibration` holds: the synthetic sensor's own frames (the
/// realistic scene, and the flat pattern at one size, cropped to each sample size), through
/// `VideoEncoder` with every core.
public struct Calibrator: Sendable {
    /// Frames encoded and thrown away before the timed ones: an encoder's first frames set up
    /// its threads and buffers, and each of the converter's pooled buffers (5 with 2 threads)
    /// costs page faults on its first use — with 1 warm-up frame ProRes HQ 1920×1080 measured
    /// 34.7 ms CPU a frame against 22.8 ms in a 120-frame `reel record` process.
    var warmUpFrames = 8
    /// Frames timed per batch.
    var framesPerBatch = 12
    /// Batches per point, each on a new encoder; the cheapest is kept. CPU time hardly depends
    /// on other work (README: spread ≤ 1.2 at most points), so one batch is enough.
    var batches = 1
    var codecs: [VideoCodec] = Calibration.codecs

    /// The default batches: 8 warm-up frames, 12 timed, one batch a point, every codec.
    public init() {}

    /// Measures every codec at every sample point on the realistic scene (a picture as hard
    /// to encode as a camera's), and at 1920×1080 on the flat test pattern; the preview's JPEG
    /// work; and the CPU probe the shipped table is scaled by.
    /// - Throws: `MediaError` when an encoder cannot be opened or fails; `CaptureError` when
    ///   the sensor cannot be made.
    public func measure() throws -> Calibration {
        quietLibav()
        let started = MonotonicClock.now()
        let load = Double(((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "").split(separator: " ").first ?? "") ?? 0
        let probe = CPUProbe.milliseconds()
        var encoders: [String: [EncoderPoint]] = [:], pattern: [String: [EncoderPoint]] = [:]
        var previewMs = 0.0
        let points = Calibration.samplePoints.map { ($0.sensor, $0.ratio, SyntheticScene.realistic) } + [(1920, AspectRatio.landscape16x9, SyntheticScene.pattern)]
        for (side, ratio, scene) in points {
            let source = try SyntheticSource(size: side, rate: FrameRate(frames: 30)!, realtime: false, buffers: 4, scene: scene)
            let crop = ratio.crop(in: source.format.size)
            for codec in codecs {
                var best: EncoderPoint? = nil
                for _ in 0..<batches {
                    let p = try batch(codec, source: source, crop: crop, ratio: ratio)
                    if best == nil || p.cpuSecondsPerFrame < best!.cpuSecondsPerFrame { best = p }
                }
                if scene == .pattern { pattern[codec.description, default: []].append(best!) } else { encoders[codec.description, default: []].append(best!) }
            }
            if side == 1920 && ratio == .landscape16x9 && scene == .realistic { previewMs = try previewMilliseconds(source: source) }
        }
        let taken = Double(MonotonicClock.now() - started) / 1e9
        return Calibration(version: Calibration.version, machine: Calibration.machineKey, toolchain: Calibration.toolchainKey,
                           measuredAt: Date().timeIntervalSince1970, secondsTaken: taken, loadAverage: load,
                           encoders: encoders, previewMillisecondsPerPicture: previewMs,
                           cores: ProcessInfo.processInfo.activeProcessorCount, patternEncoders: pattern,
                           origin: "measured", cpuProbeMilliseconds: probe)
    }

    /// One batch: a new encoder, `warmUpFrames` untimed, then `framesPerBatch` frames from the
    /// sensor (drawn, cropped, converted, encoded) timed to the end of the flush.
    func batch(_ codec: VideoCodec, source: SyntheticSource, crop: CropRect, ratio: AspectRatio) throws -> EncoderPoint {
        let rate = source.format.rate
        let encoder = try VideoEncoder(EncoderSettings(codec: codec, size: crop.size, rate: rate), globalHeader: true)
        try encoder.warmUp()
        let sink = EncodingDelegate(encoder: encoder, crop: crop, warmUp: warmUpFrames)
        try source.capture(frameLimit: warmUpFrames + framesPerBatch, delegate: sink)
        if let error = sink.failure { throw error }
        var bytes = sink.bytes, packets = sink.packets
        try encoder.flush(duration: 1) { bytes += $0.byteCount; packets += 1 }
        let seconds = Double(MonotonicClock.now() - sink.timedStart) / 1e9
        let cpu = Calibration.processCPUSeconds() - sink.timedStartCPU
        // Per frame encoded in the timed window: the packets that came out in it. An encoder
        // that holds frames (x264's lookahead and frame threads: ~17) encodes the warm-up
        // frames there too; counting only the timed frames would double its cost.
        let n = Double(max(packets, framesPerBatch))
        return EncoderPoint(width: crop.width, height: crop.height, cpuSecondsPerFrame: max(cpu, 1e-6) / n,
                            framesPerSecond: n / max(seconds, 1e-6), bytesPerFrame: Double(bytes) / n)
    }

    /// The preview's CPU ms per picture over a few 1920×1080 crops (`PreviewOutput`: copy out,
    /// decimate to 1280 wide, TurboJPEG; the sensor's drawing of each frame included).
    func previewMilliseconds(source: SyntheticSource) throws -> Double {
        let output = PreviewOutput()
        try output.start()
        defer { output.stop() }
        let crop = AspectRatio.landscape16x9.crop(in: source.format.size)
        let feeder = PreviewDelegate(output: output, crop: crop)
        try source.capture(frameLimit: 1, delegate: feeder)   // the first picture sets up buffers
        let cpu = Calibration.processCPUSeconds()
        try source.capture(frameLimit: 8, delegate: feeder)
        let pictures = max(feeder.sequence - 1, 1)
        return (Calibration.processCPUSeconds() - cpu) * 1000 / Double(pictures)
    }
}

/// Encodes every frame the sensor hands it, on the capture thread (calibration only).
private final class EncodingDelegate: SourceDelegate, @unchecked Sendable {
    let encoder: VideoEncoder
    let crop: CropRect
    let warmUp: Int
    var bytes = 0
    /// Packets out in the timed window.
    var packets = 0
    var timedStart: UInt64 = MonotonicClock.now()
    var timedStartCPU = Calibration.processCPUSeconds()
    var failure: (any Error)?

    init(encoder: VideoEncoder, crop: CropRect, warmUp: Int) { self.encoder = encoder; self.crop = crop; self.warmUp = warmUp }

    func source(didCapture frame: SourceFrame) -> Bool {
        guard failure == nil else { return false }
        if frame.index == warmUp { timedStart = MonotonicClock.now(); timedStartCPU = Calibration.processCPUSeconds() }
        let counted = frame.index >= warmUp
        do {
            try encoder.encode(frame.lease.buffer, crop: crop, pts: Int64(frame.index), duration: 1, forceKeyframe: frame.index == 0) {
                if counted { bytes += $0.byteCount; packets += 1 }
            }
        } catch {
            failure = error
        }
        return true
    }

    func source(didDrop count: Int, reason: DropReason, at index: Int) {}
}

/// Hands frames to a preview output and waits until each is encoded (calibration only).
private final class PreviewDelegate: SourceDelegate, @unchecked Sendable {
    let output: PreviewOutput
    let crop: CropRect
    var sequence = 0
    init(output: PreviewOutput, crop: CropRect) { self.output = output; self.crop = crop }

    func source(didCapture frame: SourceFrame) -> Bool {
        let captured = CapturedFrame(lease: frame.lease, index: frame.index, pts: frame.pts, duration: 1, ratio: .landscape16x9, crop: crop)
        guard case .taken = output.offer(captured, waiting: false) else { return false }
        if let f = output.frame(after: sequence, timeout: 5) { sequence = f.sequence }
        return true
    }

    func source(didDrop count: Int, reason: DropReason, at index: Int) {}
}
