import Foundation
import ReelCore
import ReelWriter
import Testing

/// ffprobe's reading of a file's first video stream's display matrix (`-show_streams`
/// side data "Display Matrix"): its `rotation`, nil when there is none.
private func ffprobeRotation(_ path: String) throws -> Int? {
    let r = try runTool("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_streams", "-of", "json", path])
    try #require(r.status == 0, "ffprobe cannot open \(path)")
    let json = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
    let stream = try #require((json["streams"] as? [[String: Any]])?.first)
    let sideData = stream["side_data_list"] as? [[String: Any]] ?? []
    guard let matrix = sideData.first(where: { ($0["side_data_type"] as? String) == "Display Matrix" }) else { return nil }
    return (matrix["rotation"] as? NSNumber)?.intValue
}

/// The barcode of frame `n` of a clip as ffmpeg decodes it: `autorotate` on (as a player
/// shows it: the display matrix applied) or off (the stored pixels).
private func ffmpegBarcode(_ path: String, frame n: Int, autorotate: Bool) throws -> (index: Int?, width: Int, height: Int) {
    let dir = temporaryDirectory("reel-rotated-decode")
    defer { removeTree(dir) }
    let png = dir + "/frame.png"
    let r = try runTool("ffmpeg", ["-v", "error"] + (autorotate ? [] : ["-noautorotate"])
                        + ["-i", path, "-vf", "select=eq(n\\,\(n))", "-frames:v", "1", png])
    try #require(r.status == 0, "ffmpeg could not decode frame \(n) of \(path)")
    let info = try #require(ffprobe(png))
    let gray = try runTool("ffmpeg", ["-v", "error", "-i", png, "-f", "rawvideo", "-pix_fmt", "gray", "-"]).stdout
    try #require(gray.count == info.width * info.height)
    let index = gray.withUnsafeBytes { raw in
        FrameBarcode.read(LumaPlane(base: raw.baseAddress!, stride: info.width, width: info.width, height: info.height, depth: 8))
    }
    return (index, info.width, info.height)
}

private struct VerifyJSON: Decodable {
    struct Clip: Decodable { let path: String; let rotation: Int; let frames: Int }
    let ok: Bool
    let clips: [Clip]
    let framesChecked: Int
}

/// `reel record --sensor-orientation`: the clip keeps the turned read-out and carries the
/// display matrix; ffprobe and ffmpeg (independent readers) see it, and `reel probe` and
/// `reel verify` read it.
@Suite("RotatedClipTests", .enabled(if: installedTool("ffmpeg") != nil && installedTool("ffprobe") != nil, "needs ffmpeg and ffprobe"))
struct RotatedClipTests {
    @Test(arguments: [("portrait", "mov", -90), ("landscapeLeft", "mp4", -180)])
    func aTurnedSensorsClipCarriesTheDisplayMatrix(orientation: String, container: String, rotation: Int) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reel(["record", "--sensor-orientation", orientation, "--source", "synthetic:1280", "--codec", "h264",
                            "--container", container, "--ratio", "16x9", "--frames", "20", "--no-realtime", "--plain",
                            "--out", dir, "--name", "turned", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let clip = dir + "/turned-0001-16x9.\(container)"
        #expect(FileManager.default.fileExists(atPath: clip))

        // ffprobe: the stream's side data "Display Matrix", rotation -90 (or -180).
        #expect(try ffprobeRotation(clip) == rotation)
        // The stored pixels are the read-out: 16x9 as recorded (1280x720), its barcode turned
        // (not readable upright); ffmpeg's autorotate shows the scene upright, barcode readable.
        let stored = try ffmpegBarcode(clip, frame: 5, autorotate: false)
        #expect(stored.width == 1280 && stored.height == 720)
        #expect(stored.index == nil, "the stored pixels are turned: no upright barcode")
        let shown = try ffmpegBarcode(clip, frame: 5, autorotate: true)
        #expect(shown.index == 5)
        #expect(rotation == -180 ? (shown.width == 1280 && shown.height == 720) : (shown.width == 720 && shown.height == 1280))

        // reel probe: the rotation, and every barcode read from the picture as displayed.
        let probe = try probeFrames(clip)
        #expect(probe.rotation == rotation)
        #expect(probe.width == 1280 && probe.height == 720)
        #expect(probe.frameIndices == Array(0..<20))
        let text = try reel(["probe", clip])
        let clockwise = rotation == -180 ? 180 : 90
        #expect(text.stdout.contains(", rotation \(rotation) (shown turned \(clockwise)° clockwise)"), "\(text.stdout)")

        // reel verify: accepted, with the rotation listed.
        let verify = try reel(["verify", dir, "--json"])
        #expect(verify.status == 0, "\(verify.stderr)")
        let report = try verify.decode(VerifyJSON.self)
        #expect(report.ok && report.framesChecked == 20)
        #expect(report.clips.map(\.rotation) == [rotation])
    }

    /// An upright sensor's clip has no display matrix, as before.
    @Test func anUprightSensorsClipHasNone() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reel(["record", "--source", "synthetic:1280", "--codec", "h264", "--container", "mp4", "--frames", "5",
                            "--no-realtime", "--plain", "--out", dir, "--name", "upright", "--sensor-orientation", "landscape"])
        #expect(run.status == 0, "\(run.stderr)")
        let clip = dir + "/upright-0001-16x9.mp4"
        #expect(try ffprobeRotation(clip) == nil)
        #expect(try probeFrames(clip).rotation == 0)
        #expect(try reel(["probe", clip]).stdout.contains("rotation") == false)
    }

    /// Matroska keeps no display matrix in libavformat 5.1, a V4L2 camera says nothing of its
    /// mounting, and an unknown orientation: usage errors before anything is recorded.
    @Test func whatCannotCarryTheMatrixIsRefused() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let mkv = try reel(["record", "--sensor-orientation", "portrait", "--container", "mkv", "--codec", "ffv1", "--frames", "3",
                            "--plain", "--out", dir])
        #expect(mkv.status == 64)
        #expect(mkv.stderr == "reel: --sensor-orientation portrait: Matroska keeps no display matrix (libavformat 5.1 writes none); use mov or mp4\n")
        let camera = try reel(["record", "--sensor-orientation", "landscapeLeft", "--source", "v4l2:/dev/video0", "--frames", "3",
                               "--plain", "--out", dir])
        #expect(camera.status == 64)
        #expect(camera.stderr.hasPrefix("reel: --sensor-orientation: only the synthetic sensor"), "\(camera.stderr)")
        let unknown = try reel(["record", "--sensor-orientation", "sideways", "--frames", "3", "--plain", "--out", dir])
        #expect(unknown.status == 64)
        #expect(unknown.stderr == "reel: --sensor-orientation: unknown orientation 'sideways' (use landscape, portrait or landscapeLeft)\n")
        #expect((try FileManager.default.contentsOfDirectory(atPath: dir)).isEmpty, "nothing recorded")
    }
}
