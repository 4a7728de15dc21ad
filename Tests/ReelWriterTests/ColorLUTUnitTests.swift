import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import Testing

/// The luma and chroma of pixel (x, y) in any of the three layouts.
private func yuv(_ b: PixelBuffer, _ x: Int, _ y: Int) -> (y: Int, u: Int, v: Int) {
    let (p0, s0) = b.plane(0)
    switch b.format {
    case .yuyv422:
        let row = p0 + y * s0
        return (Int(row[2 * x]), Int(row[(x / 2) * 4 + 1]), Int(row[(x / 2) * 4 + 3]))
    case .nv12:
        let (p1, s1) = b.plane(1)
        return (Int(p0[y * s0 + x]), Int(p1[(y / 2) * s1 + (x / 2) * 2]), Int(p1[(y / 2) * s1 + (x / 2) * 2 + 1]))
    default:
        let (p1, s1) = b.plane(1), (p2, s2) = b.plane(2)
        return (Int(p0[y * s0 + x]), Int(p1[(y / 2) * s1 + x / 2]), Int(p2[(y / 2) * s2 + x / 2]))
    }
}

/// Fills `b` with in-gamut colours (every YUV here is an RGB inside the cube), flat over each
/// chroma block: luma 40…200, chroma 128 ± 24.
private func fill(_ b: PixelBuffer) {
    let (p0, s0) = b.plane(0)
    let w = b.size.width, h = b.size.height
    for y in 0..<h { for x in 0..<w {
        let bx = x / 2, by = y / 2
        let l = UInt8(60 + (bx * 7 + by * 3) % 120), u = UInt8(116 + (bx * 5) % 24), v = UInt8(116 + (by * 3 + bx) % 24)
        switch b.format {
        case .yuyv422:
            let row = p0 + y * s0
            row[2 * x] = l; row[(x / 2) * 4 + 1] = u; row[(x / 2) * 4 + 3] = v
        case .nv12:
            let (p1, s1) = b.plane(1)
            p0[y * s0 + x] = l; p1[(y / 2) * s1 + (x / 2) * 2] = u; p1[(y / 2) * s1 + (x / 2) * 2 + 1] = v
        default:
            let (p1, s1) = b.plane(1), (p2, s2) = b.plane(2)
            p0[y * s0 + x] = l; p1[(y / 2) * s1 + x / 2] = u; p2[(y / 2) * s2 + x / 2] = v
        }
    } }
}

private func cube(_ name: String, _ map: (Int, Int, Int) -> (Int, Int, Int)) throws -> ColorLUT {
    let dir = NSTemporaryDirectory() + "reel-lut-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    var text = "LUT_3D_SIZE 2\n"
    for b in 0...1 { for g in 0...1 { for r in 0...1 { let o = map(r, g, b); text += "\(o.0) \(o.1) \(o.2)\n" } } }
    try text.write(toFile: dir + "/\(name).cube", atomically: true, encoding: .utf8)
    return try ColorLUT.load(cubeFile: dir + "/\(name).cube")
}

/// `ColorLUT` through `ImageAdjustments`, pixel by pixel, in each layout it takes.
@Suite struct ColorLUTUnitTests {
    static let size = Size(width: 64, height: 64)

    private func frame(_ format: PixelFormat) throws -> (PixelBufferPool, SourceFrame, SourceFormat) {
        let pool = try PixelBufferPool(count: 1, size: Self.size, format: format)
        let lease = try #require(pool.lease())
        fill(lease.buffer)
        let fmt = SourceFormat(size: Self.size, pixelFormat: format, rate: FrameRate(frames: 30)!, timescale: 30, supportedRatios: [.square])
        return (pool, SourceFrame(lease: lease, index: 3, pts: Timestamp(value: 3, timescale: 30)), fmt)
    }

