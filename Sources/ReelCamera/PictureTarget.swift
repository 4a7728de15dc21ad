import ReelCapture
import ReelCore

/// Where the picture controls act: the session's `ImageAdjustments`, or the camera's own
/// exposure control.
struct PictureTarget: Sendable {
    let session: CaptureSession
    /// Sets the camera's exposure for a bias in stops (V4L2); nil: exposure is brightness.
    let cameraExposure: (@Sendable (Double) throws -> Void)?
    /// The effect picker's choices, by index.
    let effects: [PictureEffect]

    /// Applies `control` = `value` and returns the first frame showing it (nil: no frame came
    /// within `timeout` seconds); for the camera's exposure, the newest frame before it was set.
    /// - Throws: `MediaError` when the adjustment buffers cannot be allocated; `V4L2Error`
    ///   when the camera refuses the control.
    @discardableResult
    func apply(_ control: String, _ value: Double, timeout: Double = 2) throws -> Int? {
        let format = session.source.format
        let adjustments = session.adjustments
        switch control {
        case "zoom": return try adjustments.change(format: format, timeout: timeout) { $0.zoom = value }
        case "exposure":
            if let cameraExposure {
                // The camera applies it to frames it draws from now on: the newest frame
                // before the change is stated (the frames after it show it once the camera has).
                let newest = session.stats.framesCaptured - 1
                try cameraExposure(value)
                return newest >= 0 ? newest : nil
            }
            return try adjustments.change(format: format, timeout: timeout) { $0.exposureBias = value }
        case "effect":
            let i = min(max(Int(value), 0), effects.count - 1)
            return try adjustments.change(format: format, timeout: timeout) { $0.effect = effects[i] }
        default: return nil
        }
    }
}
