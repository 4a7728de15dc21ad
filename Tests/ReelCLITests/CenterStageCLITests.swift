import Foundation
import Testing
import ReelCLI
import ReelCamera

/// `reel record --center-stage` with a real process: the window follows the people.
@Suite struct CenterStageCLITests {
    struct Move: Decodable { var frame: Int; var zoom: Double; var x: Double; var y: Double }
    struct Stage: Decodable { var mode: String; var moves: [Move]; var detections: Int }
    struct Summary: Decodable { var centerStage: Stage; var framesWritten: Int; var framesDropped: Int }

    /// 300 frames of the people scene (1920², not in real time, detection every 15th frame):
    /// nothing moves before the astronaut walks in (frame 60); then the window zooms in on her
    /// (zoom above 1.5, centred left of the middle: she stands at x 0.35) and every frame is
    /// written at the track's one size.
    @Test func theWindowFollowsTheAstronaut() throws {
        let dir = temporaryDirectory("reel-center-stage")
        defer { removeTree(dir) }
        let run = try reel(["record", "--source", "synthetic:1920", "--scene", "people", "--center-stage", "cooperative",
                            "--no-realtime", "--frames", "300", "--codec", "h264", "--container", "mp4", "--plain",
                            "--out", dir, "--name", "cs", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(Summary.self)
        #expect(s.centerStage.mode == "cooperative" && s.centerStage.detections == 20)
        #expect(s.framesWritten == 300 && s.framesDropped == 0)
        let first = try #require(s.centerStage.moves.first)
        #expect(first.frame >= 60, "nobody before frame 60")
        let standing = try #require(s.centerStage.moves.last { $0.frame <= 240 })
        #expect(standing.zoom > 1.5 && abs(standing.x - 0.35) < 0.1, "\(standing)")
        let probe = try reel(["probe", "--json", dir + "/cs-0001-16x9.mp4"])
        #expect(probe.status == 0 && probe.stdout.contains("\"frames\" : 300") && probe.stdout.contains("\"width\" : 1920"), "\(probe.stdout)")
    }

    /// The modes parse; another is a usage error; Center Stage and smart framing together are
    /// a usage error (in-process: parsing has no side effects).
    @Test func theOptionIsParsedAndChecked() throws {
        guard case .record(let c, _, _) = try ReelCLI.parse(["record", "--center-stage", "app"]) else { Issue.record("not record"); return }
        #expect(c.centerStage == .app)
        #expect(throws: (any Error).self) { try ReelCLI.parse(["record", "--center-stage", "on"]) }
        #expect(throws: (any Error).self) { try ReelCLI.parse(["record", "--center-stage", "app", "--smart-framing", "zoom"]) }
        let bad = try reel(["record", "--center-stage", "on"])
        #expect(bad.status == 64 && bad.stderr == "reel: --center-stage: 'on' is not cooperative or app\n")
    }
}
