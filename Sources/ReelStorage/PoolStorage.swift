import CLinux
import Foundation
import ReelCore
import ReelMetrics

/// Write-path figures of one clip, or of a recording (merged).
public struct WriteStats: Sendable {
    /// Service time of every write the storage layer made.
    public var histogram = LatencyHistogram()
    /// The most bytes waiting in the ring at once, and the ring's size.
    public var ringHighWater: Int64 = 0
    public var ringBytes: Int64 = 0
    /// Times the muxer had to wait for a free ring block (the ring was full).
    public var ringFullWaits = 0
    public var writeMode: String
    public var bytesWritten: Int64 = 0
    /// Slots clips grew into beyond their first.
    public var slotGrowths = 0
    /// Each write as (monotonic ns when it started, ns it took), for plots; at most `sampleLimit`.
    public var samples: [(start: UInt64, took: UInt64)] = []
    public static let sampleLimit = 1 << 18

    public init(writeMode: String) { self.writeMode = writeMode }

    public mutating func merge(_ o: WriteStats) {
        histogram.merge(o.histogram)
        ringHighWater = max(ringHighWater, o.ringHighWater)
        ringBytes = max(ringBytes, o.ringBytes)
        ringFullWaits += o.ringFullWaits
        bytesWritten += o.bytesWritten
        slotGrowths += o.slotGrowths
        // Clips written in different modes (a direct open that failed for one) say so.
        writeMode = writeMode == o.writeMode ? o.writeMode : "mixed"
        samples += o.samples.prefix(max(0, WriteStats.sampleLimit - samples.count))
    }
}

/// Clips written into a storage pool's slots, then moved to `destination`.
public struct PoolStorage: ClipStorage {
    public let pool: StoragePool
    public let destination: String
    public let ringBytes: Int

    /// - Parameter ringBytes: the bounded ring between the muxer and the writer thread.
    public init(pool: StoragePool, directory: String, ringBytes: Int = 64 << 20) throws {
        self.pool = pool
        self.destination = directory
        self.ringBytes = ringBytes
        try FileStorage.makeWritableDirectory(directory)
    }

    /// Claims a slot; when none is free but one is on its way — clips of this process still
    /// closing (a burst of seams), or slots being prepared by a live process (replenishing) —
    /// waits for it (up to 30 s) rather than failing.
    private func claimWaitingForOwnClips(destination: String, container: String) throws -> (id: Int, path: String, allocated: Int64, mode: WriteMode) {
        let deadline = MonotonicClock.now() + 30_000_000_000
        while true {
            do {
                return try pool.claimSlot(destination: destination, container: container)
            } catch PoolError.full(let why) {
                let coming = (try? pool.readManifest().slots.contains {
                    ($0.state == .active && $0.isMine) || ($0.state == .preparing && $0.ownerIsAlive)
                }) ?? false
                guard coming, MonotonicClock.now() < deadline else { throw PoolError.full(why) }
                usleep(2_000)
            }
        }
    }

    public func createClip(named name: String) throws -> any ClipFile {
        let dest = destination + "/" + name
        if Sys.fileExists(dest) { throw StorageError.exists(dest) }
        let container = name.split(separator: ".").last.map(String.init) ?? "mov"
        let slot = try claimWaitingForOwnClips(destination: dest, container: container)
        do {
            return try PoolSlotFile(pool: pool, slotID: slot.id, slotPath: slot.path, allocated: slot.allocated,
                                    destination: dest, mode: slot.mode, ringBytes: ringBytes)
        } catch {
            // The slot is untouched: give it back. Should that fail, it stays active under this
            // process and is recovered (as nothing) once the process is gone.
            do { try pool.returnSlot(slot.id) } catch {}
            throw error
        }
    }
}

