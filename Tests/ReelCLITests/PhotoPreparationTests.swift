import Foundation
import ReelCore
import Testing

/// What these tests read of `reel photo --json` and `reel record --photos --json`.
private struct PreparedRun: Decodable {
    let photos: [PhotoRun.Shot]
    let prepared: Bool
    let delivered: Int
}

private struct MountedRecording: Decodable {
    let photos: [PhotoRun.Shot]
}

@Suite("PhotoPreparationTests", .enabled(if: havePhotoTools, "needs ffmpeg, exiftool (libimage-exiftool-perl) and heif-convert/heif-info (libheif-examples)"))
struct PhotoPreparationTests {
    /// `reel photo --unprepared`: nothing is prepared ahead (JSON `prepared: false`), and the
    /// first press, which makes the encoder, still yields the pressed frame; by default the
    /// output is prepared (`prepared: true`).
    @Test(arguments: [true, false])
    func preparedOrNotThePhotoIsThePressedFrame(prepared: Bool) throws {
        let out = temporaryDirectory("reel-photo-prepared")
        defer { removeTree(out) }
        let run = try reel(["photo", "--eager", "--format", "jpeg", "--out", out, "--json"] + (prepared ? [] : ["--unprepared"]))
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PreparedRun.self)
        #expect(summary.prepared == prepared)
        #expect(summary.delivered == 1)
        let shot = try #require(summary.photos.first)
        #expect(try photoBarcode(shot.path).index == shot.frameIndex)
        #expect(shot.width == 4032 && shot.height == 3024)
    }

    /// `reel record --sensor-orientation portrait --photos`: the clip keeps the read-out (and
    /// its display matrix), the photo is compensated from the read-out frame: upright (3x4,
    /// 960x1280 from a 1280 sensor), EXIF Orientation 1, its barcode readable as stored.
    @Test func aMountedSensorsPhotosAreTurnedUpright() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try recordPressingTheShutter(in: dir, source: ["--sensor-orientation", "portrait", "--source", "synthetic:1280"],
                                               format: "jpeg", name: "mounted")
        let shot = try #require(try run.decode(MountedRecording.self).photos.first)
        #expect(shot.width == 960 && shot.height == 1280 && shot.exifOrientation == 1)
        let decoded = try photoBarcode(shot.path)
        #expect(decoded.index == shot.frameIndex && decoded.width == 960 && decoded.height == 1280)
        #expect((try exifTags(shot.path)["Orientation"] as? NSNumber)?.intValue == 1)
        let clip = try probeFrames(dir + "/video/mounted-0001-16x9.mov")
        #expect(clip.rotation == -90)
        #expect(clip.frameIndices?.first == 0 && !(clip.frameIndices ?? []).contains(-1))
    }
}
