import CLinux
import Foundation
import ReelCore
import ReelMetrics
import Synchronization

/// Measures which write mode a pool should use on a filesystem — the one owner of that
/// measurement: the pool's own write path (`PoolSlotFile`) paced like a recording, once per
/// mode, each beside the same competing buffered writer (the load under which the modes differ
/// most). `StoragePool.create(writeMode: nil)` runs it when the filesystem has direct I/O and
/// no cached measurement; `reel pool create` and `reel pool calibrate` run it with the
/// competing writer in its own process.
public enum WriteModeCalibration {
    /// Long enough for the competing writer to reach the dirty-page limit (≈ 3–4 s here) so
    /// the measurement sees writeback throttling, not only a filling page cache.
    public static let defaultSeconds: Double = 8
    /// The paced rate: a 4K ProRes recording's order of magnitude.
    public static let defaultBytesPerSecond: Int64 = 150_000_000
    /// The capture ring simulated in front of the writes (ring drops).
    public static let ringBytes: Int64 = 64 << 20
    /// Frames per second of the simulated capture.
    static let fps: Double = 30

    /// A load run beside each mode while it is measured.
    public struct Load {
        /// What it is, in words (kept in the measurement).
        public var description: String
        /// Starts the load writing in `directory` for at most `seconds`; returns what stops it.
        public var start: (_ directory: String, _ seconds: Double) throws -> () -> Void

        /// A load named `description` that `start` starts.
        public init(description: String, start: @escaping (_ directory: String, _ seconds: Double) throws -> () -> Void) {
            self.description = description
            self.start = start
        }

        /// A thread of this process writing one big file buffered as fast as it can, never
        /// synced (wrapping at 8 GiB); the file is removed when it stops.
        public static var bulkWriterThread: Load {
            Load(description: "a competing bulk buffered writer (a thread)") { directory, seconds in
                let writer = try BulkWriter(path: directory + "/.reel-calibration-load-\(getpid())", seconds: seconds)
                return { writer.stop() }
            }
        }
    }

    /// Whether a pool made in `directory` needs a measurement: the filesystem has direct I/O
    /// (so there is a choice) and none of its measurements is cached.
    public static func needed(for directory: String) -> Bool {
        WriteModeMeasurement.cached(for: directory) == nil && directIOAlignment(inDirectory: directory, probeName: ".dio") != nil
    }

    /// The cached measurement of the filesystem holding `directory`; else, where there is a
    /// choice (`needed(for:)`), a new measurement, remembered in the cache; else nil.
    /// - Throws: what `measure` throws.
    public static func cachedOrMeasured(for directory: String, seconds: Double = defaultSeconds, load: Load = .bulkWriterThread,
                                        progress: (String) -> Void = { _ in }) throws -> WriteModeMeasurement? {
        if let cached = WriteModeMeasurement.cached(for: directory) { return cached }
        guard needed(for: directory) else { return nil }
        let m = try measure(directory: directory, seconds: seconds, load: load, progress: progress)
        m.remember()
        return m
    }

    /// Measures each mode the filesystem of `directory` offers (buffered; direct where
    /// O_DIRECT works) for `seconds` at `bytesPerSecond`, beside `load` when there are two.
    /// The scratch files (in `directory/.reel-calibration-PID`) are removed.
    /// - Throws: ``SystemError`` for `mkdir`, `open`, `fallocate`, `pwrite` or `fdatasync` of
    ///   the scratch files; `PoolError` or `StorageError.writeback` from the write path.
    public static func measure(directory: String, seconds: Double = defaultSeconds, bytesPerSecond: Int64 = defaultBytesPerSecond,
                               load: Load = .bulkWriterThread, progress: (String) -> Void = { _ in }) throws -> WriteModeMeasurement {
        let work = directory + "/.reel-calibration-\(getpid())"
        try retryingInterrupts("mkdir", path: work) { mkdir(work, 0o755) == 0 || errno == EEXIST ? 0 : -1 }
        defer { try? FileManager.default.removeItem(atPath: work) }
        let modes: [WriteMode] = directIOAlignment(inDirectory: work, probeName: ".dio") != nil ? [.buffered, .direct] : [.buffered]
        let loaded = modes.count > 1
        var results: [WriteModeMeasurement.Mode] = []
        for mode in modes {
            progress("\(mode == .direct ? "pool-direct" : "pool") under \(loaded ? "bulk" : "none"): \(Int(saturating: seconds)) s at \(bytesPerSecond / 1_000_000) MB/s")
            results.append(try measure(mode, in: work, seconds: seconds, bytesPerSecond: bytesPerSecond, load: loaded ? load : nil))
        }
        return WriteModeMeasurement(filesystem: WriteModeMeasurement.filesystemKey(directory),
                                    measuredAt: Date().timeIntervalSince1970,
                                    load: loaded ? load.description : "none (one mode only)",
                                    rateMBps: Double(bytesPerSecond) / 1e6, secondsPerMode: seconds, ringBytes: ringBytes, modes: results)
    }

