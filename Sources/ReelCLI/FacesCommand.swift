import ReelCapture
import ReelCore
import ReelFraming

/// `reel _faces CASCADE SIDE SHRINK STEP [profiles[:PSHRINK[:PMIN]]]`: scores one face detector on the people
/// scene's ground truth and prints the `DetectionBenchmark` as JSON (for `scripts/bench
/// framing`; not a documented command).
public enum FacesCommand {
    /// The parsed arguments.
    public struct Invocation: Sendable {
        /// The frontal cascade.
        public var cascade: FaceDetector.Cascade
        /// Sensor side, shrink, every which frame.
        public var side: Int, shrink: Int, step: Int
        /// Whether the profile cascade runs too, and how it searches.
        public var profiles: Bool
        /// The profile cascade's shrink and smallest face (sensor pixels).
        public var profileShrink: Int, profileMinSize: Int
    }

    static func parse(_ rest: [String]) throws -> Invocation {
        let profile = rest.count == 5 ? rest[4].split(separator: ":").map(String.init) : []
        let pshrink = profile.count > 1 ? Int(profile[1]) : nil, pmin = profile.count > 2 ? Int(profile[2]) : nil
        guard rest.count == 4 || (rest.count == 5 && profile.first == "profiles" && profile.count <= 3
                                  && (profile.count < 2 || (pshrink.map { (1...8).contains($0) } ?? false))
                                  && (profile.count < 3 || (pmin.map { (1...2000).contains($0) } ?? false))),
              let cascade = FaceDetector.Cascade(rawValue: rest[0]),
              let side = Int(rest[1]), SyntheticSource.sizeRange.contains(side), side % 2 == 0, let shrink = Int(rest[2]), (1...8).contains(shrink),
              let step = Int(rest[3]), (1...720).contains(step) else {
            throw UsageError("_faces takes CASCADE (haar, haar-alt2, lbp) SIDE SHRINK STEP [profiles[:PSHRINK[:PMIN]]]")
        }
        return Invocation(cascade: cascade, side: side, shrink: shrink, step: step, profiles: rest.count == 5,
                          profileShrink: pshrink ?? shrink, profileMinSize: pmin ?? FaceDetector.Search.forSensor(side: side).minSize)
    }

    static func run(_ f: Invocation) throws -> Int32 {
        var search = FaceDetector.Search.forSensor(side: f.side)
        search.shrink = f.shrink
        search.profiles = f.profiles
        search.profileShrink = f.profileShrink
        search.profileMinSize = f.profileMinSize
        printJSON(try DetectionBenchmark.run(cascade: f.cascade, side: f.side, step: f.step, search: search))
        return 0
    }
}
