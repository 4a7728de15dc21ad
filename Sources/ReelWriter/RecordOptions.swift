import ReelAudio
import Foundation
import Synchronization
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelMetrics

/// Where frames come from.
public enum SourceSpec: Sendable, Equatable, CustomStringConvertible {
    /// The synthetic sensor, `size` pixels square (`--source synthetic:SIZE`).
    case synthetic(size: Int)
    /// `v4l2:/dev/videoN[:WxH][@FPS][:FOURCC]`
    case v4l2(path: String, size: Size?, fps: Int?, fourcc: String?)

    /// The `--source` syntax this spec was parsed from (`synthetic:SIZE`, `v4l2:PATH…`).
    public var description: String {
        switch self {
        case .synthetic(let size): return "synthetic:\(size)"
        case .v4l2(let path, let size, let fps, let fourcc):
            return "v4l2:\(path)" + (size.map { ":\($0)" } ?? "") + (fps.map { "@\($0)" } ?? "") + (fourcc.map { ":\($0)" } ?? "")
        }
    }
}

/// How long to record.
public enum RecordingLength: Sendable, Equatable {
    /// Record for this many seconds (rounded to whole frames at the frame rate).
    case seconds(Double)
    /// Record exactly this many frames.
    case frames(Int)

    func frameCount(at rate: FrameRate) -> Int {
        switch self {
        case .frames(let n): return n
        case .seconds(let s): return Swift.max(0, Int(saturating: (s * rate.perSecond).rounded()))
        }
    }
}

