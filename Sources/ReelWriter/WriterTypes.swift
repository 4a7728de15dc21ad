import ReelAudio
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelMetrics

/// How an `AssetWriter` encodes, muxes and stores its clips.
public struct WriterSettings: Sendable {
    /// The video codec of every clip.
    public var codec: VideoCodec
    /// The file format of every clip.
    public var container: Container
    /// Where clips are written: a directory (`FileStorage`) or a storage pool (`PoolStorage`).
    public var storage: any ClipStorage
    /// Clips are named `PREFIX-0001-16x9.mov`, `PREFIX-0002-9x16.mov`, ….
    public var namePrefix: String
    /// Seconds per fragment (MOV/MP4) or cluster (MKV).
    public var fragmentInterval: Double
    /// Frames the writer holds before `isReadyForMoreMediaData` turns false.
    public var queueCapacity: Int
    /// libavcodec threads per encoder; 0 uses every core.
    public var threads: Int
    /// Real time: when storage falls so far behind that its ring cannot take another frame,
    /// drop the frame (`outOfBuffers`) rather than make the encode thread wait.
    public var dropWhenStorageIsBehind: Bool
    /// Quarter turns clockwise a player applies to show the frames upright: the clips' display
    /// matrix (a sensor mounted turned; `Muxer.attachDisplayMatrix`). 0 by default: none.
    public var displayQuarterTurns = 0
    /// The recording's markers: each becomes a chapter of its clip where the container keeps
    /// chapters (MKV; see `Muxer.carriesChapters`).
    public var chapterMarks = ChapterMarks()
    /// Seconds of media time per segment: a new clip also starts at the first frame at or after
    /// every multiple of it since the recording's first frame (`CutPolicy`). nil by default:
    /// clips end only at ratio changes (and stops).
    public var segmentDuration: Double? = nil
    /// Bytes per segment: a new clip also starts at the frame that would take the clip in
    /// progress past this size (`CutPolicy`). nil by default.
    public var segmentBytes: Int64? = nil
    /// Loop recording: once the finished clips total more than this, the oldest finished
    /// clips are deleted (`LoopBudget`). nil by default: every clip stays.
    public var loopBudget: LoopBudget? = nil
    /// The number in the first clip's name (`PREFIX-0001-…` by default): a run that finds
    /// earlier runs' clips of its prefix goes on after them (`SegmentIndexLog.firstSegment`).
    public var firstClipNumber = 1
    /// The index of what was recorded (`PREFIX.index.json`), updated as each clip is
    /// published; nil: none is written.
    public var segmentIndex: SegmentIndexLog? = nil

    /// The clips' sound (codec and the source's format); nil: no sound.
    public var audio: AudioTrackSettings? = nil

    /// Settings with Reel's defaults: ProRes 422 HQ in MOV, 1 s fragments, 8 queued frames, every core.
    public init(codec: VideoCodec = .defaultProRes, container: Container = .mov, storage: any ClipStorage,
                namePrefix: String, fragmentInterval: Double = 1.0, queueCapacity: Int = 8, threads: Int = 0,
                dropWhenStorageIsBehind: Bool = true) {
        self.codec = codec; self.container = container; self.storage = storage
        self.namePrefix = namePrefix; self.fragmentInterval = fragmentInterval
        self.queueCapacity = queueCapacity; self.threads = threads
        self.dropWhenStorageIsBehind = dropWhenStorageIsBehind
    }

    /// Checks that the codec exists and the container can carry it.
    /// - Throws: ``WriterError/encoderUnavailable(_:)`` or ``WriterError/unsupportedPair(_:_:)``.
    public func validate() throws(WriterError) {
        guard codec.isAvailable else { throw .encoderUnavailable(codec) }
        guard container.supports(codec) else { throw .unsupportedPair(codec, container) }
        if let a = audio, !container.supports(a.codec) || (a.codec == .opus && a.format.sampleRate != 48_000) {
            throw .unsupportedAudio(a.codec, container)
        }
    }

    /// The number in the name of the writer's `number`th clip (1-based).
    func fileNumber(_ number: Int) -> Int { number + firstClipNumber - 1 }

    func clipName(number: Int, ratio: AspectRatio) -> String {
        let n = String(fileNumber(number))
        return "\(namePrefix)-\(String(repeating: "0", count: max(0, 4 - n.count)))\(n)-\(ratio.rawValue).\(container.fileExtension)"
    }
}

/// The writer's state, as `AVAssetWriter.status`.
public enum WriterStatus: Sendable, Equatable {
    /// `unknown`: not started; `writing`: started; `completed` and `cancelled`: finished.
    case unknown, writing, completed, cancelled
    /// Stopped by an error; what was kept is in the error.
    case failed(WriterError)

    /// Equal when the cases match; two `failed` states are equal whatever their errors.
    public static func == (a: WriterStatus, b: WriterStatus) -> Bool {
        switch (a, b) {
        case (.unknown, .unknown), (.writing, .writing), (.completed, .completed), (.cancelled, .cancelled), (.failed, .failed): return true
        default: return false
        }
    }
}

