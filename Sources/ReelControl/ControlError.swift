import Foundation
import ReelCore

/// Why an input device or the control socket cannot be used, with the exit status `reel`
/// reports (README, Exit status): no permission 77, no such device 66, busy (grabbed by
/// another program, socket path in use) 75, not an input device 69.
public struct ControlError: UserFacingError, Equatable {
    /// The one line `reel` prints after `reel: `.
    public let description: String
    /// The README's exit status for it.
    public let exitStatus: Int32
    /// An error with its message and exit status.
    public init(_ description: String, exitStatus: Int32) {
        self.description = description
        self.exitStatus = exitStatus
    }

    /// The error for `errno` from opening or reading the input device at `path`.
    static func opening(_ path: String, errno e: Int32) -> ControlError {
        switch e {
        case EACCES, EPERM:
            return ControlError("cannot open \(path): permission denied; add your user to the 'input' group (sudo usermod -aG input $USER, then log in again) or give the device to your user with a udev rule (/etc/udev/rules.d/70-reel.rules: SUBSYSTEM==\"input\", KERNEL==\"event*\", ATTRS{name}==\"NAME\", TAG+=\"uaccess\")", exitStatus: ExitStatus.permission)
        case ENOENT, ENXIO, ENODEV:
            return ControlError("no input device \(path) (reel devices lists them)", exitStatus: ExitStatus.noInput)
        case EBUSY:
            return ControlError("\(path) is grabbed by another program (EVIOCGRAB)", exitStatus: ExitStatus.busy)
        default:
            return ControlError("\(path) is not an evdev input device: \(String(cString: strerror(e)))", exitStatus: ExitStatus.unavailable)
        }
    }
}
