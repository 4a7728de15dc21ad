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
