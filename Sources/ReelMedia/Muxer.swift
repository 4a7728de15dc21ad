import CFFmpeg
import ReelCore

/// Holds the sink behind the AVIOContext's `opaque` pointer, and the first error it threw.
private final class SinkBox {
    let sink: ByteSink
    var error: (any Error)?
    /// A fragment began in the current call (a marked write): it is complete when the call returns.
    var fragmentStarted = false
    /// The media time (µs) the newest marked fragment starts at, as libavformat marks it.
    var fragmentTime: Int64 = 0
    /// Bytes handed to the sink so far.
    var bytesWritten: Int64 = 0
    init(_ sink: ByteSink) { self.sink = sink }
}

private func sinkWrite(_ opaque: UnsafeMutableRawPointer?, _ buf: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
    let box = Unmanaged<SinkBox>.fromOpaque(opaque!).takeUnretainedValue()
    if box.error != nil { return reel_averror(EIO) }
    do {
        try box.sink.write(UnsafeRawBufferPointer(start: buf, count: Int(size)))
        box.bytesWritten += Int64(size)
        return size
    } catch let e as SystemError {
        box.error = e
        return reel_averror(e.errno)
    } catch {
        box.error = error
        return reel_averror(EIO)
    }
}

/// The write callback libavformat calls instead of `sinkWrite` when it marks its output
/// (`write_data_type`): the first write of a fragment (MOV/MP4: its `moof`) or cluster (MKV)
/// comes marked as a sync or boundary point (`avio_write_marker`), and libavformat writes the
/// whole fragment within the call that began it — so when that `av_write_frame` returns, the
/// file ends at a complete fragment (`Muxer.write` then tells the sink).
private func sinkWriteMarked(_ opaque: UnsafeMutableRawPointer?, _ buf: UnsafeMutablePointer<UInt8>?, _ size: Int32,
                             _ type: AVIODataMarkerType, _ time: Int64) -> Int32 {
    if type == AVIO_DATA_MARKER_SYNC_POINT || type == AVIO_DATA_MARKER_BOUNDARY_POINT {
        let box = Unmanaged<SinkBox>.fromOpaque(opaque!).takeUnretainedValue()
        box.fragmentStarted = true
        box.fragmentTime = time
    }
    return sinkWrite(opaque, buf, size)
}

private func sinkSeek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
    let box = Unmanaged<SinkBox>.fromOpaque(opaque!).takeUnretainedValue()
    let sink = box.sink
    let how = whence & ~Int32(AVSEEK_FORCE)
    if how == reel_avseek_size() { return sink.size }
    let target: Int64
    switch how {
    case SEEK_SET: target = offset
    case SEEK_CUR: target = sink.position + offset
    case SEEK_END: target = sink.size + offset
    default: return Int64(reel_averror(EINVAL))
    }
    do {
        try sink.seek(to: target)
        return target
    } catch {
        box.error = error
        return Int64(reel_averror(EIO))
    }
}

/// A libavformat muxer for one clip — a video stream and, when the clip has sound, an audio
/// stream — writing through a custom AVIOContext into a `ByteSink`. With sound, packets go
/// through libavformat's interleaving (`av_interleaved_write_frame`), so every fragment or
/// cluster holds the sound of its time.
///
/// Used by one thread at a time: the writer's encode thread, then the clip's finaliser.
public final class Muxer: @unchecked Sendable {
    private let format: UnsafeMutablePointer<AVFormatContext>
    private let stream: UnsafeMutablePointer<AVStream>
    private let io: UnsafeMutablePointer<AVIOContext>
    private let box: Unmanaged<SinkBox>
    private let encoderTimeBase: AVRational
    /// The sound's stream and its encoder's time base (1 / rate), when the clip has sound.
    private let audioStream: UnsafeMutablePointer<AVStream>?
    private let audioTimeBase: AVRational
    /// The container being written.
    public let container: Container
    /// Video packets written so far.
    public private(set) var packetsWritten = 0
    /// The sink is told of the next complete fragment that starts at this media time (µs) or later.
    private var nextFragmentSignal = Int64.min
    /// 99 % of the fragment interval, µs (a fragment of exactly the interval is always told).
    private let fragmentSignalSpacing: Int64
    /// An intra-only codec in MOV/MP4: fragments also end at `fragmentByteLimit`, and the sink
    /// is told of one a fragment interval. Otherwise (MKV's clusters, a long-GOP codec's
    /// fragments of a keyframe interval each) it is told of every one.
    private let fragmentsBySize: Bool
    /// Bytes of packet payload written so far (without the container's own bytes).
    public private(set) var bytesOfPackets = 0

