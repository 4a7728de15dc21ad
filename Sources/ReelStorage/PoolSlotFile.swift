import CLinux
import Foundation
import ReelCore
import ReelMetrics


/// Sees the writes of a `PoolSlotFile`'s writer thread as they finish (`reel jitter` times the
/// pool's own write path through it). Called on the writer thread, outside the file's lock,
/// after each successful write: keep it short.
public protocol PoolWriteObserver: AnyObject, Sendable {
    /// A write finished at `time` (monotonic ns); the file's bytes are now written from 0 up
    /// to `end` (writes are in order).
    func poolWriteFinished(at time: UInt64, writtenUpTo end: Int64)
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
    /// Every clip's writer runs on one of these: parked between clips, not made anew.
    private static let writers = ThreadReuse(name: "reel.storage")

    /// Makes the writer and syncer threads of `clips` clips at once now, before the first
    /// frame (as the sensor's buffers are): the clip being written, the one opened ahead, and
    /// one being closed.
    static func prestartThreads(clips: Int) {
        writers.prestart(clips)
        Syncer.prestartThreads(clips: clips)
    }
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
    /// The slot's allocation when claimed: the step the file grows by beyond the pool.
    private let initialAllocation: Int64

    // Muxer side.
    /// Where the next `write` goes.
    public private(set) var position: Int64 = 0
    /// The clip's length so far.
    public private(set) var size: Int64 = 0
    private var current: Int            // block being filled
    private var currentStart: Int64 = 0 // file offset of its first byte
    private var currentFill = 0         // bytes of it holding data
    private var published = false
    /// Whether publishing replenishes the pool (else the storage does, once loop recording has
    /// taken deleted clips back as slots: `PoolStorage.finishedClipSettled`).
    private let replenishesOnPublish: Bool
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
    private var bytesWritten: Int64 = 0
    private var growths = 0
    private var leftPool: (offset: Int64, at: UInt64)?
    private var samples: [(start: UInt64, took: UInt64)] = []
    private var writtenEnd: Int64 = 0
    private let syncer: Syncer
    private let observer: (any PoolWriteObserver)?
    /// An fdatasync of `publish` failed: only what the syncer had on disk before counts.
    private var ownSyncFailed = false

    /// A file outside any pool written through the same ring and writer thread: `file` is
    /// already allocated (`allocated` bytes; a write past them fails with `PoolError.full`),
    /// and `observer` sees each write finish. `finishInPlace()` ends it; nothing is published.
    /// - Throws: ``SystemError`` when `file` cannot be opened (`open`).
    public convenience init(preallocatedFile file: String, allocated: Int64, mode: WriteMode, ringBytes: Int,
                            observer: (any PoolWriteObserver)?) throws {
        try self.init(pool: nil, slotID: 0, slotPath: file, allocated: allocated, destination: file, mode: mode,
                      ringBytes: ringBytes, observer: observer)
    }

    /// Writes the partial last block, waits for every queued write, syncs (fdatasync) and
    /// stops the writer thread; the file stays where it is. Every observer call has been made
    /// when this returns.
    /// - Throws: the first error of the writer thread, or ``SystemError`` for `fdatasync`.
    public func finishInPlace() throws {
        queuePartialBlock()
        try drain()
        try fd.dataSync()
        stopWriter()
    }

    /// Hands the partial last block to the writer thread as an exact-length write.
    private func queuePartialBlock() {
        guard currentFill > 0 else { return }
        let copy = malloc(currentFill)!
        memcpy(copy, blocks[current], currentFill)
        enqueue(.patch(copy, currentStart, currentFill))
        currentFill = 0
    }

    init(pool: StoragePool?, slotID: Int, slotPath: String, allocated: Int64, destination: String, mode: WriteMode, ringBytes: Int,
         observer: (any PoolWriteObserver)? = nil, replenishesOnPublish: Bool = true) throws {
        self.pool = pool; self.slotID = slotID; self.slotPath = slotPath; self.observer = observer
        self.replenishesOnPublish = replenishesOnPublish
        self.allocated = allocated; self.initialAllocation = max(Int64(StoragePool.blockSize), allocated); self.path = destination
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
        PoolSlotFile.writers.run { [self] in writerLoop() }
    }

    deinit {
        stopWriter()
        blocks.freeAll()
        closeFiles()
    }

    /// Whether the slot's descriptors are closed (`closeFiles`).
    private var filesClosed = false

