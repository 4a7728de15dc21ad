import CLinux
import Foundation
import ReelCore
import ReelStorage


/// Writes `blockSize` bytes at a time; `complete()` says when each write finished.
public protocol PacedSink {
    /// Writes one block of `count` bytes through the arm's write path.
    /// - Throws: `JitterError.io` (plain files), or the pool file's storage error, when the write
    ///   fails.
    func write(_ block: UnsafeRawPointer, count: Int) throws
    /// Completion times of the writes in order, or nil when `write` returning is completion.
    /// - Throws: what finishing the writes failed with (`JitterError.io`, or the pool file's
    ///   storage error).
    func complete() throws -> [UInt64]?
}

/// The open-loop paced writer (`pacedWrites`, which the write-mode calibration shares): write
/// `i` is due at `start + i × blockSize / rate`, and its latency is measured from when it was
/// due, so a stall counts against every write it delays. A write is done when `sink.write`
/// returns, or when `sink.complete()` says.
/// - Throws: what `sink.write` or `sink.complete` throws.
public func pacedRun(_ sink: any PacedSink, options: JitterOptions) throws -> (due: [UInt64], done: [UInt64]) {
    let count = Int(saturating: Double(options.bytesPerSecond) * options.seconds / Double(options.blockSize))
    var done = [UInt64]()
    done.reserveCapacity(count)
    let due = try pacedWrites(count: count, blockSize: options.blockSize, bytesPerSecond: options.bytesPerSecond) { block in
        try sink.write(block.baseAddress!, count: block.count)
        done.append(MonotonicClock.now())
    }
    if let completions = try sink.complete() { done = completions }
    return (due, done)
}

/// Plain file writes on the calling thread.
final class PlainSink: PacedSink {
    let fd: FileDescriptor
    var path: String { fd.path }
    let syncEverySecond: Bool
    var offset: Int64 = 0
    var lastSync = MonotonicClock.now()

    init(path: String, direct: Bool, syncEverySecond: Bool) throws {
        self.syncEverySecond = syncEverySecond
        do { fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC | (direct ? CLinux_O_DIRECT : 0)) } catch let e as SystemError {
            throw JitterError.io("cannot open \(path) for writing\(direct ? " with O_DIRECT" : ""): \(e.text)")
        }
    }
    deinit {
        // A scratch file: nothing left to report once the arm is measured.
        fd.closeQuietly()
        if unlink(path) != 0 { return }
    }

    func write(_ block: UnsafeRawPointer, count: Int) throws {
        do {
            try fd.writeAll(block, count: count, toAbsoluteOffset: offset)
            offset += Int64(count)
            if syncEverySecond && MonotonicClock.now() - lastSync > 1_000_000_000 {
                try fd.dataSync()
                lastSync = MonotonicClock.now()
            }
        } catch let e as SystemError {
            throw JitterError.io("\(e.call == "pwrite" ? "write" : e.call) \(path): \(e.text)")
        }
    }
    func complete() throws -> [UInt64]? {
        do { try fd.dataSync() } catch let e as SystemError { throw JitterError.io("\(e.call) \(path): \(e.text)") }
        return nil
    }
}

/// The pool's own write path (`PoolSlotFile`): the ring and its writer thread.
/// Each write of `blockSize` bytes is done when the pool's writer thread has written its last
/// byte (the ring works in 1 MiB blocks, whatever size the writes are).
final class PoolSink: PacedSink {
    let file: PoolSlotFile
    let blockSize: Int
    let finished: WriteCompletions

    init(file: String, allocated: Int64, mode: WriteMode, ringBytes: Int, blockSize: Int) throws {
        finished = WriteCompletions(capacity: Int(allocated / Int64(StoragePool.blockSize)) + 1)
        self.file = try PoolSlotFile(preallocatedFile: file, allocated: allocated, mode: mode, ringBytes: ringBytes, observer: finished)
        self.blockSize = blockSize
    }

    func write(_ block: UnsafeRawPointer, count: Int) throws {
        try file.write(UnsafeRawBufferPointer(start: block, count: count))
    }

    /// For each write of `blockSize` bytes (in order, from offset 0), when the writer thread
    /// finished writing its last byte: for writes smaller than a ring block, when the block
    /// holding it was written; for larger ones, the last of their blocks.
    func complete() throws -> [UInt64]? {
        try file.finishInPlace()
        return finished.completions(writeSize: blockSize, writes: blockSize > 0 ? Int(file.size / Int64(blockSize)) : 0)
    }
}
