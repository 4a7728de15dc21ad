import Foundation
import ReelCLI
import ReelCapture
import ReelFraming
import Testing

/// `reel record --shake --stabilization` with real processes: the recordings decoded and their
/// shake measured (`ShakeScore`, the frame-to-frame motion less the steady pan, RMS).
@Suite struct StabilizationCLITests {
    struct Stabilization: Decodable { var mode: String; var zoom: Double; var delayFrames: Int; var frames: Int; var weakEstimates: Int; var largestShift: Double }
    struct Probe: Decodable { var frameIndices: [Int] }
    struct Summary: Decodable { var stabilization: Stabilization?; var framesWritten: Int; var framesDropped: Int }

    /// 150 frames of the realistic scene shaken by up to 24 pixels (1920², not in real time,
    /// H.264), recorded four ways. Off, the picture shakes by about 12 pixels a frame (RMS);
    /// `lowLatency` and `cinematic` leave less than a tenth of that, and no more than the plain
    /// causal baseline; every recording has its 150 frames at 1920×1080. Cinematic holds 20
    /// frames back and lets the last ones go at the end: every frame whose barcode can be read
    /// through the crop is the frame of its place in the file.
    @Test func lowLatencyTakesOutTheShake() throws {
        let dir = temporaryDirectory("reel-stabilization")
        defer { removeTree(dir) }
        var jitter: [String: Double] = [:]
        for mode in ["off", "lowLatency", "cinematic", "baseline"] {
            let run = try reel(["record", "--source", "synthetic:1920", "--scene", "realistic", "--shake", "24", "--stabilization", mode,
                                "--no-realtime", "--frames", "150", "--codec", "h264", "--plain", "--pressure-handler", "off", "--no-adjust",
                                "--out", dir, "--name", mode, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let s = try run.decode(Summary.self)
            #expect(s.framesWritten == 150 && s.framesDropped == 0)
            if mode == "off" {
                #expect(s.stabilization == nil)
            } else {
                let st = try #require(s.stabilization)
                #expect(st.mode == mode && st.zoom == 1.1 && st.frames == 150 && st.weakEstimates == 0 && st.largestShift <= 87.3, "\(st)")
                #expect(st.delayFrames == (mode == "cinematic" ? 20 : 0))
            }
            let file = "\(dir)/\(mode)-0001-16x9.mov"
            let probe = try reel(["probe", "--json", file])
            #expect(probe.status == 0 && probe.stdout.contains("\"frames\" : 150") && probe.stdout.contains("\"width\" : 1920"), "\(probe.stdout)")
            if mode == "cinematic" {
                let read = try reel(["probe", "--frames", "--json", file])
                let indices = try read.decode(Probe.self).frameIndices
                let readable = indices.enumerated().filter { $0.element >= 0 }
                #expect(indices.count == 150 && readable.count >= 10, "\(readable.count) barcodes read")
                for (place, index) in readable { #expect(index == place, "place \(place) shows frame \(index)") }
            }
            let score = try ShakeScore.measure(path: file, skip: 30)
            #expect(score.pairs == 119 && score.weak == 0)
            jitter[mode] = score.jitter
        }
        let off = try #require(jitter["off"]), base = try #require(jitter["baseline"])
        #expect(off > 10, "the shaken scene moved by only \(off) px RMS")
        for mode in ["lowLatency", "cinematic"] {
            let left = try #require(jitter[mode])
            #expect(left < off / 10, "\(mode) left \(left) of \(off) px")
            #expect(left <= base, "\(mode) \(left) px, the baseline \(base) px")
        }
    }

    /// The options parse; bad values, a shaken pattern, a shaken V4L2 camera and stabilisation
    /// and cinematic beside Center Stage or smart framing are usage errors (exit 64) with one
    /// line each.
    @Test func theOptionsAreParsedAndChecked() throws {
        guard case .record(let c, _, _) = try ReelCLI.parse(["record", "--stabilization", "lowlatency", "--shake", "12"]) else {
            Issue.record("not record"); return
        }
        #expect(c.stabilization == .lowLatency && c.recording.shake == 12)
        let cases: [([String], String)] = [
            (["--stabilization", "steady"], "reel: --stabilization: 'steady' is not off, lowLatency, cinematic or baseline\n"),
            (["--shake", "65"], "reel: --shake: '65' is not a number of pixels from 0 to 64\n"),
            (["--shake", "8", "--scene", "pattern"], "reel: --shake: the test pattern cannot shake; use --scene realistic or --scene people\n"),
            (["--shake", "8", "--source", "v4l2:/dev/video0"], "reel: --shake: only the synthetic sensor can shake its scene (a V4L2 camera shakes as it is held)\n"),
            (["--stabilization", "cinematic", "--center-stage", "app"], "reel: --stabilization cinematic beside --center-stage or --smart-framing is not built yet: use lowLatency\n"),
            (["--stabilization", "cinematic", "--smart-framing", "zoom"], "reel: --stabilization cinematic beside --center-stage or --smart-framing is not built yet: use lowLatency\n"),
        ]
        for (args, message) in cases {
            let bad = try reel(["record"] + args)
            #expect(bad.status == 64 && bad.stderr == message, "\(args): \(bad.status) \(bad.stderr)")
        }
    }

    /// Smart framing and `lowLatency` together (200 frames of the people scene on the 4032²
    /// sensor, shaken by up to 24 pixels, not in real time): the monitor recommends what it
    /// recommends without a shake (3x4 at 1.5× from frame 180, applied: the seam there), and
    /// the first clip's picture keeps less than a tenth of the shake the scene knows.
    @Test func smartFramingAndLowLatencyTogether() throws {
        struct Recommendation: Decodable { var frame: Int; var ratio: String; var zoom: Double; var applied: Bool }
        struct Clip: Decodable { var path: String; var frames: Int }
        struct Both: Decodable { var framingRecommendations: [Recommendation]; var clips: [Clip]; var stabilization: Stabilization }
        let dir = temporaryDirectory("reel-stabilization-framing")
        defer { removeTree(dir) }
        let run = try reel(["record", "--source", "synthetic:4032", "--scene", "people", "--shake", "24", "--smart-framing", "zoom,rotate",
                            "--stabilization", "lowLatency", "--no-realtime", "--frames", "200", "--codec", "h264", "--plain",
                            "--pressure-handler", "off", "--no-adjust", "--out", dir, "--name", "sf", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(Both.self)
        let first = try #require(s.framingRecommendations.first)
        #expect(first.frame == 180 && first.ratio == "3x4" && first.zoom == 1.5 && first.applied, "\(s.framingRecommendations)")
        #expect(s.clips.count == 2 && s.clips.map(\.frames).reduce(0, +) == 200, "\(s.clips.map(\.frames))")
        #expect(s.stabilization.frames == 200 && s.stabilization.weakEstimates == 0)
        // The shake the scene knows, frame to frame less its mean, RMS (both axes).
        let shake = SceneShake(amplitude: 24)
        let steps = (31..<170).map { i -> (Double, Double) in
            let a = shake.offset(index: i), b = shake.offset(index: i - 1)
            return (Double(a.x - b.x), Double(a.y - b.y))
        }
        let mx = steps.map(\.0).reduce(0, +) / Double(steps.count), my = steps.map(\.1).reduce(0, +) / Double(steps.count)
        let known = (steps.map { ($0.0 - mx) * ($0.0 - mx) + ($0.1 - my) * ($0.1 - my) }.reduce(0, +) / Double(steps.count)).squareRoot()
        let clip = try #require(s.clips.first)
        let name = try #require(clip.path.split(separator: "/").last)
        let left = try ShakeScore.measure(path: "\(dir)/\(name)", skip: 30, until: 170)
        #expect(known > 10 && left.jitter < known / 10, "the shake \(known) px, left \(left.jitter) px")
    }

    /// Center Stage and `lowLatency` together (240 frames of the people scene on a 1920²
    /// sensor, shaken by up to 24 pixels, not in real time), against Center Stage alone: the
    /// window, fed the faces in the steadied picture, moves less often (it no longer chases the
    /// shake), and while the astronaut stands (frames 180–240) the picture shakes less than a
    /// third as much.
    @Test func centerStageFramesTheSteadiedPicture() throws {
        struct Move: Decodable { var frame: Int }
        struct Stage: Decodable { var moves: [Move] }
        struct Run: Decodable { var centerStage: Stage; var framesWritten: Int }
        let dir = temporaryDirectory("reel-stabilization-center-stage")
        defer { removeTree(dir) }
        var moves: [String: Int] = [:], shake: [String: Double] = [:]
        for mode in ["off", "lowLatency"] {
            let run = try reel(["record", "--source", "synthetic:1920", "--scene", "people", "--shake", "24", "--center-stage", "cooperative",
                                "--stabilization", mode, "--no-realtime", "--frames", "240", "--codec", "h264", "--plain",
                                "--pressure-handler", "off", "--no-adjust", "--out", dir, "--name", mode, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let s = try run.decode(Run.self)
            #expect(s.framesWritten == 240)
            moves[mode] = s.centerStage.moves.count
            shake[mode] = try ShakeScore.measure(path: "\(dir)/\(mode)-0001-16x9.mov", skip: 180).jitter
        }
        let alone = try #require(shake["off"]), steadied = try #require(shake["lowLatency"])
        #expect(try #require(moves["lowLatency"]) < (try #require(moves["off"])), "\(moves)")
        #expect(steadied < alone / 3, "Center Stage alone \(alone) px, with lowLatency \(steadied) px")
    }
}
