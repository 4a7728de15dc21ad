import ReelAudio
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage

/// One clip being written: its encoder, muxer and file, opened at the first frame's size.
///
/// Confined: used by the writer's encode thread while frames arrive, then handed (through
/// the finaliser's lock-guarded queue) to the finaliser thread, which closes it.
final class ClipRecorder: @unchecked Sendable {
    let number: Int
    let ratio: AspectRatio
    let size: Size
    let codec: VideoCodec
    let container: Container
    let file: any ClipFile
    let encoder: VideoEncoder
    let muxer: Muxer
    /// The clip's sound encoder (nil: no sound).
    let audio: AudioEncoder?
    /// The stream frame of the sound that opens the clip (the first sample at or after its
    /// first frame), once the sound's clock is known.
    var audioStart: Int64?
    /// Sample frames written into the clip, and its first one's place after `audioStart`.
    private(set) var audioWritten: Int64 = 0
    private var audioOffset: Int64?
    /// Silence put before the sound (a codec with priming whose sound starts after the clip).
    private var audioPadding: Int64 = 0
    /// The first frame's time on the session clock: the clip's timeline starts there at 0.
    let sessionStart: Timestamp
    let frameDuration: Int64
    /// Capture indices of the frames appended, in order.
    private(set) var indices: [Int] = []
    /// The take the clip belongs to (one per start request; 1 for a recording that starts at
    /// once), and the take's first frame index (stored in the file for `verify`).
    let take: Int
    /// Where each appended frame ends on the session clock (its pts + its duration): a clip
    /// whose rate changed has frames of more than one duration.
    private var ends: [Int64] = []
    /// The duration of the last frame appended.
    private var lastFrameDuration: Int64?
    /// Their timestamps on the session clock (`sessionStart`'s timescale), for chapters.
    private var timestamps: [Int64] = []
    /// The recording's markers, made chapters when the clip is closed.
    private let chapterMarks: ChapterMarks

    /// Opens the clip at `frame`: its file, encoder and muxer.
    convenience init(number: Int, first frame: CapturedFrame, settings: WriterSettings, rate: FrameRate,
                     reusing idle: VideoEncoder? = nil, take: Int = 1, takeFirstFrame: Int = 0) throws {
        let prepared = try PreparedClip(number: number, ratio: frame.ratio, size: frame.crop.size,
                                        timescale: frame.pts.timescale, settings: settings, rate: rate, reusing: idle)
        try self.init(prepared: prepared, first: frame, settings: settings, take: take, takeFirstFrame: takeFirstFrame)
    }

    /// Starts a clip whose encoder (and file, when it has one) were opened ahead
    /// (`PreparedClip`) at `frame`: the file if need be and the muxer, which writes the
    /// frame's place on the session clock into the header, are opened now.
    init(prepared: PreparedClip, first frame: CapturedFrame, settings: WriterSettings,
         take: Int = 1, takeFirstFrame: Int = 0) throws {
        precondition(prepared.fits(frame))
        number = prepared.number
        self.take = take
        ratio = frame.ratio
        size = frame.crop.size
        codec = settings.codec
        container = settings.container
        sessionStart = frame.pts
        frameDuration = frame.duration
        chapterMarks = settings.chapterMarks
        if let f = prepared.file {
            file = f
        } else {
            file = try settings.storage.createClip(named: settings.clipName(number: prepared.number, ratio: prepared.ratio))
        }
        encoder = prepared.encoder
        do {
            audio = try settings.audio.map {
                try AudioEncoder(codec: $0.codec, sampleRate: $0.format.sampleRate, channels: $0.format.channels,
                                 globalHeader: Muxer.wantsGlobalHeader(settings.container))
            }
            var tags = ["com.reel.session_start": frame.pts.description]
            if let a = settings.audio { tags["com.reel.audio_clock"] = a.onSessionClock ? "session" : "device" }
            muxer = try Muxer(container: settings.container, sink: file, encoder: encoder,
                              fragmentInterval: settings.fragmentInterval,
                              metadata: tags.merging(["com.reel.session_start": frame.pts.description,
                                         "com.reel.clip": String(settings.fileNumber(number)),
                                         "com.reel.ratio": frame.ratio.rawValue,
                                         "com.reel.first_frame_index": String(frame.index),
                                         "com.reel.take": String(take),
                                         "com.reel.take_first_frame_index": String(takeFirstFrame)]) { a, _ in a },
                              displayQuarterTurns: settings.displayQuarterTurns, audio: audio)
        } catch {
            // Nothing was written: throw the file away (never touching a file of that name
            // that Reel did not make).
            file.discard()
            throw error
        }
        indices.reserveCapacity(1024)
        ends.reserveCapacity(1024)
        timestamps.reserveCapacity(1024)
    }

