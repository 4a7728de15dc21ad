import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import Synchronization
import Testing

/// A pixel's luma and the chroma of the sample it uses, in any of the three layouts.
private func pixel(_ b: PixelBuffer, _ x: Int, _ y: Int) -> (y: UInt8, u: UInt8, v: UInt8) {
    let (p0, s0) = b.plane(0)
    switch b.format {
    case .yuyv422:
        let row = p0 + y * s0
        return (row[2 * x], row[(x / 2) * 4 + 1], row[(x / 2) * 4 + 3])
    case .nv12:
        let (p1, s1) = b.plane(1)
        return (p0[y * s0 + x], p1[(y / 2) * s1 + (x / 2) * 2], p1[(y / 2) * s1 + (x / 2) * 2 + 1])
    default:
        let (p1, s1) = b.plane(1), (p2, s2) = b.plane(2)
        return (p0[y * s0 + x], p1[(y / 2) * s1 + x / 2], p2[(y / 2) * s2 + x / 2])
    }
}

/// Writes a pixel's luma and its sample's chroma.
private func setPixel(_ b: PixelBuffer, _ x: Int, _ y: Int, _ luma: UInt8, _ u: UInt8, _ v: UInt8) {
    let (p0, s0) = b.plane(0)
    switch b.format {
    case .yuyv422:
        let row = p0 + y * s0
        row[2 * x] = luma; row[(x / 2) * 4 + 1] = u; row[(x / 2) * 4 + 3] = v
    case .nv12:
        let (p1, s1) = b.plane(1)
        p0[y * s0 + x] = luma; p1[(y / 2) * s1 + (x / 2) * 2] = u; p1[(y / 2) * s1 + (x / 2) * 2 + 1] = v
    default:
        let (p1, s1) = b.plane(1), (p2, s2) = b.plane(2)
        p0[y * s0 + x] = luma; p1[(y / 2) * s1 + x / 2] = u; p2[(y / 2) * s2 + x / 2] = v
    }
}

/// Where a background thread leaves what `change` returned.
private final class Answer: Sendable { let value = Mutex<Int?>(nil) }

/// `ImageAdjustments` pixel by pixel on a 64×64 picture in each layout it takes.
@Suite struct ImageAdjustmentsTests {
    static let size = Size(width: 64, height: 64)

    /// A frame whose luma and chroma differ everywhere (luma 16…205, so +24 stays under 235).
    private func source(_ format: PixelFormat) throws -> (PixelBufferPool, SourceFrame, SourceFormat) {
        let pool = try PixelBufferPool(count: 1, size: Self.size, format: format)
        let lease = try #require(pool.lease())
        for y in 0..<64 { for x in 0..<64 {
            setPixel(lease.buffer, x, y, UInt8(16 + (3 * x + 5 * y) % 190), UInt8(60 + x), UInt8(200 - y))
        } }
        let fmt = SourceFormat(size: Self.size, pixelFormat: format, rate: FrameRate(frames: 30)!, timescale: 30, supportedRatios: [.square])
        return (pool, SourceFrame(lease: lease, index: 7, pts: Timestamp(value: 7, timescale: 30)), fmt)
    }

