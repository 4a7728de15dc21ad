import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import ReelPhoto
import Testing

/// The barcode of a saved 1280×960 JPEG photo, decoded by libavcodec's MJPEG decoder
/// (`JPEGDecoder`, as a camera's MJPEG frames are).
private func barcode(_ path: String) throws -> Int? {
    let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
    let picture = try PixelBuffer(size: Size(width: 1280, height: 960), format: .yuv420p)
    try bytes.withUnsafeBytes { try JPEGDecoder().decode($0.baseAddress!, count: $0.count, into: picture) }
    let (y, stride) = picture.plane(0)
    return FrameBarcode.read(LumaPlane(base: UnsafeRawPointer(y), stride: stride, width: 1280, height: 960, depth: 8))
}

@Suite struct PreparedPhotoSettingsTests {
    private func output(_ dir: String, prepared: PreparedPhotoSettings?) throws -> (PhotoOutput, HandFrames) {
        let frames = try HandFrames()
        var s = handPhotoSettings(dir, format: frames.format)
        s.prepared = prepared
        return (try PhotoOutput(settings: s), frames)
    }

    /// `setPreparedPhotoSettings` takes effect at initialisation, and is refused after it;
    /// the prepared copies are reused press after press, each photo still its own frame.
    @Test func preparedSettingsAreSetBeforeInitialisingAndTheirCopiesAreReused() throws {
        let dir = try photoDirectory("reel-prepared-1")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (out, frames) = try output(dir, prepared: PreparedPhotoSettings())
        #expect(out.preparedPhotoSettings == PreparedPhotoSettings())
        let worst = PreparedPhotoSettings(maxSize: Size(width: 4032, height: 4032), formats: [.jpeg, .heic], buffers: 1)
        #expect(out.setPreparedPhotoSettings(worst))
        try out.initialise()
        #expect(!out.setPreparedPhotoSettings(nil), "too late: the output has initialised")
        #expect(out.preparedPhotoSettings == worst)
        // One prepared copy: each press after the first waits for it to come back or makes its own.
        for i in 0..<6 {
            try frames.offer(i, to: out)
            let r = try out.capture(pressTime: Double(i) / 30)
            _ = try out.photo(for: r, timeout: 60)
        }
        #expect(out.finish(timeout: 60))
        #expect(out.errors.isEmpty)
        let photos = out.photos.sorted { $0.frameIndex < $1.frameIndex }
        #expect(photos.map(\.frameIndex) == Array(0..<6))
        for p in photos { #expect(try barcode(p.path) == p.frameIndex, "\(p.path)") }
    }

    /// Without prepared settings nothing is made ahead: the first press makes the encoder and
    /// its copy, and its photo is as good.
    @Test func anUnpreparedOutputMakesItsEncoderAtTheFirstPress() throws {
        let dir = try photoDirectory("reel-prepared-2")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (out, frames) = try output(dir, prepared: nil)
        #expect(out.preparedPhotoSettings == nil)
        try out.initialise()
        for i in 0..<3 { try frames.offer(i, to: out) }
        let first = try out.capture(pressTime: 1.0 / 30)
        let photo = try out.photo(for: first, timeout: 60)
        #expect(photo.frameIndex == 1 && photo.width == 1280 && photo.height == 960)
        #expect(try barcode(photo.path) == 1)
        #expect(out.finish(timeout: 60))
    }
}
