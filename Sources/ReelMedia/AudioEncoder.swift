import CFFmpeg
import ReelCore

/// The sound codecs Reel records with.
public enum AudioCodec: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// 16-bit PCM (`pcm_s16le`): MOV and MKV. Sample-exact with no priming.
    case pcm
    /// AAC-LC through libavcodec's `aac` encoder: MOV and MP4 (1,024 samples of priming).
    case aac
    /// Opus through libopus: MKV, 48 kHz (its pre-skip is Matroska's CodecDelay).
    case opus

    /// libavcodec's encoder name.
    public var encoderName: String {
        switch self {
        case .pcm: return "pcm_s16le"
        case .aac: return "aac"
        case .opus: return "libopus"
        }
    }

    /// `--audio-codec`'s spelling.
    public var description: String { rawValue }

    /// The codec a container records sound in when none is asked for: PCM in MOV and MKV
    /// (exact, and cheap), AAC in MP4 (which libavformat 5.1 cannot give PCM).
    public static func defaultCodec(for container: Container) -> AudioCodec { container == .mp4 ? .aac : .pcm }

    var codecID: AVCodecID {
        switch self {
        case .pcm: return AV_CODEC_ID_PCM_S16LE
        case .aac: return AV_CODEC_ID_AAC
        case .opus: return AV_CODEC_ID_OPUS
        }
    }
}

extension Container {
    /// The container can carry the sound codec: libavformat's table (`avformat_query_codec`),
    /// less Opus in MOV, which its mov muxer refuses when it writes the header ("opus only
    /// supported in MP4") although the table lists it.
    public func supports(_ codec: AudioCodec) -> Bool {
        if self == .mov && codec == .opus { return false }
        guard let fmt = av_guess_format(formatName, nil, nil) else { return false }
        return avformat_query_codec(fmt, codec.codecID, FF_COMPLIANCE_NORMAL) == 1
    }
}

/// One clip's sound encoder: takes 16-bit interleaved samples in any amounts, feeds the
/// encoder whole frames of its frame size (any size for PCM) converted to its sample format,
/// and timestamps them on the clip's sample count (time base 1 / rate).
///
/// Used by one thread at a time (the writer's encode thread, then the clip's finaliser).
public final class AudioEncoder: @unchecked Sendable {
    let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    private let frame: UnsafeMutablePointer<AVFrame>
    /// The codec.
    public let codec: AudioCodec
    /// Sample frames a second and channels.
    public let sampleRate: Int, channels: Int
    /// Samples the encoder adds before the first real one (`initial_padding`: AAC 1,024, Opus
    /// 312 at 48 kHz), which a player skips through the container's edit list or codec delay.
    public var priming: Int { Int(context.pointee.initial_padding) }
    /// Samples waiting for a whole encoder frame (interleaved).
    private var pending: [Int16] = []
    /// Sample frames sent to the encoder so far: the pts of the next frame.
    public private(set) var framesSent: Int64 = 0
    /// Real sample frames sent (without the silence that fills a last frame): a packet reaching
    /// past them has its duration cut to them, so the container says where the sound ends.
    private var realFrames: Int64 = 0
    private var frameSize: Int

