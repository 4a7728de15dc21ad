import ReelFraming
import ReelCapture
import ReelControl
import ReelCore
import ReelPhoto
import ReelPreview
import ReelWriter

/// Everything a `Camera` is made from, set once before it is made: the recording (source,
/// codec, container, storage, length), and the outputs, controls and policies around it.
/// `reel record` parses its options into one of these.
public struct CameraConfiguration: Sendable {
    /// The source, the movie output and its storage.
    public var recording: RecordOptions
    /// The live preview page (nil: none).
    public var preview: PreviewRequest?
    /// Input devices, the control socket, key map, secondary action and effects.
    public var controls: ControlRequest
    /// The photo output (nil: none).
    public var photos: CameraPhotoRequest?
    /// The system-pressure policy: on, the frame rate steps down under pressure and the
    /// preview thins (the camera sets `RecordOptions.liveFrameRates` from it); off, level
    /// changes are only logged.
    public var pressureHandler: Bool
    /// Where the pressure monitor reads PSI files (`cpu`, `io`, `memory` in
    /// `/proc/pressure`'s format) instead of this process's cgroup or `/proc/pressure` (tests).
    public var pressureDirectory: String?
    /// Where thermal zones and cpufreq are read instead of `/sys` (tests).
    public var sysfsRoot = "/sys"
    /// What a real-time recording whose cost does not fit this machine gets: adjusted down the
    /// ladder (the default), refused with an alternative that fits (`.strict`, exit 69), or
    /// recorded as asked with a warning (`.asAsked`).
    public var validation = ValidationPolicy.adjust
    /// Smart framing (`--smart-framing`): faces found, framings recommended and applied; nil: off.
    public var smartFraming: SmartFramingRequest? = nil
    /// Center Stage (`--center-stage`): the crop window follows the people; nil: off. Not
    /// with `smartFraming`.
    public var centerStage: CenterStage.Mode? = nil
    /// Video stabilisation (`--stabilization`): `.off` by default. `.cinematic` not with
    /// `centerStage` or `smartFraming` (their changes would lead the frames it holds back).
    public var stabilization = StabilizationMode.off

    /// A camera recording with `recording`'s options, the pressure handler on, and nothing else.
    public init(recording: RecordOptions = RecordOptions(), preview: PreviewRequest? = nil,
                controls: ControlRequest = ControlRequest(), photos: CameraPhotoRequest? = nil, pressureHandler: Bool = true) {
        self.recording = recording
        self.preview = preview
        self.controls = controls
        self.photos = photos
        self.pressureHandler = pressureHandler
    }
}

/// Where the preview is served and the token every request must carry.
public struct PreviewRequest: Sendable, Hashable {
    /// Where to serve (`127.0.0.1:8080` when HOST is left out).
    public var address: PreviewAddress
    /// The access token every request must carry (nil: a fresh random one for the session).
    public var token: String?
    /// A preview at `address`, with `token` (nil: a fresh random one).
    public init(address: PreviewAddress, token: String? = nil) {
        self.address = address
        self.token = token
    }
}

/// The camera's capture-event sources and controls.
public struct ControlRequest: Sendable, Hashable {
    /// Evdev input device paths, in the order given.
    public var inputs: [String] = []
    /// Take the devices exclusively (`EVIOCGRAB`).
    public var grab = false
    /// The key map: the default one with changes applied over it.
    public var keys: KeyMap = .standard
    /// The control socket's path (nil: none).
    public var socket: String? = nil
    /// What a secondary press does (nil: lock where the camera can, else marker).
    public var secondary: SecondaryAction? = nil
    /// `.cube` LUT files: the effect picker offers them after the built-in effects.
    public var luts: [String] = []
    /// The confirmation sound a remote press plays when it captures (nil: none, the default).
    public var shutterSound: ShutterSoundRequest? = nil
    /// No devices, no socket, the default key map.
    public init() {}
}

/// What a secondary press (volume up, the socket's `marker`) does at its `ended`.
public enum SecondaryAction: String, Sendable, Hashable, CaseIterable {
    /// Lock or unlock a V4L2 camera's focus and exposure (`V4L2FocusExposureLock`).
    case lock
    /// Lay a marker at the frame (a chapter of an MKV clip).
    case marker
    /// Nothing (the event is still logged): `none`.
    case ignore = "none"
}

/// What a primary press does.
public enum CaptureMode: String, Sendable, Hashable, CaseIterable {
    /// A primary `ended` starts or stops the movie output.
    case video
    /// A primary `ended` takes a photo of the pressed frame; a held one takes a burst.
    case photo
}

/// The camera's photo output.
public struct CameraPhotoRequest: Sendable, Hashable {
    /// Where the photos go (created if needed).
    public var directory: String
    /// The file format (default HEIC).
    public var format: PhotoFileFormat = .heic
    /// Photo mode: primary presses take photos (else only the page's shutter and
    /// `Camera.takePhoto` do).
    public var takesPresses = true
    /// Photos per second while a primary press is held past `CameraPhotos.holdThreshold`
    /// (0: no bursts).
    public var burstRate = 5
    /// Photos into `directory`, as HEIC, taken by primary presses, bursts at 5/s.
    public init(directory: String) { self.directory = directory }
}
