import CFFmpeg
import ReelCore

/// What a file's video stream says about itself.
public struct StreamInfo: Sendable {
    /// The demuxer's name (`iformat->name`: `mov,mp4,m4a,3gp,3g2,mj2` or `matroska,webm`).
    public var formatName: String
    /// The codec's short name (`avcodec_get_name`: `prores`, `h264`, …).
    public var codecName: String
    /// Width in pixels, from the stream's codec parameters.
    public var width: Int
    /// Height in pixels, from the stream's codec parameters.
    public var height: Int
    /// The pixel format's name (`av_get_pix_fmt_name`: `yuv422p10le`, …), or `unknown`.
    public var pixelFormat: String
    /// The stream's time base as (num, den).
    public var timeBase: (num: Int32, den: Int32)
    /// `avg_frame_rate` in frames per second, or nil when the file does not say.
    public var averageFrameRate: Double?
    /// Container-level tags.
    public var metadata: [String: String]
    /// The stream's display matrix as a rotation (`av_stream_get_side_data(AV_PKT_DATA_DISPLAYMATRIX)`,
    /// `av_display_rotation_get`): degrees counter-clockwise, as ffprobe prints it (`-90`: a
    /// player turns the picture 90° clockwise; `-180`: a half turn), rounded to whole quarter
    /// turns; 0 without one.
    public var rotation: Int = 0
    /// Quarter turns clockwise a player applies to show the picture upright (0–3).
    public var displayQuarterTurns: Int { (((-rotation / 90) % 4) + 4) % 4 }
    /// The file's chapters (`AVFormatContext.chapters`), in file order.
    public var chapters: [MediaChapter] = []
}

/// One chapter of a file, as the demuxer reads it.
public struct MediaChapter: Sendable, Hashable, Codable {
    /// Start, in seconds on the file's timeline.
    public var start: Double
    /// End, in seconds on the file's timeline.
    public var end: Double
    /// Its `title` tag (nil without one).
    public var title: String?
}

/// One demuxed packet's timing.
public struct PacketInfo: Sendable {
    /// Presentation time on the stream's time base, nil when unset (`AV_NOPTS_VALUE`).
    public var pts: Int64?
    /// Decoding time on the stream's time base, nil when unset (`AV_NOPTS_VALUE`).
    public var dts: Int64?
    /// Duration on the stream's time base (0 when unknown).
    public var duration: Int64
    /// The packet is a keyframe (`AV_PKT_FLAG_KEY`).
    public var isKeyframe: Bool
    /// Payload bytes.
    public var size: Int
}

/// One decoded picture, valid only inside the callback.
public struct DecodedPicture: ~Copyable {
    /// Presentation time on the stream's time base.
    public let pts: Int64?
    /// Width of the decoded frame in pixels (it may differ from the stream header's).
    public let width: Int
    /// Height of the decoded frame in pixels.
    public let height: Int
    /// The frame's luma plane (plane 0), valid only inside the callback.
    public let luma: LumaPlane
    /// The frame's chroma planes (Cb, Cr: planes 1 and 2) and their subsampling (`shiftX`,
    /// `shiftY`: 1, 1 for 4:2:0; 1, 0 for 4:2:2), valid only inside the callback; nil when the
    /// frame is not planar YUV.
    public var chroma: (cb: LumaPlane, cr: LumaPlane, shiftX: Int, shiftY: Int)? = nil
}

/// Demuxes and decodes the first video stream of a file (libavformat + libavcodec),
/// for `reel probe` and `reel verify`.
public final class MediaReader {
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private let streamIndex: Int32
    /// What the video stream says about itself.
    public let info: StreamInfo
    /// The file opened.
    public let path: String
    /// The demuxer stopped at damaged or missing data rather than a clean end of file.
    public private(set) var stoppedEarly: MediaError?