    /// Opens `codec` for `channels` channels at `sampleRate` (`avcodec_find_encoder_by_name`,
    /// `avcodec_open2`).
    /// - Throws: ``MediaError`` (no such encoder, the codec refusing the rate).
    public init(codec: AudioCodec, sampleRate: Int, channels: Int, globalHeader: Bool) throws(MediaError) {
        self.codec = codec; self.sampleRate = sampleRate; self.channels = channels
        guard let enc = avcodec_find_encoder_by_name(codec.encoderName) else {
            throw MediaError("avcodec_find_encoder_by_name", message: "this libavcodec has no \(codec.encoderName) encoder")
        }
        guard let ctx = avcodec_alloc_context3(enc) else { throw MediaError("avcodec_alloc_context3", code: reel_averror(ENOMEM)) }
        guard let pkt = av_packet_alloc(), let fr = av_frame_alloc() else {
            var c: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&c)
            throw MediaError("av_packet_alloc", code: reel_averror(ENOMEM))
        }
        context = ctx; packet = pkt; frame = fr
        ctx.pointee.sample_rate = Int32(sampleRate)
        ctx.pointee.time_base = AVRational(num: 1, den: Int32(sampleRate))
        ctx.pointee.sample_fmt = reel_first_sample_format(enc)
        av_channel_layout_default(&ctx.pointee.ch_layout, Int32(channels))
        if codec == .aac { ctx.pointee.bit_rate = Int64(96_000 * channels) }
        if codec == .opus { ctx.pointee.bit_rate = Int64(64_000 * channels) }
        if globalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        // Every stored property is set before the call that can throw: deinit frees them then.
        frameSize = 0
        try check(avcodec_open2(ctx, enc, nil), "avcodec_open2(\(codec.encoderName) \(sampleRate) Hz)")
        frameSize = codec == .pcm ? 0 : Int(ctx.pointee.frame_size)
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        var f: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&f)
    }

    /// Encodes `samples` (interleaved, whole sample frames): whole encoder frames go to the
    /// encoder, a remainder waits for the next call or `flush`.
    /// - Throws: ``MediaError`` (`av_frame_get_buffer`, `avcodec_send_frame`, `avcodec_receive_packet`)
    ///   or what `drain` throws.
    public func encode(_ samples: UnsafeBufferPointer<Int16>, drain: (borrowing EncodedPacket) throws -> Void) throws {
        pending.append(contentsOf: samples)
        let whole = frameSize == 0 ? pending.count / channels : frameSize
        var offset = 0
        while whole > 0, pending.count - offset >= whole * channels {
            try send(from: offset, frames: whole, drain: drain)
            offset += whole * channels
        }
        if offset > 0 { pending.removeFirst(offset) }
    }

    /// Sends what waits (a short last frame) and drains the encoder (`avcodec_send_frame(NULL)`).
    /// - Throws: as `encode`.
    public func flush(drain: (borrowing EncodedPacket) throws -> Void) throws {
        if !pending.isEmpty {
            let frames = pending.count / channels
            // An encoder without small last frames gets a frame of silence to fill it.
            let fill = frameSize > 0 && context.pointee.codec.pointee.capabilities & Int32(AV_CODEC_CAP_SMALL_LAST_FRAME) == 0
            if fill { pending.append(contentsOf: repeatElement(0, count: (frameSize - frames) * channels)) }
            try send(from: 0, frames: fill ? frameSize : frames, real: frames, drain: drain)
            pending.removeAll()
        }
        let r = avcodec_send_frame(context, nil)
        if r < 0 && r != averrorEOF { try check(r, "avcodec_send_frame(flush)") }
        try receive(drain)
    }

    private func send(from offset: Int, frames: Int, real: Int? = nil, drain: (borrowing EncodedPacket) throws -> Void) throws {
        realFrames += Int64(real ?? frames)
        av_frame_unref(frame)
        frame.pointee.nb_samples = Int32(frames)
        frame.pointee.format = context.pointee.sample_fmt.rawValue
        frame.pointee.sample_rate = Int32(sampleRate)
        try check(av_channel_layout_copy(&frame.pointee.ch_layout, &context.pointee.ch_layout), "av_channel_layout_copy")
        try check(av_frame_get_buffer(frame, 0), "av_frame_get_buffer")
        pending.withUnsafeBufferPointer { src in
            reel_fill_audio_frame(frame, src.baseAddress! + offset, Int32(frames), Int32(channels))
        }
        frame.pointee.pts = framesSent
        framesSent += Int64(frames)
        try check(avcodec_send_frame(context, frame), "avcodec_send_frame(\(codec.encoderName))")
        try receive(drain)
    }

    private func receive(_ drain: (borrowing EncodedPacket) throws -> Void) throws {
        while true {
            let r = avcodec_receive_packet(context, packet)
            if r == averrorEAGAIN || r == averrorEOF { return }
            try check(r, "avcodec_receive_packet(\(codec.encoderName))")
            defer { av_packet_unref(packet) }
            if packet.pointee.pts != reel_nopts(), packet.pointee.pts + packet.pointee.duration > realFrames {
                packet.pointee.duration = max(0, realFrames - packet.pointee.pts)
            }
            try drain(EncodedPacket(packet))
        }
    }
}
