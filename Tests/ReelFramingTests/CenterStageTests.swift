import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import Testing
import ReelFraming

/// Center Stage on the people scene, scored frame by frame against the ground truth: the
/// detector sees every 15th frame (as `--center-stage` at 30 fps), every second of those looking
/// for faces in profile too; the window steps every frame.
@Suite struct CenterStageTests {
    struct Score {
        var frames = 0, allInside = 0, frontalFrames = 0, frontalInside = 0, mainCentred = 0, withMain = 0, stillMoves = 0
        /// Times the window's zoom turned from zooming in to zooming out or back (breathing),
        /// over the whole timeline.
        var zoomReversals = 0
    }

    /// The timeline's movements (docs/framing.md): a frame 45 or more after each is still.
    static let moving = [(60, 150), (240, 300), (330, 390), (420, 480), (540, 600), (660, 720)]
    static func still(_ frame: Int) -> Bool { !moving.contains { a, e in frame - 45 <= e && frame >= a } }

    /// Center Stage (`baseline`: the follow-the-box arm instead) on the people scene's timeline.
    static func run(side: Int = 1920, ratio: AspectRatio = .landscape16x9, baseline: Bool = false) throws -> (Score, [CenterStage.Move]) {
        let sensor = Size(width: side, height: side)
        let detector = try FaceDetector(profiles: true)
        let source = try SyntheticSource(size: side, rate: FrameRate(frames: 30, seconds: 1)!, realtime: false, buffers: 2, scene: .people)
        let people = try #require(source.people as PeopleScene?)
        let frames = FrameGrabber(source: source)
        let stage = CenterStage(sensor: sensor), follow = FollowTheBox(sensor: sensor)
        let crop = ratio.crop(in: sensor)
        var score = Score()
        var last: CenterStage.Window? = nil, lastDirection = 0
        for index in 0..<PeopleScene.period {
            // The tap: the window for this frame, then (every 15th) a detection.
            let window = baseline ? follow.step() : stage.step()
            if let last, last.zoom != window.zoom {
                let direction = window.zoom > last.zoom ? 1 : -1
                if lastDirection != 0 && direction != lastDirection { score.zoomReversals += 1 }
                lastDirection = direction
            }
            last = window
            if index % Self.every == 0 {
                let b = try frames.frame(index)
                let (luma, stride) = b.plane(0)
                let profiles = (index / Self.every) % CenterStage.profilesEvery == 0
                let search = profiles ? Self.search(side).withProfiles : Self.search(side)
                let found = try detector.detect(gray: luma, size: b.size, stride: stride, search: search)
                if baseline { follow.update(faces: found, ratio: ratio) } else { stage.update(faces: found, frame: index, ratio: ratio, profiles: profiles) }
            }
            let picture = CenterStage.picture(window, ratio: ratio, sensor: sensor)
            let visible = people.faces(index: index).filter { $0.inside && crop.contains($0.box) }
            guard !visible.isEmpty else { continue }
            score.frames += 1
            let frontal = visible.filter { $0.facing == .frontal }
            if !frontal.isEmpty {
                score.frontalFrames += 1
                if frontal.allSatisfy({ picture.contains($0.box) }) { score.frontalInside += 1 }
            }
            if visible.allSatisfy({ picture.contains($0.box) }) { score.allInside += 1 }
            if let main = visible.filter({ $0.facing == .frontal }).max(by: { $0.area < $1.area }) {
                score.withMain += 1
                let cx = main.box.x + main.box.width / 2, cy = main.box.y + main.box.height / 2
                if cx >= picture.x + picture.width / 3 && cx <= picture.x + 2 * picture.width / 3
                    && cy >= picture.y + picture.height / 3 && cy <= picture.y + 2 * picture.height / 3 { score.mainCentred += 1 }
            }
        }
        // Moves made after 45 still frames.
        score.stillMoves = stage.moves.filter { Self.still($0.frame) }.count
        return (score, stage.moves)
    }

    static func search(_ side: Int) -> FaceDetector.Search { .forSensor(side: side) }
    /// Detect every this many frames, as `--center-stage` at 30 fps.
    static let every = 15