    var bytes: Int64 { file.size }
    var writeStats: WriteStats? { file.writeStats }

    /// The largest packet so far: what the storage ring must have room for.
    private var largestPacket = 0
    /// Packet bytes since `takePacketBytes` was last called.
    private var newPacketBytes: Int64 = 0
    /// The clip's pool slot (nil for a plain file).
    private var slot: PoolSlotFile? { file as? PoolSlotFile }
    /// The session-clock time of the first frame appended once the slot had grown beyond the
    /// pool: when the clip left the pool, in media time as the plain clips' `firstPTS` are.
    private var leftPoolPTS: Int64?

    /// Packets the encoder gave so far, and their bytes; and of those, the ones that are not
    /// keyframes (what the frames still inside a long-GOP encoder will most likely be).
    private var packetsOut = 0
    private var packetBytesOut: Int64 = 0
    private var interPacketsOut = 0
    private var interPacketBytesOut: Int64 = 0

    /// The clip's file as it would be with one more frame appended and the clip then closed:
    /// the packets so far, the frames still inside the encoder (its delay: B-frames,
    /// look-ahead) and the next frame at the clip's mean packet size (of its inter frames when
    /// it has any: a long-GOP clip's keyframe is no guide to the frames after it), and the container's
    /// own bytes (header, index, fragment headers). What a segment size cuts on
    /// (`CutPolicy`): a clip so cut ends within about one frame of the size.
    /// `earlierInterMean`: the mean inter-frame packet of the clip before, for a long-GOP clip
    /// whose encoder has given only its keyframe yet.
    func projectedBytes(earlierInterMean: Double?) -> Int64 {
        let frames = indices.count
        guard packetsOut > 0 else { return file.size }
        let intraOnly: Bool
        switch codec {
        case .h264, .hevc: intraOnly = false
        default: intraOnly = true
        }
        let mean = intraOnly ? Double(packetBytesOut) / Double(packetsOut) : (interMean ?? earlierInterMean ?? 0)
        let inEncoder = max(0, frames - packetsOut)
        let overhead = ClipRecorder.containerBytes(container, frames: frames + 1, seconds: Double(frames + 1) * Double(frameDuration) / Double(sessionStart.timescale))
        return packetBytesOut + Int64(mean * Double(inEncoder + 1)) + overhead
    }

    /// The mean bytes of this clip's inter-frame packets so far, nil before the first.
    var interMean: Double? {
        interPacketsOut > 0 ? Double(interPacketBytesOut) / Double(interPacketsOut) : nil
    }

    /// The container's own bytes for a clip of `frames` over `seconds`: MOV and MP4 (1 s
    /// fragments: a fragment header each, a sample entry per frame, the header and index)
    /// and MKV (a block header per frame, a cluster and a cue each second, the header) — an
    /// estimate within a few hundred bytes.
    static func containerBytes(_ container: Container, frames: Int, seconds: Double) -> Int64 {
        let s = Int(seconds.rounded(.up))
        switch container {
        case .mkv: return Int64(1536 + 8 * frames + 64 * s)
        default: return Int64(2048 + 16 * frames + 160 * s)
        }
    }

    /// The bytes of the packets encoded since the last call.
    func takePacketBytes() -> Int64 {
        defer { newPacketBytes = 0 }
        return newPacketBytes
    }

    /// The sink's ring cannot take another frame without making the encode thread wait.
    var storageIsBehind: Bool {
        file.headroom < Int64(2 * largestPacket + (512 << 10))
    }

    /// Encodes and muxes one frame at its place on the clip's own timeline.
    func append(_ frame: CapturedFrame) throws {
        let pts = frame.pts.value - sessionStart.value
        try encoder.encode(frame.buffer, crop: frame.crop, pts: pts, duration: frame.duration,
                           forceKeyframe: indices.isEmpty) { packet in
            largestPacket = max(largestPacket, packet.byteCount)
            newPacketBytes += Int64(packet.byteCount)
            packetsOut += 1
            packetBytesOut += Int64(packet.byteCount)
            if !packet.isKeyframe {
                interPacketsOut += 1
                interPacketBytesOut += Int64(packet.byteCount)
            }
            try muxer.write(packet)
        }
        if leftPoolPTS == nil, slot?.beyondPool != nil { leftPoolPTS = frame.pts.value }
        indices.append(frame.index)
        ends.append(frame.pts.value + frame.duration)
        lastFrameDuration = frame.duration
        timestamps.append(frame.pts.value)
    }

