import Foundation
import ReelCapture
import ReelControl
import ReelCore
import ReelFraming
import ReelWriter
import Synchronization

/// What `--smart-framing` asks for: which recommendations are applied, and how detection runs.
public struct SmartFramingRequest: Sendable, Hashable {
    /// What the monitor may change.
    public enum Part: String, Sendable, Hashable, CaseIterable {
        /// Auto Zoom: the zoom steps of the ratio in force are enabled and applied.
        case zoom
        /// Auto Rotate: both orientations (4x3, 3x4) are enabled and applied.
        case rotate
        /// Every supported framing is enabled; recommendations are recorded, none applied.
        case recommend
    }
    /// The parts asked for (`zoom,rotate`).
    public var parts: Set<Part>
    /// Detect every this many frames (nil: half the frame rate's frames, 2 Hz).
    public var every: Int? = nil
    /// Detect on the capture thread, every `every`th frame without fail (tests, `--no-realtime`).
    public var stepped = false
    /// The frontal cascade.
    public var cascade = FaceDetector.defaultCascade

    /// A request for `parts`.
    public init(parts: Set<Part>) { self.parts = parts }

    /// Whether recommendations are applied.
    public var applies: Bool { !parts.contains(.recommend) }

    /// The `framing` picker's titles, as the page's Auto Zoom and Auto Rotate toggles set it:
    /// `off` (recommend only), `zoom`, `rotate`, `zoom,rotate`.
    public static let pickerTitles = ["off", "zoom", "rotate", "zoom,rotate"]

    /// The picker's title for these parts.
    var pickerTitle: String {
        parts.contains(.recommend) ? "off" : parts == [.zoom] ? "zoom" : parts == [.rotate] ? "rotate" : "zoom,rotate"
    }

    /// The parts a picker title stands for (`off`: recommend).
    static func parts(pickerTitle: String) -> Set<Part> {
        switch pickerTitle {
        case "zoom": [.zoom]
        case "rotate": [.rotate]
        case "zoom,rotate": [.zoom, .rotate]
        default: [.recommend]
        }
    }

    /// The framings to enable among `supported`, the session starting at `ratio`.
    func enabled(from supported: [Framing], startingAt ratio: AspectRatio) -> [Framing] {
        if parts.contains(.recommend) || (parts.contains(.zoom) && parts.contains(.rotate)) { return supported }
        if parts.contains(.zoom) { return supported.filter { $0.ratio == ratio } }
        return supported.filter { $0.zoom == 1 }
    }
}

/// The camera's smart framing: faces found on the sensor frames (`FaceTracking`), the
/// monitor's recommendations, and — with `zoom` or `rotate` — each applied through the
/// controls, the ratio first (the session's live ratio change: a recording gets its seam),
/// then the zoom, in the order recommended. Every recommendation is a `CameraEvent` and a
/// line on the control socket's `watch` stream.
final class CameraSmartFraming: Sendable {
    let monitor: SmartFramingMonitor
    let tracking: FaceTracking
    private let session: CaptureSession
    private let cascade: String

    private init(monitor: SmartFramingMonitor, tracking: FaceTracking, session: CaptureSession, cascade: String) {
        self.monitor = monitor; self.tracking = tracking; self.session = session; self.cascade = cascade
    }

