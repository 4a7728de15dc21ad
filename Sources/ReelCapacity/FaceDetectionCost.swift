import ReelCore

/// Face detection's demand on the machine (smart framing, Center Stage): detections a second
/// on a square sensor of `sensorSide`, each searched at about 960 pixels by OpenCV's LBP
/// cascade on one thread.
public struct FaceDetectionDemand: Sendable, Equatable {
    /// The sensor's side, pixels.
    public var sensorSide: Int
    /// Detections a second.
    public var perSecond: Double
    /// Every this many detections also look for faces in profile (Center Stage: 2); 0: none do.
    public var profilesEvery: Int
    /// A demand of `perSecond` detections on a `sensorSide`² sensor.
    public init(sensorSide: Int, perSecond: Double, profilesEvery: Int = 0) {
        self.sensorSide = sensorSide; self.perSecond = perSecond; self.profilesEvery = profilesEvery
    }

    /// CPU seconds the profile search adds to a detection that runs it: Haar's profile
    /// cascade on the picture and its mirror, shrunk to about 320 pixels whatever the sensor
    /// (0.09–0.15 s more a detection at 1920², `reel _faces lbp 1920 2 12 profiles:6:150`
    /// against `lbp 1920 2 12`: the upper end).
    public static let profileSeconds = 0.15

    /// CPU seconds of one detection on the reference machine (the upper ends of `scripts/bench
    /// framing` at 2761b70 and of the 4032 recordings' `smartFraming.detectionCpuMs`: 0.24 s at
    /// 1920², 0.34 s at 4032²; between them, in proportion to the side), and the profile
    /// search's share (`profileSeconds` every `profilesEvery`th detection), times `scale` (this
    /// machine's CPU against the reference's: `Calibration.cpuScale`).
    public func cpuSecondsPerDetection(scale: Double) -> Double {
        let t = min(max(Double(sensorSide - 1920) / Double(4032 - 1920), 0), 1)
        let profiles = profilesEvery > 0 ? Self.profileSeconds / Double(profilesEvery) : 0
        return (0.24 + 0.10 * t + profiles) * scale
    }
}
