import Foundation
import ReelCapture
import ReelControl
import ReelCore
import ReelPreview
import ReelWriter
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
    /// `--secondary lock|marker|none` (nil: lock where the camera can, else marker).
    public var secondary: SecondaryAction? = nil
    /// `--lut FILE.cube` paths, in the order given: the effect picker offers them after the built-in effects.
    public var luts: [String] = []
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
        case "--lut":
            guard !value.isEmpty else { throw UsageError("--lut needs a .cube file") }
            luts.append(value)
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

    /// What the effect picker offers, by index: `none`, `grayscale`, the built-in LUTs, then the `--lut` files.
    let effects: [PictureEffect]

    private init(sources: [EvdevSource], effects: [PictureEffect]) { self.sources = sources; self.effects = effects }

    /// The effect picker's choices: the built-in effects, then each `--lut` file (read here:
    /// missing 66, malformed 65), titled by its name without `.cube` (`-2`, `-3`… added to a
    /// title already taken).
    static func effects(luts: [String]) throws -> [PictureEffect] {
        var effects = PictureEffect.builtIn
        for path in luts {
            let base = try ColorLUT.load(cubeFile: path)
            var title = base.title.isEmpty ? "lut" : base.title
            var n = 1
            while effects.contains(where: { $0.title == title }) { n += 1; title = "\(base.title)-\(n)" }
            effects.append(.lut(title == base.title ? base : try ColorLUT.load(cubeFile: path, title: title)))
        }
        return effects
    }

    /// Where zoom, exposure and the effect go once the session exists (`attachPicture`).
    private let picture = Mutex<PictureTarget?>(nil)

    /// `at`: the frame the change applied from; nil: the newest frame now.
    private func record(_ control: String, _ value: Double, title: String? = nil, at applied: Int? = nil) {
        let f = applied ?? frame.withLock { $0 }()
        changes.withLock { $0.append(ControlChangeRecord(control: control, value: value, title: title, frameIndex: f)) }
    }

    /// A picture control's action (on the controls' queue): the session applies it from its
    /// next frame and the change is recorded at that frame; before the session exists it is
    /// only recorded (`attachPicture` applies it then).
    private func applyPicture(_ control: String, _ value: Double, title: String? = nil) {
        guard let target = picture.withLock({ $0 }) else { return record(control, value, title: title) }
        do {
            record(control, value, title: title, at: try target.apply(control, value))
        } catch {
            printError("\(control): \((error as? any UserFacingError)?.description ?? "\(error)")")
            record(control, value, title: title)
        }
    }

    /// Opens every `--input` device and starts reading it (before anything is recorded: a
    /// device that cannot be opened ends the command with its exit status, 77 for permission).
    static func open(_ request: ControlRequest) throws -> ControlHooks {
        let effects = try Self.effects(luts: request.luts)
        let sources = request.inputs.map { EvdevSource(path: $0, keys: request.keys, grab: request.grab) }
        let hooks = ControlHooks(sources: sources, effects: effects)
        var started: [EvdevSource] = []
        do {
            for s in sources {
                try s.start({ [dispatcher = hooks.dispatcher] in dispatcher.send($0) },
                            notice: { if isatty(STDERR_FILENO) == 1 { writeStderr("\r\u{1B}[K") }; printError($0) })
                started.append(s)
            }
            hooks.controls.beginConfiguration()
            try hooks.controls.addControl(SystemSlider.zoom { [weak hooks] v in hooks?.applyPicture("zoom", v) })
            try hooks.controls.addControl(SystemSlider.exposureBias { [weak hooks] v in hooks?.applyPicture("exposure", v) })
            try hooks.controls.addControl(IndexPicker(identifier: "effect", titles: effects.map(\.title)) { [weak hooks] i in
                hooks?.applyPicture("effect", Double(i), title: effects[i].title)
            })
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

    /// Zoom, exposure and the effect act on `session` from now on: zoom and the effect through
    /// its `ImageAdjustments` (with `buffers` buffers: as many as the source's pool), exposure
    /// on a V4L2 camera through its brightness or exposure control (the slider is disabled
    /// with the reason when it has neither), on the synthetic sensor as brightness. Values set
    /// before are applied now.
    func attachPicture(session: CaptureSession, buffers: Int) {
        session.adjustments.bufferCount = buffers
        var camera: (@Sendable (Double) throws -> Void)? = nil
        if let v4l2 = session.source as? V4L2Source {
            switch v4l2.exposureControl() {
            case .success(let c):
                camera = { stops in
                    try v4l2.setExposureBias(stops, on: c)
                }
            case .failure(let why): (controls.control("exposure") as? SystemSlider)?.disable(why.description)
            }
        }
        let target = PictureTarget(session: session, cameraExposure: camera, effects: effects)
        picture.withLock { $0 = target }
        let zoom = (controls.control("zoom") as? SystemSlider)?.value.value ?? 1
        let bias = (controls.control("exposure") as? SystemSlider)?.value.value ?? 0
        let effect = (controls.control("effect") as? IndexPicker)?.selectedIndex.value ?? 0
        controls.queue.async {
            do {
                if zoom != 1 { try target.apply("zoom", zoom, timeout: 0) }
                if bias != 0 { try target.apply("exposure", bias, timeout: 0) }
                if effect != 0 { try target.apply("effect", Double(effect), timeout: 0) }
            } catch {
                printError("picture controls: \((error as? any UserFacingError)?.description ?? "\(error)")")
            }
        }
    }

    /// The preview's `/status` shows the picture controls as last applied (the values the
    /// socket's `status` gives: no stale zoom).
    func fillPicture(_ status: inout PreviewStatus) {
        let states = controls.controls.map(\.state)
        status.zoom = states.first { $0.identifier == "zoom" }?.value
        status.exposure = states.first { $0.identifier == "exposure" }?.value
        status.effect = states.first { $0.identifier == "effect" }?.title
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
    do { try session.setDynamicAspectRatio(ratio) { _ in done.signal() } } catch {
        printError((error as? any UserFacingError)?.description ?? "\(error)")
        return
    }
    if done.wait(timeout: .now() + 2) == .timedOut { /* the recording ended first: nothing to wait for */ }
}
