import Foundation
import ReelCore

/// Loop recording (`--keep`): how much of the finished segments a recording keeps.
/// When the finished clips' total goes over it, the oldest finished clips are deleted; the
/// clip being written does not count and is never deleted, and the newest finished clip is
/// always kept (a budget smaller than one segment keeps the latest complete one).
public enum LoopBudget: Sendable, Equatable, CustomStringConvertible {
    /// At most this many bytes of finished clips.
    case bytes(Int64)
    /// At most this many seconds of media time of finished clips.
    case seconds(Double)

    /// The budget in words: `N bytes` or `N s`.
    public var description: String {
        switch self {
        case .bytes(let n): return "\(n) bytes"
        case .seconds(let s): return "\(s) s"
        }
    }

    /// How much a clip of `bytes` and `seconds` of media time counts against the budget.
    func amount(bytes: Int64, seconds: Double) -> Double {
        switch self {
        case .bytes: return Double(bytes)
        case .seconds: return seconds
        }
    }

    var limit: Double {
        switch self {
        case .bytes(let n): return Double(n)
        case .seconds(let s): return s
        }
    }
}

/// A finished clip that loop recording deleted, as the summary's `loopDeletions` lists it.
public struct LoopDeletion: Sendable, Codable, Equatable {
    /// The deleted file.
    public var path: String
    /// Its first frame index.
    public var firstFrameIndex: Int
    /// The frames it held.
    public var frames: Int
    /// Its bytes and media time, what it counted against the budget.
    public var bytes: Int64
    /// Its media time in seconds.
    public var durationSeconds: Double
    /// The clip whose finishing took the total over the budget.
    public var after: String
    /// The total of the finished clips kept once this deletion was made (bytes or seconds,
    /// as the budget counts).
    public var keptTotal: Double
    /// Why the file could not be deleted (`unlink`'s error), null when it was.
    @EncodedNull public var error: String? = nil
    /// The bytes the storage pool took back from it as a free slot (its blocks kept allocated
    /// and zeroed, not refilled), null when it was unlinked (a plain recording, or a pool that
    /// missed no slot).
    @EncodedNull public var reclaimedBytes: Int64? = nil
}

/// Decides which finished clips go: the clips finished so far and still kept, oldest first.
/// Fed clip by clip as they are published (by the finaliser thread, in order).
public struct LoopKeeper: Sendable {
    /// The budget it keeps to.
    public let budget: LoopBudget
    private var kept: [(path: String, amount: Double)] = []
    private var total = 0.0

    /// A keeper with nothing finished yet.
    public init(budget: LoopBudget) { self.budget = budget }

    /// The total of the finished clips kept (bytes or seconds, as the budget counts).
    public var keptTotal: Double { total }

    /// Counts a clip finished before this recording (an earlier run's, listed in the index) as
    /// kept, after those noted so far: it may be deleted, oldest first, once a clip of this
    /// recording finishes and the total is over the budget. Nothing is deleted now.
    public mutating func earlier(_ path: String, bytes: Int64, seconds: Double) {
        let amount = budget.amount(bytes: bytes, seconds: seconds)
        kept.append((path, amount))
        total += amount
    }

    /// Notes that the clip at `path` finished, `bytes` long and `seconds` of media time;
    /// returns the paths of the finished clips to delete now, oldest first, each with the
    /// total kept once it goes.
    public mutating func finished(_ path: String, bytes: Int64, seconds: Double) -> [(path: String, keptTotal: Double)] {
        let amount = budget.amount(bytes: bytes, seconds: seconds)
        kept.append((path, amount))
        total += amount
        var out: [(String, Double)] = []
        while total > budget.limit, kept.count > 1 {
            let old = kept.removeFirst()
            total -= old.amount
            out.append((old.path, total))
        }
        return out
    }
}
