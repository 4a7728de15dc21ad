import Foundation
import ReelControl
import ReelCore

/// `reel record`'s capture-event options (`--input`, `--grab`, `--keys`), as parsed.
public struct ControlRequest: Sendable, Hashable {
    public var inputs: [String] = []
    public var grab = false
    public var keys: KeyMap = .standard
    public init() {}

    /// Takes one of the options above; false when `name` is not one of them.
    mutating func take(_ name: String, _ value: String) throws -> Bool {
        switch name {
        case "--input":
            guard !value.isEmpty else { throw UsageError("--input needs a device path (reel devices lists them)") }
            inputs.append(value)
        case "--grab": grab = true
        case "--keys": keys = try KeyMap(parsing: value, over: keys)
        default: return false
        }
        return true
    }
}

/// The capture events of one `reel record`: the sources it reads and the dispatcher that logs
/// and handles their events. The lead moves this into the session graph when merging; for now
/// `RecordCommand` calls `open` before the recording exists, `attach` once it does, and `stop`
/// when it ends.
final class ControlHooks: Sendable {
    let dispatcher = CaptureEventDispatcher()
    private let sources: [EvdevSource]

    private init(sources: [EvdevSource]) { self.sources = sources }

    /// Opens every `--input` device and starts reading it (before anything is recorded: a
    /// device that cannot be opened ends the command with its exit status, 77 for permission).
    static func open(_ request: ControlRequest) throws -> ControlHooks {
        let sources = request.inputs.map { EvdevSource(path: $0, keys: request.keys, grab: request.grab) }
        let hooks = ControlHooks(sources: sources)
        var started: [EvdevSource] = []
        do {
            for s in sources {
                try s.start({ [dispatcher = hooks.dispatcher] in dispatcher.send($0) },
                            notice: { if isatty(STDERR_FILENO) == 1 { writeStderr("\r\u{1B}[K") }; printError($0) })
                started.append(s)
            }
        } catch {
            for s in started { s.stop() }
            throw error
        }
        return hooks
    }

    /// Events now carry the index of the newest frame `currentFrame` names.
    func attach(currentFrame: @escaping @Sendable () -> Int?) {
        dispatcher.setCurrentFrame(currentFrame)
    }

    /// Stops reading (a press still down is cancelled) and waits for the handlers.
    func stop() {
        for s in sources { s.stop() }
        dispatcher.drain()
    }

    /// The summary's `captureEvents` and `markers`.
    var summary: ControlSummary { ControlSummary(captureEvents: dispatcher.events, markers: dispatcher.markers) }
}

/// The keys `reel record --json` adds to the summary: every capture event and every marker.
struct ControlSummary: Encodable {
    var captureEvents: [CaptureEventRecord]
    var markers: [MarkerRecord]
}

/// `base`'s keys and `extra`'s in one JSON object.
struct MergedJSON<Base: Encodable, Extra: Encodable>: Encodable {
    let base: Base
    let extra: Extra
    init(_ base: Base, _ extra: Extra) { self.base = base; self.extra = extra }
    func encode(to encoder: any Encoder) throws {
        try base.encode(to: encoder)
        try extra.encode(to: encoder)
    }
}

/// The text summary's lines for capture events and markers (none without events).
func printEvents(_ s: ControlSummary) {
    for e in s.captureEvents {
        print("  event \(e.action.rawValue) \(e.phase.rawValue) at frame \(e.frameIndex.map(String.init) ?? "-") from \(e.source)")
    }
    for m in s.markers {
        print("  marker at frame \(m.frameIndex.map(String.init) ?? "-")")
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
