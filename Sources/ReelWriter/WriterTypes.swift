import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelMetrics

/// How an `AssetWriter` encodes, muxes and stores its clips.
public struct WriterSettings: Sendable {
    public var codec: VideoCodec
    public var container: Container
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

    public init(codec: VideoCodec = .defaultProRes, container: Container = .mov, storage: any ClipStorage,
                namePrefix: String, fragmentInterval: Double = 1.0, queueCapacity: Int = 8, threads: Int = 0,
                dropWhenStorageIsBehind: Bool = true) {
        self.codec = codec; self.container = container; self.storage = storage
        self.namePrefix = namePrefix; self.fragmentInterval = fragmentInterval
        self.queueCapacity = queueCapacity; self.threads = threads
        self.dropWhenStorageIsBehind = dropWhenStorageIsBehind
    }

    /// Checks that the codec exists and the container can carry it.
    public func validate() throws(WriterError) {
        guard codec.isAvailable else { throw .encoderUnavailable(codec) }
        guard container.supports(codec) else { throw .unsupportedPair(codec, container) }
    }

    func clipName(number: Int, ratio: AspectRatio) -> String {
        let n = String(number)
        return "\(namePrefix)-\(String(repeating: "0", count: max(0, 4 - n.count)))\(n)-\(ratio.rawValue).\(container.fileExtension)"
    }
}

/// The writer's state, as `AVAssetWriter.status`.
public enum WriterStatus: Sendable, Equatable {
    case unknown, writing, completed, cancelled
    case failed(WriterError)

    public static func == (a: WriterStatus, b: WriterStatus) -> Bool {
        switch (a, b) {
        case (.unknown, .unknown), (.writing, .writing), (.completed, .completed), (.cancelled, .cancelled), (.failed, .failed): return true
        default: return false
        }
    }
}

/// Errors of the writer.
public enum WriterError: UserFacingError, Sendable {
    case unsupportedPair(VideoCodec, Container)
    case encoderUnavailable(VideoCodec)
    case notWriting
    /// The disk (or pool) filled while recording; what was kept is published and playable.
    case outOfSpace(SystemError, kept: KeptSummary)
    /// Storage failed in another way (the clip so far is kept as far as it is playable);
    /// `status` is the exit status of the storage error (73 for a clip name that exists).
    case storage(String, kept: KeptSummary, status: Int32)
    case media(MediaError, kept: KeptSummary)

    public var exitStatus: Int32 {
        switch self {
        case .unsupportedPair: return ExitStatus.usage
        case .encoderUnavailable: return ExitStatus.unavailable
        case .notWriting, .media: return ExitStatus.software
        case .outOfSpace: return ExitStatus.ioError
        case .storage(_, _, let status): return status
        }
    }

    public var description: String {
        switch self {
        case .unsupportedPair(let c, let k):
            let fits = Container.allCases.filter { $0.supports(c) }.map(\.rawValue).joined(separator: ", ")
            return "codec \(c.name) cannot go in a \(k.rawValue) file (it fits in: \(fits.isEmpty ? "none" : fits))"
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
    public var frames: Int
    public var seconds: Double
    public var bytes: Int64
    public var clips: Int
    public var lastPath: String?
    public var framesLost: Int

    public var description: String {
        let mb = Double(bytes) / 1_000_000
        var s = "kept \(frames) frames (\(formatted(seconds)) s, \(formatted(mb)) MB) in \(clips) clip\(clips == 1 ? "" : "s")"
        if let lastPath { s += ", last \(lastPath)" }
        if framesLost > 0 { s += "; \(framesLost) frames were not written" }
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
    public var path: String
    public var width: Int
    public var height: Int
    public var ratio: String
    public var codec: String
    public var container: String
    public var frames: Int
    public var firstFrameIndex: Int
    public var lastFrameIndex: Int
    /// Session-clock time of the clip's first frame, in seconds (the clip's own timeline starts at 0).
    public var firstPTS: Double
    public var durationSeconds: Double
    public var bytes: Int64
    /// The clip was cut short by a failure and holds only its complete fragments.
    public var salvaged: Bool
}

/// What the writer did.
public struct WriterResult: Sendable {
    public var clips: [ClipSummary]
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
}
