import CFFmpeg
import ReelCore

extension PixelBuffer {
    /// Copies a camera image (YUYV or NV12, rows `bytesPerLine` apart) into this buffer
    /// (`reel_copy_camera_image`: `av_image_copy`).
    /// - Throws: ``MediaError`` (EINVAL) when `byteCount` is short of a whole picture.
    public func copyCameraImage(from source: UnsafeRawPointer, bytesPerLine: Int, byteCount: Int) throws(MediaError) {
        try check(reel_copy_camera_image(frame, source.assumingMemoryBound(to: UInt8.self), Int32(bytesPerLine), byteCount),
                  "copy camera image (\(bytesPerLine) bytes per line, \(byteCount) bytes)")
    }
}

/// Decodes Motion-JPEG camera frames (libavcodec `mjpeg`) into pooled buffers, converting to
/// the buffer's pixel format with libswscale.
public final class JPEGDecoder: @unchecked Sendable {
    // Used by the capture thread only.
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var decoded: UnsafeMutablePointer<AVFrame>?
    private var scaler: OpaquePointer?

    /// Opens libavcodec's MJPEG decoder (`avcodec_find_decoder`, `avcodec_open2`).
    /// - Throws: ``MediaError`` when this libavcodec has no MJPEG decoder or it cannot be opened.
    public init() throws(MediaError) {
        guard let codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG) else { throw MediaError("avcodec_find_decoder", message: "no MJPEG decoder") }
        context = avcodec_alloc_context3(codec)
        packet = av_packet_alloc()
        decoded = av_frame_alloc()
        guard context != nil, packet != nil, decoded != nil else { throw MediaError("avcodec_alloc_context3", code: reel_averror(ENOMEM)) }
        try check(avcodec_open2(context, codec, nil), "avcodec_open2(mjpeg)")
    }

    deinit {
        avcodec_free_context(&context)
        av_packet_free(&packet)
        av_frame_free(&decoded)
        if let scaler { sws_freeContext(scaler) }
    }

    /// Decodes one JPEG image into `buffer` (which has the camera's size): `avcodec_send_packet`,
    /// `avcodec_receive_frame`, then `sws_scale` into the buffer's format.
    /// - Throws: ``MediaError`` when the JPEG does not decode or is not the camera's size.
    public func decode(_ bytes: UnsafeRawPointer, count: Int, into buffer: PixelBuffer) throws(MediaError) {
        guard let packet, let decoded else { return }
        packet.pointee.data = UnsafeMutablePointer(mutating: bytes.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(count)
        try check(avcodec_send_packet(context, packet), "avcodec_send_packet(mjpeg)")
        try check(avcodec_receive_frame(context, decoded), "avcodec_receive_frame(mjpeg)")
        defer { av_frame_unref(decoded) }
        guard Int(decoded.pointee.width) == buffer.size.width, Int(decoded.pointee.height) == buffer.size.height else {
            throw MediaError("mjpeg", message: "a \(decoded.pointee.width)x\(decoded.pointee.height) JPEG from a \(buffer.size) camera")
        }
        if scaler == nil {
            scaler = sws_getContext(decoded.pointee.width, decoded.pointee.height, AVPixelFormat(rawValue: decoded.pointee.format),
                                    Int32(buffer.size.width), Int32(buffer.size.height), buffer.format.av, SWS_POINT, nil, nil, nil)
            guard scaler != nil else {
                throw MediaError("sws_getContext", message: "cannot convert the camera's JPEG pixels to \(buffer.format)")
            }
        }
        try check(reel_sws_scale_frame(scaler, decoded, buffer.frame), "sws_scale(mjpeg)")
    }
}