    /// The most bytes of packets a fragment of an intra-only codec holds in MOV/MP4 (movenc's
    /// `frag_size`): a fragment ends at `fragmentInterval` seconds or at this size, whichever
    /// comes first. movenc keeps a whole fragment's samples in memory until it writes the
    /// fragment, in a buffer it grows as the fragment fills and frees once it is written; at
    /// the default second of ProRes 422 that was 12 MB mapped and unmapped every second — a
    /// sawtooth of the process's memory that hours of recording measure as growth (issue 25's
    /// soak). At 1 MiB (1.3 MiB however movenc grows it, by half again each time) what is
    /// mapped and unmapped each fragment is a megabyte or so (`ProcessMemory`'s 256 KiB mmap
    /// threshold maps it). Long-GOP codecs fragment at keyframes only, so that
    /// a fragment never ends between a B-frame and the frame it refers to.
    public static let fragmentByteLimit = 1 << 20

    /// Whether `container` wants codec extradata in its header (`AVFMT_GLOBALHEADER`).
    public static func wantsGlobalHeader(_ container: Container) -> Bool {
        guard let fmt = av_guess_format(container.formatName, nil, nil) else { return false }
        return fmt.pointee.flags & AVFMT_GLOBALHEADER != 0
    }

    /// Opens the muxer and writes the file header (`avformat_write_header`).
    /// - Parameters:
    ///   - fragmentInterval: seconds per fragment for MOV/MP4 (and per cluster for MKV).
    ///   - metadata: container-level tags (written as `mdta` keys in MOV/MP4).
    ///   - displayQuarterTurns: quarter turns clockwise a player applies to show the pixels
    ///     upright (the stream's display matrix, ``attachDisplayMatrix(_:quarterTurns:)``); 0: none.
    /// - Throws: the sink's error when it failed while the header was written; otherwise a
    ///   ``MediaError`` (`avformat_alloc_output_context2`, `avio_alloc_context`, `avformat_write_header`, …).
    public init(container: Container, sink: ByteSink, encoder: VideoEncoder,
                fragmentInterval: Double = 1.0, metadata: [String: String] = [:], displayQuarterTurns: Int = 0,
                audio: AudioEncoder? = nil) throws {
        self.container = container
        fragmentSignalSpacing = Int64(saturating: fragmentInterval * 990_000)
        fragmentsBySize = container != .mkv && encoder.settings.codec.isIntraOnly
        audioTimeBase = AVRational(num: 1, den: Int32(audio?.sampleRate ?? 1))
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(avformat_alloc_output_context2(&ctx, nil, container.formatName, nil), "avformat_alloc_output_context2(\(container.formatName))")
        guard let ctx else { throw MediaError("avformat_alloc_output_context2", code: reel_averror(ENOMEM)) }
        let bufferSize: Int32 = 256 * 1024
        guard let buffer = av_malloc(Int(bufferSize))?.assumingMemoryBound(to: UInt8.self) else {
            avformat_free_context(ctx)
            throw MediaError("av_malloc", code: reel_averror(ENOMEM))
        }
        let box = Unmanaged.passRetained(SinkBox(sink))
        guard let io = avio_alloc_context(buffer, bufferSize, 1, box.toOpaque(), nil, sinkWrite, sinkSeek) else {
            av_free(buffer); box.release(); avformat_free_context(ctx)
            throw MediaError("avio_alloc_context", code: reel_averror(ENOMEM))
        }
        self.format = ctx
        self.io = io
        self.box = box
        self.encoderTimeBase = encoder.context.pointee.time_base
        // Marked writes: the sink hears where fragments end (`sinkWriteMarked`).
        io.pointee.write_data_type = sinkWriteMarked
        ctx.pointee.pb = io
        // Every packet reaches the sink when it is muxed, not when a 256 KiB buffer fills.
        ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO | AVFMT_FLAG_FLUSH_PACKETS
        guard let st = avformat_new_stream(ctx, nil) else {
            Muxer.free(format: ctx, io: io, box: box)
            throw MediaError("avformat_new_stream", code: reel_averror(ENOMEM))
        }
        self.stream = st
        if audio != nil {
            guard let ast = avformat_new_stream(ctx, nil) else {
                Muxer.free(format: ctx, io: io, box: box)
                throw MediaError("avformat_new_stream", code: reel_averror(ENOMEM))
            }
            audioStream = ast
            // Sound arrives a chunk (about 10 ms) behind the picture: video waits for it at most
            // a quarter second (a device that failed or stalled holds no more than that back).
            ctx.pointee.max_interleave_delta = 250_000
        } else {
            audioStream = nil
        }
        do {
            try check(avcodec_parameters_from_context(st.pointee.codecpar, encoder.context), "avcodec_parameters_from_context")
            st.pointee.time_base = encoderTimeBase
            st.pointee.avg_frame_rate = encoder.context.pointee.framerate
            if case .hevc = encoder.settings.codec, container != .mkv { reel_set_hvc1_tag(st.pointee.codecpar) }
            for (k, v) in metadata { av_dict_set(&ctx.pointee.metadata, k, v, 0) }
            try Muxer.attachDisplayMatrix(st, quarterTurns: displayQuarterTurns)
            if let audio, let ast = audioStream {
                try check(avcodec_parameters_from_context(ast.pointee.codecpar, audio.context), "avcodec_parameters_from_context(audio)")
                ast.pointee.time_base = audioTimeBase
            }

            var options: OpaquePointer? = nil
            defer { av_dict_free(&options) }
            let micros = String(Int64(saturating: fragmentInterval * 1_000_000))
            switch container {
            case .mov, .mp4:
                // Long-GOP codecs fragment at keyframes (one per interval, see EncoderSettings),
                // so a fragment never ends between a B-frame and the frame it refers to.
                if encoder.settings.codec.isIntraOnly {
                    av_dict_set(&options, "movflags", "delay_moov+default_base_moof+use_metadata_tags", 0)
                    av_dict_set(&options, "frag_duration", micros, 0)
                    av_dict_set(&options, "frag_size", String(Muxer.fragmentByteLimit), 0)
                } else {
                    av_dict_set(&options, "movflags", "delay_moov+default_base_moof+use_metadata_tags+frag_keyframe", 0)
                }
            case .mkv:
                av_dict_set(&options, "cluster_time_limit", String(Int64(saturating: fragmentInterval * 1000)), 0)
            }
            try check(avformat_write_header(ctx, &options), "avformat_write_header(\(container.formatName))")
        } catch {
            // Every stored property is set: deinit frees the contexts.
            throw sinkError() ?? error
        }
    }

