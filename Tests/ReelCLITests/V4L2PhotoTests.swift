import Foundation
import ReelCore
import Testing

/// What these tests read of `reel record --photos --json`.
private struct CameraPhotoRecording: Decodable {
    var photos: [PhotoRun.Shot]
}

/// Photos from a V4L2 camera (the emulated one, `scripts/fake-v4l2`) during a recording,
/// and the camera's release checked. Real time: the camera streams at 30 fps.
@Suite("RealtimeV4L2PhotoTests", .serialized,
       .enabled(if: fakeV4L2Library != nil && havePhotoTools, "needs the fake V4L2 library (scripts/fake-v4l2 --build), ffmpeg, exiftool and heif-convert"))
struct RealtimeV4L2PhotoTests {
    /// `reel record --source v4l2:… --photos DIR`: the control socket's shutter takes a photo
    /// of a camera frame — its 4x3 crop, the frame's barcode where the photo says — whose
    /// EXIF Make and Model are the camera's driver and card (`VIDIOC_QUERYCAP`), as exiftool reads them.
    @Test(arguments: [("YUYV", "jpeg"), ("NV12", "png"), ("MJPG", "heic")])
    func theShutterTakesAPhotoOfACameraFrame(fourcc: String, format: String) throws {
        let lib = try #require(fakeV4L2Library)
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let photos = dir + "/photos"
        let run = try recordPressingTheShutter(in: dir, source: ["--source", "v4l2:/dev/video0:1280x720@30:\(fourcc)"], format: format,
                                               name: "cam", environment: ["LD_PRELOAD": lib, "FAKE_V4L2": "card=Bench Cam 4K"])
        let summary = try run.decode(CameraPhotoRecording.self)
        let shot = try #require(summary.photos.first, "no photo in the summary: \(run.stderr)")
        #expect(shot.format == format && shot.path.hasPrefix(photos + "/cam-0001."))
        #expect(shot.width == 960 && shot.height == 720, "the 4x3 crop of 1280x720")
        // The camera's barcode (its sequence number), read by independent decoders.
        let decoded = try photoBarcode(shot.path)
        #expect(decoded.index == shot.frameIndex, "\(shot.path): barcode \(String(describing: decoded.index)), reported \(shot.frameIndex)")
        #expect(decoded.width == 960 && decoded.height == 720)
        let tags = try exifTags(shot.path)
        #expect(tags["Make"] as? String == "fakev4l2", "\(String(describing: tags["Make"]))")
        #expect(tags["Model"] as? String == "Bench Cam 4K", "\(String(describing: tags["Model"]))")
        #expect((tags["ExifImageWidth"] as? NSNumber)?.intValue == 960)
        #expect((tags["ExifImageHeight"] as? NSNumber)?.intValue == 720)
        #expect(tags["Warning"] == nil, "exiftool warns: \(String(describing: tags["Warning"]))")
    }

    /// A camera whose STREAMOFF fails once every frame is delivered: the recording stands
    /// (exit 0, every frame in the clip) and the failure is said on stderr, once.
    @Test func aFailedStreamOffIsSaidOnceOnStderr() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reelWithCamera(["record", "--source", "v4l2:/dev/video0:640x480@30:YUYV", "--codec", "h264", "--frames", "15",
                                      "--plain", "--out", dir, "--name", "off"], faults: "streamoff-eio")
        #expect(run.status == 0, "\(run.stderr)")
        let line = "reel: VIDIOC_STREAMOFF /dev/video0: Input/output error (while releasing the camera; what was captured is kept)\n"
        #expect(run.stderr.components(separatedBy: line).count == 2, "said exactly once: \(run.stderr)")
        #expect(try probeFrames(dir + "/off-0001-16x9.mov").frameIndices == Array(0..<15))
    }
}