    /// Checks the request against the recording before anything runs: the 4032 photo format
    /// (64) and the detector's cascades (69).
    static func attach(_ request: SmartFramingRequest, to recording: Recording, controls: CameraControls,
                       emit: @escaping @Sendable (CameraEvent) -> Void) throws -> CameraSmartFraming {
        let session = recording.session
        let format = session.source.format
        let monitor = SmartFramingMonitor(sensor: format.size, photoFormat: (format.size, format.supportedRatios))
        try monitor.startMonitoring()
        try monitor.setEnabledFramings(request.enabled(from: monitor.supportedFramings, startingAt: session.ratio))
        let detector = try FaceDetector(cascade: request.cascade)
        let every = request.every ?? max(1, Int((format.rate.perSecond / 2).rounded()))
        let tracking = FaceTracking(detector: detector, sensorSide: format.size.width, every: every, stepped: request.stepped) {
            [monitor, session] faces, frame, time, _ in
            let current = Framing(ratio: session.ratio, zoom: session.adjustments.settings.zoom)
            monitor.update(faces: faces, frame: frame, time: time, current: current)
        }
        let framing = CameraSmartFraming(monitor: monitor, tracking: tracking, session: session, cascade: request.cascade.rawValue)
        // The page's Auto Zoom and Auto Rotate toggles: the `framing` picker changes what is
        // enabled and whether it is applied, from the next recommendation on.
        let applying = AppliesFlag(request.applies)
        controls.attachFraming(selected: request.pickerTitle) { [monitor, session] title in
            let parts = SmartFramingRequest.parts(pickerTitle: title)
            var live = request
            live.parts = parts
            try? monitor.setEnabledFramings(live.enabled(from: monitor.supportedFramings, startingAt: session.ratio))
            applying.value.store(live.applies, ordering: .releasing)
        }
        monitor.observe { [controls] r in
            let applies = applying.value.load(ordering: .acquiring)
            emit(.framing(r))
            controls.publish(["framing": ["time": r.time, "frame": r.frame, "ratio": r.ratio, "zoom": r.zoom, "faces": r.faces, "applied": applies]])
            guard applies else { return }
            framing.apply(r, controls: controls)
        }
        session.setSensorTap(.framing) { [tracking] frame in tracking.offer(frame) }
        return framing
    }

    /// Applies `r` through the controls (their queue, in order): the ratio picker, then the
    /// zoom slider; then marks it applied from the first frame showing the zoom.
    private func apply(_ r: FramingRecommendation, controls: CameraControls) {
        let set = controls.controls
        if r.ratio != session.ratio.rawValue { _ = set.set("ratio", r.ratio) }
        if r.zoom != session.adjustments.settings.zoom { _ = set.set("zoom", String(r.zoom)) }
        set.queue.async { [monitor, session] in
            let newest = session.stats.framesCaptured - 1
            monitor.markApplied(frame: r.frame, appliedFrame: controls.lastChangeFrame ?? (newest >= 0 ? newest : nil))
        }
    }

    /// Stops detection (the frame in progress is finished) and takes the tap away.
    func stop() {
        session.setSensorTap(.framing, nil)
        tracking.stop()
    }

    /// The summary's `smartFraming`.
    var summary: SmartFramingSummary {
        let s = tracking.stats
        return SmartFramingSummary(enabledFramings: monitor.enabledFramings.map(\.description), cascade: cascade,
                                   detections: s.detections, skipped: s.skipped, detectionCpuMs: s.cpuMs, detectionWallMs: s.wallMs,
                                   every: tracking.every, stepped: tracking.stepped)
    }
}

/// How smart framing ran: the summary's `smartFraming` key (the recommendations are
/// `framingRecommendations`).
public struct SmartFramingSummary: Sendable, Encodable {
    /// The framings enabled (`3x4@1.5`).
    public var enabledFramings: [String]
    /// The frontal cascade.
    public var cascade: String
    /// Detections run, and frames skipped because the detector was busy.
    public var detections: Int, skipped: Int
    /// Mean CPU and wall time of one detection, ms.
    public var detectionCpuMs: Double, detectionWallMs: Double
    /// Detection ran every this many frames.
    public var every: Int
    /// Whether it ran on the capture thread (frame-stepped: `--no-realtime`).
    public var stepped: Bool
}

/// Whether recommendations are applied now (the `framing` picker changes it on the controls'
/// queue; the monitor's observer reads it).
private final class AppliesFlag: Sendable {
    let value: Atomic<Bool>
    init(_ applies: Bool) { value = Atomic(applies) }
}
