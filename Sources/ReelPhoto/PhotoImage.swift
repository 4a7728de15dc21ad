import ReelCapture
import ReelCore
import ReelMedia
#if canImport(Glibc)
import Glibc
#endif

/// A photo's own pixels: 8-bit 4:2:0 planes, tightly packed, copied out of a sensor buffer
/// so the buffer goes back to the sensor at once.
public final class PhotoImage: @unchecked Sendable { // written only before it is handed on
    /// The picture's width, in pixels.
    public let width: Int
    /// The picture's height, in pixels.
    public let height: Int
    let y: UnsafeMutableBufferPointer<UInt8>
    let u: UnsafeMutableBufferPointer<UInt8>
    let v: UnsafeMutableBufferPointer<UInt8>

    /// The chroma planes' width (4:2:0: half).
    public var chromaWidth: Int { width / 2 }
    /// The chroma planes' height (4:2:0: half).
    public var chromaHeight: Int { height / 2 }
    /// Bytes the planes hold.
    public var byteCount: Int { y.count + u.count + v.count }

    /// Allocates planes for an even `width`×`height` picture.
    public init(width: Int, height: Int) {
        self.width = width; self.height = height
        y = .allocate(capacity: width * height)
        u = .allocate(capacity: (width / 2) * (height / 2))
        v = .allocate(capacity: (width / 2) * (height / 2))
    }

    deinit { y.deallocate(); u.deallocate(); v.deallocate() }

    /// Bytes a picture of this size takes.
    public static func byteCount(width: Int, height: Int) -> Int { width * height + 2 * (width / 2) * (height / 2) }

    /// Copies `crop` out of an 8-bit sensor buffer: 4:2:0 planar (the synthetic sensor, a
    /// decoded MJPEG camera frame), NV12 or YUYV (V4L2 cameras; their chroma is taken apart
    /// into planes, YUYV's 4:2:2 chroma averaged over each pair of rows).
    /// - Throws: `PhotoError.unsupportedPixelFormat` for any other format.
    /// `reuse`: a picture of the crop's size to copy into (a prepared buffer) instead of a new one.
    public static func copy(_ buffer: PixelBuffer, crop: CropRect, into reuse: PhotoImage? = nil) throws(PhotoError) -> PhotoImage {
        let fits = reuse.map { $0.width == crop.width && $0.height == crop.height } ?? false
        let image = fits ? reuse! : PhotoImage(width: crop.width, height: crop.height)
        switch buffer.format {
        case .yuv420p, .yuvj420p: break
        case .nv12: return copyNV12(buffer, crop: crop, into: image)
        case .yuyv422: return copyYUYV(buffer, crop: crop, into: image)
        default: throw PhotoError.unsupportedPixelFormat(String(describing: buffer.format))
        }
        image.copyPlane(buffer.plane(0), x: crop.x, y: crop.y, into: image.y, width: crop.width, height: crop.height)
        image.copyPlane(buffer.plane(1), x: crop.x / 2, y: crop.y / 2, into: image.u, width: crop.width / 2, height: crop.height / 2)
        image.copyPlane(buffer.plane(2), x: crop.x / 2, y: crop.y / 2, into: image.v, width: crop.width / 2, height: crop.height / 2)
        return image
    }

    /// NV12: the luma plane, then the interleaved CbCr plane split into two.
    private static func copyNV12(_ buffer: PixelBuffer, crop: CropRect, into image: PhotoImage) -> PhotoImage {
        image.copyPlane(buffer.plane(0), x: crop.x, y: crop.y, into: image.y, width: crop.width, height: crop.height)
        let (uv, stride) = buffer.plane(1)
        let cw = crop.width / 2
        for row in 0..<(crop.height / 2) {
            let line = uv + (crop.y / 2 + row) * stride + (crop.x / 2) * 2
            for x in 0..<cw {
                image.u[row * cw + x] = line[2 * x]
                image.v[row * cw + x] = line[2 * x + 1]
            }
        }
        return image
    }

    /// YUYV (Y0 U Y1 V per pair of pixels): luma taken apart, chroma of each pair of rows averaged.
    private static func copyYUYV(_ buffer: PixelBuffer, crop: CropRect, into image: PhotoImage) -> PhotoImage {
        let (p, stride) = buffer.plane(0)
        let w = crop.width, cw = crop.width / 2
        for row in 0..<crop.height {
            let line = p + (crop.y + row) * stride + crop.x * 2
            let out = row * w
            for x in 0..<w { image.y[out + x] = line[2 * x] }
        }
        for row in 0..<(crop.height / 2) {
            let a = p + (crop.y + 2 * row) * stride + crop.x * 2, b = a + stride
            for x in 0..<cw {
                image.u[row * cw + x] = UInt8((Int(a[4 * x + 1]) + Int(b[4 * x + 1]) + 1) / 2)
                image.v[row * cw + x] = UInt8((Int(a[4 * x + 3]) + Int(b[4 * x + 3]) + 1) / 2)
            }
        }
        return image
    }

