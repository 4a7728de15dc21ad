import Foundation
import ReelCapture
import ReelControl
import ReelCore

/// `reel devices [--json]`: the V4L2 capture devices and what they offer, and the evdev
/// input devices that have capture keys (`inputDevices`).
enum DevicesCommand {
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        .devices(json: try ScannedArguments(argv, spec: CommandTable.devices).options.contains { $0.name == "--json" })
    }

    static func run(json: Bool) -> Int32 {
        let devices = listV4L2Devices()
        let inputs = InputDevices.list()
        if json { printJSON(DevicesJSON(devices: devices, inputDevices: inputs)); return 0 }
        if devices.isEmpty { print("no V4L2 capture devices (/dev/video*)") }
        for d in devices {
            print("\(d.path): \(d.card) (driver \(d.driver), bus \(d.bus))")
            for f in d.formats {
                let modes = f.sizes.map { m in "\(m.width)x\(m.height)@" + m.fps.map { $0 == $0.rounded() && abs($0) < 1e9 ? String(Int($0)) : String($0) }.joined(separator: "/") }
                print("  \(f.fourcc) (\(f.description)): " + modes.joined(separator: " "))
            }
        }
        printInputDevices(inputs)
        return 0
    }

    struct DevicesJSON: Encodable {
        var devices: [V4L2DeviceInfo]
        var inputDevices: [InputDevice]
    }
}
