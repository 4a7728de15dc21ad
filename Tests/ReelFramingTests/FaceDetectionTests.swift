import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import Testing
import ReelFraming

/// The face detector on the people scene, scored against the scene's ground truth.
@Suite struct FaceDetectionTests {
    /// Every `step`th frame of one run of the timeline on a `side`² sensor.
    static func score(_ cascade: FaceDetector.Cascade = FaceDetector.defaultCascade, side: Int = 1920, step: Int = 12, shrink: Int? = nil) throws -> DetectionScore {
        let detector = try FaceDetector(cascade: cascade)
        let source = try SyntheticSource(size: side, rate: FrameRate(frames: 30, seconds: 1)!, realtime: false, buffers: 2, scene: .people)
        let people = try #require(source.people as PeopleScene?)
        let frames = FrameGrabber(source: source)
        var score = DetectionScore()
        for index in stride(from: 0, to: PeopleScene.period, by: step) {
            let buffer = try frames.frame(index)
            let (luma, stride) = buffer.plane(0)
            var search = FaceDetector.Search.forSensor(side: side)
            if let shrink { search.shrink = shrink }
            let found = try detector.detect(gray: luma, size: buffer.size, stride: stride, search: search)
            score.add(found: found, truth: people.faces(index: index))
        }
        return score
    }

    /// The bar: recall and precision at least 0.9 for frontal faces of 60 px or more,
    /// on every 24th frame of the 24-second timeline (one to three people, walking and still;
    /// `scripts/bench framing` scores every 12th).
    @Test func defaultDetectorMeetsTheBarOnThePeopleScene() throws {
        let s = try Self.score(step: 24)
        #expect(s.frontalFaces >= 30, "the timeline shows frontal faces in most frames")
        #expect(s.recall >= 0.9, "recall \(s.recall): \(s.frontalFound) of \(s.frontalFaces)")
        #expect(s.precision >= 0.9, "precision \(s.precision): \(s.falseDetections) false of \(s.detections)")
    }

    /// The ground truth: nobody in the first 2 s; three faces (one in profile) at frame 420;
    /// boxes scale with the sensor.
    @Test func groundTruthFollowsTheTimeline() throws {
        let small = PeopleScene(sensor: Size(width: 1920, height: 1920)), big = PeopleScene(sensor: Size(width: 4032, height: 4032))
        #expect(small.faces(index: 30).isEmpty)
        let three = small.faces(index: 420)
        #expect(three.map(\.person) == [0, 1, 2])
        #expect(three.map(\.facing) == [.frontal, .frontal, .profile])
        #expect(three.allSatisfy { $0.inside })
        let a = small.faces(index: 200)[0].box, b = big.faces(index: 200)[0].box
        #expect(abs(Double(b.width) / Double(a.width) - 2.1) < 0.05)
        // The timeline repeats.
        #expect(small.faces(index: 420 + PeopleScene.period) == three)
    }

    /// The detector finds nothing in the empty scene's frames (texture, discs, barcode).
    @Test func noFacesInTheEmptyScene() throws {
        let detector = try FaceDetector()
        let source = try SyntheticSource(size: 1920, rate: FrameRate(frames: 30, seconds: 1)!, realtime: false, buffers: 2, scene: .people)
        let frames = FrameGrabber(source: source)
        for index in [0, 20, 40] {
            let b = try frames.frame(index)
            let (luma, stride) = b.plane(0)
            let found = try detector.detect(gray: luma, size: b.size, stride: stride, search: .forSensor(side: 1920))
            #expect(found.isEmpty, "frame \(index)")
        }
    }
}

/// Frames of a synthetic source drawn on demand into one buffer.
struct FrameGrabber {
    let source: SyntheticSource
    let buffer: PixelBuffer
    init(source: SyntheticSource) {
        self.source = source
        buffer = try! PixelBuffer(size: source.format.size, format: .yuv420p)
    }
    func frame(_ index: Int) throws -> PixelBuffer {
        source.render(frame: index, into: buffer)
        return buffer
    }
}