    /// Opens `path` (`avformat_open_input`, `avformat_find_stream_info`, `av_find_best_stream`).
    /// - Throws: ``MediaError`` when the file cannot be opened or probed, or has no video stream.
    public init(path: String) throws(MediaError) {
        self.path = path
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let r = avformat_open_input(&ctx, path, nil, nil)
        if r < 0 { throw MediaError("open \(path)", code: r) }
        let fr = avformat_find_stream_info(ctx, nil)
        if fr < 0 { avformat_close_input(&ctx); throw MediaError("avformat_find_stream_info \(path)", code: fr) }
        let idx = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        if idx < 0 { avformat_close_input(&ctx); throw MediaError("\(path)", message: "no video stream") }
        format = ctx
        streamIndex = idx
        let st = ctx!.pointee.streams[Int(idx)]!
        let par = st.pointee.codecpar!
        let fps = st.pointee.avg_frame_rate
        var tags: [String: String] = [:]
        var entry: UnsafeMutablePointer<AVDictionaryEntry>? = nil
        while let e = av_dict_get(ctx!.pointee.metadata, "", entry, AV_DICT_IGNORE_SUFFIX) {
            // Matroska keeps tag names in capitals (`COM.REEL.RATIO`): keys are read in lower case.
            tags[String(cString: e.pointee.key).lowercased()] = String(cString: e.pointee.value)
            entry = e
        }
        let pixName = av_get_pix_fmt_name(AVPixelFormat(rawValue: par.pointee.format)).map { String(cString: $0) } ?? "unknown"
        var described = StreamInfo(
            formatName: String(cString: ctx!.pointee.iformat.pointee.name),
            codecName: String(cString: avcodec_get_name(par.pointee.codec_id)),
            width: Int(par.pointee.width), height: Int(par.pointee.height),
            pixelFormat: pixName,
            timeBase: (st.pointee.time_base.num, st.pointee.time_base.den),
            averageFrameRate: fps.den != 0 && fps.num != 0 ? Double(fps.num) / Double(fps.den) : nil,
            metadata: tags,
            chapters: Self.chapters(of: ctx!))
        described.rotation = Self.rotation(of: st)
        info = described
    }

    /// The chapters libavformat read (`nb_chapters`, each `AVChapter`'s start, end, time base
    /// and `title` tag).
    private static func chapters(of ctx: UnsafeMutablePointer<AVFormatContext>) -> [MediaChapter] {
        guard let list = ctx.pointee.chapters else { return [] }
        return (0..<Int(ctx.pointee.nb_chapters)).compactMap { i in
            guard let c = list[i] else { return nil }
            let tb = Double(c.pointee.time_base.num) / Double(max(1, c.pointee.time_base.den))
            let title = av_dict_get(c.pointee.metadata, "title", nil, 0).map { String(cString: $0.pointee.value) }
            return MediaChapter(start: Double(c.pointee.start) * tb, end: Double(c.pointee.end) * tb, title: title)
        }
    }

    /// The stream's display-matrix rotation in degrees as `av_display_rotation_get` gives it
    /// and ffprobe prints it (counter-clockwise, −180…180: −90 for a quarter turn clockwise,
    /// −180 for a half turn), rounded to whole quarter turns; 0 without a matrix or for a
    /// singular one.
    private static func rotation(of stream: UnsafeMutablePointer<AVStream>) -> Int {
        var size: Int = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 9 * MemoryLayout<Int32>.size else { return 0 }
        let angle = data.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
        guard angle.isFinite else { return 0 }
        return Int((angle / 90).rounded()) * 90
    }

    deinit { avformat_close_input(&format) }

    private func rewind() {
        avformat_seek_file(format, -1, Int64.min, 0, 0, 0)
        stoppedEarly = nil
    }

    /// Calls `body` for every packet of the video stream, in file order (`av_read_frame`).
    /// A read error ends the loop and is kept in ``stoppedEarly``, not thrown.
    /// - Throws: ``MediaError`` when no packet can be allocated; whatever `body` throws.
    public func forEachPacket(_ body: (PacketInfo) throws -> Void) throws {
        rewind()
        guard let pkt = av_packet_alloc() else { throw MediaError("av_packet_alloc", code: reel_averror(ENOMEM)) }
        var p: UnsafeMutablePointer<AVPacket>? = pkt
        defer { av_packet_free(&p) }
        let nopts = reel_nopts()
        while true {
            let r = av_read_frame(format, pkt)
            if r == averrorEOF { break }
            if r < 0 { stoppedEarly = MediaError("av_read_frame", code: r); break }
            defer { av_packet_unref(pkt) }
            guard pkt.pointee.stream_index == streamIndex else { continue }
            let info = PacketInfo(pts: pkt.pointee.pts == nopts ? nil : pkt.pointee.pts,
                                  dts: pkt.pointee.dts == nopts ? nil : pkt.pointee.dts,
                                  duration: pkt.pointee.duration,
                                  isKeyframe: pkt.pointee.flags & AV_PKT_FLAG_KEY != 0,
                                  size: Int(pkt.pointee.size))
            try body(info)
        }
    }

