import CEvdev
import Foundation
import ReelCore

/// An evdev input device as the kernel lists it in `/proc/bus/input/devices` (readable by
/// everyone, so listing needs no access to the device nodes).
public struct InputDevice: Sendable, Hashable, Codable {
    /// `/dev/input/eventN`.
    public var path: String
    /// The device's name (EVIOCGNAME), e.g. `AirPods Pro (AVRCP)`.
    public var name: String
    /// The capture keys it has (names from linux/input-event-codes.h), in code order.
    public var keys: [String]
    /// What each of those keys does with the key map in use.
    public var actions: [String: String]
    /// Whether this user may open it (access(2) R_OK); when not, `reel record --input` exits
    /// 77 and says to join the `input` group or add a udev rule.
    public var readable: Bool
}

/// Lists evdev input devices that have capture keys.
public enum InputDevices {
    /// The devices with at least one key `map` names, from `/proc/bus/input/devices`
    /// (`text` for tests). A machine without input devices gives `[]`.
    public static func list(map: KeyMap = .standard, text: String? = nil) -> [InputDevice] {
        guard let text = text ?? readProcDevices() else { return [] }
        var result: [InputDevice] = []
        for block in text.components(separatedBy: "\n\n") {
            var name = "", handlers: [String] = [], words: [UInt64] = []
            for line in block.split(separator: "\n") {
                if line.hasPrefix("N: Name=") {
                    name = String(line.dropFirst(8)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                } else if line.hasPrefix("H: Handlers=") {
                    handlers = line.dropFirst(12).split(separator: " ").map(String.init)
                } else if line.hasPrefix("B: KEY=") {
                    // Most significant word first, each a `long` in hex.
                    words = line.dropFirst(7).split(separator: " ").compactMap { UInt64($0, radix: 16) }.reversed()
                }
            }
            guard let event = handlers.first(where: { $0.hasPrefix("event") }) else { continue }
            let codes = map.actions.keys.sorted().filter { code in
                let word = Int(code) / 64
                return word < words.count && words[word] & (1 << UInt64(code % 64)) != 0
            }
            guard !codes.isEmpty else { continue }
            let path = "/dev/input/" + event
            result.append(InputDevice(path: path, name: name, keys: codes.map(KeyMap.name(of:)),
                                      actions: Dictionary(uniqueKeysWithValues: codes.map { (KeyMap.name(of: $0), map.actions[$0]!.rawValue) }),
                                      readable: access(path, R_OK) == 0))
        }
        return result.sorted { $0.path.localizedStandardCompare($1.path) == .orderedAscending }
    }

    /// `/proc/bus/input/devices` read with open(2)/read(2) (a missing file: nil).
    static func readProcDevices() -> String? {
        guard let fd = try? FileDescriptor.open("/proc/bus/input/devices", O_RDONLY | O_CLOEXEC) else { return nil }
        defer { fd.closeQuietly() }
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd.rawValue, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            data += chunk[0..<n]
        }
        return String(decoding: data, as: UTF8.self)
    }
}
