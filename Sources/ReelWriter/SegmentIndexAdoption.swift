import Foundation
import ReelCore
import ReelMedia
import ReelStorage

/// What a run does, when it starts, with the clips earlier runs left open in the index (a
/// run killed while writing them: power lost, `kill -9`). The index lists them, so they are
/// Reel's: each that holds a complete fragment is cut back to its last complete fragment (as
/// pool recovery does) and listed as a salvaged clip of its run — counted by `--keep`,
/// deleted in its turn, checked by `verify`; one without a frame is deleted; one not in the
/// directory yet (a pool's slot, published by pool recovery when the pool next opens) stays
/// open for a later run.
public enum SegmentIndexAdoption {
    /// What became of the earlier runs' open clips (file names).
    public struct Outcome: Sendable, Equatable {
        /// Listed as salvaged clips.
        public var adopted: [String] = []
        /// Deleted: they held no complete fragment.
        public var discarded: [String] = []
    }

    /// Adopts the open clips of `index`'s runs found in `directory` (see the type).
    static func adopt(_ index: inout SegmentIndex, directory: String) -> Outcome {
        var outcome = Outcome()
        for r in index.runs.indices {
            var stillOpen: [String] = []
            for name in index.runs[r].open {
                switch take(name, of: index.runs[r], prefix: index.prefix, directory: directory) {
                case .adopted(let entry):
                    index.segments.append(entry)
                    outcome.adopted.append(name)
                case .discarded: outcome.discarded.append(name)
                case .left: stillOpen.append(name)
                }
            }
            index.runs[r].open = stillOpen
        }
        index.segments.sort { $0.segment < $1.segment }
        return outcome
    }

    private enum Fate { case adopted(IndexedSegment), discarded, left }

    private static func take(_ name: String, of run: SegmentIndexRun, prefix: String, directory: String) -> Fate {
        let path = directory + "/" + name
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return .left }
        let scan = name.hasSuffix(".mkv") ? FragmentScanner.completeClusters(of: path) : FragmentScanner.completeFragments(of: path)
        guard let scan, scan.count > 0 else { return unlink(path) == 0 ? .discarded : .left }
        if scan.length < Int64(st.st_size) {
            do {
                let fd = try FileDescriptor.open(path, O_WRONLY)
                do {
                    try fd.truncate(to: scan.length)
                    try fd.sync()
                } catch {
                    fd.closeQuietly()
                    return .left
                }
                try fd.close()
            } catch { return .left }
        }
        guard let probed = try? Inspector.probeDecoding(path, frames: false), let reader = try? MediaReader(path: path) else { return .left }
        let p = probed.result
        guard p.frames > 0 else { return unlink(path) == 0 ? .discarded : .left }
        let firstPTS = p.sessionStart.flatMap(Timestamp.init(parsing:))?.seconds ?? 0
        let zero = run.sessionZeroMonotonicNs ?? run.anchorMonotonicNs
        let start = run.anchorRealtimeNs + (zero - run.anchorMonotonicNs) + Int64((firstPTS * 1e9).rounded())
        return .adopted(IndexedSegment(
            file: name, segment: SegmentIndex.highestNumber(prefix: prefix, in: [name]), run: run.run,
            take: probed.take?.number ?? 1,
            firstFrameIndex: reader.info.metadata["com.reel.first_frame_index"].flatMap { Int($0) } ?? -1,
            frames: p.frames, firstPTS: firstPTS, durationSeconds: p.durationSeconds,
            ratio: p.ratio ?? "", bytes: min(scan.length, Int64(st.st_size)),
            startUTC: SegmentIndex.utc(nanoseconds: start), salvaged: true, deleted: false, deletedAfter: nil))
    }
}
