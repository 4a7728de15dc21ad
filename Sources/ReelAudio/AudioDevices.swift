import Foundation
import CALSA

/// An ALSA PCM that can capture, as `reel devices` lists it.
public struct AudioDeviceInfo: Sendable, Codable, Equatable {
    /// What `--audio` takes (`default`, `hw:CARD=PCH,DEV=0`, `reelfake`).
    public var name: String
    /// ALSA's description of it (its lines joined), empty when it has none.
    public var description: String

    /// A device called `name`, described as `description`.
    public init(name: String, description: String) { self.name = name; self.description = description }
}

/// The ALSA capture devices of this machine's configuration.
public enum AudioDevices {
    /// The PCMs ALSA's configuration names with a hint (`snd_device_name_hint`) that capture
    /// (IOID `Input`, or none: both ways); `null` (a sink) left out. Empty when ALSA has none.
    public static func list() -> [AudioDeviceInfo] {
        CALSA_quiet()
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>? = nil
        guard snd_device_name_hint(-1, "pcm", &hints) >= 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        func text(_ hint: UnsafeMutableRawPointer, _ key: String) -> String? {
            guard let p = snd_device_name_get_hint(hint, key) else { return nil }
            defer { free(p) }
            return String(cString: p)
        }
        var out: [AudioDeviceInfo] = []
        var i = 0
        while let hint = hints[i] {
            i += 1
            guard let name = text(hint, "NAME"), name != "null" else { continue }
            let io = text(hint, "IOID")
            guard io == nil || io == "Input" else { continue }
            let desc = (text(hint, "DESC") ?? "").split(separator: "\n").joined(separator: ", ")
            out.append(AudioDeviceInfo(name: name, description: desc))
        }
        return out
    }
}
