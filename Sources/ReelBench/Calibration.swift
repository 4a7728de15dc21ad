import Foundation
import ReelCore
import ReelStorage

extension WriteModeCalibration.Load {
    /// `reel _load bulk` in its own process (`executable` is the `reel` binary): the
    /// competing writer `reel pool create` and `reel pool calibrate` measure beside.
    /// - Throws (when started): `JitterError.io` when the process cannot be started.
    public static func bulkProcess(executable: String) -> Self {
        Self(description: "a competing bulk buffered writer (reel _load bulk)") { directory, seconds in
            let load = try ContentionProcess(.bulk, executable: executable, directory: directory, seconds: seconds)
            return { load.stop() }
        }
    }
}
