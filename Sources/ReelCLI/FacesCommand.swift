import ReelCapture
import ReelCore
import ReelFraming

/// `reel _faces CASCADE SIDE SHRINK STEP [profiles]`: scores one face detector on the people
/// scene's ground truth and prints the `DetectionBenchmark` as JSON (for `scripts/bench
/// framing`; not a documented command).
public enum FacesCommand {
    /// The parsed arguments.
    public struct Invocation: Sendable {
        /// The frontal cascade.
        public var cascade: FaceDetector.Cascade
        /// Sensor side, shrink, every which frame.
        public var side: Int, shrink: Int, step: Int
        /// Whether the profile cascade runs too.
        public var profiles: Bool
    }

    static func parse(_ rest: [String]) throws -> Invocation {
        guard rest.count == 4 || (rest.count == 5 && rest[4] == "profiles"),
              let cascade = FaceDetector.Cascade(rawValue: rest[0]),
              let side = Int(rest[1]), SyntheticSource.sizeRange.contains(side), side % 2 == 0, let shrink = Int(rest[2]), (1...8).contains(shrink),
              let step = Int(rest[3]), (1...720).contains(step) else {
            throw UsageError("_faces takes CASCADE (haar, haar-alt2, lbp) SIDE SHRINK STEP [profiles]")
        }
        return Invocation(cascade: cascade, side: side, shrink: shrink, step: step, profiles: rest.count == 5)
    }

    static func run(_ f: Invocation) throws -> Int32 {
        var search = FaceDetector.Search.forSensor(side: f.side)
        search.shrink = f.shrink
        search.profiles = f.profiles
        printJSON(try DetectionBenchmark.run(cascade: f.cascade, side: f.side, step: f.step, search: search))
        return 0
    }
}