    /// Decodes every frame of the video stream in presentation order and calls `body` with
    /// each (`avcodec_send_packet`, `avcodec_receive_frame`). Packets that fail to decode are
    /// counted, not fatal; returns that count. A read error ends the loop (``stoppedEarly``).
    /// With `from` (seconds of the stream's time), decoding starts at the keyframe at or before
    /// it (`av_seek_frame`, backward), so frames a little before it may come too; with `until`,
    /// no packet whose time is past it is read.
    /// - Throws: ``MediaError`` when the decoder cannot be found or opened; whatever `body` throws.
    @discardableResult
    public func forEachFrame(from: Double? = nil, until: Double? = nil, _ body: (borrowing DecodedPicture) throws -> Void) throws -> Int {
        let tb = Double(info.timeBase.num) / Double(max(1, info.timeBase.den))
        if let from, from > 0 {
            if av_seek_frame(format, streamIndex, Int64(from / tb), AVSEEK_FLAG_BACKWARD) < 0 { rewind() }
            stoppedEarly = nil
        } else {
            rewind()
        }
        let lastPTS = until.map { Int64(($0 / tb).rounded(.up)) }
        let st = format!.pointee.streams[Int(streamIndex)]!
        guard let decoder = avcodec_find_decoder(st.pointee.codecpar.pointee.codec_id) else {
            throw MediaError("avcodec_find_decoder", message: "no decoder for \(info.codecName)")
        }
        var ctx = avcodec_alloc_context3(decoder)
        defer { avcodec_free_context(&ctx) }
        try check(avcodec_parameters_to_context(ctx, st.pointee.codecpar), "avcodec_parameters_to_context")
        ctx!.pointee.pkt_timebase = st.pointee.time_base
        ctx!.pointee.thread_count = 0
        try check(avcodec_open2(ctx, decoder, nil), "avcodec_open2(decoder \(info.codecName))")
        var pkt = av_packet_alloc()
        var frame = av_frame_alloc()
        defer { av_packet_free(&pkt); av_frame_free(&frame) }
        guard let pkt, let frame else { throw MediaError("av_frame_alloc", code: reel_averror(ENOMEM)) }
        var failures = 0
        let nopts = reel_nopts()

        func receive() throws {
            while true {
                let r = avcodec_receive_frame(ctx, frame)
                if r == averrorEAGAIN || r == averrorEOF { return }
                if r < 0 { failures += 1; return }
                defer { av_frame_unref(frame) }
                let depth = Int(reel_pix_fmt_depth(AVPixelFormat(rawValue: frame.pointee.format)))
                let plane = LumaPlane(base: UnsafeRawPointer(reel_frame_data(frame, 0)!),
                                      stride: Int(reel_frame_linesize(frame, 0)),
                                      width: Int(frame.pointee.width), height: Int(frame.pointee.height),
                                      depth: depth)
                let ts = frame.pointee.best_effort_timestamp
                var picture = DecodedPicture(pts: ts == nopts ? nil : ts, width: plane.width, height: plane.height, luma: plane)
                var sx: Int32 = 0, sy: Int32 = 0
                if reel_pix_fmt_planar_yuv(AVPixelFormat(rawValue: frame.pointee.format), &sx, &sy) != 0,
                   let cb = reel_frame_data(frame, 1), let cr = reel_frame_data(frame, 2) {
                    let cw = (plane.width + (1 << Int(sx)) - 1) >> Int(sx), ch = (plane.height + (1 << Int(sy)) - 1) >> Int(sy)
                    picture.chroma = (LumaPlane(base: UnsafeRawPointer(cb), stride: Int(reel_frame_linesize(frame, 1)), width: cw, height: ch, depth: depth),
                                      LumaPlane(base: UnsafeRawPointer(cr), stride: Int(reel_frame_linesize(frame, 2)), width: cw, height: ch, depth: depth),
                                      Int(sx), Int(sy))
                }
                try body(picture)
            }
        }

        while true {
            let r = av_read_frame(format, pkt)
            if r == averrorEOF { break }
            if r < 0 { stoppedEarly = MediaError("av_read_frame", code: r); break }
            if pkt.pointee.stream_index != streamIndex { av_packet_unref(pkt); continue }
            if let lastPTS, pkt.pointee.pts != nopts, pkt.pointee.pts > lastPTS { av_packet_unref(pkt); break }
            let s = avcodec_send_packet(ctx, pkt)
            av_packet_unref(pkt)
            if s < 0 && s != averrorEAGAIN { failures += 1 }
            try receive()
        }
        avcodec_send_packet(ctx, nil)
        try receive()
        return failures
    }
}
