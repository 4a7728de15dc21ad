import CFFmpeg
import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// One compressed frame, valid only inside the callback it is passed to (the encoder
/// reuses the packet afterwards); `~Copyable` so it cannot be stored by accident.
public struct EncodedPacket: ~Copyable {
    let packet: UnsafeMutablePointer<AVPacket>

    init(_ packet: UnsafeMutablePointer<AVPacket>) { self.packet = packet }

    /// The packet is a keyframe (`AV_PKT_FLAG_KEY`).
    public var isKeyframe: Bool { packet.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    /// The packet's size in bytes.
    public var byteCount: Int { Int(packet.pointee.size) }
    /// Presentation time on the encoder's time base (one tick per `FrameRate.frameDuration`).
    public var pts: Int64 { packet.pointee.pts }
}

/// The settings an encoder is opened with.
public struct EncoderSettings: Sendable, Hashable {
    /// The codec and its profile.
    public var codec: VideoCodec
    /// The encoded frame size, in pixels.
    public var size: Size
    /// The frame rate (the codec context's `framerate`; it sets the GOP's default length).
    public var rate: FrameRate
    /// Ticks per second of the pts passed to `encode` (the session clock's timescale).
    public var timescale: Int32
    /// libavcodec threads; 0 lets the codec use every core.
    public var threads: Int
    /// A keyframe at least this often for long-GOP codecs (frames); 0 means one per second.
    public var keyframeInterval: Int

    /// Settings for `codec` at `size` and `rate`; `timescale` nil: the rate's own; `threads` 0:
    /// every core; `keyframeInterval` 0: one a second.
    public init(codec: VideoCodec, size: Size, rate: FrameRate, timescale: Int32? = nil, threads: Int = 0, keyframeInterval: Int = 0) {
        self.codec = codec; self.size = size; self.rate = rate
        self.timescale = timescale ?? rate.timescale
        self.threads = threads; self.keyframeInterval = keyframeInterval
    }
}

/// A libavcodec encoder for one clip: feeds it cropped frames (converting the pixel
/// format with libswscale when the codec needs another), and hands out its packets.
///
/// Used by one thread at a time: the writer's encode thread, then the clip's finaliser.
public final class VideoEncoder: @unchecked Sendable {
    let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    /// Reused for every frame: references the caller's buffer, cropped in place.
    private let view: UnsafeMutablePointer<AVFrame>
    private var converter: PixelConverter?
    private var converted: PixelBufferPool?
    /// The settings it was opened with.
    public let settings: EncoderSettings
    /// Frames passed to `encode` so far.
    public private(set) var framesSent = 0
    /// The duration of each frame in the encoder, by pts: its packet gets it (an encoder that
    /// delays frames, x264, gives its packets one tick otherwise — wrong on a clock finer
    /// than a frame, and for a variable frame rate).
    private var durations: [Int64: Int64] = [:]
    /// Frames between keyframes (the GOP).
    private let gop: Int
    /// After `warmUp()`: keyframes are chosen per frame through `gop_size` (FFV1 makes frame
    /// `n` a keyframe when `gop_size == 0 || n % gop_size == 0`, counting the warm-up frame).
    private var keyframesByHand = false

    /// Opens the encoder (`avcodec_find_encoder_by_name`, `avcodec_open2`).
    /// - Parameter globalHeader: the container wants codec extradata in its header (MP4, MOV, MKV).
    /// - Throws: `MediaError` naming the failed call (no such encoder, `avcodec_open2` refusing the
    ///   settings, out of memory).
    public init(_ settings: EncoderSettings, globalHeader: Bool) throws(MediaError) {
        self.settings = settings
        let codec = settings.codec
        guard let encoder = avcodec_find_encoder_by_name(codec.encoderName) else {
            throw MediaError("avcodec_find_encoder_by_name", message: "this libavcodec has no \(codec.encoderName) encoder")
        }
        guard let ctx = avcodec_alloc_context3(encoder) else { throw MediaError("avcodec_alloc_context3", code: reel_averror(ENOMEM)) }
        guard let pkt = av_packet_alloc(), let fr = av_frame_alloc() else {
            var c: UnsafeMutablePointer<AVCodecContext>? = ctx
            avcodec_free_context(&c)
            throw MediaError("av_packet_alloc", code: reel_averror(ENOMEM))
        }
        context = ctx; packet = pkt; view = fr

        ctx.pointee.width = Int32(settings.size.width)
        ctx.pointee.height = Int32(settings.size.height)
        ctx.pointee.pix_fmt = codec.inputFormat.av
        ctx.pointee.time_base = AVRational(num: 1, den: settings.timescale)
        ctx.pointee.framerate = AVRational(num: settings.rate.frames, den: settings.rate.seconds)
        ctx.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
        ctx.pointee.thread_count = Int32(settings.threads)
        ctx.pointee.thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE
        let gop = settings.keyframeInterval > 0 ? settings.keyframeInterval : max(1, Int(settings.rate.perSecond.rounded()))
        self.gop = gop
        ctx.pointee.gop_size = Int32(gop)
        if globalHeader { ctx.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }

        var options: OpaquePointer? = nil
        defer { av_dict_free(&options) }
        switch codec {
        case .prores(let profile):
            ctx.pointee.profile = profile.ffmpegProfile
            av_dict_set(&options, "vendor", "apl0", 0)
        case .h264:
            av_dict_set(&options, "preset", "veryfast", 0)
        case .hevc:
            av_dict_set(&options, "preset", "ultrafast", 0)
            av_dict_set(&options, "x265-params", "log-level=error", 0)
        case .ffv1:
            av_dict_set(&options, "level", "3", 0)
            av_dict_set(&options, "slices", "4", 0)
            av_dict_set(&options, "slicecrc", "1", 0)
        }
        let r = avcodec_open2(ctx, encoder, &options)
        // Every stored property is set: deinit frees the context if this throws.
        if r < 0 { throw MediaError("avcodec_open2(\(codec.encoderName) \(settings.size))", code: r) }
    }