/// What a recording is asked to do, as typed values (`reel record` parses its options into
/// these; `--json` and `--report` stay in the command line).
public struct RecordOptions: Sendable {
    /// Where frames come from (`--source`); the synthetic sensor by default.
    public var source: SourceSpec = .synthetic(size: SyntheticSource.defaultSize)
    /// The frame rate asked of the source (`--fps`); 30 by default.
    public var rate: FrameRate = FrameRate(frames: 30)!
    /// How long to record (`--seconds` or `--frames`).
    public var length: RecordingLength = .seconds(5)
    /// The video codec (`--codec`); ProRes by default.
    public var codec: VideoCodec = .defaultProRes
    /// The container (`--container`): `.mov` by default.
    public var container: Container = .mov
    /// The aspect ratio of the first clip (`--ratio`); nil: the source's own.
    public var ratio: AspectRatio? = nil
    /// Pace the synthetic sensor at the frame rate (`--realtime`); false runs it as fast as it can.
    public var realtime = true
    /// The directory the clips are published in (`--out`).
    public var outputDirectory = "recordings"
    /// The clips' file-name prefix (`--name`); nil: one made from the start time.
    public var namePrefix: String? = nil
    /// Ratio changes to make during the recording (`--ratio-at`), each at its trigger.
    public var ratioChanges: [(RatioTrigger, AspectRatio)] = []
    /// Seconds between the movie fragments the muxer writes (`--fragment`).
    public var fragmentInterval = 1.0
    /// Seconds of media time per segment (`--segment-duration`): a new clip also starts at the first
    /// frame at or after every multiple of it since the recording's first frame, keyframe
    /// first (`CutPolicy`). nil (the default): clips end only at ratio changes and stops.
    /// At least `CutPolicy.smallestSegmentDuration`; `Recording` refuses less.
    public var segmentDuration: Double? = nil
    /// Bytes per segment (`--segment-size`): a new clip also starts, keyframe first, at the
    /// frame that would take the clip in progress past this size, so each clip but the last
    /// of a run ends within about one frame of it. nil (the default): no size limit. At least
    /// `Recording.smallestSegmentSize`; `Recording` refuses less.
    public var segmentSize: Int64? = nil
    /// Loop recording (`--keep`): once the finished clips total more than this (bytes
    /// or seconds of media time), the oldest finished clips are deleted — never the clip being
    /// written, which does not count, and never the newest finished one. nil: every clip stays.
    public var loopBudget: LoopBudget? = nil
    /// Frames the writer may hold while it is behind (a clip opening, a slow frame); nil:
    /// as many as the sensor's buffers allow (`Recording.holdFrames`).
    public var queueCapacity: Int? = nil
    /// Where the bytes go while recording (`--pool`, `--plain`); the default pool by default.
    public var storage: StorageChoice = .defaultPool
    /// Deferred Start (the default): only the preview initialises before the first frame; the
    /// movie output (storage pool opened, created or recovered, slot claimed, encoder and
    /// muxer opened) initialises right after the first frame, which waits for it with those
    /// after it in the writer's hold ring. False (`reel record --eager-start`): everything
    /// initialises before the source starts.
    public var deferredStart = true
    /// Standby (`reel record --standby`): the session runs (preview, controls, photos) with
    /// the movie output stopped until a start request (`AssetWriter.startRecording`); each
    /// start → stop makes a take of its own clips. False: recording from the first frame.
    public var standby = false
    /// Sensor buffers beyond `Recording.sensorBuffers(side:)` for outputs that keep frames of
    /// their own (a photo output's zero-shutter-lag ring: its ring size), so that the writer's
    /// hold ring keeps all its buffers and nothing is dropped as `outOfBuffers` (the synthetic
    /// sensor's buffers, or a V4L2 camera's pool of copies).
    public var extraSensorBuffers = 0
    /// Face detections a second on the sensor's frames (smart framing, Center Stage: the
    /// camera sets it), charged in the hardware-cost model; 0: none.
    public var faceDetectionsPerSecond = 0.0
    /// Every this many of those detections also look for faces in profile (Center Stage: 2); 0: none.
    public var faceProfilesEvery = 0
    /// Video stabilisation on the sensor's frames (the camera sets it: `.none`, `.causal` for
    /// lowLatency and baseline, `.lookAhead` for cinematic), charged in the hardware-cost model.
    public var stabilizationCost = StabilizationCost.none
    /// How the synthetic sensor is mounted (`--sensor-orientation`): the clips hold its
    /// read-out as it comes (turned against the scene) and carry the display matrix that
    /// shows it upright (MOV and MP4). `.landscape` (upright) by default.
    public var sensorOrientation: SensorOrientation = .landscape
    /// What the synthetic sensor shows (`--scene`): the realistic scene (default), about as
    /// hard to encode as a camera's picture, or the flat test pattern.
    public var scene: SyntheticScene = .realistic
    /// A known camera shake of at most this many pixels that moves the realistic scene's world
    /// (`--shake`, the ground truth of stabilisation); 0, none, by default.
    public var shake = 0
    /// Rates the session may switch to while recording (`CaptureSession.setFrameRate` on the
    /// running session: the pressure handler's steps). The synthetic sensor's clock is chosen
    /// so that all fall on whole ticks, and a `.seconds` length is media time whatever the
    /// rate. Empty: the rate stays as configured.
    public var liveFrameRates: [FrameRate] = []
    /// `reel record --fail-on-drop`: a recording that dropped frames counts as failed (the
    /// command exits 75); false: it succeeds with a warning line.
    public var failOnDrop = false
    /// The command that prepares the default pool's slots in a detached process when this
    /// recording makes the pool (`reel pool _prepare --idle`; PATH and `--from PID` are added),
    /// so that the preparation outlives the recording; nil: a thread of this process prepares
    /// them while it runs (`StoragePool.startPreparing`).
    public var poolPreparationCommand: [String]? = nil
    /// Checked at the session's first commit, before any output or storage opens
    /// (`CaptureSession.setConfigurationCheck`: the hardware cost, say); what it throws ends
    /// `init`.
    public var configurationCheck: ConfigurationCheck? = nil

    /// The microphone (`--audio`): none by default — a recording takes no microphone unasked.
    public var audio: AudioSelection = .none
    /// The sound's codec (`--audio-codec`); nil: the container's default (PCM in MOV and MKV, AAC in MP4).
    public var audioCodec: AudioCodec? = nil

    /// Creates the defaults above.
    public init() {}
}

/// Where a recording's bytes go while it records.
public enum StorageChoice: Sendable, Equatable {
    /// The default pool (`StoragePool.defaultPath`), created on first use.
    case defaultPool
    /// The pool at this path (`--pool PATH`), created on first use.
    case pool(String)
    /// Straight into the output file (`--plain`), for comparison.
    case plain
}

/// What stabilisation costs a recording, for the hardware-cost model (`RecordOptions.stabilizationCost`).
public enum StabilizationCost: Sendable, Hashable {
    /// No stabilisation.
    case none
    /// A motion estimate and the crop's resampling every frame (lowLatency, baseline).
    case causal
    /// The same and a copy of every frame into the look-ahead (cinematic).
    case lookAhead
}
