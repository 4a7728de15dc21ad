import CLinux
import Foundation
import ReelCore


/// Pushes a clip's written bytes toward the disk off the write path: `sync_file_range`
/// (start writeback) for every range the writer wrote, and an `fdatasync` once a second and
/// as soon as a fragment is complete (`syncSoon`). Neither ever delays a write; they only
/// bound how much a power loss could take. Used by pool slots (`PoolSlotFile`) and plain
/// files (`PlainFile`); for a plain file, which is made where it is published, the first
/// successful fdatasync is followed by an fsync of its directory, so that the file's name is
/// as durable as its bytes.
///
/// A failure of either is a writeback error: since Linux 4.13 the kernel reports it once per
/// open file, so it is kept here (`error`) for the clip to fail on, together with how far the
/// file was known to be on disk before (`durableEnd`, what the last successful fdatasync covered).
final class Syncer: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSCondition()
    private var low: Int64 = .max, high: Int64 = 0
    private var dirty = false
    private var running = true
    private var finished = false
    private var failure: SystemError?
    /// Every clip's syncer runs on one of these: parked between clips, not made anew.
    private static let threads = ThreadReuse(name: "reel.sync")

    /// Makes the syncer threads of `clips` clips at once now, before the first frame.
    static func prestartThreads(clips: Int) { threads.prestart(clips) }
    private var durable: Int64 = 0
    private var requested = false
    let fd: FileDescriptor
    var path: String { fd.path }
    /// The file's directory, fsynced after the first successful fdatasync (a plain file).
    private let directoryToSync: Bool

    /// Starts the thread for `fd`; `syncDirectory`: fsync the file's directory once, after
    /// the first fdatasync that succeeds.
    init(fd: FileDescriptor, syncDirectory: Bool = false) {
        self.fd = fd
        directoryToSync = syncDirectory
        Syncer.threads.run { [self] in run() }
    }

    func written(_ offset: Int64, _ length: Int64) {
        lock.lock()
        low = min(low, offset); high = max(high, offset + length); dirty = true
        lock.signal()
        lock.unlock()
    }

    /// A fragment is complete: fdatasync what was written so far now rather than at the next
    /// second. Requests made while a sync runs are served by one more sync after it.
    func syncSoon() {
        lock.lock()
        requested = true
        lock.signal()
        lock.unlock()
    }

    func stop() {
        lock.lock()
        running = false
        lock.signal()
        while !finished { lock.wait() }
        lock.unlock()
    }

    /// The first writeback error reported to this thread, if any.
    var error: SystemError? {
        lock.lock(); defer { lock.unlock() }
        return failure
    }

    /// The end of what the last successful fdatasync before any writeback error covered.
    var durableEnd: Int64 {
        lock.lock(); defer { lock.unlock() }
        return durable
    }

    private func failed(_ e: SystemError) {
        lock.lock()
        if failure == nil { failure = e }
        lock.unlock()
    }

    private func run() {
        if !Sys.setRecordingIOPriority(level: 4) {
            // No say over I/O priority here (a seccomp filter, say): writeback runs at the default.
        }
        var lastSync = MonotonicClock.now()
        var synced: Int64 = 0, dropped: Int64 = 0
        var directoryPending = directoryToSync
        lock.lock()
        while running {
            if low >= high && !requested { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.25)) }
            let (a, b) = (low, high)
            low = .max; high = 0
            let due = dirty && (requested || MonotonicClock.now() - lastSync >= 1_000_000_000)
            if due || !dirty { requested = false }
            if due { dirty = false }
            lock.unlock()
            if a < b {
                do { try retryingInterrupts("sync_file_range", path: path) { CLinux_start_writeback(fd.rawValue, a, b - a) } } catch let e as SystemError {
                    failed(e)
                } catch {}
                synced = max(synced, b)
            }
            if due {
                let covered = synced
                do {
                    try fd.dataSync()
                    // After a writeback error nothing more is known to be on disk: what failed
                    // to be written back stays lost even when a later fdatasync succeeds (the
                    // kernel reports the error once, and marks the pages clean).
                    lock.lock(); if failure == nil { durable = max(durable, covered) }; lock.unlock()
                    if directoryPending {
                        // The bytes are on disk; a failure here is of the file's name, which
                        // `publish` syncs again.
                        try Sys.fsyncDirectory(of: path)
                        directoryPending = false
                    }
                } catch let e as SystemError {
                    failed(e)
                } catch {}
                lastSync = MonotonicClock.now()
                // Everything written so far is on disk: drop it from the page cache, so a
                // recording keeps a small footprint and memory pressure finds little to reclaim.
                let end = synced - synced % Int64(1 << 20)
                if end > dropped && error == nil {
                    // Advice only: where the kernel declines, the pages stay cached and nothing is lost.
                    if CLinux_drop_cache(fd.rawValue, dropped, end - dropped) == 0 { dropped = end }
                }
            }
            lock.lock()
        }
        finished = true
        lock.broadcast()
        lock.unlock()
    }
}