    /// An identity `.cube` leaves every sample within ±1 (rounding); one that swaps red and
    /// blue gives each pixel the YUV of its colour with R and B swapped (±2 per sample).
    @Test(arguments: [PixelFormat.yuv420p, .nv12, .yuyv422])
    func identityAndSwapCubes(_ format: PixelFormat) throws {
        let (_, src, fmt) = try frame(format)
        let identity = try cube("identity") { r, g, b in (r, g, b) }
        let swap = try cube("swaprb") { r, g, b in (b, g, r) }
        #expect(identity.title == "identity" && identity.size == 2)
        let adjustments = ImageAdjustments(buffers: 2)
        try adjustments.change(format: fmt, timeout: 0) { $0.effect = .lut(identity) }
        let same = try #require(adjustments.process(src, format: fmt))
        try adjustments.change(format: fmt, timeout: 0) { $0.effect = .lut(swap) }
        let swapped = try #require(adjustments.process(src, format: fmt))
        for y in 0..<64 { for x in 0..<64 {
            let a = yuv(src.lease.buffer, x, y), b = yuv(same.lease.buffer, x, y)
            #expect(abs(a.y - b.y) <= 1 && abs(a.u - b.u) <= 1 && abs(a.v - b.v) <= 1, "\(format) identity at \(x),\(y): \(a) -> \(b)")
            let c = BT709.rgb(y: Double(a.y), u: Double(a.u), v: Double(a.v))
            let want = BT709.yuv(r: c.2, g: c.1, b: c.0)
            let got = yuv(swapped.lease.buffer, x, y)
            #expect(abs(want.0 - Double(got.y)) <= 2 && abs(want.1 - Double(got.u)) <= 2 && abs(want.2 - Double(got.v)) <= 2,
                    "\(format) swap at \(x),\(y): \(a) -> \(got), want \(want)")
        } }
    }

    /// The built-in LUTs keep black and white where the frame barcode needs them (dark under
    /// 95, bright over 155): sepia, cool and warm map luma 16 and 235 (neutral) to within 4.
    @Test func builtInLUTsKeepBlackAndWhite() {
        for lut in ColorLUT.builtIn {
            let t = lut.yuvTable
            _ = t
            for (y, want) in [(16.0, 16.0), (235.0, 235.0)] {
                let c = BT709.rgb(y: y, u: 128, v: 128)
                let o = lut.lookup(c.0, c.1, c.2)
                let out = BT709.yuv(r: o.0, g: o.1, b: o.2)
                #expect(abs(out.0 - want) <= 4, "\(lut.title): luma \(y) -> \(out.0)")
            }
        }
    }

    /// Frames per second of each effect at 1920×1080 yuv420p on one core (printed, not
    /// asserted: the figure is for docs/controls.md): the sepia LUT against the grayscale effect
    /// (a copy with chroma set) in the same run, alternating, 3 rounds of 30 frames.
    @Test func lutThroughputAt1080p() throws {
        let size = Size(width: 1920, height: 1080)
        let pool = try PixelBufferPool(count: 1, size: size, format: .yuv420p)
        let lease = try #require(pool.lease())
        fill(lease.buffer)
        let fmt = SourceFormat(size: size, pixelFormat: .yuv420p, rate: FrameRate(frames: 30)!, timescale: 30, supportedRatios: [.landscape16x9])
        let src = SourceFrame(lease: lease, index: 0, pts: Timestamp(value: 0, timescale: 30))
        let adjustments = ImageAdjustments(buffers: 2)
        var rates: [String: [Double]] = [:]
        for _ in 0..<3 {
            for (name, effect) in [("sepia", PictureEffect.lut(ColorLUT.sepia)), ("grayscale", .grayscale)] {
                try adjustments.change(format: fmt, timeout: 0) { $0.effect = effect }
                let start = MonotonicClock.now()
                for _ in 0..<30 { _ = try #require(adjustments.process(src, format: fmt)) }
                rates[name, default: []].append(30 / MonotonicClock.seconds(since: start))
            }
        }
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first ?? "?"
        print("1920x1080 yuv420p frames/s — sepia LUT: \(rates["sepia"]!.map { Int($0) }), grayscale: \(rates["grayscale"]!.map { Int($0) }) (load \(load))")
        #expect(rates["sepia"]!.allSatisfy { $0 > 0 })
    }
}
