import ReelCore

/// Video stabilisation's demand on the machine (`--stabilization`): every frame's motion
/// estimate and the crop's resampling on the capture thread, and for `cinematic` a copy of
/// each frame into the look-ahead.
public struct StabilizationDemand: Sendable, Equatable {
    /// The sensor's side, pixels.
    public var sensorSide: Int
    /// Frames a second.
    public var framesPerSecond: Double
    /// Whether frames are copied into a look-ahead (cinematic).
    public var looksAhead: Bool
    /// A demand on a `sensorSide`² sensor at `framesPerSecond`.
    public init(sensorSide: Int, framesPerSecond: Double, looksAhead: Bool) {
        self.sensorSide = sensorSide; self.framesPerSecond = framesPerSecond; self.looksAhead = looksAhead
    }

    /// CPU seconds a frame on the reference machine — the upper end of `scripts/bench
    /// stabilization`'s whole cost at 1920² (the recording's CPU less the unstabilised one's:
    /// 14 ms lowLatency at e3acbce; cinematic's copy into the look-ahead, 1 ms more), in
    /// proportion to the sensor's area — times `scale`
    /// (this machine's CPU against the reference's: `Calibration.cpuScale`).
    public func cpuSecondsPerFrame(scale: Double) -> Double {
        let area = Double(sensorSide * sensorSide) / Double(1920 * 1920)
        return (looksAhead ? 0.015 : 0.014) * area * scale
    }
}
