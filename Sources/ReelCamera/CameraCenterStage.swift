import Foundation
import ReelCapture
import ReelControl
import ReelCore
import ReelFraming
import ReelWriter

/// The camera's Center Stage (`--center-stage`): faces found on the sensor's frames
/// (`FaceTracking`, every 15th frame; every second detection also looks for faces in
/// profile), and every frame the crop window (`CenterStage`: pan
/// and zoom within the square sensor) set on the session's adjustments before the frame is
/// processed — so the movie, the preview and photos all show it. In `cooperative` mode the
/// user's zoom takes precedence: while the zoom control is not 1, Center Stage holds still; in
/// `app` mode the zoom control is disabled.
final class CameraCenterStage: Sendable {
    let stage: CenterStage
    let tracking: FaceTracking
    let mode: CenterStage.Mode
    private let session: CaptureSession

    private init(stage: CenterStage, tracking: FaceTracking, mode: CenterStage.Mode, session: CaptureSession) {
        self.stage = stage; self.tracking = tracking; self.mode = mode; self.session = session
    }

    /// Starts Center Stage on `recording`'s session.
    /// - Throws: `FramingError` (64) for a sensor that is not square, (69) without OpenCV's
    ///   cascades; `MediaError` when the adjustments' buffers cannot be allocated.
    /// With `stabilization`, the faces found in a frame are moved by the correction it applied
    /// to that frame, so the window follows the people in the steadied picture, not the shake.
    static func attach(_ mode: CenterStage.Mode, stepped: Bool, to recording: Recording, controls: CameraControls,
                       stabilization: CameraStabilization? = nil) throws -> CameraCenterStage {
        let session = recording.session
        let format = session.source.format
        guard format.size.width == format.size.height else {
            throw FramingError("Center Stage needs a square sensor (the synthetic sensor); this one is \(format.size)", status: ExitStatus.usage)
        }
        // The adjustments' buffers, allocated here, off the capture thread.
        try session.adjustments.change(format: format, timeout: 0) { _ in }
        let stage = CenterStage(sensor: format.size)
        let detector = try FaceDetector(profiles: true)
        let every = max(1, Int((format.rate.perSecond / 2).rounded()))
        let tracking = FaceTracking(detector: detector, sensorSide: format.size.width, every: every,
                                    profilesEvery: CenterStage.profilesEvery, stepped: stepped) {
            [stage, session] faces, frame, _, profiles in
            var c = PicturePoint(x: 0, y: 0)
            if let stabilization {
                // A frame whose correction is no longer kept: its faces cannot be placed in
                // the steadied picture, and the detection is not used.
                guard let known = stabilization.shift(atFrame: frame) else { return }
                c = known
            }
            let steadied = faces.map { f -> DetectedFace in
                var f = f
                f.box.x -= Int(c.x.rounded()); f.box.y -= Int(c.y.rounded())
                return f
            }
            stage.update(faces: steadied, frame: frame, ratio: session.ratio, profiles: profiles)
        }
        let zoom = controls.controls.control("zoom") as? SystemSlider
        if mode == .app { zoom?.disable("Center Stage (app mode) controls the zoom") }
        session.setSensorTap(.framing) { [stage, tracking, session] frame in
            let userZoom = mode == .cooperative ? (zoom?.value.value ?? 1) : 1
            if userZoom == 1 {
                let w = stage.step()
                session.adjustments.set {
                    let (centre, pan) = CenterStage.settings(w, ratio: session.ratio, sensor: format.size, marginZoom: $0.marginZoom)
                    $0.zoom = w.zoom; $0.centre = centre; $0.pan = pan
                }
            } else {
                // The user's zoom, about the centre of what Center Stage showed (the ratio's
                // crop back in the middle of the zoomed picture).
                let c = stage.current.centre
                session.adjustments.set { $0.centre = c; $0.pan = PicturePoint(x: 0.5, y: 0.5) }
            }
            tracking.offer(frame)
        }
        return CameraCenterStage(stage: stage, tracking: tracking, mode: mode, session: session)
    }

    /// Stops detection and takes the tap away (the window in force stays).
    func stop() {
        session.setSensorTap(.framing, nil)
        tracking.stop()
    }

    /// The summary's `centerStage`.
    var summary: CenterStageSummary {
        let s = tracking.stats
        return CenterStageSummary(mode: mode.rawValue, moves: stage.moves, detections: s.detections, detectionCpuMs: s.cpuMs)
    }
}

/// How Center Stage ran: the summary's `centerStage` key.
public struct CenterStageSummary: Sendable, Encodable {
    /// `cooperative` or `app`.
    public var mode: String
    /// Every change of the window's target (`frame`, `zoom`, `x`, `y`: the picture's centre in shares of the sensor).
    public var moves: [CenterStage.Move]
    /// Detections run, and the mean CPU time of one (ms).
    public var detections: Int, detectionCpuMs: Double
}
