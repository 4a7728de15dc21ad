import ReelCore
import ReelFraming

/// `reel _shake FILE [SKIP [UNTIL]]`: measures how much a video shakes (`ShakeScore`) and prints it as
/// JSON (for `scripts/bench stabilization`, which scores Reel's and ffmpeg's outputs alike; not
/// a documented command).
public enum ShakeCommand {
    /// The parsed arguments.
    public struct Invocation: Sendable {
        /// The video.
        public var path: String
        /// Frames skipped at the start.
        public var skip: Int
        /// The first frame not measured (nil: to the end).
        public var until: Int?
    }

    static func parse(_ rest: [String]) throws -> Invocation {
        let numbers = rest.dropFirst().compactMap { Int($0) }.filter { $0 >= 0 }
        guard (1...3).contains(rest.count), numbers.count == rest.count - 1 else {
            throw UsageError("_shake takes FILE [SKIP [UNTIL]]")
        }
        return Invocation(path: rest[0], skip: numbers.first ?? 0, until: numbers.count > 1 ? numbers[1] : nil)
    }

    static func run(_ s: Invocation) throws -> Int32 {
        printJSON(try ShakeScore.measure(path: s.path, skip: s.skip, until: s.until))
        return 0
    }
}
