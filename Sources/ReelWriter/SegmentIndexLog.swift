import Foundation
import Synchronization
import ReelCore

/// What the summary says of the index (`index` in `reel record --json`).
public struct SegmentIndexSummary: Sendable, Codable, Equatable {
    /// The index file (`DIR/PREFIX.index.json`).
    public var path: String
    /// This run's number in the index (1 for the first run with the prefix in the directory).
    public var run: Int
    /// Clips of earlier runs the index listed as kept when this run started (what `--keep`
    /// counted against the budget before this run's first clip).
    public var earlierSegments: Int
    /// Clips the index lists as kept now, earlier runs' included.
    public var keptSegments: Int
    /// Clips earlier runs left open (killed while writing them) that this run listed as
    /// salvaged clips, cut back to their last complete fragment.
    public var adopted: [String] = []
    /// Clips earlier runs left open that held no frame: deleted.
    public var discarded: [String] = []
    /// Why the index could not be written (the first failure), null when every update was.
    @EncodedNull public var error: String?
}

/// The index of one recording as it runs: loaded (or begun) when the recording is made, with
/// this run appended; updated by the finaliser thread as each clip is published (and loop
/// recording deletes), each update written whole with rename (`SegmentIndexFile`).
public final class SegmentIndexLog: Sendable {
    /// The directory of the clips and the index.
    public let directory: String
    /// The clips' name prefix.
    public let prefix: String
    /// This run's first clip number: one past the highest of the index's clips and of the
    /// directory's `PREFIX-NNNN-…` files.
    public let firstSegment: Int

    private struct State {
        var index: SegmentIndex
        var run: SegmentIndexRun
        var runListed = false
        var error: String?
    }
    private let state: Mutex<State>
    /// Held while an update is snapshotted and written: updates come from the threads that
    /// create clips and from the finaliser, and each writes the newest state whole.
    private let writing = Mutex(0)
    private let earlier: [IndexedSegment]
    /// What the earlier runs' open clips became when this run started (`SegmentIndexAdoption`).
    public let adoption: SegmentIndexAdoption.Outcome

    /// Reads `directory/PREFIX.index.json` (an empty index when there is none) and begins this
    /// run in it; nothing is written until the first clip is published.
    /// - Throws: ``SegmentIndexError`` when the index exists and cannot be used.
    public init(directory: String, prefix: String) throws(SegmentIndexError) {
        self.directory = directory
        self.prefix = prefix
        let path = directory + "/" + SegmentIndex.fileName(prefix: prefix)
        var index = try SegmentIndex.load(path: path) ?? SegmentIndex(prefix: prefix)
        guard index.prefix == prefix else {
            throw SegmentIndexError(path: path, reason: "it is the index of prefix \(index.prefix)")
        }
        adoption = SegmentIndexAdoption.adopt(&index, directory: directory)
        // An unreadable directory is reported by the writer when it creates the first clip.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        // Numbers only go up: after the files deleted as open clips without a frame too.
        firstSegment = max(index.lastSegment, SegmentIndex.highestNumber(prefix: prefix, in: names + adoption.discarded)) + 1
        earlier = index.segments.filter { !$0.deleted }
        let run = SegmentIndexRun(run: (index.runs.map(\.run).max() ?? 0) + 1, firstSegment: firstSegment,
                                  anchorRealtimeNs: 0, anchorMonotonicNs: 0, sessionZeroMonotonicNs: nil,
                                  startUTC: SegmentIndex.utc(nanoseconds: 0))
        state = Mutex(State(index: index, run: run))
    }

    /// The index file's path.
    public var path: String { directory + "/" + SegmentIndex.fileName(prefix: prefix) }

    /// The clips of earlier runs the index lists as kept, oldest first, with their paths:
    /// what loop recording counts (and may delete) before this run's clips.
    var earlierKept: [(path: String, segment: IndexedSegment)] {
        earlier.map { (directory + "/" + $0.file, $0) }
    }

    /// Takes the wall clock's anchor: `CLOCK_REALTIME` and `CLOCK_MONOTONIC`, read together
    /// once, when the run starts. Every clip's `startUTC` is reckoned from this pair and the
    /// monotonic clock, so a step of the wall clock (NTP) afterwards moves none of them.
    func takeAnchor() {
        var real = timespec(), mono = timespec()
        // Both clocks always exist on Linux and the memory is valid: a failure is a broken system.
        guard clock_gettime(CLOCK_REALTIME, &real) == 0, clock_gettime(CLOCK_MONOTONIC, &mono) == 0 else {
            fatalError("clock_gettime failed: errno \(errno)")
        }
        let r = Int64(real.tv_sec) * 1_000_000_000 + Int64(real.tv_nsec)
        let m = Int64(mono.tv_sec) * 1_000_000_000 + Int64(mono.tv_nsec)
        state.withLock {
            $0.run.anchorRealtimeNs = r
            $0.run.anchorMonotonicNs = m
            $0.run.startUTC = SegmentIndex.utc(nanoseconds: r)
        }
    }

