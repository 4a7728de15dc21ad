import CTurboJPEG
import ReelCore
import ReelMedia

/// The gallery's thumbnails, as JPEG (TurboJPEG): a clip's first frame decoded (libavcodec,
/// through `MediaReader`), a photo scaled down.
enum GalleryThumbnails {
    /// Thumbnails are at most this wide (decimated by a whole factor).
    static let maxWidth = 320
    /// Their JPEG quality.
    static let quality: Int32 = 80

    /// The first decoded frame of `reader`'s video stream, its luma decimated by a whole factor
    /// to at most `maxWidth` and encoded as a grey-scale JPEG; nil when nothing decodes.
    static func firstFrame(of reader: MediaReader) -> [UInt8]? {
        struct Done: Error {}
        var grey: (pixels: [UInt8], width: Int, height: Int)? = nil
        do {
            try reader.forEachFrame { picture in
                let luma = picture.luma
                var step = 1
                while luma.width / step > maxWidth { step += 1 }
                let w = luma.width / step, h = luma.height / step
                guard w > 0, h > 0 else { return }
                var pixels = [UInt8](repeating: 0, count: w * h)
                for y in 0..<h {
                    for x in 0..<w { pixels[y * w + x] = UInt8(clamping: luma.sample(x: x * step, y: y * step)) }
                }
                grey = (pixels, w, h)
                throw Done()   // one frame is enough
            }
        } catch is Done {
        } catch {
            return nil
        }
        guard let grey else { return nil }
        return encode(grey.pixels, width: grey.width, height: grey.height, format: TJPF_GRAY, subsampling: TJSAMP_GRAY)
    }

    /// The JPEG `jpeg` decoded at the largest TurboJPEG scale (1/1, 1/2, 1/4, 1/8) at most
    /// `maxWidth` wide (or the smallest), and encoded again; nil when it does not decode.
    static func scaled(_ jpeg: [UInt8], maxWidth: Int) -> [UInt8]? {
        guard let handle = tjInitDecompress() else { return nil }
        defer { if tjDestroy(handle) != 0 { /* nothing left to release it with */ } }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        let header = jpeg.withUnsafeBufferPointer { tjDecompressHeader3(handle, $0.baseAddress, UInt($0.count), &width, &height, &subsampling, &colorspace) }
        guard header == 0, width > 0, height > 0 else { return nil }
        var denominator: Int32 = 1
        while denominator < 8 && (Int(width) + Int(denominator) - 1) / Int(denominator) > maxWidth { denominator *= 2 }
        let w = (Int(width) + Int(denominator) - 1) / Int(denominator), h = (Int(height) + Int(denominator) - 1) / Int(denominator)
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        let decoded = jpeg.withUnsafeBufferPointer { src in
            rgb.withUnsafeMutableBufferPointer { dst in
                tjDecompress2(handle, src.baseAddress, UInt(src.count), dst.baseAddress, Int32(w), 0, Int32(h),
                              Int32(TJPF_RGB.rawValue), TJFLAG_FASTDCT)
            }
        }
        guard decoded == 0 else { return nil }
        return encode(rgb, width: w, height: h, format: TJPF_RGB, subsampling: TJSAMP_420)
    }

    /// `tjCompress2` of `pixels` (`width`×`height` in `format`) at `quality`; nil when it fails.
    private static func encode(_ pixels: [UInt8], width: Int, height: Int, format: TJPF, subsampling: TJSAMP) -> [UInt8]? {
        guard let handle = tjInitCompress() else { return nil }
        defer { if tjDestroy(handle) != 0 { /* nothing left to release it with */ } }
        var out: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let status = pixels.withUnsafeBufferPointer {
            tjCompress2(handle, $0.baseAddress, Int32(width), 0, Int32(height), Int32(format.rawValue), &out, &size,
                        Int32(subsampling.rawValue), quality, TJFLAG_FASTDCT)
        }
        defer { if let out { tjFree(out) } }
        guard status == 0, let out else { return nil }
        return Array(UnsafeBufferPointer(start: out, count: Int(size)))
    }
}