    /// Does ahead of time the work an encoder would otherwise do on its first frame, so that
    /// the first real frame costs what every other frame costs. Only FFV1 needs it: on its
    /// first frame libavcodec allocates and zeroes its worst-case packet buffer (148 bytes a
    /// pixel: 545 MB at 1920×1920, 300–600 ms here). A black frame is encoded and its packet
    /// thrown away; from then on keyframes are placed by hand, at the same frames as before
    /// (every `gop` frames from the first real one). Call before the first `encode`.
    /// - Throws: `MediaError` naming the failed libavcodec call (`avcodec_send_frame`,
    ///   `avcodec_receive_packet`) or allocation.
    ///
    /// A codec whose input no camera gives (ProRes's 10-bit 4:2:2) converts every frame: its
    /// conversion buffers are made here and their pages written, so that the encoder's memory
    /// is what it will stay from its first frame. Made on first use instead, each buffer became
    /// resident the first time a frame needed it — one more (8 MB at 1080p) whenever the
    /// encoder fell a frame further behind than before — and a clip's memory stepped up for
    /// the rest of the clip (issue 25's soak).
    public func warmUp() throws {
        if converted == nil, !Self.cameraFormats.contains(settings.codec.inputFormat) {
            // Three planes (every format but the cameras' is planar 4:2:0, 4:2:2 or 4:4:4).
            let format = settings.codec.inputFormat, height = settings.size.height
            converted = try makeConversionPool { b in
                for i in 0..<3 {
                    let (base, stride) = b.plane(i)
                    memset(base, 0, stride * (i > 0 && format == .yuvj420p ? (height + 1) / 2 : height))
                }
            }
        }
        guard case .ffv1 = settings.codec, framesSent == 0, !keyframesByHand else { return }
        let black = try PixelBuffer(size: settings.size, format: settings.codec.inputFormat)
        for i in 0..<3 {   // FFV1 is fed yuv420p
            let (base, stride) = black.plane(i)
            let rows = i == 0 ? settings.size.height : (settings.size.height + 1) / 2
            memset(base, i == 0 ? 16 : 128, stride * rows)
        }
        self.black = black
        try encodeBlack()
        keyframesByHand = true
    }

    /// A black frame of the encoder's own, encoded and thrown away (`warmUp`, `release`).
    private var black: PixelBuffer?

    private func encodeBlack() throws {
        guard let black else { return }
        av_frame_unref(view)
        try check(av_frame_ref(view, black.frame), "av_frame_ref")
        view.pointee.pts = -1
        view.pointee.pkt_duration = 1
        let r = avcodec_send_frame(context, view)
        av_frame_unref(view)
        try check(r, "avcodec_send_frame(\(settings.codec.encoderName) warm-up)")
        while true {
            let r = avcodec_receive_packet(context, packet)
            if r == averrorEAGAIN { break }
            try check(r, "avcodec_receive_packet(\(settings.codec.encoderName) warm-up)")
            av_packet_unref(packet)
        }
    }

    /// Makes a restartable encoder let go of the last frame it was given (FFV1 keeps a
    /// reference to it until the next): its own black frame is encoded in its place, so that
    /// an idle encoder holds no sensor buffer.
    /// - Throws: `MediaError` naming the failed libavcodec call.
    public func releaseInput() throws {
        guard canRestart else { return }
        try encodeBlack()
    }

    /// Whether the encoder can start another clip (`restart()`): a warmed-up FFV1 encoder,
    /// which holds no frames back (nothing to drain) and places its keyframes by hand.
    public var canRestart: Bool { keyframesByHand }

    /// Starts another clip of the same size on this encoder instead of opening a new one (and
    /// zeroing a new packet buffer): the next frame is a keyframe, from which FFV1 starts its
    /// contexts afresh. The clip before must not be flushed.
    public func restart() {
        precondition(canRestart)
        framesSent = 0
        durations = [:]
    }

    private func freeAll() {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&c)
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
        var f: UnsafeMutablePointer<AVFrame>? = view
        av_frame_free(&f)
    }