    /// Encodes and muxes sound: `samples` (interleaved) from stream frame `first` on, placed on
    /// the clip's timeline from `audioStart` (set before the first call).
    func appendAudio(_ samples: UnsafeBufferPointer<Int16>, first: Int64) throws {
        guard let audio, let start = audioStart else { return }
        if audioOffset == nil, first > start, audio.priming > 0 {
            // The sound starts after the clip (a device that opened late). A codec with
            // priming (AAC, Opus) gets silence up to it, so that its first packet is stamped
            // before 0 and the container's edit list skips the priming; PCM just starts later.
            let silence = [Int16](repeating: 0, count: Int(first - start) * audio.channels)
            try silence.withUnsafeBufferPointer { s in try audio.encode(s) { packet in try muxer.writeAudio(packet, offset: 0) } }
            audioOffset = 0
            audioPadding = first - start
        }
        let offset = audioOffset ?? (first - start)
        audioOffset = offset
        try audio.encode(samples) { packet in try muxer.writeAudio(packet, offset: offset) }
        audioWritten += Int64(samples.count / audio.channels)
    }

    /// Adds a chapter for each marker at a frame of this clip (from the first frame at or
    /// after the marked one — a dropped frame's marker goes to the next frame — to the next
    /// marker or the clip's end), titled `Marker N` with N its place among all the recording's
    /// markers.
    private func addChapters() throws {
        guard Muxer.carriesChapters(container), let first = indices.first, let last = indices.last, let lastPTS = timestamps.last else { return }
        var starts: [(number: Int, at: Int64)] = []
        for (n, marked) in chapterMarks.frameIndices.enumerated() where marked >= first && marked <= last {
            guard let pos = indices.firstIndex(where: { $0 >= marked }) else { continue }
            starts.append((n + 1, timestamps[pos] - sessionStart.value))
        }
        let end = lastPTS + (lastFrameDuration ?? frameDuration) - sessionStart.value
        for (k, s) in starts.enumerated() {
            try muxer.addChapter(id: s.number, start: s.at, end: k + 1 < starts.count ? starts[k + 1].at : end,
                                 timescale: sessionStart.timescale, title: "Marker \(s.number)")
        }
    }

    /// Drains the encoder, writes the trailer, syncs and publishes the file.
    func finalize() throws -> ClipSummary {
        // An encoder that can start another clip holds nothing back: it is not flushed, so
        // that it can be used again (`AssetWriter` keeps it for a clip of the same size).
        if !encoder.canRestart {
            try encoder.flush(duration: lastFrameDuration ?? frameDuration) { packet in try muxer.write(packet) }
        }
        defer { try? encoder.releaseInput() }
        if let audio {
            let offset = audioOffset ?? 0
            try audio.flush { packet in try muxer.writeAudio(packet, offset: offset) }
        }
        try addChapters()
        try muxer.finish()
        let bytes = try file.publish()
        return summary(frames: indices.count, bytes: bytes, salvaged: false)
    }

    /// Cancelled: the clip is thrown away.
    func discard() { file.discard() }

    /// After a failed write: cuts the file back to its last complete fragment within what is
    /// known to be on disk (`writtenLength`), publishes what is playable and returns it, or nil
    /// when nothing is.
    func salvage() -> ClipSummary? {
        // Only the bytes that reached the file count: a pool slot is longer than its clip,
        // and after a writeback error only what was synced before it counts.
        guard var playable = playableLength(within: file.writtenLength) else {
            // Not even a header within what is on disk: nothing to keep (and nothing to open,
            // which would have libavformat complain on stderr).
            file.discard()
            return nil
        }
        do { try file.truncate(to: playable) } catch {
            file.discard()
            return nil
        }
        // The cut stopped the file's syncer: a sync that failed between the first reading and
        // the cut lowered what is known to be on disk, read again now that it cannot move.
        let settled = file.writtenLength
        if settled < playable {
            guard let within = playableLength(within: settled) else {
                file.discard()
                return nil
            }
            do { try file.truncate(to: within) } catch {
                file.discard()
                return nil
            }
            playable = within
        }
        // Count what is there before publishing: the working file is this clip's own (a pool
        // slot, or a file made with O_EXCL), whereas a file at the destination name may not be.
        var kept = countPackets()
        guard kept > 0 else {
            file.discard()
            return nil
        }
        let bytes: Int64
        do { bytes = try file.publish() } catch {
            // What is kept was on disk before the failure: a failed publish never deletes the
            // only copy. A plain file stays at its path (listed, salvaged), cut back to its last
            // fragment known to be on disk when the failed sync lowered that; a pool slot stays
            // for recovery to publish once this process is gone.
            let known = file.writtenLength
            if file.workingPath == file.path, known < playable, let within = playableLength(within: known), (try? file.truncate(to: within)) != nil {
                kept = countPackets()
            }
            return file.keep() ? summary(frames: kept, bytes: file.size, salvaged: true) : nil
        }
        return summary(frames: kept, bytes: bytes, salvaged: true)
    }

