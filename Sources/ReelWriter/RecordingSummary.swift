import Foundation
import Synchronization
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelMetrics

/// The storage part of the JSON summary.
public struct StorageSummary: Sendable, Codable {
    /// `pool` or `plain`.
    public var mode: String
    /// The pool's path (`null` with `--plain`).
    @EncodedNull public var pool: String?
    /// The default pool was created by this recording.
    public var poolCreated: Bool
    /// `buffered` (early writeback) or `direct` (O_DIRECT) in a pool; `plain` otherwise.
    public var writeMode: String
    /// Bytes the pool could still take when the recording started (`null` with `--plain`).
    @EncodedNull public var remainingCapacityBefore: Int64?
    /// Bytes the pool could still take when the recording ended (`null` with `--plain`).
    @EncodedNull public var remainingCapacityAfter: Int64?
    /// Service time of each storage write, in ms.
    public var writeLatencyMs: LatencySummary
    /// The longest a storage write took, in ms.
    public var longestStallMs: Double
    /// The size of the pool's write ring, in bytes.
    public var ringBytes: Int64
    /// The most bytes the write ring held at once.
    public var ringHighWaterBytes: Int64
    /// How often the writer found the ring full and waited.
    public var ringFullWaits: Int
    /// How often a slot grew to take a clip larger than it.
    public var slotGrowths: Int
    /// The recording's bit rate over its last 10 s (bits a second; null without bytes).
    @EncodedNull public var bitrate: Double?
    /// `remainingCapacityAfter` as seconds of recording at `bitrate` (null with `--plain`).
    @EncodedNull public var remainingSeconds: Double?
    /// What of the recording did not go into the pool's slots (null when all of it did).
    @EncodedNull public var leftPool: LeftPool?
}

/// What of a pooled recording went to the filesystem beyond the pool: clips grown past the
/// pool's slots, and plain clips opened when no slot was free.
public struct LeftPool: Sendable, Codable, Equatable {
    /// When it began, in seconds since the recording started.
    public var atSeconds: Double
    /// Bytes written outside the pool's slots.
    public var bytes: Int64
    /// Clips with bytes outside the slots (grown beyond the pool, or plain).
    public var clips: Int
}

/// A snapshot for the progress line.
public struct RecordingProgress: Sendable {
    /// Seconds of media recorded so far.
    public var elapsed: Double
    /// Frames the source delivered so far.
    public var framesCaptured: Int
    /// Frames encoded and handed to storage so far.
    public var framesWritten: Int
    /// The recent capture rate, in frames per second.
    public var fps: Double
    /// Frames dropped so far, for any reason.
    public var framesDropped: Int
    /// Bytes written to storage so far.
    public var bytesWritten: Int64
    /// The aspect ratio being recorded now.
    public var ratio: AspectRatio
    /// The bit rate over the last 10 s, bits a second (nil before a second of it).
    public var bitrate: Double? = nil
    /// The pool's remaining capacity as seconds at `bitrate` (nil without a pool or bitrate).
    public var remainingSeconds: Double? = nil
    /// The sound's peak since the last progress, in dBFS (0: full scale; −∞: silence); nil
    /// without sound, or before its first samples.
    public var audioPeakDb: Double? = nil
}