    /// The bars are every visible face inside the picture in at least 95 % of frames,
    /// the main face in the centre third, no move while the scene is still (no breathing).
    /// Met: every face inside (573/602 = 0.952: the window leads people walking by their
    /// motion, faces in profile are looked for every second detection), the main face centred
    /// (573/602 = 0.952: one person walking is followed between detections, and a zoom or pan
    /// on its way keeps the main face in the centre third), no breathing. The frames missed
    /// are a face entering or leaving at the sensor's edge, where no picture can centre it,
    /// and a walk starting between two detections (docs/framing.md). The frames are
    /// deterministic: so are these counts.
    @Test func centerStageKeepsEveryoneInAndStill() throws {
        let (s, moves) = try Self.run()
        let inside = Double(s.allInside) / Double(s.frames), centred = Double(s.mainCentred) / Double(max(1, s.withMain))
        print("center stage: all faces inside \(s.allInside)/\(s.frames) = \(inside), frontal faces inside \(s.frontalInside)/\(s.frontalFrames), main face in the centre third \(s.mainCentred)/\(s.withMain) = \(centred), moves \(moves.count), moves while still \(s.stillMoves)")
        #expect(s.frames > 500)
        #expect(Double(s.frontalInside) / Double(s.frontalFrames) >= 0.95)
        #expect(inside >= 0.95)
        #expect(centred >= 0.95)
        #expect(s.stillMoves == 0, "\(moves)")
    }

    /// The baseline arm on the same frames and detections: the plain follow-the-box loop of the
    /// single-face trackers. Center Stage keeps everyone in far more often (the loop follows
    /// the largest face only), and its zoom turns back and forth less (the loop chases every
    /// wobble of the detected box: breathing).
    @Test func centerStageBeatsFollowingTheBox() throws {
        let (c, _) = try Self.run()
        let (f, _) = try Self.run(baseline: true)
        func share(_ a: Int, _ b: Int) -> String { String(format: "%d/%d = %.3f", a, b, Double(a) / Double(max(1, b))) }
        print("follow-the-box: all faces inside \(share(f.allInside, f.frames)), frontal \(share(f.frontalInside, f.frontalFrames)), main face centred \(share(f.mainCentred, f.withMain)), zoom reversals \(f.zoomReversals); center stage: \(share(c.allInside, c.frames)), \(share(c.frontalInside, c.frontalFrames)), \(share(c.mainCentred, c.withMain)), zoom reversals \(c.zoomReversals)")
        #expect(c.allInside > f.allInside)
        #expect(c.zoomReversals < f.zoomReversals)
    }

    /// The window's picture: zoom 2 around the middle shows the middle half of the ratio's crop;
    /// a centre near the edge is kept inside the sensor.
    @Test func thePictureOfAWindow() {
        let sensor = Size(width: 1920, height: 1920)
        let middle = CenterStage.picture(.init(zoom: 2, centre: PicturePoint(x: 0.5, y: 0.5)), ratio: .landscape16x9, sensor: sensor)
        #expect(middle == CropRect(x: 480, y: 690, width: 960, height: 540))
        let edge = CenterStage.picture(.init(zoom: 2, centre: PicturePoint(x: 0.01, y: 0.5)), ratio: .landscape16x9, sensor: sensor)
        #expect(edge.x == 0)
        // At zoom 1 a 16:9 picture still pans up and down the square sensor (the ratio's crop
        // moved within the zoomed picture: `PictureSettings.pan`), as far as the sensor allows.
        let up = CenterStage.Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.3))
        #expect(CenterStage.picture(up, ratio: .landscape16x9, sensor: sensor) == CropRect(x: 0, y: 36, width: 1920, height: 1080))
        #expect(CenterStage.settings(up, ratio: .landscape16x9, sensor: sensor).centre == PicturePoint(x: 0.5, y: 0.5))
        // Stabilisation's margin zoom shrinks the square about its centre: the pan is spread by
        // as much (here to the top), so that the picture keeps its place.
        #expect(CenterStage.settings(up, ratio: .landscape16x9, sensor: sensor, marginZoom: 1.1).pan.y == 0)
        let mid = CenterStage.Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.45))
        let spread = CenterStage.settings(mid, ratio: .landscape16x9, sensor: sensor, marginZoom: 1.1).pan.y
        #expect(abs(spread - (0.5 + 1.1 * (CenterStage.settings(mid, ratio: .landscape16x9, sensor: sensor).pan.y - 0.5))) < 1e-9)
        let top = CenterStage.Window(zoom: 1.5, centre: PicturePoint(x: 0.5, y: 0))
        #expect(CenterStage.picture(top, ratio: .landscape16x9, sensor: sensor) == CropRect(x: 320, y: 0, width: 1280, height: 720))
    }
}
