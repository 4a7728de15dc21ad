import Foundation
import Testing
import ReelCore
import ReelMedia

@Suite struct PixelBufferPoolTests {
    @Test func leasesRunOutAndComeBack() throws {
        let pool = try PixelBufferPool(count: 3, size: Size(width: 64, height: 64), format: .yuv420p)
        var leases = (0..<3).compactMap { _ in pool.lease() }
        #expect(leases.count == 3 && pool.lease() == nil && pool.available == 0)
        leases.removeLast()
        #expect(pool.available == 1)
        #expect(pool.lease() != nil)
    }

    @Test func aBufferAnEncoderStillHoldsIsNotLeasedAgain() throws {
        // FFV1 keeps a reference to the last picture it coded until it is freed.
        let size = Size(width: 320, height: 240)
        let pool = try PixelBufferPool(count: 1, size: size, format: .yuv420p)
        var encoder: VideoEncoder? = try VideoEncoder(EncoderSettings(codec: .ffv1, size: size, rate: FrameRate(frames: 30)!, threads: 2), globalHeader: true)
        var packets = 0
        do {
            let lease = try #require(pool.lease())
            try encoder!.encode(lease.buffer, crop: CropRect(x: 0, y: 0, width: 320, height: 240), pts: 0, duration: 1) { _ in packets += 1 }
        }
        #expect(pool.lease() == nil, "the encoder still references the only buffer")
        try encoder!.flush(duration: 1) { _ in packets += 1 }
        #expect(packets == 1)
        encoder = nil   // the encoder's last reference goes with it
        #expect(pool.lease() != nil)
    }

    @Test func encoderRefusesAFrameOfTheWrongSize() throws {
        let pool = try PixelBufferPool(count: 1, size: Size(width: 64, height: 64), format: .yuv420p)
        let encoder = try VideoEncoder(EncoderSettings(codec: .ffv1, size: Size(width: 32, height: 32), rate: FrameRate(frames: 30)!), globalHeader: false)
        let lease = try #require(pool.lease())
        #expect(throws: MediaError.self) {
            try encoder.encode(lease.buffer, crop: CropRect(x: 0, y: 0, width: 64, height: 64), pts: 0, duration: 1) { _ in }
        }
    }
}

/// Issue 25's soak: ProRes's conversion buffers are made and written when the encoder is
/// opened (ahead of its clip), so the encoder's memory is what it stays — not a buffer more
/// becoming resident mid-clip whenever the encoder falls a frame further behind.
@Suite struct ConversionPoolTests {
    /// The share of `length` bytes at `base` whose pages are resident (mincore).
    static func resident(_ base: UnsafeMutableRawPointer, _ length: Int) -> Double {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = Int(bitPattern: base) & ~(page - 1), end = Int(bitPattern: base) + length
        let pages = (end - start + page - 1) / page
        var vec = [UInt8](repeating: 0, count: pages)
        guard mincore(UnsafeMutableRawPointer(bitPattern: start), end - start, &vec) == 0 else { return -1 }
        return Double(vec.filter { $0 & 1 != 0 }.count) / Double(pages)
    }

    @Test func proResWarmUpMakesItsConversionBuffersResident() throws {
        let size = Size(width: 1920, height: 1080)
        let prores = try VideoEncoder(EncoderSettings(codec: .prores(.standard), size: size, rate: FrameRate(frames: 30)!), globalHeader: true)
        #expect(prores.conversionPool == nil, "nothing is made before warmUp")
        try prores.warmUp()
        let pool = try #require(prores.conversionPool)
        #expect(pool.count >= 4)
        var shares: [Double] = []
        pool.withEachIdleBuffer(keepingIdle: 0) { b in
            for i in 0..<3 {
                let (base, stride) = b.plane(i)
                shares.append(Self.resident(base, stride * size.height))
            }
        }
        #expect(shares.count == pool.count * 3)
        #expect(shares.allSatisfy { $0 == 1 }, "every page of every plane resident: \(shares)")
        // H.264 takes the cameras' 4:2:0: nothing to convert, nothing made.
        let h264 = try VideoEncoder(EncoderSettings(codec: .h264, size: size, rate: FrameRate(frames: 30)!), globalHeader: true)
        try h264.warmUp()
        #expect(h264.conversionPool == nil)
    }
}