/// The JSON summary of a recording (its keys: docs/json.md).
public struct RecordingSummary: Sendable, Codable {
    /// The version of the summary's schema, 1: it goes up when a key changes its meaning or
    /// goes away; keys are added without a new version. Nil in a summary written before
    /// versions (it still decodes).
    public var schemaVersion: Int? = 1
    /// The clips published, in order.
    public var clips: [ClipSummary]
    /// Frames the sensor produced (`framesWritten` + `framesDropped`, + `framesLost` after a
    /// failure).
    public var framesCaptured: Int
    /// Frames encoded and held by a published clip.
    public var framesWritten: Int
    /// Frames dropped before the writer, all reasons.
    public var framesDropped: Int
    /// Dropped frames by reason: `late`, `outOfBuffers`, `discontinuity`, `corrupt`.
    public var dropReasons: [String: Int]
    /// Frames the writer accepted that no published clip holds (only after a failure).
    public var framesLost: Int
    /// Frames captured while the movie output was stopped (`--standby` before the first
    /// start, after a stop): not recorded and not dropped.
    public var framesNotRecorded: Int = 0
    /// Frames a V4L2 camera sent that the pressure handler let go to run at a lower rate
    /// (decimation, every k-th frame kept): not captured, not dropped.
    public var framesDecimated: Int = 0
    /// Each ratio change, at the first frame with the new ratio.
    public var seams: [Seam]
    /// Each clip started at a segment boundary (`--segment-duration`), at its first frame; empty
    /// without segments.
    public var segments: [SegmentCut] = []
    /// The finished clips loop recording (`--keep`) deleted, oldest first; `clips`
    /// still lists them. Empty without a budget.
    public var loopDeletions: [LoopDeletion] = []
    /// The index of what was recorded (`PREFIX.index.json`, written for `--segment-duration`
    /// and `--keep`): its path, this run's number, the clips it lists, an error writing it;
    /// null without one.
    @EncodedNull public var index: SegmentIndexSummary? = nil
    /// The recording's sound (`--audio`): the device, its format, codec and sample counts;
    /// null without sound.
    @EncodedNull public var audio: AudioSummary? = nil
    /// The start and stop requests applied while the session ran, in order.
    public var recordingToggles: [RecordingToggle] = []
    /// Each frame-rate change while recording, at the first frame of the new rate (the clip's
    /// frames are then of more than one duration: a variable frame rate).
    public var frameRateChanges: [FrameRateChange]
    /// The longest capture waited to hand over a frame near a seam, in ms (0 in real time).
    public var longestSeamWaitMs: Double
    /// The longest the encode thread spent opening a clip at its first frame, in ms.
    public var longestClipOpenMs: Double
    /// From the first frame's hand-over to the writer to its being encoded and muxed.
    public var firstFrameLatencyMs: Double
    /// Clips whose encoder was opened before their first frame arrived.
    public var clipsOpenedAhead: Int
    /// The most frames the writer held at once.
    public var writerQueueHighWater: Int
    /// The most frames the writer may hold (its hold ring): the source's buffers less 4.
    public var writerQueueCapacity: Int
    /// `deferred` or `eager`: when the movie output initialised.
    public var startMode: String
    /// Frames that waited in the writer's hold ring for the deferred movie output to be ready.
    public var framesHeldBeforeReady: Int
    /// The longest any of them waited, in ms (0 when none did).
    public var longestHoldMs: Double
    /// From the process's start (exec; its start time has 10 ms resolution) until the first
    /// frame was encoded and handed to storage, in ms (null without frames).
    @EncodedNull public var firstFrameWrittenMs: Double?
    /// Where the bytes went (mode, pool, write latencies, ring).
    public var storage: StorageSummary
    /// The source as it ran (`synthetic:1920`, `v4l2:/dev/video0…`).
    public var source: String
    /// The frame rate the source ran at, as text (`30`, or the rate a camera settled on).
    public var fps: String
    /// Whether the source was paced in real time (always true for a camera).
    public var realtime: Bool
    /// Seconds the recording ran, from `run` starting the capture to its end.
    public var elapsedSeconds: Double
    /// CPU seconds the synthetic sensor spent drawing its frames (the emulated camera's work,
    /// which a real camera does in hardware: `scripts/bench record` counts Reel's CPU with and
    /// without it); null for a V4L2 camera.
    @EncodedNull public var sensorDrawingCPUSeconds: Double? = nil
    /// `completed`, `interrupted` (SIGINT or stop) or `failed`.
    public var stopReason: String
    /// The failure's message when `stopReason` is `failed`, else `null`.
    @EncodedNull public var error: String?
}

/// The sound of a recording, in the JSON summary's `audio`.
public struct AudioSummary: Sendable, Codable, Equatable {
    /// `synthetic`, or the ALSA device name.
    public var device: String
    /// Sample frames a second, as negotiated.
    public var sampleRate: Int
    /// Channels, as negotiated.
    public var channels: Int
    /// `pcm`, `aac` or `opus`.
    public var codec: String
    /// Sample frames the clips' time spans (from each clip's first frame to the end of its
    /// last): what they should hold.
    public var samplesCaptured: Int64
    /// Sample frames written into the clips.
    public var samplesWritten: Int64
    /// Sample frames lost, and why (`overrun`: the device lost them, written as silence;
    /// `late`: they came after their clip closed; `deviceFailed`).
    public var samplesDropped: Int64
    /// Those by reason.
    public var dropReasons: [String: Int64]
    /// Where the device's first sample is on the session clock (the first video frame is at 0), in ms.
    @EncodedNull public var clockOffsetMs: Double?
    /// A device's rate as measured against CLOCK_MONOTONIC, in ppm off nominal (its sound is
    /// resampled by that much to stay in step with the picture); null for the synthetic sound.
    @EncodedNull public var deviceRatePpm: Double?
    /// CLOCK_MONOTONIC time of the session clock's 0 (the first frame's capture time), in ns:
    /// what places the clips' sound and picture against other clocks' events.
    @EncodedNull public var sessionZeroMonotonicNs: Int64?
    /// The device's failure while recording (the video went on), else null.
    @EncodedNull public var error: String?
    /// The A/V offset read back from the clips when the recording ended (the synthetic sound's
    /// clicks against their frames' barcodes, at the start of the first clip and the end of the
    /// last); null for a microphone's sound, which has no marks to measure by.
    @EncodedNull public var avOffset: MeasuredAVOffset?

    /// The summary of sound from `device` as the writer counted it (`counts`).
    public init(device: String, sampleRate: Int, channels: Int, codec: String, counts: AudioCounts, sessionZeroMonotonicNs: Int64? = nil) {
        self.sessionZeroMonotonicNs = sessionZeroMonotonicNs
        deviceRatePpm = counts.deviceRatePpm
        self.device = device; self.sampleRate = sampleRate; self.channels = channels; self.codec = codec
        samplesCaptured = counts.captured
        samplesWritten = counts.written
        samplesDropped = counts.droppedTotal
        dropReasons = counts.dropped
        clockOffsetMs = counts.originNs.map { Double($0) / 1e6 }
        error = counts.failure
    }
}
