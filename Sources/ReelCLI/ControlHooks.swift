import Foundation
import ReelCapture
import ReelControl
import ReelCore
import Synchronization

/// `reel record`'s capture-event options (`--input`, `--grab`, `--keys`), as parsed.
public struct ControlRequest: Sendable, Hashable {
    /// `--input DEVICE` paths, in the order given.
    public var inputs: [String] = []
    /// `--grab`: take the devices exclusively (`EVIOCGRAB`).
    public var grab = false
    /// The key map: the default one with `--keys` applied over it.
    public var keys: KeyMap = .standard
    /// `--control-socket PATH`.
    public var socket: String? = nil
    /// No devices, no socket, the default key map.
    public init() {}

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
    /// The session's controls: zoom and exposure bias from the start, the ratio picker once the
    /// sensor is known (`attach`).
    let controls = ControlSet()
    private let sources: [EvdevSource]
    private let socket = Mutex<ControlSocket?>(nil)
    private let changes = Mutex<[ControlChangeRecord]>([])
    private let frame = Mutex<@Sendable () -> Int?>({ nil })

    private init(sources: [EvdevSource]) { self.sources = sources }

    private func record(_ control: String, _ value: Double, title: String? = nil) {
        let f = frame.withLock { $0 }()
        changes.withLock { $0.append(ControlChangeRecord(control: control, value: value, title: title, frameIndex: f)) }
    }

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
            hooks.controls.beginConfiguration()
            try hooks.controls.addControl(SystemSlider.zoom { [weak hooks] v in hooks?.record("zoom", v) })
            try hooks.controls.addControl(SystemSlider.exposureBias { [weak hooks] v in hooks?.record("exposure", v) })
            hooks.controls.commitConfiguration()
            if let path = request.socket {
                hooks.socket.withLock { $0 = nil }
                let server = try ControlSocket(path: path, dispatcher: hooks.dispatcher, controls: hooks.controls)
                hooks.socket.withLock { $0 = server }
                writeStderr("control: \(path)\n")
            }
        } catch {
            for s in started { s.stop() }
            throw error
        }
        return hooks
    }

    /// The preview page's shutter button (`down`, `up`, `leave`; `action` `primary` or
    /// `secondary`) as a capture event: the preview's POST endpoint calls this (the lead wires
    /// it when merging). False for a button or action that is not one.
    func pageButton(_ button: String, action: String = "primary") -> Bool {
        guard let a = CaptureEvent.Action(rawValue: action), let e = CaptureEvent.fromPage(button, action: a) else { return false }
        dispatcher.send(e)
        return true
    }

    /// Events and control changes now carry the index of the newest frame `currentFrame`
    /// names; the ratio picker offers `ratios` (the sensor's) and calls `setRatio` (on the
    /// controls' queue, one change at a time).
    func attach(currentFrame: @escaping @Sendable () -> Int?, ratios: [String], selected: String,
                setRatio: @escaping @Sendable (String) -> Void) {
        dispatcher.setCurrentFrame(currentFrame)
        frame.withLock { $0 = currentFrame }
        let picker = IndexPicker(identifier: "ratio", titles: ratios, selectedIndex: ratios.firstIndex(of: selected) ?? 0) { [weak self] i in
            setRatio(ratios[i])
            self?.record("ratio", Double(i), title: ratios[i])
        }
        controls.beginConfiguration()
        if controls.canAddControl(picker) { try? controls.addControl(picker) }
        controls.commitConfiguration()
    }

    /// The control socket's `{"record": …}` requests go to `handler` (no socket: nothing to do).
    func setRecordHandler(_ handler: @escaping ControlSocket.RecordHandler) {
        socket.withLock { $0 }?.setRecordHandler(handler)
    }

    /// Stops reading (a press still down is cancelled), closes the control socket and waits
    /// for the handlers and the controls' actions.
    func stop() {
        for s in sources { s.stop() }
        socket.withLock { $0 }?.stop()
        dispatcher.drain()
        controls.drain()
    }

    /// The summary's `captureEvents`, `markers` and `controlChanges`.
    var summary: ControlSummary {
        ControlSummary(captureEvents: dispatcher.events, markers: dispatcher.markers, controlChanges: changes.withLock { $0 })
    }
}

/// One change of a control while recording: the value (a picker's index, with its `title`)
/// and the newest frame when its action ran.
struct ControlChangeRecord: Encodable {
    var control: String
    var value: Double
    var title: String?
    var frameIndex: Int?
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(control, forKey: .control)
        try c.encode(value, forKey: .value)
        try c.encode(title, forKey: .title)
        try c.encode(frameIndex, forKey: .frameIndex)
    }
    enum CodingKeys: String, CodingKey { case control, value, title, frameIndex }
}

/// The keys `reel record --json` adds to the summary: every capture event, every marker and
/// every control change.
struct ControlSummary: Encodable {
    var captureEvents: [CaptureEventRecord]
    var markers: [MarkerRecord]
    var controlChanges: [ControlChangeRecord]
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
    for c in s.controlChanges {
        print("  \(c.control) \(c.title ?? number(c.value)) at frame \(c.frameIndex.map(String.init) ?? "-")")
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

/// The ratio picker's action: asks `session` for the ratio and waits (at most 2 s) until the
/// first frame at it, so picks apply one at a time in the order made.
func setRatioAndWait(_ session: CaptureSession, _ text: String) {
    guard let ratio = AspectRatio(parsing: text) else { return }
    let done = DispatchSemaphore(value: 0)
    Task {
        do { _ = try await session.setDynamicAspectRatio(ratio) } catch {
            printError((error as? any UserFacingError)?.description ?? "\(error)")
        }
        done.signal()
    }
    if done.wait(timeout: .now() + 2) == .timedOut { /* the recording ended first: nothing to wait for */ }
}
