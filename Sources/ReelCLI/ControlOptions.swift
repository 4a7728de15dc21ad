import ReelCamera
import ReelControl
import ReelCore

/// `reel record`'s capture-event options (`--input`, `--grab`, `--keys`, `--control-socket`,
/// `--lut`, `--shutter-sound`), parsed into the camera's `ControlRequest`.
extension ControlRequest {
    /// Takes one of the options above; false when `name` is not one of them.
    mutating func take(_ name: String, _ value: String) throws -> Bool {
        switch name {
        case "--input":
            guard !value.isEmpty else { throw UsageError("--input needs a device path (reel devices lists them)") }
            inputs.append(value)
        case "--grab": grab = true
        case "--keys": keys = try KeyMap(parsing: value, over: keys)
        case "--control-socket":
            guard !value.isEmpty else { throw UsageError("--control-socket needs a path") }
            socket = value
        case "--lut":
            guard !value.isEmpty else { throw UsageError("--lut needs a .cube file") }
            luts.append(value)
        case "--shutter-sound": shutterSound = try ShutterSoundRequest(parsing: value)
        default: return false
        }
        return true
    }
}
