import Foundation
import ReelCore

/// The index of what a recording prefix recorded (`PREFIX.index.json` beside the clips): every
/// clip of every run with that prefix in that directory, in order, with its first frame,
/// first pts, duration and wall-clock start in UTC. Kept up to date by the finaliser thread as
/// each clip is published, written with rename (`SegmentIndexFile`); `--keep` owns the clips
/// it lists (and only those), across restarts; `reel verify DIR` checks the files against it.
public struct SegmentIndex: Sendable, Codable, Equatable {
    /// 1. It goes up when a key changes its meaning or goes away.
    public var schemaVersion = 1
    /// The clips' name prefix (`--name`): the clips are `PREFIX-0001-16x9.mov`, ….
    public var prefix: String
    /// Each `reel record` run that wrote to this index, in order.
    public var runs: [SegmentIndexRun] = []
    /// Each published clip, in order (by `segment`). A clip loop recording deletes goes (its
    /// run's `deletedSegments` counts it) when it is its run's oldest listed clip; otherwise
    /// (an older one could not be deleted) it stays, marked `deleted`, until it is.
    public var segments: [IndexedSegment] = []

    /// An empty index for `prefix`.
    public init(prefix: String) { self.prefix = prefix }

    /// The file name of the index of `prefix`: `PREFIX.index.json`.
    public static func fileName(prefix: String) -> String { prefix + ".index.json" }

    /// The number of the last clip listed, or before the last run's first (0 when none).
    var lastSegment: Int {
        let openNumbers = runs.flatMap(\.open).map { SegmentIndex.highestNumber(prefix: prefix, in: [$0]) }
        return max(segments.map(\.segment).max() ?? 0, (runs.map(\.firstSegment).max() ?? 1) - 1, openNumbers.max() ?? 0)
    }

    /// Drops each run's oldest clips while they are marked deleted, counting them in the run's
    /// `deletedSegments`.
    mutating func dropDeletedOldest() {
        var seen = Set<Int>()
        segments = segments.filter { e in
            if seen.contains(e.run) { return true }
            if e.deleted, let r = runs.firstIndex(where: { $0.run == e.run }) {
                runs[r].deletedSegments += 1
                return false
            }
            seen.insert(e.run)
            return true
        }
    }
}

/// One run of `reel record` in an index: its number and the wall clock's anchor.
public struct SegmentIndexRun: Sendable, Codable, Equatable {
    /// 1 for the first run with this prefix in this directory, then 2, ….
    public var run: Int
    /// The number of its first clip (the `0001` of `PREFIX-0001-16x9.mov`): clip numbers go on
    /// from the earlier runs' last.
    public var firstSegment: Int
    /// `CLOCK_REALTIME` at the anchor, ns since the Unix epoch: read once, when the run started.
    public var anchorRealtimeNs: Int64
    /// `CLOCK_MONOTONIC` at the anchor, ns (read next to `anchorRealtimeNs`).
    public var anchorMonotonicNs: Int64
    /// `CLOCK_MONOTONIC` of the session clock's 0 (the first frame's arrival less its pts), ns;
    /// null until the first frame.
    @EncodedNull public var sessionZeroMonotonicNs: Int64?
    /// The anchor's wall-clock time in UTC (ISO 8601, ms).
    public var startUTC: String
    /// This run's clips deleted by loop recording and gone from `segments`: its oldest, so
    /// its first listed clip starts where they ended (the index stays the size of what is kept).
    public var deletedSegments = 0
    /// Files this run created whose clips it had not published at the last update: the clip
    /// being written (and one opened ahead). Empty once the run ends cleanly; after a crash,
    /// the next run adopts them (`SegmentIndexAdoption`).
    public var open: [String] = []
}

/// One published clip in an index.
public struct IndexedSegment: Sendable, Codable, Equatable {
    /// The clip's file name, in the index's directory.
    public var file: String
    /// Its number, as in its name (`PREFIX-0002-16x9.mov` is 2); numbers go on across runs.
    public var segment: Int
    /// The run that recorded it (`runs[].run`).
    public var run: Int
    /// Its take within the run (1 unless the recording was stopped and started again).
    public var take: Int
    /// The source index (barcode) of its first frame; frame indices start at 0 in every run.
    public var firstFrameIndex: Int
    /// Frames it holds.
    public var frames: Int
    /// Its first frame on the run's session clock, in seconds.
    public var firstPTS: Double
    /// Its media time in seconds (frames × the frame duration).
    public var durationSeconds: Double
    /// The aspect ratio it was recorded at (`16x9`).
    public var ratio: String
    /// The file's size in bytes when it was published.
    public var bytes: Int64
    /// Its first frame's wall-clock time in UTC (ISO 8601, ms): the run's anchor plus the
    /// monotonic time from the anchor to the first frame.
    public var startUTC: String
    /// Cut short by a failure: it holds its complete fragments only.
    public var salvaged: Bool
    /// Deleted by loop recording (`--keep`); the file is gone.
    public var deleted: Bool
    /// The clip whose finishing deleted it (its file name); null while it is kept.
    @EncodedNull public var deletedAfter: String?
}

