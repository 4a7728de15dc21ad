import ReelCore
import ReelFraming

/// `reel _shake FILE [SKIP]`: measures how much a video shakes (`ShakeScore`) and prints it as
/// JSON (for `scripts/bench stabilization`, which scores Reel's and ffmpeg's outputs alike; not
/// a documented command).
public enum ShakeCommand {
    /// The parsed arguments.
    public struct Invocation: Sendable {
        /// The video.
        public var path: String
        /// Frames skipped at the start.
        public var skip: Int
    }

    static func parse(_ rest: [String]) throws -> Invocation {
        guard rest.count == 1 || (rest.count == 2 && Int(rest[1]).map { $0 >= 0 } == true) else {
            throw UsageError("_shake takes FILE [SKIP]")
        }
        return Invocation(path: rest[0], skip: rest.count == 2 ? Int(rest[1])! : 0)
    }

    static func run(_ s: Invocation) throws -> Int32 {
        printJSON(try ShakeScore.measure(path: s.path, skip: s.skip))
        return 0
    }
}
