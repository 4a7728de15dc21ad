import Foundation
import ReelCore
import ReelMedia
import ReelStorage

/// Closes clips off the capture path, one after another, in the order they were handed over.
final class Finaliser: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSCondition()
    private var jobs: [(ClipRecorder, Bool)] = []
    private var closing = false
    private var done = false
    private var clips: [ClipSummary] = []
    private var write: WriteStats?
    private var firstError: (any Error)?

    /// Receives the encoder of each clip closed cleanly that can start another.
    var recycle: (@Sendable (VideoEncoder) -> Void)?
    /// The clip being closed now.
    private var closingNow: ClipRecorder?
    /// Clips submitted and not yet let go (`waitUntilSettled`).
    private var unsettled = 0
    /// Loop recording: which finished clips go (set before `start`; the finaliser thread's).
    var keeper: LoopKeeper?
    /// The index of what was recorded, updated as each clip is published (set before `start`;
    /// the finaliser thread's). With a keeper, its earlier runs' clips count first.
    var index: SegmentIndexLog?
    /// Where the clips are (set before `start`): loop recording deletes through it.
    var storage: (any ClipStorage)?
    /// The finished clips loop recording deleted, in order.
    private var deletions: [LoopDeletion] = []

    /// The finished clips loop recording deleted so far.
    var loopDeletions: [LoopDeletion] {
        lock.lock(); defer { lock.unlock() }
        return deletions
    }

    /// Waits until fewer than `limit` clips wait to be closed or are being closed.
    func waitUntilBacklog(below limit: Int) {
        lock.lock(); defer { lock.unlock() }
        while jobs.count + (closingNow == nil ? 0 : 1) >= limit { lock.wait() }
    }

    /// Whether a clip of `size` with a restartable encoder is waiting or being closed.
    func isClosing(size: Size) -> Bool {
        lock.lock(); defer { lock.unlock() }
        // No array of the clips: it could hold the last reference to one past the lock.
        func closes(_ c: ClipRecorder) -> Bool { c.size == size && c.encoder.canRestart }
        return jobs.contains { closes($0.0) } || (closingNow.map(closes) ?? false)
    }

    func start() {
        if let index, keeper != nil {
            for (path, e) in index.earlierKept { keeper!.earlier(path, bytes: e.bytes, seconds: e.durationSeconds) }
        }
        let t = Thread { [self] in run() }
        t.name = "reel.finalise"
        t.start()
    }

    func submit(_ clip: ClipRecorder, salvage: Bool = false) {
        lock.lock()
        jobs.append((clip, salvage))
        unsettled += 1
        lock.broadcast()
        lock.unlock()
    }

    /// Waits until every submitted clip is closed; returns them in order and the first error.
    func finishAll() -> ([ClipSummary], (any Error)?, WriteStats?) {
        lock.lock(); defer { lock.unlock() }
        closing = true
        lock.broadcast()
        while !done { lock.wait() }
        return (clips.sorted { $0.path < $1.path }, firstError, write)
    }

    /// Waits until no clip is waiting, being closed or still holding what it was closed with
    /// (its file, its encoder's threads), or `seconds` have passed, or `stop()` returns true
    /// (checked every 50 ms): whether none is. A clip opened ahead at a segment boundary waits
    /// for this, so that the recording's descriptors and threads are the same before and
    /// after every boundary.
    func waitUntilSettled(seconds: Double, stop: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        lock.lock(); defer { lock.unlock() }
        while unsettled > 0 {
            if Date() >= deadline || stop() { return false }
            _ = lock.wait(until: min(deadline, Date(timeIntervalSinceNow: 0.05)))
        }
        return true
    }

    private func run() {
        while true {
            lock.lock()
            while jobs.isEmpty && !closing { lock.wait() }
            if jobs.isEmpty && closing {
                done = true
                lock.broadcast()
                lock.unlock()
                return
            }
            let salvage = jobs[0].1
            closingNow = jobs.removeFirst().0
            let clip = closingNow!
            lock.unlock()
            let (summary, error, stats) = close(clip, salvage: salvage)
            // The clip is let go here, outside the lock: its last reference, and with it its
            // encoder (and that encoder's threads) and its file — before loop recording opens a
            // deleted clip to take it back, so that the two are never open at once.
            _ = consume clip
            lock.lock(); let closed = closingNow; closingNow = nil; lock.broadcast(); lock.unlock()
            _ = consume closed
            settle(summary, error: error, stats: stats)
            lock.lock(); unsettled -= 1; lock.broadcast(); lock.unlock()
        }
    }

    /// Closes `clip` (salvages it when `salvage`, or when closing fails): its summary, the
    /// error closing it, its write figures.
    private func close(_ clip: ClipRecorder, salvage: Bool) -> (ClipSummary?, (any Error)?, WriteStats?) {
        var summary: ClipSummary? = nil
        var error: (any Error)? = nil
        if salvage {
            summary = clip.salvage()
        } else {
            do {
                summary = try clip.finalize()
                if clip.encoder.canRestart { recycle?(clip.encoder) }
            } catch let e {
                error = e
                summary = clip.salvage()
            }
        }
        return (summary, error, clip.writeStats)
    }

    /// After a clip closed and was let go: loop recording deletes what it lets go after it,
    /// and the clip is published in the index and listed.
    private func settle(_ summary: ClipSummary?, error: (any Error)?, stats: WriteStats?) {
        // What the clip's encoder, muxer and writer freed goes back to the kernel.
        ProcessMemory.releaseFreedMemory()
        // Loop recording: the oldest finished clips go once the finished total is over the
        // budget (the clip being written is not finished, so neither counted nor deleted).
        var deleted: [LoopDeletion] = []
        // Files gone (deleted now, or already missing): marked deleted in the index.
        var gone: [String] = []
        if let summary, keeper != nil {
            let doomed = keeper!.finished(summary.path, bytes: summary.bytes, seconds: summary.durationSeconds)
            lock.lock(); let finished = clips; lock.unlock()
            for (path, keptTotal) in doomed {
                // A clip of this recording, or one of an earlier run that the index lists.
                let old: (firstFrameIndex: Int, frames: Int, bytes: Int64, seconds: Double)
                if let c = finished.first(where: { $0.path == path }) {
                    old = (c.firstFrameIndex, c.frames, c.bytes, c.durationSeconds)
                } else if let e = index?.entry(path: path) {
                    old = (e.firstFrameIndex, e.frames, e.bytes, e.durationSeconds)
                } else {
                    continue
                }
                var d = LoopDeletion(path: path, firstFrameIndex: old.firstFrameIndex, frames: old.frames,
                                     bytes: old.bytes, durationSeconds: old.seconds, after: summary.path,
                                     keptTotal: keptTotal)
                switch storage?.deleteFinishedClip(path) ?? (unlink(path) == 0 ? .unlinked : .failed(errno)) {
                case .unlinked:
                    gone.append(path)
                case .reclaimed(let bytes):
                    d.reclaimedBytes = bytes
                    gone.append(path)
                case .failed(let e):
                    d.error = String(cString: strerror(e))
                    if e == ENOENT { gone.append(path) }
                }
                deleted.append(d)
            }
        }
        if let summary, let index { index.published(summary, deleted: gone) }
        if summary != nil { storage?.finishedClipSettled() }
        lock.lock()
        deletions += deleted
        if let stats {
            if write == nil { write = stats } else { write!.merge(stats) }
        }
        if let summary { clips.append(summary) }
        if let error, firstError == nil { firstError = error }
        lock.broadcast()
        lock.unlock()
    }
}