    /// Zoom 2 and one stop: each output pixel is the source pixel at the centre crop's
    /// matching place (32×32 at 16,16), luma 24 brighter; chroma comes from the sample the
    /// crop maps to. `change` returns the index of the frame that first shows it.
    @Test(arguments: [PixelFormat.yuv420p, .nv12, .yuyv422])
    func zoomAndBrightnessMapEveryPixel(_ format: PixelFormat) throws {
        let (_, frame, fmt) = try source(format)
        let adjustments = ImageAdjustments(buffers: 2)
        #expect(ImageAdjustments.zoomCrop(2, in: Self.size) == CropRect(x: 16, y: 16, width: 32, height: 32))
        #expect(try #require(adjustments.process(frame, format: fmt)).lease === frame.lease, "untouched: the frame itself")
        let applied = Answer()
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let at = try? adjustments.change(format: fmt, timeout: 30) { $0.zoom = 2; $0.exposureBias = 1 }
            applied.value.withLock { $0 = at }
            done.signal()
        }
        // The change is asked for (the next frame shows it) before the frame is processed.
        for _ in 0..<3000 where adjustments.settings.zoom != 2 { usleep(1000) }
        let out = try #require(adjustments.process(frame, format: fmt))
        done.wait()
        #expect(applied.value.withLock { $0 } == 7)
        #expect(out.index == 7 && out.lease !== frame.lease && out.lease.buffer.size == Self.size)
        for y in 0..<64 { for x in 0..<64 {
            let got = pixel(out.lease.buffer, x, y)
            let from = pixel(frame.lease.buffer, 16 + x / 2, 16 + y / 2)
            #expect(got.y == from.y + 24, "\(format) luma at \(x),\(y)")
            // 4:2:0: chroma sample (x/2, y/2) comes from sample (8 + x/4, 8 + y/4); YUYV: a pair's from its first pixel's source pair.
            let chromaFrom = format == .yuyv422 ? pixel(frame.lease.buffer, 16 + (x & ~1) / 2, 16 + y / 2)
                                                : pixel(frame.lease.buffer, 2 * (8 + x / 4), 2 * (8 + y / 4))
            #expect(got.u == chromaFrom.u && got.v == chromaFrom.v, "\(format) chroma at \(x),\(y)")
        } }
    }

    /// Grayscale: chroma 128 everywhere, luma untouched; −2 stops clip at 16, never below.
    @Test(arguments: [PixelFormat.yuv420p, .nv12, .yuyv422])
    func grayscaleAndDarkening(_ format: PixelFormat) throws {
        let (_, frame, fmt) = try source(format)
        let adjustments = ImageAdjustments(buffers: 2)
        #expect(try adjustments.change(format: fmt, timeout: 0) { $0.effect = .grayscale } == nil, "no frame came: nil")
        let gray = try #require(adjustments.process(frame, format: fmt))
        for y in 0..<64 { for x in 0..<64 {
            let got = pixel(gray.lease.buffer, x, y)
            #expect(got.y == pixel(frame.lease.buffer, x, y).y && got.u == 128 && got.v == 128, "\(format) at \(x),\(y)")
        } }
        try adjustments.change(format: fmt, timeout: 0) { $0.effect = .none; $0.exposureBias = -2 }
        let dark = try #require(adjustments.process(frame, format: fmt))
        for y in 0..<64 { for x in 0..<64 {
            let from = pixel(frame.lease.buffer, x, y)
            #expect(pixel(dark.lease.buffer, x, y).y == UInt8(max(16, Int(from.y) - 48)), "\(format) at \(x),\(y)")
        } }
        // Both pool buffers are out (gray, dark): the next frame has none and is dropped (nil).
        #expect(adjustments.process(frame, format: fmt) == nil)
    }
}

/// An output that keeps the crop of every frame it takes.
private final class CropKeeper: FrameOutput, Sendable {
    let crops = Mutex<[CropRect]>([])
    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult { crops.withLock { $0.append(frame.crop) }; return .taken }
}

@Suite struct PicturePanTests {
    /// The pan places the ratio's crop in the zoomed picture (Center Stage's): every output is
    /// handed the crop where it lies, from the frame after the change; the default is centred.
    @Test func theOutputsTakeTheCropWhereThePanPutsIt() throws {
        let source = try SyntheticSource(size: 1280, rate: FrameRate(frames: 30)!, realtime: false, buffers: 4)
        let session = try CaptureSession(source: source, ratio: .landscape16x9)
        let keeper = CropKeeper()
        try session.addOutput(keeper)
        _ = try session.run(frameLimit: 3)
        #expect(keeper.crops.withLock { $0 } == Array(repeating: CropRect(x: 0, y: 280, width: 1280, height: 720), count: 3))
        try session.adjustments.change(format: source.format, timeout: 0) { $0.pan = PicturePoint(x: 0.5, y: 0) }
        keeper.crops.withLock { $0 = [] }
        _ = try session.run(frameLimit: 2)
        #expect(keeper.crops.withLock { $0 } == Array(repeating: CropRect(x: 0, y: 0, width: 1280, height: 720), count: 2))
        try session.adjustments.change(format: source.format, timeout: 0) { $0.pan = PicturePoint(x: 0.5, y: 1) }
        keeper.crops.withLock { $0 = [] }
        _ = try session.run(frameLimit: 2)
        #expect(keeper.crops.withLock { $0 } == Array(repeating: CropRect(x: 0, y: 560, width: 1280, height: 720), count: 2))
        #expect(AspectRatio.landscape16x9.crop(in: Size(width: 1280, height: 1280), pan: (0.5, 0.25)) == CropRect(x: 0, y: 140, width: 1280, height: 720))
        // A photo of another ratio is taken centred where the video's crop was moved to.
        let top = CropRect(x: 0, y: 0, width: 1280, height: 720)
        #expect(AspectRatio.landscape4x3.crop(in: Size(width: 1280, height: 1280), centredOn: top) == CropRect(x: 0, y: 0, width: 1280, height: 960))
        let low = CropRect(x: 0, y: 400, width: 1280, height: 720)
        #expect(AspectRatio.landscape4x3.crop(in: Size(width: 1280, height: 1280), centredOn: low) == CropRect(x: 0, y: 280, width: 1280, height: 960))
        #expect(AspectRatio.landscape16x9.crop(in: Size(width: 1280, height: 1280), centredOn: AspectRatio.landscape16x9.crop(in: Size(width: 1280, height: 1280)))
                == AspectRatio.landscape16x9.crop(in: Size(width: 1280, height: 1280)))
    }
}
