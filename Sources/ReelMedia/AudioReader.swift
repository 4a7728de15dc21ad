import CFFmpeg
import ReelCore

/// A file's sound, decoded to 16-bit interleaved samples, with what the container says of its
/// start and end applied by Reel itself.
public struct DecodedAudio: Sendable {
    /// Interleaved samples, `channels` a frame: the clip's real sound (priming and end padding cut).
    public var samples: [Int16]
    /// Samples per frame.
    public var channels: Int
    /// Sample frames per second.
    public var sampleRate: Int
    /// The codec's short name (`pcm_s16le`, `aac`, `opus`).
    public var codecName: String
    /// Sample frames the decoder gave, before Reel cut anything: what a player that ignores the
    /// edit list plays (FFmpeg 5.1 with a fragmented MOV/MP4).
    public var decodedFrames: Int
    /// Sample frames cut from the start: the encoder's priming, which the first packets are
    /// stamped before 0 for (the MOV edit list's media time).
    public var primingFrames: Int
    /// Where the clip's sound starts on its timeline, in sample frames (its first sample's pts).
    public var startFrame: Int64
    /// Sample frames after the cuts.
    public var frames: Int { samples.count / max(1, channels) }
}

/// What a file's first audio stream says of itself (its header).
public struct AudioStreamInfo: Sendable, Codable, Equatable {
    /// The codec's short name (`pcm_s16le`, `aac`, `opus`).
    public var codec: String
    /// Sample frames per second.
    public var sampleRate: Int
    /// Channels.
    public var channels: Int
    /// The stream's duration in seconds as the container says (null when it does not).
    public var durationSeconds: Double?
}

