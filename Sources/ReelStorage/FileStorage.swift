import CLinux
import ReelCore
import ReelMetrics
#if canImport(Glibc)
import Glibc
#endif

/// Where a writer's clips are created.
public protocol ClipStorage: Sendable {
    /// A new, empty clip file that will be published as `name` when finished.
    /// - Throws: `StorageError.exists` when the name is taken, or the storage's own error
    ///   (`StorageError`, `PoolError`).
    func createClip(named name: String) throws -> any ClipFile
    /// The directory finished clips land in.
    var destination: String { get }
    /// Deletes a finished clip that loop recording lets go (`--keep`). A pool takes its blocks
    /// back as a free slot where it can (`StoragePool.reclaim`); otherwise it is unlinked.
    func deleteFinishedClip(_ path: String) -> ClipDeletion
    /// A finished clip was published and loop recording has deleted what it had to: a pool
    /// that waited (so that deleted clips could fill the slots missing) replenishes the rest.
    func finishedClipSettled()
}

extension ClipStorage {
    /// Unlinks the file.
    public func deleteFinishedClip(_ path: String) -> ClipDeletion { unlink(path) == 0 ? .unlinked : .failed(errno) }
    /// Nothing to do.
    public func finishedClipSettled() {}
}

/// A clip being written: a `ByteSink` that can be published or cut back.
public protocol ClipFile: ByteSink {
    /// The path the clip has (or will have) once published.
    var path: String { get }
    /// Flushes to stable storage and publishes the file at `path`. Returns its size.
    /// - Throws: `StorageError.writeback` when syncing fails, or the storage's own error for the
    ///   move.
    func publish() throws -> Int64
    /// Cuts the file back to `length` bytes (salvaging after a failed write).
    /// - Throws: `SystemError` (`ftruncate`), or the storage's own error.
    func truncate(to length: Int64) throws
    /// Write-path figures (latency histogram, ring use).
    var writeStats: WriteStats? { get }
    /// Where the bytes are now (a pool slot until published, then `path`).
    var workingPath: String { get }
    /// Throws the clip away (cancelled recording): nothing is published.
    func discard()
    /// Bytes from the start that really reached the file (after a failure, less than `size`):
    /// after a writeback error, only what the last successful sync before it covered.
    var writtenLength: Int64 { get }
    /// Publishing the salvaged clip failed: gives the file up without deleting anything. True
    /// when its bytes are at `path` (a plain file); false when they wait elsewhere (a pool
    /// slot stays active, for recovery to publish once this process is gone).
    func keep() -> Bool
}

extension ClipFile {
    /// Default: nothing is deleted, and the bytes are not at `path`.
    public func keep() -> Bool { false }
}

/// Errors of the storage layer.
public enum StorageError: UserFacingError {
    /// The output directory (the path) cannot be created or written (exit 73).
    case outputDirectory(String, SystemError)
    /// A file of this name already exists (exit 73).
    case exists(String)
    /// A file call failed (exit 74).
    case io(SystemError)
    /// Writing back a clip's bytes failed (fdatasync or sync_file_range): what was written
    /// since the last successful sync may not be on disk.
    case writeback(SystemError, clip: String)

    /// 73 for a directory or a name that cannot be made, 74 for I/O.
    public var exitStatus: Int32 {
        switch self {
        case .outputDirectory, .exists: return ExitStatus.cantCreate
        case .io, .writeback: return ExitStatus.ioError
        }
    }

    /// The one-line message `reel` prints.
    public var description: String {
        switch self {
        case .outputDirectory(let path, let e): return "cannot write to output directory \(path): \(e.text)"
        case .exists(let path): return "\(path) already exists; choose another --name or --out"
        case .io(let e): return e.description
        case .writeback(let e, let clip): return "writing \(clip) back to disk failed (\(e.call): \(e.text)); its bytes since the last successful sync may not be on disk"
        }
    }
}

/// Clips written straight into a directory of the filesystem (`--plain`).
public struct FileStorage: ClipStorage {
    /// The directory clips are written in.
    public let destination: String

    /// Creates the directory if needed and checks that it can be written.
    /// - Throws: `StorageError.outputDirectory` when the directory cannot be made or written.
    public init(directory: String) throws {
        destination = directory
        try FileStorage.makeWritableDirectory(directory)
        // The syncers of a clip being written, the one opened ahead and one being closed.
        Syncer.prestartThreads(clips: 3)
    }

    /// Creates `path` (and its parents) if needed and checks that files can be made in it.
    static func makeWritableDirectory(_ path: String) throws {
        try makeDirectories(path)
        if access(path, W_OK | X_OK) != 0 {
            throw StorageError.outputDirectory(path, .last("access", path: path))
        }
    }

    static func makeDirectories(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part + "/"
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw StorageError.outputDirectory(path, .last("mkdir", path: prefix))
            }
        }
        var st = stat()
        if stat(path, &st) != 0 { throw StorageError.outputDirectory(path, .last("stat", path: path)) }
        if (st.st_mode & S_IFMT) != S_IFDIR { throw StorageError.outputDirectory(path, SystemError("stat", path: path, errno: ENOTDIR)) }
    }

    /// Creates `destination/name` (O_EXCL: never an existing file).
    /// - Throws: `StorageError.exists`, or `.io` for `open`.
    public func createClip(named name: String) throws -> any ClipFile {
        try PlainFile(path: destination + "/" + name)
    }
}

