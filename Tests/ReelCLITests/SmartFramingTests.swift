import Foundation
import Testing
import ReelCapture
import ReelCLI
import ReelCamera
import ReelCore
import ReelFraming

/// `reel record --smart-framing` on the people scene: the monitor's recommendations applied
/// (the ratio, then the zoom), with real processes, scored against the scene's ground truth.
@Suite struct SmartFramingTests {
    struct Recommendation: Decodable { var time: Double; var frame: Int; var ratio: String; var zoom: Double; var faces: Int; var applied: Bool; var appliedFrame: Int? }
    struct Clip: Decodable { var ratio: String; var frames: Int; var path: String; var firstFrameIndex: Int? }
    struct Summary: Decodable {
        var framingRecommendations: [Recommendation]
        var controlChanges: [ControlChangeJSON]
        var seams: [SeamJSON]
        var clips: [Clip]
        var framesDelivered: Int?
    }

    /// Connects to `path`, asks to watch, and reads lines until the camera closes the socket.
    static func watch(_ path: String) throws -> [String] {
        let s = try connectAndSend(path, "{\"watch\": true}\n")
        defer { close(s) }
        var tv = timeval(tv_sec: 300, tv_usec: 0)
        guard setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) == 0 else { throw ProbeFailed(message: "setsockopt") }
        var got = [UInt8](), chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(s, $0.baseAddress, $0.count) }
            guard n > 0 else { break }
            got += chunk[0..<n]
        }
        return String(decoding: got, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// 360 frames of the 4032 sensor, not in real time (detection frame-stepped: every 15th
    /// frame): the astronaut walks in (60–150) and stands alone, a second person joins
    /// (240–300), the cameraman in profile (330–). Every recommendation is in the summary and
    /// on the socket's watch stream; each was applied, its ratio as a seam at the frame the
    /// ratio control states, its zoom from that frame or after (ratio first); the clips are
    /// the seams' and their sizes the ratios'; every frontal face of the ground truth at the
    /// frame a framing applied from lies inside that framing's picture.
    @Test func zoomAndRotateFollowThePeople() throws {
        let dir = temporaryDirectory("reel-framing")
        defer { removeTree(dir) }
        let socketPath = dir + "/control.sock"
        let process = try launch(["record", "--source", "synthetic:4032", "--scene", "people", "--smart-framing", "zoom,rotate",
                                  "--no-realtime", "--frames", "360", "--codec", "h264", "--container", "mp4", "--plain",
                                  "--control-socket", socketPath, "--out", dir, "--name", "sf", "--json"])
        #expect(waitForFile(socketPath))
        let lines = try Self.watch(socketPath)
        let run = process.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(Summary.self)
        let recs = summary.framingRecommendations
        #expect(recs.count >= 2, "one person, then two: \(recs)")
        #expect(recs.first?.ratio == "3x4", "one person alone: portrait")
        #expect(recs.contains { $0.ratio == "4x3" }, "two side by side: landscape")
        // The socket's stream: the watch answer, then one line per recommendation, in order.
        let streamed = lines.dropFirst().compactMap { line -> (Int, String, Double)? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let f = o["framing"] as? [String: Any], let frame = f["frame"] as? Int, let ratio = f["ratio"] as? String,
                  let zoom = f["zoom"] as? Double else { return nil }
            return (frame, ratio, zoom)
        }
        #expect(lines.first?.contains("\"watching\":true") == true, "\(lines.first ?? "")")
        #expect(streamed.map(\.0) == recs.map(\.frame) && streamed.map(\.1) == recs.map(\.ratio) && streamed.map(\.2) == recs.map(\.zoom),
                "socket \(streamed) summary \(recs)")
        // Applied in order, the ratio first.
        var ratio = "4x3", zoom = 1.0
        var changes = summary.controlChanges[...]
        let scene = PeopleScene(sensor: Size(width: 4032, height: 4032))
        for r in recs {
            #expect(r.applied, "\(r)")
            if r.ratio != ratio {
                let c = try #require(changes.first(where: { $0.control == "ratio" }), "a ratio change for \(r)")
                changes = changes.drop { !($0.control == "ratio" && $0.frameIndex == c.frameIndex) }.dropFirst()
                #expect(c.title == r.ratio)
                #expect(summary.seams.contains { $0.frameIndex == c.frameIndex && $0.to == r.ratio }, "the seam at \(c.frameIndex ?? -1)")
                #expect((c.frameIndex ?? -1) >= r.frame, "applied from the frame it was recommended from, or after")
                ratio = r.ratio
                if r.zoom != zoom {
                    let z = try #require(changes.first(where: { $0.control == "zoom" }), "then the zoom for \(r)")
                    #expect(z.value == r.zoom && (z.frameIndex ?? -1) >= (c.frameIndex ?? .max), "zoom after the ratio: \(z) \(c)")
                }
            }
            zoom = r.zoom
            // Every frontal face of the frame it applied from lies in the framing's picture.
            let applied = try #require(r.appliedFrame)
            let window = Framing(ratio: AspectRatio(parsing: r.ratio)!, zoom: r.zoom).window(in: scene.sensor)
            for f in scene.faces(index: applied) where f.facing == .frontal && f.inside {
                #expect(window.contains(f.box), "frame \(applied): face of person \(f.person) at \(f.box) outside \(window)")
            }
        }
        // The clips are the seams' runs, each of its ratio's size, every frame kept.
        #expect(summary.clips.count == summary.seams.count + 1)
        #expect(summary.clips.map(\.frames).reduce(0, +) == 360)
        for clip in summary.clips {
            let probe = try reel(["probe", "--json", clip.path])
            let size = clip.ratio == "4x3" ? "\"width\" : 4032" : "\"width\" : 3024"
            #expect(probe.status == 0 && probe.stdout.contains(size) && probe.stdout.contains("\"frames\" : \(clip.frames)"), "\(probe.stdout)")
        }
    }

    /// Without the 4032 photo format, smart framing refuses before recording (64, one line);
    /// an unknown part is a usage error; the parts are parsed (in-process).
    @Test func theGateAndTheOption() throws {
        let dir = temporaryDirectory("reel-framing-gate")
        defer { removeTree(dir) }
        let small = try reel(["record", "--source", "synthetic:1920", "--scene", "people", "--smart-framing", "zoom",
                              "--no-realtime", "--frames", "5", "--plain", "--out", dir])
        #expect(small.status == 64)
        #expect(small.stderr == "reel: smart framing needs the 4032×4032 photo format (--source synthetic:4032); this session has the 1920×1920 photo format\n")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).isEmpty, "nothing recorded")
        let bad = try reel(["record", "--smart-framing", "pan"])
        #expect(bad.status == 64 && bad.stderr.contains("--smart-framing: 'pan' is not zoom, rotate or recommend"))
        guard case .record(let c, _, _) = try ReelCLI.parse(["record", "--smart-framing", "zoom,rotate", "--no-realtime"]) else { Issue.record("not record"); return }
        #expect(c.smartFraming?.parts == [.zoom, .rotate] && c.smartFraming?.stepped == true)
        guard case .record(let r, _, _) = try ReelCLI.parse(["record", "--smart-framing", "recommend"]) else { Issue.record("not record"); return }
        #expect(r.smartFraming?.applies == false && r.smartFraming?.stepped == false)
    }
}