    /// Gives the stream a display matrix that turns its pixels `quarterTurns` × 90° clockwise
    /// for display (`av_stream_new_side_data(AV_PKT_DATA_DISPLAYMATRIX)` filled by
    /// `av_display_rotation_set` with 90° × turns — its angle is clockwise —, as a phone's
    /// portrait video carries: ffprobe, which prints the counter-clockwise angle
    /// `av_display_rotation_get` gives, says `rotation=-90`). libavformat 5.1 writes it into MOV/MP4 as the track header's
    /// matrix; its Matroska muxer writes no rotation (`Container.carriesDisplayMatrix`).
    /// Nothing is added for 0 turns.
    /// - Throws: ``MediaError`` when the side data cannot be allocated (ENOMEM).
    public static func attachDisplayMatrix(_ stream: UnsafeMutablePointer<AVStream>, quarterTurns: Int) throws {
        let turns = ((quarterTurns % 4) + 4) % 4
        guard turns != 0 else { return }
        guard let data = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 9 * MemoryLayout<Int32>.size) else {
            throw MediaError("av_stream_new_side_data(AV_PKT_DATA_DISPLAYMATRIX)", code: reel_averror(ENOMEM))
        }
        data.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_set($0, Double(90 * turns)) }
    }

    private static func free(format: UnsafeMutablePointer<AVFormatContext>, io: UnsafeMutablePointer<AVIOContext>, box: Unmanaged<SinkBox>) {
        av_free(io.pointee.buffer)
        var p: UnsafeMutablePointer<AVIOContext>? = io
        avio_context_free(&p)
        format.pointee.pb = nil
        avformat_free_context(format)
        box.release()
    }

    deinit { Muxer.free(format: format, io: io, box: box) }

    /// The error the sink threw, if any: more useful than libavformat's generic EIO.
    public func sinkError() -> (any Error)? { box.takeUnretainedValue().error }

    /// Writes one packet (`av_write_frame`), its timestamps moved to the stream's time base,
    /// then tells the sink (`packetWritten`, and `fragmentCompleted` when the call wrote a
    /// whole fragment).
    /// - Throws: the sink's error if it failed, else a ``MediaError`` for `av_write_frame`.
    public func write(_ packet: borrowing EncodedPacket) throws {
        try write(packet.packet, stream: stream, index: 0, from: encoderTimeBase)
    }

    /// Writes one sound packet (on its encoder's time base, 1 / rate), `offset` samples later
    /// than the encoder stamped it (where the clip's sound starts), interleaved with the video.
    /// - Throws: as `write`; a ``MediaError`` when the clip has no sound stream.
    public func writeAudio(_ packet: borrowing EncodedPacket, offset: Int64 = 0) throws {
        guard let audioStream else { throw MediaError("writeAudio", message: "the clip was opened without sound") }
        let pkt = packet.packet
        if pkt.pointee.pts != reel_nopts() { pkt.pointee.pts += offset }
        if pkt.pointee.dts != reel_nopts() { pkt.pointee.dts += offset }
        try write(pkt, stream: audioStream, index: 1, from: audioTimeBase)
    }

    private func write(_ pkt: UnsafeMutablePointer<AVPacket>, stream: UnsafeMutablePointer<AVStream>, index: Int32, from base: AVRational) throws {
        av_packet_rescale_ts(pkt, base, stream.pointee.time_base)
        pkt.pointee.stream_index = index
        let size = Int(pkt.pointee.size)
        let box = box.takeUnretainedValue()
        let before = box.bytesWritten
        // With sound, libavformat interleaves the two streams by time (and takes the packet's reference).
        let r = audioStream != nil ? av_interleaved_write_frame(format, pkt) : av_write_frame(format, pkt)
        if r < 0 { throw sinkError() ?? MediaError(audioStream != nil ? "av_interleaved_write_frame" : "av_write_frame", code: r) }
        box.sink.packetWritten()
        // libavformat 5.1's Matroska muxer marks no cluster (its marker's condition never
        // holds), but it keeps each cluster in memory until it closes: a call that wrote
        // anything wrote a whole cluster.
        if container == .mkv ? box.bytesWritten > before : box.fragmentStarted {
            box.fragmentStarted = false
            // Fragments cut at `fragmentByteLimit` come several a second: the sink (which
            // fdatasyncs at a complete fragment) hears of the first to start a fragment
            // interval after the last it heard of, as it did when fragments were that long.
            if !fragmentsBySize || box.fragmentTime >= nextFragmentSignal {
                nextFragmentSignal = box.fragmentTime + fragmentSignalSpacing
                box.sink.fragmentCompleted()
            }
        }
        if index == 0 { packetsWritten += 1 }
        bytesOfPackets += size
    }

    /// Whether `container` keeps chapters added while recording: MKV writes them with its
    /// trailer (matroskaenc writes chapters it did not have at the header there). Reel's
    /// MOV/MP4 clips are fragmented for crash safety: their `moov` goes out before the first
    /// fragment, and the mov muxer writes chapters (a chapter track, MP4's `chpl`) only into
    /// the `moov`, so a chapter known later has nowhere to go.
    public static func carriesChapters(_ container: Container) -> Bool { container == .mkv }

    /// Adds a chapter from `start` to `end` (on `timescale` ticks per second, the clip's own
    /// timeline) titled `title`, written with the trailer (`reel_add_chapter`: `av_mallocz`,
    /// `av_dict_set`, `av_dynarray_add_nofree` on the context's chapters). `id` must be > 0
    /// and unique in the clip. Ignored for a container that cannot keep it (`carriesChapters`).
    /// - Throws: ``MediaError`` when memory runs out.
    public func addChapter(id: Int, start: Int64, end: Int64, timescale: Int32, title: String) throws {
        guard Self.carriesChapters(container) else { return }
        try check(reel_add_chapter(format, Int64(id), AVRational(num: 1, den: timescale), start, max(start, end), title), "add chapter")
    }

    /// Writes the trailer and flushes every byte into the sink (`av_write_trailer`, `avio_flush`).
    /// - Throws: the sink's error if it failed, else a ``MediaError`` for `av_write_trailer`.
    public func finish() throws {
        let r = av_write_trailer(format)
        avio_flush(io)
        if r < 0 { throw sinkError() ?? MediaError("av_write_trailer", code: r) }
        if let e = sinkError() { throw e }
    }
}