/// Decodes the first audio stream of a file (libavformat, libavcodec).
public enum AudioReader {
    /// The first audio stream's header, nil when the file has none (or cannot be opened).
    public static func streamInfo(_ path: String) -> AudioStreamInfo? {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        guard avformat_open_input(&ctx, path, nil, nil) >= 0 else { return nil }
        defer { avformat_close_input(&ctx) }
        guard avformat_find_stream_info(ctx, nil) >= 0 else { return nil }
        let idx = av_find_best_stream(ctx, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        guard idx >= 0, let st = ctx!.pointee.streams[Int(idx)], let par = st.pointee.codecpar else { return nil }
        let tb = st.pointee.time_base
        let d = st.pointee.duration != reel_nopts() && tb.den != 0 ? Double(st.pointee.duration) * Double(tb.num) / Double(tb.den) : nil
        return AudioStreamInfo(codec: String(cString: avcodec_get_name(par.pointee.codec_id)), sampleRate: Int(par.pointee.sample_rate),
                               channels: Int(par.pointee.ch_layout.nb_channels), durationSeconds: d)
    }

    /// Whether `path` has an audio stream (nil when it cannot be opened).
    public static func hasAudio(_ path: String) -> Bool {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        guard avformat_open_input(&ctx, path, nil, nil) >= 0 else { return false }
        defer { avformat_close_input(&ctx) }
        guard avformat_find_stream_info(ctx, nil) >= 0 else { return false }
        return av_find_best_stream(ctx, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0) >= 0
    }

    /// Decodes every sample of the first audio stream. Samples stamped before 0 (priming the
    /// demuxer did not skip) are cut, and in MOV/MP4 so is what lies past the track's end (its
    /// duration, which the last packet's duration sets: the last frame's padding).
    /// - Throws: ``MediaError`` (open, no audio stream, no decoder, a decoding failure).
    public static func decode(_ path: String) throws(MediaError) -> DecodedAudio {
        var ctx: UnsafeMutablePointer<AVFormatContext>? = nil
        let r = avformat_open_input(&ctx, path, nil, nil)
        if r < 0 { throw MediaError("open \(path)", code: r) }
        defer { avformat_close_input(&ctx) }
        try check(avformat_find_stream_info(ctx, nil), "avformat_find_stream_info \(path)")
        let idx = av_find_best_stream(ctx, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        if idx < 0 { throw MediaError(path, message: "no audio stream") }
        let st = ctx!.pointee.streams[Int(idx)]!
        let par = st.pointee.codecpar!
        guard let dec = avcodec_find_decoder(par.pointee.codec_id) else {
            throw MediaError("avcodec_find_decoder", message: "no decoder for \(String(cString: avcodec_get_name(par.pointee.codec_id)))")
        }
        var dctx = avcodec_alloc_context3(dec)
        guard let d = dctx else { throw MediaError("avcodec_alloc_context3", code: reel_averror(ENOMEM)) }
        defer { avcodec_free_context(&dctx) }
        try check(avcodec_parameters_to_context(d, par), "avcodec_parameters_to_context")
        d.pointee.pkt_timebase = st.pointee.time_base
        try check(avcodec_open2(d, dec, nil), "avcodec_open2(audio)")
        let channels = Int(par.pointee.ch_layout.nb_channels)
        let rate = Int(par.pointee.sample_rate)
        var pkt = av_packet_alloc()
        var frame = av_frame_alloc()
        defer { av_packet_free(&pkt); av_frame_free(&frame) }
        guard let pkt, let frame else { throw MediaError("av_packet_alloc", code: reel_averror(ENOMEM)) }
        let tb = st.pointee.time_base
        func toFrames(_ v: Int64) -> Int64 { av_rescale_q(v, tb, AVRational(num: 1, den: Int32(rate))) }
        var samples: [Int16] = []
        var firstPTS: Int64? = nil
        var scratch = [Int16](repeating: 0, count: 8192 * max(1, channels))
        func drain() throws(MediaError) {
            while true {
                let rr = avcodec_receive_frame(d, frame)
                if rr == averrorEAGAIN || rr == averrorEOF { return }
                try check(rr, "avcodec_receive_frame(audio)")
                if firstPTS == nil, frame.pointee.pts != reel_nopts() { firstPTS = toFrames(frame.pointee.pts) }
                guard Int(frame.pointee.ch_layout.nb_channels) == channels else {
                    throw MediaError("decode \(path)", message: "a frame of \(frame.pointee.ch_layout.nb_channels) channels in a stream of \(channels)")
                }
                let need = Int(frame.pointee.nb_samples) * channels
                if scratch.count < need { scratch = [Int16](repeating: 0, count: need) }
                let got = scratch.withUnsafeMutableBufferPointer { reel_read_audio_frame(frame, $0.baseAddress, Int32(channels)) }
                if got == 0 && frame.pointee.nb_samples > 0 {
                    throw MediaError("decode \(path)", message: "samples in a format Reel does not read")
                }
                samples.append(contentsOf: scratch[0..<Int(got)])
                av_frame_unref(frame)
            }
        }
        while av_read_frame(ctx, pkt) >= 0 {
            defer { av_packet_unref(pkt) }
            guard pkt.pointee.stream_index == idx else { continue }
            var sr = avcodec_send_packet(d, pkt)
            if sr == averrorEAGAIN {
                // The decoder is full: take its frames, then give it the packet again.
                try drain()
                sr = avcodec_send_packet(d, pkt)
            }
            if sr < 0 { throw MediaError("avcodec_send_packet(audio)", code: sr) }
            try drain()
        }
        _ = avcodec_send_packet(d, nil)
        try drain()
        let decoded = samples.count / max(1, channels)
        let start = firstPTS ?? 0
        let priming = Int(max(0, -start))
        var end = decoded
        let isMOV = String(cString: ctx!.pointee.iformat.pointee.name).hasPrefix("mov")
        if isMOV, st.pointee.duration != reel_nopts(), st.pointee.duration > 0 {
            // The track's duration runs from its first packet's time (the priming's start).
            end = min(decoded, Int(toFrames(st.pointee.duration)))
        }
        let kept = priming < end ? Array(samples[(priming * channels)..<(end * channels)]) : []
        return DecodedAudio(samples: kept, channels: channels, sampleRate: rate,
                            codecName: String(cString: avcodec_get_name(par.pointee.codec_id)),
                            decodedFrames: decoded, primingFrames: priming, startFrame: max(0, start))
    }
}
