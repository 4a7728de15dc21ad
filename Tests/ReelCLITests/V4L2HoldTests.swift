import Foundation
import Testing
import ReelWriter

/// How many frames a recording's writer may hold while it catches up (`writerQueueCapacity`):
/// about a second's worth within 192 MiB, from a V4L2 camera as from the synthetic sensor.
/// Two real-time 1080p30 ProRes recordings on this 2-core machine use it all: with the 8
/// frames a V4L2 camera's writer used to hold, each dropped 150 of 900 frames late
/// (`scripts/bench capacity`), where ffmpeg, holding up to 256 V4L2 buffers, dropped none.
@Suite struct V4L2HoldTests {
    /// docs/json.md: the writer holds the source's buffers less 4; a 1920×1080 YUYV camera gets 40
    /// (192 MiB holds 48 frames of 4.1 MB; 40 at most), a 640×480 one 40 too, the synthetic
    /// sensor at 1920 36 (32 held), and a photo output's ring adds its frames to the pool only.
    @Test(.enabled(if: fakeV4L2Library != nil, "the fake V4L2 library is not built (scripts/fake-v4l2 --build)"),
          arguments: [("v4l2:/dev/video0:1920x1080@30:YUYV", 36), ("v4l2:/dev/video0:640x480@30:YUYV", 36), ("synthetic:1920", 32)])
    func theWriterHoldsAboutASecondOfFrames(source: String, held: Int) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reelWithCamera(["record", "--source", source, "--frames", "3", "--codec", "h264", "--plain", "--out", dir, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(HoldSummary.self)
        #expect(s.writerQueueCapacity == held)
        #expect(s.framesWritten == 3)
    }

    struct HoldSummary: Decodable { var writerQueueCapacity: Int; var framesWritten: Int }
}