/// Errors of the writer.
public enum WriterError: UserFacingError, Sendable {
    /// The container cannot carry the codec (exit status 64).
    case unsupportedPair(VideoCodec, Container)
    /// This libavcodec has no encoder for the codec (exit status 69).
    case encoderUnavailable(VideoCodec)
    /// The container cannot carry the sound codec, or this libavcodec has no encoder for it (exit status 64).
    case unsupportedAudio(AudioCodec, Container)
    /// A frame was appended while the writer was not writing: before start, after finish or a failure (exit status 70).
    case notWriting
    /// The disk (or pool) filled while recording; what was kept is published and playable.
    case outOfSpace(SystemError, kept: KeptSummary)
    /// Storage failed in another way (the clip so far is kept as far as it is playable);
    /// `status` is the exit status of the storage error (73 for a clip name that exists).
    case storage(String, kept: KeptSummary, status: Int32)
    /// The encoder or muxer failed (exit status 70); the clip so far is kept as far as it is playable.
    case media(MediaError, kept: KeptSummary)

    /// The `reel` exit status of this error (see the cases).
    public var exitStatus: Int32 {
        switch self {
        case .unsupportedPair, .unsupportedAudio: return ExitStatus.usage
        case .encoderUnavailable: return ExitStatus.unavailable
        case .notWriting, .media: return ExitStatus.software
        case .outOfSpace: return ExitStatus.ioError
        case .storage(_, _, let status): return status
        }
    }

    /// The one-line message (the CLI adds `reel: `); failures while recording end with what was kept.
    public var description: String {
        switch self {
        case .unsupportedPair(let c, let k):
            let fits = Container.allCases.filter { $0.supports(c) }.map(\.rawValue).joined(separator: ", ")
            return "codec \(c.name) cannot go in a \(k.rawValue) file (it fits in: \(fits.isEmpty ? "none" : fits))"
        case .unsupportedAudio(let c, let k):
            let fits = Container.allCases.filter { $0.supports(c) }.map(\.rawValue).joined(separator: ", ")
            return "audio codec \(c) cannot go in a \(k.rawValue) file (it fits in: \(fits.isEmpty ? "none" : fits))"
        case .encoderUnavailable(let c): return "this libavcodec has no \(c.encoderName) encoder (install the distribution's full libavcodec)"
        case .notWriting: return "the writer is not writing (start it first, or it has finished or failed)"
        case .outOfSpace(let e, let kept): return "disk full (\(e.text)); \(kept)"
        case .storage(let what, let kept, _): return "\(what); \(kept)"
        case .media(let e, let kept): return "\(e); \(kept)"
        }
    }
}

/// What survived a failed recording.
public struct KeptSummary: Sendable, CustomStringConvertible {
    /// Frames in the clips that were published.
    public var frames: Int
    /// Seconds of video in those clips.
    public var seconds: Double
    /// Bytes of those clips.
    public var bytes: Int64
    /// Clips published (salvaged ones included).
    public var clips: Int
    /// The last clip published, if any.
    public var lastPath: String?
    /// Frames the writer took in that no published clip holds.
    public var framesLost: Int

    /// `kept N frames (S s, M MB) in C clips, last PATH; L frames were not written` (singular for 1).
    public var description: String {
        let mb = Double(bytes) / 1_000_000
        var s = "kept \(frames) frames (\(formatted(seconds)) s, \(formatted(mb)) MB) in \(clips) clip\(clips == 1 ? "" : "s")"
        if let lastPath { s += ", last \(lastPath)" }
        if framesLost > 0 { s += "; \(framesLost) frame\(framesLost == 1 ? " was" : "s were") not written" }
        return s
    }
}

func formatted(_ x: Double, digits: Int = 2) -> String {
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (x * p).rounded() / p
    var s = String(r)
    if s.hasSuffix(".0") { s.removeLast(2) }
    return s
}

