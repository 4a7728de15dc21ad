import Foundation
import ReelAudio
import ReelCapture
import ReelControl
import ReelCore

/// `reel devices [--json]`: the V4L2 capture devices and what they offer, the evdev input
/// devices that have capture keys (`inputDevices`) and the ALSA capture devices
/// (`audioDevices`: what `--audio` takes).
enum DevicesCommand {
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        .devices(json: try ScannedArguments(argv, spec: CommandTable.devices).options.contains { $0.name == "--json" })
    }

    static func run(json: Bool) -> Int32 {
        let devices = listV4L2Devices()
        let inputs = InputDevices.list()
        let audio = AudioDevices.list()
        if json { printJSON(DevicesJSON(devices: devices, inputDevices: inputs, audioDevices: audio)); return 0 }
        if devices.isEmpty { print("no V4L2 capture devices (/dev/video*)") }
        for d in devices {
            print("\(d.path): \(d.card) (driver \(d.driver), bus \(d.bus))")
            for f in d.formats {
                let modes = f.sizes.map { m in "\(m.width)x\(m.height)@" + m.fps.map { $0 == $0.rounded() && abs($0) < 1e9 ? String(Int($0)) : String($0) }.joined(separator: "/") }
                print("  \(f.fourcc) (\(f.description)): " + modes.joined(separator: " "))
            }
        }
        printInputDevices(inputs)
        if audio.isEmpty { print("no ALSA capture devices") }
        for a in audio { print("audio \(a.name)" + (a.description.isEmpty ? "" : ": \(a.description)")) }
        return 0
    }

    struct DevicesJSON: Encodable {
        var devices: [V4L2DeviceInfo]
        var inputDevices: [InputDevice]
        var audioDevices: [AudioDeviceInfo]
    }
}

/// `reel devices`' input part: the evdev devices that have capture keys.
func printInputDevices(_ devices: [InputDevice]) {
    if devices.isEmpty { print("no input devices with capture keys (/proc/bus/input/devices)") }
    for d in devices {
        let keys = d.keys.map { "\($0)=\(d.actions[$0] ?? "")" }.joined(separator: " ")
        print("\(d.path): \(d.name)  \(keys)" + (d.readable ? "" : "  (no access: join the 'input' group or add a udev rule)"))
    }
}
