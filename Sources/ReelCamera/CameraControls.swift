import Foundation
import ReelCapture
import ReelControl
import ReelCore
import ReelPreview
import ReelWriter
import Synchronization

/// The camera's capture events and controls: the input devices it reads, the dispatcher that
/// logs and handles their events, the control socket, and the controls (zoom, exposure bias,
/// effect, ratio). `Camera` opens it before the recording exists, attaches it once it does,
/// and stops it when the recording ends.
public final class CameraControls: Sendable {
    /// Logs every capture event and hands it to its handler.
    public let dispatcher = CaptureEventDispatcher()
    /// The session's controls: zoom and exposure bias from the start, the ratio picker once the
    /// sensor is known (`attach`).
    public let controls = ControlSet()
    private let sources: [EvdevSource]
    private let socket = Mutex<ControlSocket?>(nil)
    private let changes = Mutex<[ControlChangeRecord]>([])
    private let frame = Mutex<@Sendable () -> Int?>({ nil })
    /// Where refused control actions are said.
    private let notice: @Sendable (String) -> Void

    /// What the effect picker offers, by index: `none`, `grayscale`, the built-in LUTs, then the `--lut` files.
    public let effects: [PictureEffect]

    private init(sources: [EvdevSource], effects: [PictureEffect], notice: @escaping @Sendable (String) -> Void) {
        self.sources = sources
        self.effects = effects
        self.notice = notice
    }

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
            notice("\(control): \((error as? any UserFacingError)?.description ?? "\(error)")")
            record(control, value, title: title)
        }
    }

    /// Opens every `--input` device and starts reading it (before anything is recorded: a
    /// device that cannot be opened ends the command with its exit status, 77 for permission).
    /// - Parameters:
    ///   - notice: told what went wrong with a device or a control action (the camera goes on).
    ///   - opened: told the socket's path once it listens.
    static func open(_ request: ControlRequest, notice: @escaping @Sendable (String) -> Void,
                     opened: @Sendable (String) -> Void) throws -> CameraControls {
        let effects = try Self.effects(luts: request.luts)
        let sources = request.inputs.map { EvdevSource(path: $0, keys: request.keys, grab: request.grab) }
        let hooks = CameraControls(sources: sources, effects: effects, notice: notice)
        var started: [EvdevSource] = []
        do {
            for s in sources {
                try s.start({ [dispatcher = hooks.dispatcher] in dispatcher.send($0) },
                            notice: notice)
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
                opened(path)
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
    public func pageButton(_ button: String, action: String = "primary") -> Bool {
        guard let a = CaptureEvent.Action(rawValue: action), let e = CaptureEvent.fromPage(button, action: a) else { return false }
        dispatcher.send(e)
        return true
    }

    /// Events and control changes now carry the index of the newest frame `currentFrame`
    /// names; the ratio picker offers `ratios` (the sensor's) and calls `setRatio` (on the
    /// controls' queue, one change at a time), which returns the frame the ratio applied from
    /// (nil: none came, and the change is recorded at the newest frame).
    func attach(currentFrame: @escaping @Sendable () -> Int?, ratios: [String], selected: String,
                setRatio: @escaping @Sendable (String) -> Int?) {
        dispatcher.setCurrentFrame(currentFrame)
        frame.withLock { $0 = currentFrame }
        let picker = IndexPicker(identifier: "ratio", titles: ratios, selectedIndex: ratios.firstIndex(of: selected) ?? 0) { [weak self] i in
            let applied = setRatio(ratios[i])
            self?.record("ratio", Double(i), title: ratios[i], at: applied)
        }
        controls.beginConfiguration()
        if controls.canAddControl(picker) { try? controls.addControl(picker) }
        controls.commitConfiguration()
    }

    /// The `mode` picker (`video`, `photo`: `CaptureMode`'s), as the Camera app's mode dial:
    /// what a primary press (a key, the page's or the socket's press) does from the next press
    /// on — `video` hands presses to `video` (start and stop recording), `photo` to `photo`
    /// (a photo of the pressed frame, a burst when held). Starts at `photoMode`. Only a camera
    /// with a photo output has it.
    func attachMode(photoMode: Bool, video: @escaping CaptureEventDispatcher.Handler, photo: @escaping CaptureEventDispatcher.Handler) {
        let titles = CaptureMode.allCases.map(\.rawValue)
        let picker = IndexPicker(identifier: "mode", titles: titles,
                                 selectedIndex: titles.firstIndex(of: (photoMode ? CaptureMode.photo : .video).rawValue) ?? 0) { [weak self] i in
            self?.dispatcher.setHandler(titles[i] == CaptureMode.photo.rawValue ? photo : video)
            self?.record("mode", Double(i), title: titles[i])
        }
        controls.beginConfiguration()
        if controls.canAddControl(picker) { try? controls.addControl(picker) }
        controls.commitConfiguration()
    }

    /// The `framing` picker (`off`, `zoom`, `rotate`, `zoom,rotate`: `SmartFramingRequest`'s
    /// picker titles), the page's Auto Zoom and Auto Rotate toggles: `change` runs on the
    /// controls' queue with each new title. Starts at `selected`. Only a camera with smart
    /// framing has it.
    func attachFraming(selected: String, change: @escaping @Sendable (String) -> Void) {
        let titles = SmartFramingRequest.pickerTitles
        let picker = IndexPicker(identifier: "framing", titles: titles, selectedIndex: titles.firstIndex(of: selected) ?? 0) { [weak self] i in
            change(titles[i])
            self?.record("framing", Double(i), title: titles[i])
        }
        controls.beginConfiguration()
        if controls.canAddControl(picker) { try? controls.addControl(picker) }
        controls.commitConfiguration()
    }

    /// Publishes an event line to the control socket's watching clients (no socket: nothing).
    func publish(_ object: [String: Any]) {
        socket.withLock { $0 }?.publish(object)
    }

    /// The frame the newest control change applied from.
    var lastChangeFrame: Int? { changes.withLock { $0.last?.frameIndex } }

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
        controls.queue.async { [notice] in
            do {
                if zoom != 1 { try target.apply("zoom", zoom, timeout: 0) }
                if bias != 0 { try target.apply("exposure", bias, timeout: 0) }
                if effect != 0 { try target.apply("effect", Double(effect), timeout: 0) }
            } catch {
                notice("picture controls: \((error as? any UserFacingError)?.description ?? "\(error)")")
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
        status.controls = states
    }

    /// Calls `changed` after each change of a control is applied (on the controls' queue),
    /// whoever made it (page, socket, keys): the preview pushes its status then.
    func observeChanges(_ changed: @escaping @Sendable () -> Void) {
        for c in controls.controls {
            if let slider = c as? SystemSlider { slider.value.observe { _ in changed() } }
            if let picker = c as? IndexPicker { picker.selectedIndex.observe { _ in changed() } }
        }
    }

    /// The page's `POST /control?name=N&value=V`: sets the control as the socket does and
    /// answers what it became (the `ControlSetResult` as JSON). Throws
    /// `PreviewControlError.refused` with the control's reason when it refuses.
    func pageSet(_ name: String, _ value: String) throws -> Data {
        let result = controls.set(name, value)
        guard result.ok else { throw PreviewControlError.refused(result.error ?? "\(name): refused") }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(result)
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
    public var summary: ControlSummary {
        ControlSummary(captureEvents: dispatcher.events, markers: dispatcher.markers, controlChanges: changes.withLock { $0 })
    }
}

/// One change of a control while recording: the value (a picker's index, with its `title`)
/// and the newest frame when its action ran.
public struct ControlChangeRecord: Encodable, Sendable {
    /// `zoom`, `exposure`, `effect` or `ratio`.
    public var control: String
    /// The value (a picker's index).
    public var value: Double
    /// A picker's choice, by name.
    public var title: String?
    /// The first frame showing it, or the newest frame when its action ran.
    public var frameIndex: Int?
    /// Every key, `title` and `frameIndex` null when absent.
    /// - Throws: the encoder's errors.
    public func encode(to encoder: any Encoder) throws {
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
public struct ControlSummary: Encodable, Sendable {
    /// Every capture event, in the order handled.
    public var captureEvents: [CaptureEventRecord]
    /// Every marker laid.
    public var markers: [MarkerRecord]
    /// Every control change.
    public var controlChanges: [ControlChangeRecord]
}

/// The ratio picker's action: asks `session` for the ratio and waits (at most 2 s) until the
/// first frame at it, so picks apply one at a time in the order made. Returns that frame's
/// index — the seam's, read on the capture thread as the frame arrives, not the newest frame
/// once the wait ends (capture may be frames further on by then) — or nil when no frame came.
/// A refusal is told to `notice`.
func setRatioAndWait(_ session: CaptureSession, _ text: String, notice: @Sendable (String) -> Void) -> Int? {
    guard let ratio = AspectRatio(parsing: text) else { return nil }
    let done = DispatchSemaphore(value: 0)
    let seamFrame = Mutex<Int?>(nil)
    do {
        try session.setDynamicAspectRatio(ratio) { pts in
            // Called before the next frame is counted: the seam at `pts` is this frame's, and
            // without a seam (the ratio in force asked again) the frame is the newest counted.
            let stats = session.stats
            let seam = stats.seams.last { $0.pts == pts.seconds }?.frameIndex
            seamFrame.withLock { $0 = seam ?? (stats.framesCaptured > 0 ? stats.framesCaptured - 1 : nil) }
            done.signal()
        }
    } catch {
        notice((error as? any UserFacingError)?.description ?? "\(error)")
        return nil
    }
    if done.wait(timeout: .now() + 2) == .timedOut { return nil /* the recording ended first: nothing to wait for */ }
    return seamFrame.withLock { $0 }
}
