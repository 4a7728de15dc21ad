import Foundation
import ReelCapture
import ReelCore
import ReelMedia

/// Face detection scored on the people scene's ground truth, with its CPU time: what
/// `scripts/bench framing` measures for each cascade and search (through `reel _faces`).
public struct DetectionBenchmark: Sendable, Encodable {
    /// The frontal cascade.
    public var cascade: String
    /// The sensor's side, the shrink, every which frame, the profile cascade on or off.
    public var side: Int, shrink: Int, step: Int, profiles: Bool
    /// The score.
    public var score: DetectionScore
    /// Recall and precision (`score`'s).
    public var recall: Double, precision: Double
    /// Mean CPU time of one detection (ms, the detecting thread's; OpenCV runs on one thread).
    public var cpuMsPerDetection: Double

    /// Scores `cascade` with `search` on every `step`th frame of one run of the people scene's
    /// timeline on a `side`² sensor.
    /// - Throws: `FramingError` (the cascades missing, OpenCV failing); `CaptureError` or
    ///   `MediaError` for a sensor that cannot be made.
    public static func run(cascade: FaceDetector.Cascade, side: Int, step: Int, search: FaceDetector.Search) throws -> DetectionBenchmark {
        let detector = try FaceDetector(cascade: cascade, profiles: search.profiles)
        let source = try SyntheticSource(size: side, rate: FrameRate(frames: 30, seconds: 1)!, realtime: false, buffers: 2, scene: .people)
        guard let people = source.people else { throw FramingError("the people scene has no ground truth", status: ExitStatus.software) }
        let buffer = try PixelBuffer(size: source.format.size, format: .yuv420p)
        var score = DetectionScore()
        var cpu = 0.0, n = 0
        for index in stride(from: 0, to: PeopleScene.period, by: max(1, step)) {
            source.render(frame: index, into: buffer)
            let (luma, stride) = buffer.plane(0)
            let t0 = threadCPUSeconds()
            let found = try detector.detect(gray: luma, size: buffer.size, stride: stride, search: search)
            cpu += threadCPUSeconds() - t0
            n += 1
            score.add(found: found, truth: people.faces(index: index))
        }
        return DetectionBenchmark(cascade: cascade.rawValue, side: side, shrink: search.shrink, step: step, profiles: search.profiles,
                                  score: score, recall: score.recall, precision: score.precision,
                                  cpuMsPerDetection: cpu * 1000 / Double(max(1, n)))
    }
}