    /// Notes the monotonic time of the session clock's 0: the first frame's arrival less its pts.
    func noteSessionZero(monotonicNs: Int64) {
        state.withLock { s in
            if s.run.sessionZeroMonotonicNs == nil { s.run.sessionZeroMonotonicNs = monotonicNs }
        }
    }

    /// The listed clip at `path` (by file name), if any.
    func entry(path: String) -> IndexedSegment? {
        let file = (path as NSString).lastPathComponent
        return state.withLock { s in s.index.segments.first { $0.file == file } }
    }

    /// Lists the file `name` as this run's open clip (just created, nothing written to it
    /// yet) and writes the index. Called by the thread that creates the clip.
    func created(_ name: String) {
        update { s in s.run.open.append(name) }
    }

    /// At the run's end: clips this run opened ahead and never used are gone (the writer
    /// deleted them, or released their pool slots); they leave `open`, and the index is
    /// written if that changed it.
    func runEnded() {
        let vanished = state.withLock { s in
            s.run.open.filter { name in
                var st = stat()
                return stat(directory + "/" + name, &st) != 0 && errno == ENOENT
            }
        }
        guard !vanished.isEmpty else { return }
        update { s in s.run.open.removeAll { vanished.contains($0) } }
    }

    /// Applies `change` to the state (this run's entry put in the index after it) and writes
    /// the index; a failure is kept (`summary.error`), and the next update tries again.
    private func update(_ change: (inout State) -> Void) {
        writing.withLock { _ in
            let snapshot: SegmentIndex = state.withLock { s in
                change(&s)
                if !s.runListed {
                    s.index.runs.append(s.run)
                    s.runListed = true
                } else if let i = s.index.runs.lastIndex(where: { $0.run == s.run.run }) {
                    s.index.runs[i] = s.run
                }
                return s.index
            }
            do {
                try SegmentIndexFile.write(snapshot, directory: directory)
            } catch {
                state.withLock { s in if s.error == nil { s.error = String(describing: error) } }
            }
        }
    }

    /// Lists `clip` (just published; nothing for a clip without frames), marks the clips at
    /// `deleted` as deleted after it, and writes the index. Called by the finaliser thread, in
    /// publishing order. A failure to write is kept (`summary.error`) and the next update
    /// tries again with everything.
    func published(_ clip: ClipSummary, deleted: [String]) {
        let file = (clip.path as NSString).lastPathComponent
        let number = SegmentIndex.highestNumber(prefix: prefix, in: [file])
        update { s in
            s.run.open.removeAll { $0 == file }
            if clip.frames > 0 {
                let zero = s.run.sessionZeroMonotonicNs ?? s.run.anchorMonotonicNs
                let start = s.run.anchorRealtimeNs + (zero - s.run.anchorMonotonicNs) + Int64((clip.firstPTS * 1e9).rounded())
                s.index.segments.append(IndexedSegment(
                    file: file, segment: number, run: s.run.run, take: clip.take, firstFrameIndex: clip.firstFrameIndex,
                    frames: clip.frames, firstPTS: clip.firstPTS, durationSeconds: clip.durationSeconds, ratio: clip.ratio,
                    bytes: clip.bytes, startUTC: SegmentIndex.utc(nanoseconds: start), salvaged: clip.salvaged,
                    deleted: false, deletedAfter: nil))
            }
            let gone = Set(deleted.map { ($0 as NSString).lastPathComponent })
            for i in s.index.segments.indices where gone.contains(s.index.segments[i].file) {
                s.index.segments[i].deleted = true
                s.index.segments[i].deletedAfter = file
            }
            if let i = s.index.runs.lastIndex(where: { $0.run == s.run.run }) { s.index.runs[i] = s.run }
            s.index.dropDeletedOldest()
            if let i = s.index.runs.lastIndex(where: { $0.run == s.run.run }) { s.run.deletedSegments = s.index.runs[i].deletedSegments }
        }
    }

    /// What the summary says of the index now.
    public var summary: SegmentIndexSummary {
        state.withLock { s in
            SegmentIndexSummary(path: path, run: s.run.run, earlierSegments: earlier.count,
                                keptSegments: s.index.segments.filter { !$0.deleted }.count,
                                adopted: adoption.adopted, discarded: adoption.discarded, error: s.error)
        }
    }
}