/// One finished clip, as the JSON summary lists it.
public struct ClipSummary: Sendable, Codable, Equatable {
    /// Where the clip was published.
    public var path: String
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// The aspect ratio it was recorded at (`16x9`).
    public var ratio: String
    /// The codec's short name (`prores`, `h264`, `hevc`, `ffv1`).
    public var codec: String
    /// `mov`, `mp4` or `mkv`.
    public var container: String
    /// Frames in the clip.
    public var frames: Int
    /// Source index of its first frame (the barcode `verify` reads), -1 when empty.
    public var firstFrameIndex: Int
    /// Source index of its last frame, -1 when empty.
    public var lastFrameIndex: Int
    /// Session-clock time of the clip's first frame, in seconds (the clip's own timeline starts at 0).
    public var firstPTS: Double
    /// Seconds of video: frames × the nominal frame duration.
    public var durationSeconds: Double
    /// Size of the published file in bytes.
    public var bytes: Int64
    /// The clip was cut short by a failure and holds only its complete fragments.
    public var salvaged: Bool
    /// Sample frames of sound in the clip (nil: the recording has no sound).
    public var audioSamples: Int64? = nil
    /// The sound's codec (`pcm`, `aac`, `opus`; nil without sound).
    public var audioCodec: String? = nil
    /// The clip's first sample's frame in the recording's sound stream (nil without sound):
    /// clips that join without gap or overlap continue one another's numbers.
    public var audioStartSample: Int64? = nil
    /// The take it belongs to: each start request (`AssetWriter.startRecording`) opens one; a
    /// recording that records from its first frame is take 1.
    public var take: Int = 1
    /// When the start request that began this clip came, in seconds since the recording
    /// started; null when the clip began otherwise (the recording's start, a seam).
    @EncodedNull public var startRequestSeconds: Double? = nil
    /// When the stop request that ended this clip came (seconds since the recording started);
    /// null when it ended otherwise (a seam, the recording's end).
    @EncodedNull public var stopRequestSeconds: Double? = nil
    /// `pool` (written in a pool slot) or `plain` (a file of its own: `--plain`, or no slot was
    /// free when it opened, as while the default pool is first prepared).
    public var storage: String = "plain"
    /// Bytes of a pool clip written beyond the pool (its slot file grown on the filesystem
    /// when no slot was free to grow into); 0 otherwise.
    public var bytesBeyondPool: Int64 = 0
    /// When the clip's bytes went beyond the pool, in seconds since the recording started
    /// (the writer gives CLOCK_MONOTONIC seconds; `Recording.run` turns them into these); null
    /// when they did not.
    @EncodedNull public var leftPoolSeconds: Double? = nil
}

/// One start or stop request applied to a running recording (`AssetWriter.startRecording`,
/// `stopRecording`): the summary's `recordingToggles`.
public struct RecordingToggle: Sendable, Codable, Equatable {
    /// What was asked.
    public enum Action: String, Sendable, Codable {
        /// Recording started: the next frame captured opens a take.
        case start
        /// Recording stopped: the take's clip ends and is published.
        case stop
    }
    /// `start` or `stop`.
    public var action: Action
    /// Who asked: `page`, `socket`, or a capture event's source (`evdev:… (KEY_VOLUMEDOWN)`, `terminal`).
    public var source: String
    /// When the request was applied, in seconds on CLOCK_MONOTONIC.
    public var time: Double
    /// When the request was applied, in seconds since the recording started.
    public var atSeconds: Double
    /// The take a start opened, or the take a stop ended.
    public var take: Int
    /// `start`: the first frame recorded after it; `stop`: the last frame recorded before it;
    /// null when there was none.
    @EncodedNull public var frameIndex: Int?
}

/// Why a start or stop request was refused.
public enum RecordToggleError: Error, CustomStringConvertible, Sendable, Equatable {
    /// A start while recording.
    case alreadyRecording
    /// A stop while stopped.
    case notRecording
    /// The writer has not started, or has finished or failed.
    case notWriting

    /// One line saying why.
    public var description: String {
        switch self {
        case .alreadyRecording: return "already recording"
        case .notRecording: return "not recording"
        case .notWriting: return "the recording is not running"
        }
    }
}

/// What the writer did.
public struct WriterResult: Sendable {
    /// Every published clip, in recording order.
    public var clips: [ClipSummary]
    /// Frames in the published clips.
    public var framesWritten: Int
    /// Frames the writer accepted but could not write (after a failure).
    public var framesLost: Int
    /// The longest time capture waited to hand a frame over near a seam (0 in real time:
    /// capture never waits; it drops instead, and drops are counted).
    public var longestSeamWait: Double
    /// The longest time opening a clip (encoder and muxer) took on the encode thread.
    public var longestClipOpen: Double
    /// The most frames that were queued in the writer at once.
    public var queueHighWater: Int
    /// Frames the writer dropped because storage was behind (`outOfBuffers`).
    public var drops: DropCounts
    /// Write latency and ring use of every clip, merged.
    public var write: WriteStats?
    /// Why the writer stopped early (with what was kept), or nil.
    public var error: WriterError?
    /// Seconds from the first frame's hand-over to its being encoded and muxed (nil without frames).
    public var firstFrameLatency: Double?
    /// Clips whose encoder was opened before their first frame arrived (`prepare`, `expect`).
    public var clipsOpenedAhead: Int
    /// Clips that started on the encoder of an earlier clip of their size (FFV1).
    public var encodersReused: Int
    /// Deferred Start: frames offered before the writer was ready, held and written once it was.
    public var framesHeldBeforeReady: Int = 0
    /// Deferred Start: the longest a held frame waited for the writer to be ready, in seconds.
    public var longestHold: Double = 0
    /// When the first frame was encoded and handed to storage (`MonotonicClock`, ns).
    public var firstFrameWrittenAt: UInt64? = nil
    /// Frames offered while the writer was stopped (standby, after a stop): not recorded, not dropped.
    public var framesNotRecorded: Int = 0
    /// The start and stop requests applied, in order.
    public var toggles: [RecordingToggle] = []
    /// The clips started at a segment boundary, in order.
    public var segmentCuts: [SegmentCut] = []
    /// The finished clips loop recording deleted, in order.
    public var loopDeletions: [LoopDeletion] = []
}
