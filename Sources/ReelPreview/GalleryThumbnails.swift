import CTurboJPEG
import ReelCore
import ReelMedia

/// The gallery's thumbnails, as JPEG (TurboJPEG): a clip's first frame decoded (libavcodec,
/// through `MediaReader`), in colour; a photo scaled down.
enum GalleryThumbnails {
    /// Thumbnails are at most this wide (decimated by a whole factor).
    static let maxWidth = 320
    /// Their JPEG quality.
    static let quality: Int32 = 80

    /// The first decoded frame of `reader`'s video stream, decimated by a whole factor to at
    /// most `maxWidth`, as a JPEG: in colour (4:2:0) from planar YUV (any depth, any chroma
    /// subsampling), in grey (its luma) from anything else; turned upright as a player shows it
    /// (the stream's display matrix: a portrait clip stored landscape has a portrait
    /// thumbnail); nil when nothing decodes.
    static func firstFrame(of reader: MediaReader) -> [UInt8]? {
        struct Done: Error {}
        let turns = reader.info.displayQuarterTurns
        var made: [UInt8]? = nil
        do {
            try reader.forEachFrame { picture in
                let luma = picture.luma
                var step = 1
                while luma.width / step > maxWidth { step += 1 }
                let w = (luma.width / step) & ~1, h = (luma.height / step) & ~1
                guard w > 0, h > 0 else { return }
                var y = [UInt8](repeating: 0, count: w * h)
                for row in 0..<h {
                    for col in 0..<w { y[row * w + col] = UInt8(clamping: luma.sample(x: col * step, y: row * step)) }
                }
                guard let chroma = picture.chroma else {
                    let (upright, uw, uh) = turned(y, width: w, height: h, quarterTurns: turns)
                    made = encode(upright, width: uw, height: uh, format: TJPF_GRAY, subsampling: TJSAMP_GRAY)
                    throw Done()
                }
                // Each 4:2:0 chroma sample is the source's at its top-left luma sample.
                let cw = w / 2, ch = h / 2
                var cb = [UInt8](repeating: 128, count: cw * ch), cr = cb
                for row in 0..<ch {
                    let sy = min((2 * row * step) >> chroma.shiftY, chroma.cb.height - 1)
                    for col in 0..<cw {
                        let sx = min((2 * col * step) >> chroma.shiftX, chroma.cb.width - 1)
                        cb[row * cw + col] = UInt8(clamping: chroma.cb.sample(x: sx, y: sy))
                        cr[row * cw + col] = UInt8(clamping: chroma.cr.sample(x: sx, y: sy))
                    }
                }
                let (uy, uw, uh) = turned(y, width: w, height: h, quarterTurns: turns)
                made = encodeYUV(uy, turned(cb, width: cw, height: ch, quarterTurns: turns).0,
                                 turned(cr, width: cw, height: ch, quarterTurns: turns).0, width: uw, height: uh)
                throw Done()   // one frame is enough
            }
        } catch is Done {
        } catch {
            return nil
        }
        return made
    }

    /// `plane` (`width`×`height`) turned clockwise by `quarterTurns` quarter turns, and its
    /// size after.
    static func turned(_ plane: [UInt8], width: Int, height: Int, quarterTurns: Int) -> ([UInt8], Int, Int) {
        let t = ((quarterTurns % 4) + 4) % 4
        guard t != 0 else { return (plane, width, height) }
        let (ow, oh) = t == 2 ? (width, height) : (height, width)
        var out = [UInt8](repeating: 0, count: plane.count)
        for oy in 0..<oh {
            for ox in 0..<ow {
                // The source sample shown at (ox, oy) once turned.
                let (sx, sy): (Int, Int)
                switch t {
                case 1: (sx, sy) = (oy, height - 1 - ox)
                case 2: (sx, sy) = (width - 1 - ox, height - 1 - oy)
                default: (sx, sy) = (width - 1 - oy, ox)
                }
                out[oy * ow + ox] = plane[sy * width + sx]
            }
        }
        return (out, ow, oh)
    }

    /// `tjCompressFromYUVPlanes` of 4:2:0 planes (`width`×`height` luma, half each way chroma).
    private static func encodeYUV(_ y: [UInt8], _ cb: [UInt8], _ cr: [UInt8], width: Int, height: Int) -> [UInt8]? {
        guard let handle = tjInitCompress() else { return nil }
        defer { if tjDestroy(handle) != 0 { /* nothing left to release it with */ } }
        var out: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        var strides: [Int32] = [Int32(width), Int32(width / 2), Int32(width / 2)]
        let status: Int32 = y.withUnsafeBufferPointer { yp in
            cb.withUnsafeBufferPointer { up in
                cr.withUnsafeBufferPointer { vp in
                    var planes: [UnsafePointer<UInt8>?] = [yp.baseAddress, up.baseAddress, vp.baseAddress]
                    return tjCompressFromYUVPlanes(handle, &planes, Int32(width), &strides, Int32(height), Int32(TJSAMP_420.rawValue),
                                                   &out, &size, quality, TJFLAG_FASTDCT)
                }
            }
        }
        defer { if let out { tjFree(out) } }
        guard status == 0, let out else { return nil }
        return Array(UnsafeBufferPointer(start: out, count: Int(size)))
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
