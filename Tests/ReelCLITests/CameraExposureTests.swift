import Foundation
import ReelWriter
import Testing

/// Exposure bias on a V4L2 camera, against the emulated camera (scripts/fake-v4l2), whose
/// picture follows its brightness control as a real camera's does.
@Suite struct CameraExposureTests {
    /// Starts `reel record` from the emulated camera (`faults`: FAKE_V4L2 options) with a
    /// control socket, until SIGINT.
    private func recordFromCamera(dir: String, faults: String = "") throws -> (Launched, socket: String) {
        let lib = try #require(fakeV4L2Library, "the fake V4L2 library is not built: run scripts/fake-v4l2 --build")
        let socket = dir + "/control.sock"
        let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--duration", "3600", "--codec", "h264", "--source", "v4l2:/dev/video0",
                              "--control-socket", socket],
                             environment: ["LD_PRELOAD": lib, "FAKE_V4L2": faults])
        return (rec, socket)
    }

    /// `reel control exposure 2` sets the camera's brightness (VIDIOC_S_CTRL) to its maximum
    /// (64 brighter); a camera without brightness (`nobrightness`) gets manual exposure and
    /// four times its default exposure time instead. The decoded frames up to the stated
    /// frame have the camera's usual background, those a few frames later (the buffers the
    /// camera had already filled) a much brighter one.
    @Test(.enabled(if: fakeV4L2Library != nil, "the fake V4L2 library is not built (scripts/fake-v4l2 --build)"),
          arguments: ["", "nobrightness"])
    func exposureBiasReachesTheCamera(faults: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (rec, socket) = try recordFromCamera(dir: dir, faults: faults)
        var stopped = false
        defer { if !stopped { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(try waitUntilListening(socket))
        try #require(waitForFrame(socket, atLeast: 10) != nil, "the recording never captured 10 frames")
        let set = try reel(["control", "--socket", socket, "exposure", "2"])
        #expect(set.status == 0 && set.stdout.contains("\"value\":2"), "\(set.stdout) \(set.stderr)")
        #expect(waitForFramesAfterNow(socket, 30) != nil, "the recording stalled")
        rec.signal(SIGINT)
        let run = rec.wait()
        stopped = true
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PictureSummaryJSON.self)
        let change = try #require(summary.controlChanges.first { $0.control == "exposure" })
        let at = try #require(change.frameIndex)
        let clip = try #require(summary.clips.first)
        // The emulated camera burns its sequence number in: frames are told by their barcodes.
        let indices = try #require(try probeFrames(clip.path).frameIndices)
        var position = 0, before = 0, after = 0
        try forEachDecodedYUV(clip.path, width: clip.width, height: clip.height) { f in
            defer { position += 1 }
            guard position < indices.count, indices[position] >= 0 else { return }
            let index = indices[position]
            // The moving gradient above the barcode: 60–160, about 110 on average over 512
            // columns; about 174 with brightness 64, 255 (clipped) at 4× the exposure time.
            let background = f.meanLuma(x: 0, y: 0, width: 512, height: 64)
            if index <= at {
                before += 1
                #expect(background < 140, "frame \(index), up to the exposure change at \(at): background \(background)")
            } else if index >= at + 8 {
                after += 1
                #expect(background > 150, "frame \(index), 8 frames after the exposure change at \(at): background \(background)")
            }
        }
        #expect(before > 0 && after > 0, "frames before: \(before), after: \(after)")
    }

    /// A camera without brightness or exposure controls: the exposure slider is disabled with
    /// the reason (status and a refused change, exit 65); zoom still works.
    @Test(.enabled(if: fakeV4L2Library != nil, "the fake V4L2 library is not built (scripts/fake-v4l2 --build)"))
    func aCameraWithoutControlsDisablesExposure() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (rec, socket) = try recordFromCamera(dir: dir, faults: "noctrls")
        var stopped = false
        defer { if !stopped { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(try waitUntilListening(socket))
        #expect(waitForFrame(socket, atLeast: 5) != nil, "the recording never captured 5 frames")
        let refused = try reel(["control", "--socket", socket, "exposure", "1"])
        #expect(refused.status == 65 && refused.stdout.contains("has no brightness or exposure control"), "\(refused.stdout)")
        let status = try reel(["control", "--socket", socket, "status"])
        let s = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let exposure = try #require((s["controls"] as? [[String: Any]])?.first { $0["identifier"] as? String == "exposure" })
        #expect(exposure["enabled"] as? Bool == false && (exposure["disabledReason"] as? String)?.contains("VIDIOC_QUERYCTRL") == true, "\(exposure)")
        #expect(try reel(["control", "--socket", socket, "zoom", "2"]).status == 0)
        rec.signal(SIGINT)
        let run = rec.wait()
        stopped = true
        #expect(run.status == 0, "\(run.stderr)")
    }
}
