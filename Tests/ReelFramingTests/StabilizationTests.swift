import Foundation
import ReelCapture
import ReelCore
import ReelFraming
import ReelMedia
import Testing

/// Stabilisation's parts in-process: the motion measured on the shaken scene against the
/// shake the scene knows, and the path's behaviour on a steady pan and at the margin.
@Suite struct StabilizationTests {
    /// 90 frames of the realistic scene shaken by up to 24 pixels on a 1920² sensor: every
    /// frame's measured motion (the four corner tiles, shrunk by 2, as the camera measures it)
    /// is the scene's pan (−4, −2 a frame) plus the shake's step, within 0.5 pixel.
    @Test func theMeasuredMotionIsTheShakeTheSceneKnows() throws {
        let shake = SceneShake(amplitude: 24)
        let source = try SyntheticSource(size: 1920, rate: FrameRate(frames: 30)!, realtime: false, buffers: 2, scene: .realistic, shake: shake)
        let buffer = try PixelBuffer(size: source.format.size, format: .yuv420p)
        let estimator = try MotionEstimator(width: 1920, height: 1920, shrink: 2)
        var worst = 0.0, steps = 0
        for index in 0..<90 {
            source.render(frame: index, into: buffer)
            let (luma, stride) = buffer.plane(0)
            let m = try estimator.next(UnsafePointer(luma), stride: stride)
            guard index > 0 else { #expect(m.response == 0); continue }
            let now = shake.offset(index: index), before = shake.offset(index: index - 1)
            let truth = (x: Double(-4 + now.x - before.x), y: Double(-2 + now.y - before.y))
            worst = max(worst, abs(m.dx - truth.x), abs(m.dy - truth.y))
            if abs(now.x - before.x) + abs(now.y - before.y) >= 8 { steps += 1 }
            #expect(m.response >= StabilizationPath.weakestResponse, "frame \(index): response \(m.response)")
        }
        #expect(worst < 0.5, "largest error \(worst) px")
        #expect(steps > 30, "the shake moved by 8 px or more in only \(steps) of 89 frames")
    }

    /// The shake stays within its amplitude, in even pixels, and is 0 without one.
    @Test func theShakeIsBoundedAndEven() {
        let shake = SceneShake(amplitude: 24)
        var largest = 0
        for i in 0..<3000 {
            let o = shake.offset(index: i)
            #expect(o.x % 2 == 0 && o.y % 2 == 0)
            largest = max(largest, abs(o.x), abs(o.y))
        }
        #expect(largest >= 16 && largest <= 24, "\(largest)")
        #expect(SceneShake(amplitude: 0).offset(index: 7) == (0, 0))
    }

    /// A steady pan is intended: `lowLatency` passes it whole (no correction builds up), and
    /// a jolt is corrected in the frame it comes, within the margin.
    @Test func aSteadyPanPassesAndAJoltIsTakenOut() {
        var path = StabilizationPath(mode: .lowLatency, margin: (87, 87))
        for _ in 0..<200 {
            let c = path.next(MotionEstimator.Motion(dx: -4, dy: -2, response: 0.9))
            #expect(abs(c.x) < 1e-9 && abs(c.y) < 1e-9)
        }
        let jolt = path.next(MotionEstimator.Motion(dx: 16, dy: -2, response: 0.9))
        #expect(jolt.x > 17 && jolt.x < 20.1, "the jolt of 20 px (less its pan) corrected by \(jolt.x)")
        // A jolt past the margin: the correction stops at it.
        let far = path.next(MotionEstimator.Motion(dx: 200, dy: -2, response: 0.9))
        #expect(far.x == 87)
        // A weak estimate is not believed: the motion is taken to go on as smoothed.
        var weak = StabilizationPath(mode: .lowLatency, margin: (87, 87))
        for _ in 0..<50 { _ = weak.next(MotionEstimator.Motion(dx: -4, dy: -2, response: 0.9)) }
        let c = weak.next(MotionEstimator.Motion(dx: 60, dy: 60, response: 0.01))
        #expect(abs(c.x) < 1 && abs(c.y) < 1, "\(c)")
    }

    /// The margin a zoom leaves on each side.
    @Test func theMarginOfAZoom() {
        let m = StabilizationPath.margin(zoom: 1.1, sensor: Size(width: 1920, height: 1920))
        #expect(abs(m.x - 87.27) < 0.01 && abs(m.y - 87.27) < 0.01)
        #expect(StabilizationPath.margin(zoom: 1, sensor: Size(width: 1920, height: 1080)) == (0, 0))
    }

    /// Cinematic's path, used as the delay uses it (each frame's correction asked once
    /// `lookAhead` frames came after it; the last ones at the end): a steady pan passes whole,
    /// the last frames included (their window truncated); a sway of 12 frames' period (2.5 Hz
    /// at 30 fps) and 10 pixels is taken out to under half a pixel where the window is whole.
    @Test func theCinematicPathKeepsThePanAndTakesOutTheSway() {
        func corrections(_ motions: [MotionEstimator.Motion]) -> [PicturePoint] {
            var path = CinematicPath(margin: (87, 87))
            var out: [PicturePoint] = []
            for m in motions {
                path.add(m)
                if path.count > CinematicPath.lookAhead { out.append(path.correction(frame: path.count - 1 - CinematicPath.lookAhead)) }
            }
            for n in out.count..<path.count { out.append(path.correction(frame: n)) }
            return out
        }
        let pan = corrections(Array(repeating: MotionEstimator.Motion(dx: -4, dy: -2, response: 0.9), count: 60))
        #expect(pan.count == 60)
        for (n, c) in pan.enumerated() { #expect(abs(c.x) < 1e-6 && abs(c.y) < 1e-6, "frame \(n): \(c)") }
        func offset(_ i: Int) -> Double { 10 * sin(2 * Double.pi * Double(i) / 12) }
        let sway = corrections((0..<100).map { i in MotionEstimator.Motion(dx: i == 0 ? 0 : offset(i) - offset(i - 1), dy: 0, response: 0.9) })
        var worst = 0.0
        for n in 20..<80 {
            // The picture less its correction: where the world shows, which should be still.
            worst = max(worst, abs(offset(n) - sway[n].x - offset(0)))
        }
        #expect(worst < 0.5, "the sway of 10 px left \(worst) px")
    }
}