    /// The length of the clip's complete fragments (clusters) within `limit` bytes; nil when
    /// not even a header is.
    private func playableLength(within limit: Int64) -> Int64? {
        switch container {
        case .mkv: return FragmentScanner.completeClusters(of: file.workingPath, limit: limit)?.length
        default: return container.isFragmented ? FragmentScanner.playableLength(of: file.workingPath, limit: limit) : nil
        }
    }

    /// The frames (packets) the working file holds now, at most the clip's.
    private func countPackets() -> Int {
        var kept = 0
        if let reader = try? MediaReader(path: file.workingPath) {
            do { try reader.forEachPacket { _ in kept += 1 } } catch {}
        }
        return min(kept, indices.count)
    }

    private func summary(frames: Int, bytes: Int64, salvaged: Bool) -> ClipSummary {
        let end = frames > 0 && frames <= ends.count ? ends[frames - 1] : sessionStart.value + Int64(frames) * frameDuration
        let seconds = Double(end - sessionStart.value) / Double(sessionStart.timescale)
        var c = ClipSummary(path: file.path, width: size.width, height: size.height, ratio: ratio.rawValue,
                            codec: codec.name, container: container.rawValue, frames: frames,
                            firstFrameIndex: indices.first ?? -1,
                            lastFrameIndex: frames > 0 ? indices[frames - 1] : -1,
                            firstPTS: sessionStart.seconds, durationSeconds: seconds, bytes: bytes,
                            salvaged: salvaged, take: take)
        if audio != nil {
            c.audioSamples = audioWritten
            c.audioCodec = audio?.codec.rawValue
            c.audioStartSample = audioStart.map { $0 + (audioOffset ?? 0) + audioPadding }
        }
        if let slot {
            c.storage = "pool"
            if let beyond = slot.beyondPool {
                c.bytesBeyondPool = max(0, bytes - beyond.offset)
                // Grown while the last packets were flushed: from the clip's last frame.
                let at = leftPoolPTS ?? timestamps.last ?? sessionStart.value
                c.leftPoolSeconds = Double(at) / Double(sessionStart.timescale)
            }
        }
        return c
    }
}

/// A clip's encoder — and file, for the first clip — opened before its first frame arrives:
/// what makes opening a clip slow (opening the encoder and, for FFV1, its first-frame
/// allocation; claiming storage) done ahead, off the capture path.
/// `ClipRecorder(prepared:first:settings:)` starts it at its first frame.
///
/// Later clips leave the file to the seam, so that a recording holds no more storage (pool
/// slots) than before: the one recording and the one closing.
final class PreparedClip: @unchecked Sendable {
    let number: Int
    let ratio: AspectRatio
    let size: Size
    let timescale: Int32
    let file: (any ClipFile)?
    let encoder: VideoEncoder

    /// - Parameter idle: an encoder of a finished clip of this size to start again
    ///   (`VideoEncoder.restart`) instead of opening one.
    init(number: Int, ratio: AspectRatio, size: Size, timescale: Int32, settings: WriterSettings, rate: FrameRate,
         withFile: Bool = true, reusing idle: VideoEncoder? = nil) throws {
        self.number = number
        self.ratio = ratio
        self.size = size
        self.timescale = timescale
        let file = withFile ? try settings.storage.createClip(named: settings.clipName(number: number, ratio: ratio)) : nil
        self.file = file
        if let idle {
            precondition(idle.settings.size == size && idle.settings.timescale == timescale)
            idle.restart()
            encoder = idle
            return
        }
        do {
            encoder = try VideoEncoder(EncoderSettings(codec: settings.codec, size: size, rate: rate,
                                                       timescale: timescale, threads: settings.threads,
                                                       keyframeInterval: max(1, Int((rate.perSecond * settings.fragmentInterval).rounded()))),
                                       globalHeader: Muxer.wantsGlobalHeader(settings.container))
            try encoder.warmUp()
        } catch {
            file?.discard()
            throw error
        }
    }

    /// Whether `frame` can start this clip.
    func fits(_ frame: CapturedFrame) -> Bool {
        frame.ratio == ratio && frame.crop.size == size && frame.pts.timescale == timescale
    }

    /// Not used after all: the file (if any) goes, a pool slot back to the pool; nothing is published.
    func discard() { file?.discard() }
}