    /// One mode: a zero-filled scratch slot written through the pool's write path at the
    /// paced rate (`pacedWrites`, the loop `reel jitter` paces with); each write's latency
    /// counts from when it was due (open loop) to when the writer thread finished it.
    private static func measure(_ mode: WriteMode, in work: String, seconds: Double, bytesPerSecond: Int64,
                                load: Load?) throws -> WriteModeMeasurement.Mode {
        let block = StoragePool.blockSize
        let count = max(1, Int(saturating: Double(bytesPerSecond) * seconds / Double(block)))
        let total = Int64(count + 4) * Int64(block)
        let scratch = work + "/slot.bin"
        try prepareSlotFile(scratch, size: total, zero: true, chunk: block)
        defer { do { try Sys.unlinkIfPresent(scratch) } catch {} }
        // Nothing of the last mode (or the prefill) still in flight.
        sync()
        let stop = try load?.start(work, seconds + 5)
        defer { stop?() }
        if stop != nil { usleep(500_000) }   // the load gets going first
        let finished = WriteCompletions(capacity: count + 4)
        let file = try PoolSlotFile(preallocatedFile: scratch, allocated: total, mode: mode, ringBytes: Int(ringBytes), observer: finished)
        let due = try pacedWrites(count: count, blockSize: block, bytesPerSecond: bytesPerSecond) { try file.write($0) }
        try file.finishInPlace()
        let done = finished.completions(writeSize: block, writes: count)
        var h = LatencyHistogram()
        for (d, c) in zip(due, done) { h.record(nanos: c > d ? c - d : 0) }
        let s = h.summary
        return WriteModeMeasurement.Mode(name: mode.rawValue, p50Ms: s.p50, p99Ms: s.p99, p999Ms: s.p999, maxMs: Double(h.maxNanos) / 1e6,
                                         ringDrops: ringDrops(due: due, done: done, writeSize: block, bytesPerSecond: bytesPerSecond,
                                                              seconds: seconds, fps: fps, ringBytes: ringBytes))
    }

    /// Frames a capture ring of `ringBytes` in front of these writes would have dropped: at
    /// each frame's due time (`fps` a second for `seconds`, from the first write's due time),
    /// the bytes produced but not yet written must fit in the ring, else that frame is dropped.
    public static func ringDrops(due: [UInt64], done: [UInt64], writeSize: Int, bytesPerSecond: Int64, seconds: Double,
                                 fps: Double, ringBytes: Int64) -> Int {
        let n = min(due.count, done.count)
        let frameBytes = Double(bytesPerSecond) / fps
        let frames = Int(saturating: seconds * fps)
        var dropped = 0
        var j = 0   // writes completed by the frame's time
        let start = due.first ?? 0
        for f in 0..<frames {
            let t = start + UInt64(saturating: Double(f) / fps * 1e9)
            while j < n && done[j] <= t { j += 1 }
            let produced = Double(f + 1) * frameBytes
            let written = Double(j) * Double(writeSize)
            if produced - written > Double(ringBytes) { dropped += 1 }
        }
        return dropped
    }
}

/// A `PoolWriteObserver` that keeps when each write of the writer thread finished and how far
/// the file was written then, and maps them back to the writes its caller made.
public final class WriteCompletions: PoolWriteObserver {
    private let record: Mutex<(times: [UInt64], ends: [Int64])>

    /// Room for `capacity` writes reserved up front (no allocation on the writer thread).
    public init(capacity: Int) {
        var times: [UInt64] = [], ends: [Int64] = []
        times.reserveCapacity(capacity); ends.reserveCapacity(capacity)
        record = Mutex((times, ends))
    }

    /// Keeps `time` and `end`.
    public func poolWriteFinished(at time: UInt64, writtenUpTo end: Int64) {
        record.withLock { $0.times.append(time); $0.ends.append(end) }
    }

    /// For each of `writes` writes of `writeSize` bytes made in order from offset 0, when the
    /// writer thread finished writing its last byte (monotonic ns): for writes smaller than a
    /// ring block, when the block holding it was written; for larger ones, the last of their
    /// blocks. Call it after `PoolSlotFile.finishInPlace()`; unfinished writes are left out.
    public func completions(writeSize: Int, writes: Int) -> [UInt64] {
        let (times, ends) = record.withLock { $0 }
        var done: [UInt64] = []
        done.reserveCapacity(writes)
        var k = 0
        for i in 0..<writes {
            let end = Int64(i + 1) * Int64(writeSize)
            while k < times.count && ends[k] < end { k += 1 }
            guard k < times.count else { break }
            done.append(times[k])
        }
        return done
    }
}

/// One big file written buffered as fast as a thread can, never synced: the competing writer
/// of a calibration. Stops after `seconds` or at `stop()`, then removes its file.
final class BulkWriter: Sendable {
    private let stopped = Atomic<Bool>(false)
    private let done = Mutex<Bool>(false)

    init(path: String, seconds: Double) throws {
        let fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC)
        let end = MonotonicClock.now() + UInt64(saturating: seconds * 1e9)
        let t = Thread { [self] in
            let chunk = 1 << 20
            let buffer = Sys.alignedAlloc(chunk)
            memset(buffer, 0x5a, chunk)
            var offset: Int64 = 0
            while !stopped.load(ordering: .relaxed) && MonotonicClock.now() < end {
                // A load: a failed write (the disk filled up) just ends it.
                guard (try? fd.writeAll(buffer, count: chunk, toAbsoluteOffset: offset)) != nil else { break }
                offset += Int64(chunk)
                if offset >= 8 << 30 { offset = 0 }   // bounded disk use: wrap at 8 GiB
            }
            free(buffer)
            fd.closeQuietly()
            do { try Sys.unlinkIfPresent(path) } catch {}
            done.withLock { $0 = true }
        }
        t.name = "reel.calibration-load"
        t.start()
    }

    /// Stops the writer and waits until its file is gone.
    func stop() {
        stopped.store(true, ordering: .relaxed)
        while !done.withLock({ $0 }) { usleep(10_000) }
    }
}