/// Pushes a slot's written bytes toward the disk off the write path: `sync_file_range`
/// (start writeback) for every range the writer thread wrote, and an `fdatasync` once a
/// second. Neither ever delays a write; they only bound how much a power loss could take.
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
    private var durable: Int64 = 0
    let fd: FileDescriptor
    var path: String { fd.path }

    init(fd: FileDescriptor) {
        self.fd = fd
        let t = Thread { [self] in run() }
        t.name = "reel.sync"
        t.start()
    }

    func written(_ offset: Int64, _ length: Int64) {
        lock.lock()
        low = min(low, offset); high = max(high, offset + length); dirty = true
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

    /// The end of what the last successful fdatasync covered.
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
        if CLinux_set_io_priority(2, 4) != 0 {
            // No say over I/O priority here (a seccomp filter, say): writeback runs at the default.
        }
        var lastSync = MonotonicClock.now()
        var synced: Int64 = 0, dropped: Int64 = 0
        lock.lock()
        while running {
            if low >= high { _ = lock.wait(until: Date(timeIntervalSinceNow: 0.25)) }
            let (a, b) = (low, high)
            low = .max; high = 0
            let due = dirty && MonotonicClock.now() - lastSync >= 1_000_000_000
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
                    lock.lock(); durable = max(durable, covered); lock.unlock()
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

/// A clip being written into a pool slot through a bounded ring of aligned 1 MiB blocks,
/// drained by one writer thread.
///
/// The muxer's bytes are copied into the current block; full blocks go to the writer thread,
/// which writes them in place (O_DIRECT or buffered with early writeback, as the pool says)
/// and syncs once a second. The muxer waits only when every block is in flight. Seeks back
/// into bytes already handed over (header patches) become ordered patch writes.
///
/// Thread safety: the muxer side (`write`, `seek`, `publish`) runs on one thread at a time;
/// the state shared with the writer thread is guarded by `lock`.
public final class PoolSlotFile: ClipFile, @unchecked Sendable {
    /// Where the clip is published: the name asked for, or — when another program took that
    /// name meanwhile — the next free one (`NAME-2.EXT`, …).
    public private(set) var path: String
    let pool: StoragePool?
    let slotID: Int
    let slotPath: String
    private let fd: FileDescriptor
    /// The slot opened with O_DIRECT, in direct mode.
    private let directFD: FileDescriptor?
    private let mode: WriteMode
    private let blockSize = StoragePool.blockSize
    private let blocks: RingBlocks
    private var allocated: Int64

    // Muxer side.
    public private(set) var position: Int64 = 0
    public private(set) var size: Int64 = 0
    private var current: Int            // block being filled
    private var currentStart: Int64 = 0 // file offset of its first byte
    private var currentFill = 0         // bytes of it holding data
    private var published = false
    private var salvaging = false
    private var lastHandOff = MonotonicClock.now()
    /// A partial block older than this is written out as it is, so that a crash loses at
    /// most this much of what the muxer has produced (plus what is in flight).
    private let partialFlushInterval: UInt64 = 100_000_000
    /// Bytes of the current block already written out by `packetWritten`.
    private var flushedFill = 0

    private enum Job { case block(Int, Int64, Int), patch(UnsafeMutableRawPointer, Int64, Int), sync, stop }

    // Guarded by `lock`.
    private let lock = NSCondition()
    private var jobs: [Job] = []
    private var freeBlocks: [Int]
    private var inFlightBytes: Int64 = 0
    private var writerError: (any Error)?
    private var stopped = false
    private var histogram = LatencyHistogram()
    private var ringHighWater: Int64 = 0
    private var ringFullWaits = 0
    /// Benchmark mode: how far the file was written at each time in `trace` (monotonic ns).
    private var traceEnds: [Int64] = []
    private var bytesWritten: Int64 = 0
    private var growths = 0
    private var samples: [(start: UInt64, took: UInt64)] = []
    private var writtenEnd: Int64 = 0
    private var tracing = false
    private let syncer: Syncer
    private var trace: [UInt64] = []
    /// An fdatasync of `publish` failed: only what the syncer had on disk before counts.
    private var ownSyncFailed = false

    /// A slot file outside any pool, for `reel jitter`: the same ring and writer thread,
    /// writing into a file that is already allocated (`allocated` bytes). `finishBenchmark()`
    /// drains and syncs; nothing is published.
    public convenience init(benchmarkFile file: String, allocated: Int64, mode: WriteMode, ringBytes: Int, traceCapacity: Int) throws {
        try self.init(pool: nil, slotID: 0, slotPath: file, allocated: allocated, destination: file, mode: mode, ringBytes: ringBytes)
        lock.lock()
        trace.reserveCapacity(traceCapacity)
        tracing = true
        lock.unlock()
    }

    /// Writes the partial last block, drains, syncs and stops the writer. Returns, for each
    /// write of `writeSize` bytes the benchmark made (in order, from offset 0), when the
    /// writer thread finished writing its last byte (monotonic ns): for writes smaller than
    /// a ring block, when the block holding it was written; for larger ones, the last of
    /// their blocks.
    public func finishBenchmark(writeSize: Int) throws -> [UInt64] {
        if currentFill > 0 {
            let copy = malloc(currentFill)!
            memcpy(copy, blocks[current], currentFill)
            enqueue(.patch(copy, currentStart, currentFill))
            currentFill = 0
        }
        try drain()
        try fd.dataSync()
        stopWriter()
        lock.lock(); defer { lock.unlock() }
        let writes = writeSize > 0 ? Int(size / Int64(writeSize)) : 0
        var done: [UInt64] = []
        done.reserveCapacity(writes)
        var k = 0
        for i in 0..<writes {
            let end = Int64(i + 1) * Int64(writeSize)
            while k < trace.count && traceEnds[k] < end { k += 1 }
            guard k < trace.count else { break }
            done.append(trace[k])
        }
        return done
    }

    init(pool: StoragePool?, slotID: Int, slotPath: String, allocated: Int64, destination: String, mode: WriteMode, ringBytes: Int) throws {
        self.pool = pool; self.slotID = slotID; self.slotPath = slotPath
        self.allocated = allocated; self.path = destination
        fd = try FileDescriptor.open(slotPath, O_RDWR)
        syncer = Syncer(fd: fd)
        // Where O_DIRECT cannot be opened (the pool was moved to a filesystem without it),
        // the clip is written buffered, and the summary says so.
        directFD = mode == .direct ? try? FileDescriptor.open(slotPath, O_WRONLY | CLinux_O_DIRECT) : nil
        self.mode = directFD != nil ? .direct : (mode == .direct ? .buffered : mode)
        let count = max(4, ringBytes / blockSize)
        blocks = RingBlocks(count: count, size: StoragePool.blockSize)
        current = 0
        blocks.allocate(0)
        freeBlocks = Array(1..<count)
        let t = Thread { [self] in writerLoop() }
        t.name = "reel.storage"
        t.start()
    }

    deinit {
        stopWriter()
        blocks.freeAll()
        // Synced (publish) or given up (discard) before: close has nothing left to report.
        fd.closeQuietly()
        directFD?.closeQuietly()
    }

    /// Bytes the ring can still take without the muxer waiting.
    public var headroom: Int64 {
        lock.lock(); defer { lock.unlock() }
        return Int64(freeBlocks.count * blockSize + (blockSize - currentFill))
    }

    // MARK: ByteSink

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        if let e = pendingError() { throw e }
        var src = bytes.baseAddress!
        var remaining = bytes.count
        // Before the current block: bytes already handed to the writer thread.
        if position < currentStart {
            let n = Int(min(Int64(remaining), currentStart - position))
            let copy = malloc(n)!
            memcpy(copy, src, n)
            enqueue(.patch(copy, position, n))
            position += Int64(n); src += n; remaining -= n
        }
        while remaining > 0 {
            let offsetInBlock = Int(position - currentStart)
            let n = min(remaining, blockSize - offsetInBlock)
            try ensureAllocated(upTo: currentStart + Int64(blockSize))
            memcpy(blocks[current] + offsetInBlock, src, n)
            position += Int64(n); src += n; remaining -= n
            currentFill = max(currentFill, offsetInBlock + n)
            if currentFill == blockSize && position == currentStart + Int64(blockSize) {
                try handOffCurrentBlock()
            }
        }
        size = max(size, position)
    }

    /// After a packet: bytes of the current block not yet on their way to disk are written
    /// out (at most every `partialFlushInterval`), so a crash loses little.
    public func packetWritten() {
        guard currentFill > flushedFill, MonotonicClock.now() - lastHandOff >= partialFlushInterval else { return }
        let n = currentFill - flushedFill
        let copy = malloc(n)!
        memcpy(copy, blocks[current] + flushedFill, n)
        enqueue(.patch(copy, currentStart + Int64(flushedFill), n))
        flushedFill = currentFill
        lastHandOff = MonotonicClock.now()
    }

    public func seek(to offset: Int64) throws {
        guard offset >= 0 else { throw SystemError("lseek", path: path, errno: EINVAL) }
        if offset > currentStart + Int64(blockSize) {
            throw SystemError("lseek", path: path, errno: EINVAL)   // muxers never seek past the end
        }
        position = offset
    }

    /// Salvage after a failure: waits for queued writes (whatever they returned), cuts the
    /// slot to `length`; `publish` then moves what is there.
    /// Once published, the file is the user's clip: a later failure (giving the slot back,
    /// say) never cuts it.
    public func truncate(to length: Int64) throws {
        guard !published else { return }
        salvaging = true
        currentFill = 0
        drain(ignoringErrors: true)
        try fd.truncate(to: length)
        size = length
    }

    /// Writes what is left, syncs, cuts the slot to the clip's length and moves it to `path`
    /// (never replacing a file), then gives the slot back to the pool and starts replenishing.
    public func publish() throws -> Int64 {
        guard !published else { return size }
        if salvaging {
            drain(ignoringErrors: true)
        } else {
            // The partial last block: buffered, exact length.
            if currentFill > 0 {
                let copy = malloc(currentFill)!
                memcpy(copy, blocks[current], currentFill)
                enqueue(.patch(copy, currentStart, currentFill))
                currentFill = 0
            }
            try drain()
        }
        // Salvaging, the length was already cut to what was on disk before a writeback error.
        if !salvaging { try checkWriteback() }
        try syncSlot()
        stopWriter()
        // The syncer may have met (and so consumed) a writeback error our fdatasync then missed.
        if !salvaging { try checkWriteback() }
        if size <= smallClipLimit && !salvaging {
            // A short clip (seams make many): copy it out and zero what it used, so the slot
            // is ready again at once instead of being replaced by a freshly prefilled one.
            var target = path
            while true {
                do { try copyOut(fd, length: size, to: target); break } catch StorageError.exists {
                    target = uniqueName(path, tag: nil)
                }
            }
            path = target
            published = true
            recycleSlot()
            return size
        }
        try fd.truncate(to: size)
        try syncSlot()
        path = try publishFile(from: slotPath, toFreeNameLike: path, tag: nil)
        published = true
        try pool?.releaseSlot(slotID)
        pool?.replenishInBackground()
        return size
    }

    public func discard() {
        guard !published else { return }
        salvaging = true
        drain(ignoringErrors: true)
        stopWriter()
        published = true
        if size <= smallClipLimit { recycleSlot() } else { dropSlot() }
    }

    /// After a short clip was copied out (or thrown away): zeros what it used and gives the
    /// slot back; a slot that cannot be zeroed, or met an I/O error, leaves the pool instead.
    /// The clip is already safe (or gone): nothing here fails it.
    /// A slot cut short (salvage truncates it) is shorter than its allocation: it leaves the
    /// pool too, so that every free slot holds the bytes the manifest says it has.
    private func recycleSlot() {
        do {
            if syncer.error == nil && !ownSyncFailed, try fileLength() >= allocated {
                try zero(upTo: size)
                try pool?.returnSlot(slotID)
                return
            }
        } catch {}
        dropSlot()
    }

    /// The slot file's length now (fstat).
    private func fileLength() throws -> Int64 {
        var st = stat()
        try retryingInterrupts("fstat", path: slotPath) { fstat(fd.rawValue, &st) }
        return Int64(st.st_size)
    }

    private func dropSlot() {
        // A slot that could not be cleaned (or met an I/O error) is not reused: it leaves the
        // pool and a fresh one is prepared. Should even that fail, the slot stays active under
        // this process and is recovered — as nothing, its clip was thrown away — once it is gone.
        do {
            try Sys.unlinkIfPresent(slotPath)
            try pool?.releaseSlot(slotID)
            pool?.replenishInBackground()
        } catch {}
    }

    /// fdatasync of the slot; a failure is remembered (the kernel reports it only once).
    private func syncSlot() throws {
        do { try fd.dataSync() } catch let e as SystemError {
            ownSyncFailed = true
            throw StorageError.writeback(e, clip: fileName(of: path))
        }
    }

    /// Throws the writeback error the syncer thread met, if any.
    private func checkWriteback() throws {
        if let e = syncer.error { throw StorageError.writeback(e, clip: fileName(of: path)) }
    }

    /// Clips up to this size are copied out of the slot rather than moved (a quarter slot).
    private var smallClipLimit: Int64 { allocated / 4 }

    /// Writes zeros over the first `length` bytes (rounded up to a block) and syncs.
    private func zero(upTo length: Int64) throws {
        let zeros = blocks[0]
        memset(zeros, 0, blockSize)
        let rounded = (length + Int64(blockSize) - 1) / Int64(blockSize) * Int64(blockSize)
        try fd.writeZeros(upTo: rounded, from: UnsafeRawBufferPointer(start: zeros, count: blockSize))
        try fd.dataSync()
    }

    /// Figures for the summary.
    public var writeStats: WriteStats? {
        lock.lock(); defer { lock.unlock() }
        var w = WriteStats(writeMode: mode.rawValue)
        w.histogram = histogram
        w.ringHighWater = ringHighWater
        w.ringBytes = Int64(blocks.count * blockSize)
        w.ringFullWaits = ringFullWaits
        w.bytesWritten = bytesWritten
        w.slotGrowths = growths
        w.samples = samples
        return w
    }

    public var workingPath: String { published ? path : slotPath }

    /// The end of the contiguous bytes the writer thread wrote successfully (writes are in
    /// order, and none is attempted after the first failure).
    /// Waits for writes still queued first, whatever they return.
    /// After a writeback error, only what the last successful fdatasync covered counts.
    public var writtenLength: Int64 {
        lock.lock()
        let running = !stopped
        lock.unlock()
        if running { drain(ignoringErrors: true) }
        lock.lock()
        let end = writtenEnd
        lock.unlock()
        if syncer.error != nil || ownSyncFailed { return min(end, syncer.durableEnd) }
        return end
    }

    // MARK: Muxer side helpers

    private func pendingError() -> (any Error)? {
        lock.lock(); defer { lock.unlock() }
        if let writerError { return writerError }
        return syncer.error.map { StorageError.writeback($0, clip: fileName(of: path)) }
    }

    private func enqueue(_ job: Job) {
        lock.lock()
        jobs.append(job)
        if case .block = job { inFlightBytes += Int64(blockSize) }
        ringHighWater = max(ringHighWater, inFlightBytes)
        lock.broadcast()
        lock.unlock()
    }

    private func handOffCurrentBlock() throws {
        enqueue(.block(current, currentStart, blockSize))
        lock.lock()
        if freeBlocks.isEmpty { ringFullWaits += 1 }
        while freeBlocks.isEmpty && writerError == nil { lock.wait() }
        if let e = writerError { lock.unlock(); throw e }
        current = freeBlocks.removeLast()
        lock.unlock()
        blocks.allocate(current)
        lastHandOff = MonotonicClock.now()
        currentStart += Int64(blockSize)
        currentFill = 0
        flushedFill = 0
    }

    /// Makes sure the slot's file has room up to `end`, growing into a free slot if not.
    private func ensureAllocated(upTo end: Int64) throws {
        guard end > allocated else { return }
        let grown = try pool?.growSlot(slotID) { size in
            do { try fd.allocate(upTo: size) } catch let e as SystemError where e.errno != EOPNOTSUPP {
                throw e.isOutOfSpace ? PoolError.full("no space to grow the slot: \(e.text)") : PoolError.io(e)
            }
        }
        guard let grown else {
            throw PoolError.full("the storage pool is full: no free slot to grow \(fileName(of: path)) past \(formatBytes(allocated))")
        }
        allocated = grown
        lock.lock(); growths += 1; lock.unlock()
    }

    /// Waits until every queued write is done.
    private func drain() throws {
        lock.lock()
        let running = !stopped
        lock.unlock()
        guard running else {
            if let e = pendingError() { throw e }
            return
        }
        enqueue(.sync)
        lock.lock(); defer { lock.unlock() }
        while !jobs.isEmpty && writerError == nil { lock.wait() }
        if let e = writerError { throw e }
    }

    private func drain(ignoringErrors: Bool) {
        lock.lock()
        let running = !stopped
        lock.unlock()
        // A stopped writer has nothing left in flight (and would never take the job).
        guard running else { return }
        enqueue(.sync)
        lock.lock(); defer { lock.unlock() }
        while !jobs.isEmpty { lock.wait() }
    }

    private func stopWriter() {
        lock.lock()
        if !stopped {
            jobs.append(.stop)
            lock.broadcast()
            while !stopped { lock.wait() }
        }
        lock.unlock()
    }

    // MARK: The writer thread

    private func writerLoop() {
        // Best-effort class, highest level (real-time class needs CAP_SYS_ADMIN and can starve
        // the rest of the system): the recording's writes go ahead of ordinary ones.
        if CLinux_set_io_priority(2, 0) != 0 {
            // No say over I/O priority here: the writes go at the default priority.
        }
        while true {
            lock.lock()
            while jobs.isEmpty { lock.wait() }
            let job = jobs[0]
            let failed = writerError != nil
            lock.unlock()

            var error: (any Error)? = nil
            var written = 0
            let t0 = MonotonicClock.now()
            if !failed {
                do {
                    switch job {
                    case .block(let index, let offset, let length):
                        if let directFD {
                            try directFD.writeAll(blocks[index], count: length, toAbsoluteOffset: offset)
                        } else {
                            try fd.writeAll(blocks[index], count: length, toAbsoluteOffset: offset)
                            // Writeback is started by the syncer thread, never inline: under a
                            // competing writer, sync_file_range and fdatasync wait for the device.
                            syncer.written(offset, Int64(length))
                        }
                        written = length
                    case .patch(let buf, let offset, let length):
                        try fd.writeAll(buf, count: length, toAbsoluteOffset: offset)
                        syncer.written(offset, Int64(length))
                        written = length
                    case .sync, .stop:
                        break
                    }
                } catch let e as SystemError where e.isOutOfSpace {
                    error = PoolError.full("no space left while writing \(fileName(of: path)): \(e.text)")
                } catch let e {
                    error = e
                }
            }
            let took = MonotonicClock.now() - t0

            lock.lock()
            jobs.removeFirst()
            switch job {
            case .block(let index, _, _):
                freeBlocks.append(index)
                inFlightBytes -= Int64(blockSize)
            case .patch(let buf, _, _):
                free(buf)
            default: break
            }
            if written > 0 {
                switch job {
                case .block(_, let offset, let length), .patch(_, let offset, let length):
                    writtenEnd = max(writtenEnd, offset + Int64(length))
                default: break
                }
                histogram.record(nanos: took)
                bytesWritten += Int64(written)
                if samples.count < WriteStats.sampleLimit { samples.append((t0, took)) }
            }
            if tracing, written > 0 { trace.append(t0 + took); traceEnds.append(writtenEnd) }
            if let error, writerError == nil { writerError = error }
            let stop: Bool
            if case .stop = job { syncer.stop(); stopped = true; stop = true } else { stop = false }
            lock.broadcast()
            lock.unlock()
            if stop { return }
        }
    }
}

/// The ring's blocks, each allocated when the muxer first fills it: a clip that stays short
/// (seams make many) touches a block or two, not the whole ring, so opening a clip does not
/// page in 64 MiB. Only the muxer side allocates (`allocate`, before it hands the block over
/// under the file's lock); the writer thread reads only blocks it was handed.
final class RingBlocks: @unchecked Sendable {
    private let pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    let count: Int
    private let size: Int

    init(count: Int, size: Int) {
        self.count = count
        self.size = size
        pointers = .allocate(capacity: count)
        pointers.initialize(repeating: nil, count: count)
    }

    func allocate(_ i: Int) {
        if pointers[i] == nil { pointers[i] = Sys.alignedAlloc(size) }
    }

    subscript(_ i: Int) -> UnsafeMutableRawPointer { pointers[i]! }

    func freeAll() {
        for i in 0..<count { if let p = pointers[i] { free(p) } }
        pointers.deallocate()
    }
}