    /// Closes the slot's descriptors, once. Synced (publish) or given up (discard) before:
    /// close has nothing left to report.
    private func closeFiles() {
        guard !filesClosed else { return }
        filesClosed = true
        fd.closeQuietly()
        directFD?.closeQuietly()
    }

    /// Bytes the ring can still take without the muxer waiting.
    public var headroom: Int64 {
        lock.lock(); defer { lock.unlock() }
        return Int64(freeBlocks.count * blockSize + (blockSize - currentFill))
    }

    // MARK: ByteSink

    /// Copies `bytes` into the ring at `position` (bytes before the current block become patch writes); waits only when every block is in flight.
    /// - Throws: the writer thread's first error (`PoolError.full` when the slot cannot grow), or `StorageError.writeback`.
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

    /// Moves `position` back (header patches) or to the end.
    /// - Throws: ``SystemError`` EINVAL past the current block.
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
    /// - Throws: `SystemError` (`ftruncate`).
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
    /// - Throws: `StorageError.writeback` when syncing fails; `SystemError` for a failed file call
    ///   (`ftruncate`, the move); the manifest's `PoolError`s.
    public func publish() throws -> Int64 {
        guard !published else { return size }
        if salvaging {
            drain(ignoringErrors: true)
        } else {
            // The partial last block: buffered, exact length.
            queuePartialBlock()
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
        // Published: nothing more goes through the slot's descriptors (the writer has stopped,
        // and every path after this is guarded by `published`). They close before the
        // manifest's update opens its files, so that a seam holds no more descriptors than
        // the recording between seams. Before the move they stay: a failed move salvages
        // the clip through them.
        closeFiles()
        try pool?.releaseSlot(slotID)
        if replenishesOnPublish { pool?.replenishInBackground() }
        return size
    }

    /// Publishing the salvaged clip failed: waits for queued writes and stops the writer; the
    /// slot stays active as it is, for recovery to publish once this process is gone — nothing
    /// is deleted. True when the clip was already moved to `path`.
    public func keep() -> Bool {
        guard !published else { return true }
        drain(ignoringErrors: true)
        stopWriter()
        return false
    }

    /// Throws the clip away: waits for queued writes, then recycles the slot (a short, whole one) or drops it from the pool.
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

    /// The slot file until published, then `path`.
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

    /// Makes sure the slot's file has room up to `end`, growing into a free slot if not; with
    /// no slot free (and in a pool), the file grows on the filesystem beyond the pool, a slot's
    /// size at a time (`beyondPool` says from where and when). Only a filesystem with no room
    /// left ends the clip.
    private func ensureAllocated(upTo end: Int64) throws {
        guard end > allocated else { return }
        let grown = try pool?.growSlot(slotID) { size in
            do { try fd.allocate(upTo: size) } catch let e as SystemError where e.errno != EOPNOTSUPP {
                throw e.isOutOfSpace ? PoolError.full("no space to grow the slot: \(e.text)") : PoolError.io(e)
            }
        }
        if let grown {
            allocated = grown
            lock.lock(); growths += 1; lock.unlock()
            return
        }
        guard pool != nil else {
            throw PoolError.full("the storage pool is full: no free slot to grow \(fileName(of: path)) past \(formatBytes(allocated))")
        }
        let target = allocated + initialAllocation
        do { try fd.allocate(upTo: target) } catch let e as SystemError {
            // Without fallocate (tmpfs before 6.x, ramfs) the writes themselves allocate.
            guard e.errno == EOPNOTSUPP else {
                throw e.isOutOfSpace ? PoolError.full("the filesystem is full: no space to grow \(fileName(of: path)) beyond the pool past \(formatBytes(allocated)) (\(e.text))") : PoolError.io(e)
            }
        }
        lock.lock()
        if leftPool == nil { leftPool = (allocated, MonotonicClock.now()) }
        lock.unlock()
        allocated = target
    }

    /// Where the clip's bytes went beyond the pool's slots (the offset) and when (monotonic
    /// ns); nil while it fits in the pool.
    public var beyondPool: (offset: Int64, at: UInt64)? {
        lock.lock(); defer { lock.unlock() }
        return leftPool
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
        if !Sys.setRecordingIOPriority(level: 0) {
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
            let end = writtenEnd
            if let error, writerError == nil { writerError = error }
            let stop: Bool
            if case .stop = job { syncer.stop(); stopped = true; stop = true } else { stop = false }
            lock.broadcast()
            lock.unlock()
            if written > 0 { observer?.poolWriteFinished(at: t0 + took, writtenUpTo: end) }
            if stop { return }
        }
    }
}
