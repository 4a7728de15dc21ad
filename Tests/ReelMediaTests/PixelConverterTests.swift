import Testing
import ReelCore
import ReelMedia
#if canImport(Glibc)
import Glibc
#endif

@Suite struct PixelConverterTests {
    /// A yuv420p buffer of pseudo-random samples (every value 0–255 occurs).
    func noise(_ size: Size, seed: UInt64) throws -> PixelBuffer {
        let b = try PixelBuffer(size: size, format: .yuv420p)
        var x = seed
        for plane in 0..<3 {
            let (base, stride) = b.plane(plane)
            let rows = plane == 0 ? size.height : (size.height + 1) / 2
            for i in 0..<(stride * rows) {
                x = x &* 6364136223846793005 &+ 1442695040888963407
                base[i] = UInt8(truncatingIfNeeded: x >> 56)
            }
        }
        return b
    }

    func bytes(_ b: PixelBuffer) -> [[UInt8]] {
        (0..<3).map { plane in
            let (base, stride) = b.plane(plane)
            let width = (plane == 0 ? b.size.width : (b.size.width + 1) / 2) * 2
            return (0..<b.size.height).flatMap { row in Array(UnsafeBufferPointer(start: base + row * stride, count: width)) }
        }
    }

    /// Reel's own yuv420p → yuv422p10 loop gives libswscale's SWS_POINT output byte for byte,
    /// for the crops every ratio makes of the 1920 sensor and for odd sizes and offsets.
    @Test(arguments: [
        (1920, 1920, CropRect(x: 0, y: 420, width: 1920, height: 1080)),
        (1920, 1920, CropRect(x: 420, y: 0, width: 1080, height: 1920)),
        (1920, 1920, CropRect(x: 0, y: 240, width: 1920, height: 1440)),
        (1920, 1920, CropRect(x: 0, y: 0, width: 1920, height: 1920)),
        (130, 98, CropRect(x: 2, y: 4, width: 98, height: 62)),
        (67, 34, CropRect(x: 0, y: 0, width: 67, height: 34)),
    ])
    func directPathMatchesSwscale(width: Int, height: Int, crop: CropRect) throws {
        let source = try noise(Size(width: width, height: height), seed: UInt64(width * 7 + crop.y))
        let direct = try PixelConverter(from: .yuv420p, to: .yuv422p10, size: crop.size)
        let sws = try PixelConverter(from: .yuv420p, to: .yuv422p10, size: crop.size, direct: false)
        #expect(direct.path == .direct && sws.path == .swscale)
        let a = try PixelBuffer(size: crop.size, format: .yuv422p10)
        let b = try PixelBuffer(size: crop.size, format: .yuv422p10)
        try direct.convert(source, crop: crop, into: a)
        try sws.convert(source, crop: crop, into: b)
        let (x, y) = (bytes(a), bytes(b))
        for plane in 0..<3 {
            let firstDifference = zip(x[plane], y[plane]).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(firstDifference == nil, "plane \(plane) differs first at byte \(firstDifference ?? -1)")
        }
    }

    @Test func otherPairsGoThroughSwscale() throws {
        let c = try PixelConverter(from: .nv12, to: .yuv422p10, size: Size(width: 64, height: 64))
        #expect(c.path == .swscale)
        // At an odd height libswscale picks chroma rows its own way: it keeps doing so.
        let odd = try PixelConverter(from: .yuv420p, to: .yuv422p10, size: Size(width: 67, height: 33))
        #expect(odd.path == .swscale)
    }

    @Test func aMismatchedCropIsRefused() throws {
        let source = try noise(Size(width: 64, height: 64), seed: 1)
        let c = try PixelConverter(from: .yuv420p, to: .yuv422p10, size: Size(width: 32, height: 32))
        let out = try PixelBuffer(size: Size(width: 32, height: 32), format: .yuv422p10)
        #expect(throws: MediaError.self) { try c.convert(source, crop: CropRect(x: 48, y: 0, width: 32, height: 32), into: out) }
        #expect(throws: MediaError.self) { try c.convert(source, crop: CropRect(x: 0, y: 0, width: 64, height: 64), into: out) }
    }
}