    private func copyPlane(_ source: (base: UnsafeMutablePointer<UInt8>, stride: Int), x: Int, y row0: Int,
                           into out: UnsafeMutableBufferPointer<UInt8>, width: Int, height: Int) {
        guard let d = out.baseAddress else { return }
        for row in 0..<height {
            (d + row * width).update(from: source.base + (row0 + row) * source.stride + x, count: width)
        }
    }

    /// Writes every byte of the planes once, so their pages exist before the first photo
    /// (a prepared buffer); returns self.
    func touched() -> PhotoImage {
        y.update(repeating: 16); u.update(repeating: 128); v.update(repeating: 128)
        return self
    }

    /// A copy of the planes.
    public func duplicate() -> PhotoImage {
        let out = PhotoImage(width: width, height: height)
        out.y.baseAddress!.update(from: y.baseAddress!, count: y.count)
        out.u.baseAddress!.update(from: u.baseAddress!, count: u.count)
        out.v.baseAddress!.update(from: v.baseAddress!, count: v.count)
        return out
    }

    /// This picture with frame `frameIndex`'s sensor noise added to its luma (a new image).
    public func withNoise(_ noise: SensorNoise, frameIndex: Int) -> PhotoImage {
        let out = duplicate()
        noise.apply(luma: out.y.baseAddress!, width: width, height: height, stride: width, frameIndex: frameIndex)
        return out
    }

    /// Multi-frame noise reduction: each luma sample of `self` (the reference) averaged with
    /// the samples of `others` at the same place that lie within `threshold` of it (a sample
    /// further away is motion or a different picture there, and is left out); chroma is the
    /// reference's.
    public func merged(with others: [PhotoImage], threshold: Int) -> PhotoImage {
        let out = duplicate()
        let n = y.count
        let sources = others.filter { $0.width == width && $0.height == height }.map { UnsafePointer($0.y.baseAddress!) }
        let ref = UnsafePointer(y.baseAddress!), dst = out.y.baseAddress!
        for i in 0..<n {
            let r = Int(ref[i])
            var sum = r, count = 1
            for s in sources {
                let v = Int(s[i])
                if abs(v - r) <= threshold { sum += v; count += 1 }
            }
            dst[i] = UInt8((sum + count / 2) / count)
        }
        return out
    }

    /// Peak signal-to-noise ratio of this picture's luma against `clean`'s, in dB (∞ when equal).
    public func lumaPSNR(against clean: PhotoImage) -> Double {
        var squared = 0.0
        let a = y.baseAddress!, b = clean.y.baseAddress!
        for i in 0..<min(y.count, clean.y.count) { let d = Double(Int(a[i]) - Int(b[i])); squared += d * d }
        let mse = squared / Double(max(1, y.count))
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// The picture turned by `quarterTurns` × 90° clockwise (a new image; 0 returns self).
    public func rotated(quarterTurns: Int) -> PhotoImage {
        let turns = ((quarterTurns % 4) + 4) % 4
        if turns == 0 { return self }
        let (w, h) = turns == 2 ? (width, height) : (height, width)
        let out = PhotoImage(width: w, height: h)
        Self.rotate(y, width: width, height: height, turns: turns, into: out.y)
        Self.rotate(u, width: chromaWidth, height: chromaHeight, turns: turns, into: out.u)
        Self.rotate(v, width: chromaWidth, height: chromaHeight, turns: turns, into: out.v)
        return out
    }

    private static func rotate(_ src: UnsafeMutableBufferPointer<UInt8>, width: Int, height: Int, turns: Int,
                               into dst: UnsafeMutableBufferPointer<UInt8>) {
        switch turns {
        case 1: // clockwise: (x, y) -> (h-1-y, x) in a height-wide picture
            for row in 0..<height {
                let line = row * width
                let col = height - 1 - row
                for x in 0..<width { dst[x * height + col] = src[line + x] }
            }
        case 2:
            let n = width * height
            for i in 0..<n { dst[n - 1 - i] = src[i] }
        default: // counter-clockwise: (x, y) -> (y, w-1-x)
            for row in 0..<height {
                let line = row * width
                for x in 0..<width { dst[(width - 1 - x) * height + row] = src[line + x] }
            }
        }
    }
}