/// An index that cannot be used (exit status 65): it does not parse, or is not a Reel index.
/// Nothing is recorded, changed or deleted.
public struct SegmentIndexError: UserFacingError {
    /// The index file.
    public let path: String
    /// What is wrong with it.
    public let reason: String
    /// An error about the index at `path`.
    public init(path: String, reason: String) { self.path = path; self.reason = reason }
    /// `ExitStatus.dataError` (65).
    public var exitStatus: Int32 { ExitStatus.dataError }
    /// `index PATH: REASON` with what to do.
    public var description: String {
        "index \(path) is damaged or not a Reel index (\(reason)); nothing was changed: move it away or choose another --name"
    }
}

extension SegmentIndex {
    /// Reads the index at `path`; nil when there is no such file.
    /// - Throws: ``SegmentIndexError`` when it cannot be read or parsed, or lists clips out of order.
    public static func load(path: String) throws(SegmentIndexError) -> SegmentIndex? {
        var st = stat()
        if stat(path, &st) != 0 {
            if errno == ENOENT { return nil }
            throw SegmentIndexError(path: path, reason: "stat: \(String(cString: strerror(errno)))")
        }
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw SegmentIndexError(path: path, reason: "cannot be read: \(error.localizedDescription)")
        }
        let index: SegmentIndex
        do { index = try JSONDecoder().decode(SegmentIndex.self, from: data) } catch {
            throw SegmentIndexError(path: path, reason: "does not parse")
        }
        guard index.schemaVersion == 1 else {
            throw SegmentIndexError(path: path, reason: "schema version \(index.schemaVersion), this Reel reads 1")
        }
        let numbers = index.segments.map(\.segment)
        let files = index.segments.map(\.file) + index.runs.flatMap(\.open)
        guard numbers == numbers.sorted(), Set(numbers).count == numbers.count,
              files.allSatisfy({ !$0.contains("/") && $0 != ".." && $0 != "." && !$0.isEmpty }) else {
            throw SegmentIndexError(path: path, reason: "its segments are out of order or name files elsewhere")
        }
        return index
    }

    /// The index's JSON: sorted keys, one segment a line (what a person reads, and what a
    /// program parses).
    func encoded() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        // Encoding plain value types cannot fail.
        return (try? encoder.encode(self)) ?? Data()
    }

    /// `ns` since the Unix epoch as ISO 8601 in UTC with milliseconds (`2026-12-06T00:01:02.345Z`).
    static func utc(nanoseconds ns: Int64) -> String {
        var seconds = time_t(ns / 1_000_000_000)
        var ms = Int((ns % 1_000_000_000) / 1_000_000)
        if ms < 0 { ms += 1000; seconds -= 1 }
        var tm = tm()
        gmtime_r(&seconds, &tm)
        func pad(_ v: Int32, _ n: Int) -> String { let s = String(v); return String(repeating: "0", count: max(0, n - s.count)) + s }
        return "\(pad(tm.tm_year + 1900, 4))-\(pad(tm.tm_mon + 1, 2))-\(pad(tm.tm_mday, 2))T\(pad(tm.tm_hour, 2)):\(pad(tm.tm_min, 2)):\(pad(tm.tm_sec, 2)).\(pad(Int32(ms), 3))Z"
    }

    /// The highest clip number among `names` that are `PREFIX-NNNN-…` files (0 when none):
    /// a new run's clips are numbered after it, so that they never collide with an earlier
    /// run's files, listed or not.
    static func highestNumber(prefix: String, in names: [String]) -> Int {
        var best = 0
        for name in names where name.hasPrefix(prefix + "-") {
            let rest = name.dropFirst(prefix.count + 1)
            guard let dash = rest.firstIndex(of: "-"), let n = Int(rest[..<dash]), n >= 0 else { continue }
            best = max(best, n)
        }
        return best
    }
}
