import CFFmpeg
import ReelCore

/// Converts frames from one pixel format to another at the same size, for encoders that want
/// another format than the source gives (ProRes wants 4:2:2 10-bit; sensors give 4:2:0 8-bit).
///
/// yuv420p → yuv422p10 at an even height (every ProRes recording from the synthetic sensor)
/// has a direct path:
/// each sample times 4, each chroma row used for two output rows. That is exactly what
/// libswscale's nearest-neighbour scaler (`SWS_POINT`, ffmpeg's `-sws_flags neighbor`) outputs
/// for this pair, byte for byte (`PixelConverterTests` compares the two), at a third of its
/// cost: libswscale runs its general scaler (a horizontal and a vertical filter pass per row)
/// even when neither size changes. Every other pair goes through libswscale (`sws_scale`).
///
/// Used by one thread at a time.
public final class PixelConverter {
    /// How a converter converts.
    public enum Path: String, Sendable {
        /// libswscale, `SWS_POINT`.
        case swscale
        /// Reel's own loop (yuv420p → yuv422p10 only).
        case direct
    }

    /// The format it converts from.
    public let source: PixelFormat
    /// The format it converts to.
    public let target: PixelFormat
    /// The frame size, the same on both sides.
    public let size: Size
    /// Reel's own loop or libswscale.
    public let path: Path
    private let scaler: OpaquePointer?

    /// A converter from `source` to `target` at `size`; `direct: false` forces libswscale
    /// (for comparison). Throws when `sws_getContext` cannot convert the pair.
    public init(from source: PixelFormat, to target: PixelFormat, size: Size, direct: Bool = true) throws(MediaError) {
        self.source = source; self.target = target; self.size = size
        if direct && Self.hasDirectPath(from: source, to: target, size: size) {
            path = .direct
            scaler = nil
        } else {
            let w = Int32(size.width), h = Int32(size.height)
            guard let s = sws_getContext(w, h, source.av, w, h, target.av, SWS_POINT, nil, nil, nil) else {
                throw MediaError("sws_getContext", message: "cannot convert \(source) to \(target)")
            }
            path = .swscale
            scaler = s
        }
    }

    deinit { if let scaler { sws_freeContext(scaler) } }

    /// Whether `source` → `target` at `size` has Reel's own loop: yuv420p → yuv422p10 at an
    /// even height (at an odd height libswscale does not map chroma row `r` to source row `r / 2`).
    public static func hasDirectPath(from source: PixelFormat, to target: PixelFormat, size: Size) -> Bool {
        source == .yuv420p && target == .yuv422p10 && size.height % 2 == 0
    }

    /// Converts the `crop` of `buffer` (of the converter's size) into `output` (of the
    /// converter's size and target format). Throws when the sizes or formats do not match,
    /// or `sws_scale` fails.
    public func convert(_ buffer: PixelBuffer, crop: CropRect, into output: PixelBuffer) throws(MediaError) {
        guard crop.size == size, output.size == size, buffer.format == source, output.format == target,
              crop.x >= 0, crop.y >= 0, crop.x + crop.width <= buffer.size.width, crop.y + crop.height <= buffer.size.height else {
            throw MediaError("convert", message: "cannot convert a \(crop.size) crop of a \(buffer.size) \(buffer.format) buffer into \(output.size) \(output.format) with a \(size) \(source)→\(target) converter")
        }
        guard let view = av_frame_alloc() else { throw MediaError("av_frame_alloc", code: reel_averror(ENOMEM)) }
        var v: UnsafeMutablePointer<AVFrame>? = view
        defer { av_frame_free(&v) }
        try check(av_frame_ref(view, buffer.frame), "av_frame_ref")
        view.pointee.crop_left = crop.x
        view.pointee.crop_top = crop.y
        view.pointee.crop_right = buffer.size.width - crop.x - crop.width
        view.pointee.crop_bottom = buffer.size.height - crop.y - crop.height
        try check(av_frame_apply_cropping(view, Int32(AV_FRAME_CROP_UNALIGNED)), "av_frame_apply_cropping")
        try convert(frame: view, into: output)
    }

    /// Converts `frame` (already cropped to the converter's size, in its source format).
    func convert(frame: UnsafeMutablePointer<AVFrame>, into output: PixelBuffer) throws(MediaError) {
        switch path {
        case .swscale:
            try check(reel_sws_scale_frame(scaler, frame, output.frame), "sws_scale")
        case .direct:
            let w = size.width, h = size.height
            let cw = (w + 1) / 2
            let (y, ys) = (reel_frame_data(frame, 0)!, Int(reel_frame_linesize(frame, 0)))
            let (oy, oys) = output.plane(0)
            for row in 0..<h {
                Self.widen(y + row * ys, to: UnsafeMutableRawPointer(oy + row * oys), count: w)
            }
            for plane in 1...2 {
                let (c, cs) = (reel_frame_data(frame, Int32(plane))!, Int(reel_frame_linesize(frame, Int32(plane))))
                let (oc, ocs) = output.plane(plane)
                var row = 0
                while row < h {   // h is even
                    let out = UnsafeMutableRawPointer(oc + row * ocs)
                    Self.widen(c + (row / 2) * cs, to: out, count: cw)
                    (oc + (row + 1) * ocs).update(from: oc + row * ocs, count: cw * 2)
                    row += 2
                }
            }
        }
    }

    /// `count` 8-bit samples to 10-bit 16-bit ones (`s << 2`; little-endian, as on every
    /// machine Reel builds for). A plain loop that the compiler vectorizes (`pmovzxbw`,
    /// `psllw`): Swift's generic SIMD conversions go element by element through the stack.
    @inline(__always)
    private static func widen(_ from: UnsafePointer<UInt8>, to: UnsafeMutableRawPointer, count: Int) {
        let out = to.assumingMemoryBound(to: UInt16.self)
        for i in 0..<count { out[i] = UInt16(truncatingIfNeeded: from[i]) &<< 2 }
    }
}
