import ReelCore

/// Face detection's demand on the machine (smart framing, Center Stage): detections a second
/// on a square sensor of `sensorSide`, each searched at about 960 pixels by OpenCV's LBP
/// cascade on one thread.
public struct FaceDetectionDemand: Sendable, Equatable {
    /// The sensor's side, pixels.
    public var sensorSide: Int
    /// Detections a second.
    public var perSecond: Double
    /// A demand of `perSecond` detections on a `sensorSide`² sensor.
    public init(sensorSide: Int, perSecond: Double) { self.sensorSide = sensorSide; self.perSecond = perSecond }

    /// CPU seconds of one detection on the reference machine (the upper ends of `scripts/bench
    /// framing` at 2761b70 and of the 4032 recordings' `smartFraming.detectionCpuMs`: 0.24 s at
    /// 1920², 0.34 s at 4032²; between them, in proportion to the side), times `scale` (this
    /// machine's CPU against the reference's: `Calibration.cpuScale`).
    public func cpuSecondsPerDetection(scale: Double) -> Double {
        let t = min(max(Double(sensorSide - 1920) / Double(4032 - 1920), 0), 1)
        return (0.24 + 0.10 * t) * scale
    }
}
