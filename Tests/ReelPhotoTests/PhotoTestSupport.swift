import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import ReelPhoto
import Testing

/// A 1280×1280 sensor's frames, offered by hand: index `i` at `i/30` s, its barcode drawn.
final class HandFrames {
    let pool: PixelBufferPool
    let format = SensorPhotoFormat(size: Size(width: 1280, height: 1280), supportedRatios: [.landscape4x3, .portrait3x4])
    init() throws { pool = try PixelBufferPool(count: 8, size: Size(width: 1280, height: 1280), format: .yuv420p) { b in
        for p in 0..<3 { let (base, stride) = b.plane(p); base.update(repeating: 128, count: stride * (p == 0 ? 1280 : 640)) }
    } }
    /// Offers frame `index` to `output`, expecting it taken.
    func offer(_ index: Int, to output: PhotoOutput) throws {
        let lease = try #require(pool.lease())
        let (y, ys) = lease.buffer.plane(0)
        FrameBarcode.draw(index: index, luma: y, stride: ys, centerX: 640, centerY: 640)
        let frame = CapturedFrame(lease: lease, index: index, pts: Timestamp(value: Int64(index), timescale: 30), duration: 1,
                                  ratio: .landscape4x3, crop: AspectRatio.landscape4x3.crop(in: Size(width: 1280, height: 1280)))
        #expect(output.offer(frame, waiting: false) == .taken)
    }
}

/// JPEG photos of `format` into `dir` from a ring of `ring` frames, initialised by the caller.
func handPhotoSettings(_ dir: String, format: SensorPhotoFormat, ring: Int = 3) -> PhotoSettings {
    var s = PhotoSettings()
    s.format = .jpeg
    s.ringSize = ring
    s.photoFormat = format
    s.directory = dir
    s.initialisation = .byCaller
    return s
}

/// A new directory `NSTemporaryDirectory()/NAME-PID` for a test's photos; the test removes it.
/// - Throws: what creating it throws.
func photoDirectory(_ name: String) throws -> String {
    let dir = NSTemporaryDirectory() + "\(name)-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}
