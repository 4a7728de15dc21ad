import Foundation
import ReelCore
import ReelMedia
#if canImport(Glibc)
import Glibc
#endif

/// What drawing a `SyntheticScene` costs on this machine: the one-time preparation and the
/// CPU time of each frame (`SyntheticScene.measureDrawingCost`).
public struct SceneDrawingCost: Sendable, CustomStringConvertible {
    /// The scene measured.
    public let scene: SyntheticScene
    /// The sensor's side, in pixels.
    public let sensorSide: Int
    /// Whether the realistic scene's temporal noise was on.
    public let temporalNoise: Bool
    /// Frames drawn.
    public let frames: Int
    /// CPU seconds the one-time preparation took (the realistic scene's texture and noise; the
    /// pattern's background): 0 when this process had built the texture before.
    public let preparationSeconds: Double
    /// CPU seconds of the drawing thread per frame.
    public let cpuSecondsPerFrame: Double
    /// Wall-clock seconds per frame.
    public let wallSecondsPerFrame: Double

    /// The share of one core drawing takes at `rate` (1 = a whole core).
    public func shareOfOneCore(at rate: FrameRate) -> Double { cpuSecondsPerFrame * rate.perSecond }

    /// One line: the scene, the size, the costs and the share of a core at 30 fps.
    public var description: String {
        let share = shareOfOneCore(at: FrameRate(frames: 30)!) * 100
        let noise = scene.isRealistic && !temporalNoise ? " (noise off)" : ""
        return String(format: "%@%@ %dx%d: %.2f ms CPU a frame (%.2f ms wall), %.1f %% of a core at 30 fps; preparation %.0f ms",
                      scene.rawValue, noise, sensorSide, sensorSide, cpuSecondsPerFrame * 1e3, wallSecondsPerFrame * 1e3, share,
                      preparationSeconds * 1e3)
    }
}

extension SyntheticScene {
    /// Draws `frames` frames of the scene for a `sensorSide`² sensor on the calling thread and
    /// measures the thread's CPU time: first the one-time preparation (the realistic scene's
    /// texture and noise streams, cached for the process; the pattern's background), then
    /// each frame (the realistic scene: every sample; the pattern: its per-frame parts), into
    /// four buffers in turn.
    /// The figures mean something only in a release build.
    /// - Throws: `MediaError` when the frame buffer cannot be allocated; `CaptureError`
    ///   for a sensor side `SyntheticSource` does not take.
    public func measureDrawingCost(sensorSide: Int, frames: Int = 60, temporalNoise: Bool = true) throws -> SceneDrawingCost {
        guard SyntheticSource.sizeRange.contains(sensorSide), sensorSide % 2 == 0 else {
            throw CaptureError.invalidSensorSize("sensor size \(sensorSide) is not an even size from \(SyntheticSource.sizeRange.lowerBound) to \(SyntheticSource.sizeRange.upperBound)")
        }
        let size = Size(width: sensorSide, height: sensorSide)
        // Four buffers in turn, as a sensor's pool goes round: one buffer drawn over and over
        // would stay in the cache and look cheaper than capture is.
        let buffers = try (0..<4).map { _ in try PixelBuffer(size: size, format: .yuv420p) }
        let realistic = isRealistic ? RealisticScene(sensor: size, temporalNoise: temporalNoise, people: self == .people) : nil
        let pattern = TestPattern(sensor: size)
        let prepareStart = threadCPUSeconds()
        if let realistic { realistic.prepare() } else { pattern.drawBackground(buffers[0]) }
        let preparation = threadCPUSeconds() - prepareStart
        let cpuStart = threadCPUSeconds(), wallStart = MonotonicClock.now()
        for index in 0..<frames {
            let buffer = buffers[index % buffers.count]
            if let realistic { realistic.draw(buffer, index: index) } else { pattern.drawFrame(buffer, index: index) }
        }
        let cpu = threadCPUSeconds() - cpuStart, wall = MonotonicClock.seconds(since: wallStart)
        let n = Double(max(1, frames))
        return SceneDrawingCost(scene: self, sensorSide: sensorSide, temporalNoise: temporalNoise, frames: frames,
                                preparationSeconds: preparation, cpuSecondsPerFrame: cpu / n, wallSecondsPerFrame: wall / n)
    }
}