    deinit { freeAll() }

    /// Encodes the `crop` of `buffer` at `pts` (encoder ticks), then passes every packet the
    /// encoder has ready to `drain`. The buffer is referenced, not copied, when its pixel
    /// format is the codec's; otherwise it is converted into a pooled buffer.
    /// - Parameter forceKeyframe: the frame starts a clip (or a fragment) and must be a keyframe.
    /// - Throws: `MediaError` for a crop of another size or a failed call (`av_frame_ref`,
    ///   `av_frame_apply_cropping`, conversion, `avcodec_send_frame`, `avcodec_receive_packet`);
    ///   what `drain` throws.
    public func encode(_ buffer: PixelBuffer, crop: CropRect, pts: Int64, duration: Int64,
                       forceKeyframe: Bool = false,
                       drain: (borrowing EncodedPacket) throws -> Void) throws {
        guard crop.size == settings.size else {
            throw MediaError("encode", message: "frame is \(crop.size), the encoder was opened at \(settings.size)")
        }
        av_frame_unref(view)
        try check(av_frame_ref(view, buffer.frame), "av_frame_ref")
        view.pointee.crop_left = crop.x
        view.pointee.crop_top = crop.y
        view.pointee.crop_right = buffer.size.width - crop.x - crop.width
        view.pointee.crop_bottom = buffer.size.height - crop.y - crop.height
        try check(av_frame_apply_cropping(view, Int32(AV_FRAME_CROP_UNALIGNED)), "av_frame_apply_cropping")

        var holder: PixelBufferLease? = nil
        if buffer.format != settings.codec.inputFormat {
            let lease = try convert(from: buffer.format)
            av_frame_unref(view)
            try check(av_frame_ref(view, lease.buffer.frame), "av_frame_ref")
            holder = lease
        }
        _ = holder
        view.pointee.pts = pts
        view.pointee.pkt_duration = duration
        durations[pts] = duration
        view.pointee.pict_type = forceKeyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE
        if keyframesByHand {
            context.pointee.gop_size = forceKeyframe || framesSent % gop == 0 ? 0 : Int32.max
        }
        let r = avcodec_send_frame(context, view)
        av_frame_unref(view)
        try check(r, "avcodec_send_frame(\(settings.codec.encoderName))")
        framesSent += 1
        try receive(duration: duration, drain: drain)
    }

    /// Sends end-of-stream and drains every packet still inside the encoder.
    /// - Throws: `MediaError` for a failed `avcodec_send_frame` or `avcodec_receive_packet`; what
    ///   `drain` throws.
    public func flush(duration: Int64, drain: (borrowing EncodedPacket) throws -> Void) throws {
        let r = avcodec_send_frame(context, nil)
        if r < 0 && r != averrorEOF { try check(r, "avcodec_send_frame(flush)") }
        try receive(duration: duration, drain: drain)
    }

    private func receive(duration: Int64, drain: (borrowing EncodedPacket) throws -> Void) throws {
        while true {
            let r = avcodec_receive_packet(context, packet)
            if r == averrorEAGAIN || r == averrorEOF { return }
            try check(r, "avcodec_receive_packet(\(settings.codec.encoderName))")
            if let d = durations.removeValue(forKey: packet.pointee.pts) {
                packet.pointee.duration = d
            } else if packet.pointee.duration == 0 {
                packet.pointee.duration = duration
            }
            defer { av_packet_unref(packet) }
            try drain(EncodedPacket(packet))
        }
    }

    /// The conversion buffers, once made (`warmUp` makes them for ProRes; otherwise the first
    /// frame that needs converting does).
    public var conversionPool: PixelBufferPool? { converted }

    /// The formats cameras give (the synthetic sensor, V4L2): a codec whose input is another
    /// converts every frame.
    static let cameraFormats: Set<PixelFormat> = [.yuv420p, .nv12, .yuyv422]

    /// The conversion buffers: frame threads hold a reference to every frame in flight, so
    /// threads + a margin.
    private func makeConversionPool(prepare: (PixelBuffer) -> Void = { _ in }) throws(MediaError) -> PixelBufferPool {
        try PixelBufferPool(count: max(4, Int(context.pointee.thread_count) + 3), size: settings.size,
                            format: settings.codec.inputFormat, prepare: prepare)
    }

    /// Converts `view` (already cropped) into a pooled buffer of the codec's format
    /// (`PixelConverter`: Reel's own loop for yuv420p → yuv422p10, libswscale otherwise).
    private func convert(from source: PixelFormat) throws(MediaError) -> PixelBufferLease {
        let conv: PixelConverter
        if let c = converter, c.source == source {
            conv = c
        } else {
            conv = try PixelConverter(from: source, to: settings.codec.inputFormat, size: settings.size)
            converter = conv
        }
        if converted == nil { converted = try makeConversionPool() }
        guard let lease = converted?.lease() else {
            throw MediaError("convert", message: "no free conversion buffer (the encoder holds them all)")
        }
        try conv.convert(frame: view, into: lease.buffer)
        return lease
    }
}