/// A clip written in place with `pwrite`, through the page cache, and pushed to the disk as it
/// goes by the pool's own syncer thread (`Syncer`): writeback started for every write, an
/// fdatasync at every complete fragment (`fragmentCompleted`) and at least once a second, then
/// the directory fsynced once. The first writeback error is kept: the next write fails with
/// it, and `writtenLength` then says only what the last successful sync before it covered.
///
/// Used by one thread at a time (the writer's encode thread, then its finaliser); the syncer
/// keeps its own lock.
public final class PlainFile: ClipFile, @unchecked Sendable {
    /// The clip's path.
    public let path: String
    /// Nil once published or given up.
    private var fd: FileDescriptor?
    /// Where the next `write` goes.
    public private(set) var position: Int64 = 0
    /// The file's length so far.
    public private(set) var size: Int64 = 0
    private var histogram = LatencyHistogram()
    private var samples: [(start: UInt64, took: UInt64)] = []
    private let syncer: Syncer
    /// An fdatasync of `publish` failed: only what the syncer had on disk before counts.
    private var ownSyncFailed = false
    /// Cut back after a failure (`truncate`): the length kept is already what was on disk.
    private var salvaging = false
    /// Synced and named on disk: the user's clip, which nothing cuts or removes any more.
    private var published = false

    /// Creates `path`, refusing to replace an existing file (`O_EXCL`), and starts its syncer.
    /// - Throws: `StorageError.exists` when `path` exists; `StorageError.outputDirectory` when it
    ///   cannot be created.
    public init(path: String) throws {
        self.path = path
        let opened: FileDescriptor
        do { opened = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_EXCL) } catch let e as SystemError {
            if e.errno == EEXIST { throw StorageError.exists(path) }
            throw StorageError.outputDirectory(path, e)
        }
        fd = opened
        syncer = Syncer(fd: opened, syncDirectory: true)
    }

    deinit {
        syncer.stop()
        fd?.closeQuietly()
    }

    /// The open file; a write after publish or discard is EBADF, as it was for the closed descriptor.
    private var openFile: FileDescriptor {
        get throws {
            guard let fd else { throw SystemError("pwrite", path: path, errno: EBADF) }
            return fd
        }
    }

    /// The syncer's writeback error as the clip's.
    private var writebackError: StorageError? {
        syncer.error.map { StorageError.writeback($0, clip: fileName(of: path)) }
    }

    /// Writes `bytes` at `position` (pwrite, EINTR retried) and hands the range to the syncer.
    /// - Throws: `StorageError.writeback` once the syncer met a writeback error; `SystemError`
    ///   for a failed pwrite.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        if let e = writebackError { throw e }
        let t0 = MonotonicClock.now()
        try openFile.writeAll(bytes, toAbsoluteOffset: position)
        let took = MonotonicClock.now() - t0
        histogram.record(nanos: took)
        if samples.count < WriteStats.sampleLimit { samples.append((t0, took)) }
        syncer.written(position, Int64(bytes.count))
        position += Int64(bytes.count)
        size = max(size, position)
    }

    /// A fragment is complete: the syncer fdatasyncs it now, off the caller's thread.
    public func fragmentCompleted() { syncer.syncSoon() }

    /// Moves `position` (no call: the next write says where).
    /// - Throws: `SystemError` (`lseek`, EINVAL) for a negative offset.
    public func seek(to offset: Int64) throws {
        guard offset >= 0 else { throw SystemError("lseek", path: path, errno: EINVAL) }
        position = offset
    }

    /// Salvage after a failure: stops the syncer and cuts the file to `length` (ftruncate);
    /// `publish` then syncs what is left. A published file is never cut.
    /// - Throws: ``SystemError``.
    public func truncate(to length: Int64) throws {
        guard !published else { return }
        salvaging = true
        syncer.stop()
        try openFile.truncate(to: length)
        size = length
        position = min(position, length)
    }

    /// The service time of every write.
    public var writeStats: WriteStats? {
        var w = WriteStats(writeMode: "plain")
        w.histogram = histogram
        w.bytesWritten = size
        w.samples = samples
        return w
    }

    /// The clip is written in place: `path`.
    public var workingPath: String { path }

    /// pwrite is synchronous: `size` only grows after a write succeeded. After a writeback
    /// error (the syncer's or `publish`'s own), only what the last successful fdatasync before
    /// it covered.
    public var writtenLength: Int64 {
        if syncer.error != nil || ownSyncFailed { return min(size, syncer.durableEnd) }
        return size
    }

    /// Removes the file (unlink); nothing is published.
    public func discard() {
        guard !published else { return }
        syncer.stop()
        fd?.closeQuietly()
        fd = nil
        // Our own file (O_EXCL made it); should unlinking fail, the cancelled clip stays.
        do { try Sys.unlinkIfPresent(path) } catch {}
    }

    /// Gives the file up as it is, at `path`: nothing is deleted.
    public func keep() -> Bool {
        syncer.stop()
        fd?.closeQuietly()
        fd = nil
        return true
    }

    /// Stops the syncer, fails with its writeback error if it met one (unless salvaging: the
    /// length was already cut to what was on disk before it), syncs (fdatasync) the file and
    /// its directory, and closes it. Returns its size.
    /// - Throws: `StorageError.writeback` when a sync failed; `StorageError.io` when the
    ///   directory's fsync or the close fails.
    public func publish() throws -> Int64 {
        guard let closing = fd, !published else { return size }
        syncer.stop()
        if !salvaging, let e = writebackError { throw e }
        do { try closing.dataSync() } catch let e as SystemError {
            ownSyncFailed = true
            throw StorageError.writeback(e, clip: fileName(of: path))
        }
        do { try Sys.fsyncDirectory(of: path) } catch let e as SystemError { throw StorageError.io(e) }
        published = true
        fd = nil
        do { try closing.close() } catch let e as SystemError { throw StorageError.io(e) }
        return size
    }
}
