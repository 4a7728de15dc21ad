import CLinux
import Foundation
import ReelCore

// MARK: The manifest on disk, under the pool's lock

extension StoragePool {
    func readManifest() throws -> PoolManifest {
        guard let data = FileManager.default.contents(atPath: manifestPath) else {
            if FileManager.default.fileExists(atPath: manifestPath) { throw PoolError.io(SystemError("read", path: manifestPath, errno: EACCES)) }
            throw PoolError.notAPool(path)
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw PoolError.damagedManifest(path, "not JSON")
        }
        guard let format = object["format"] as? String, format == PoolManifest.formatName else {
            throw PoolError.foreignManifest(path, (object["format"] as? String) ?? "none")
        }
        if let v = object["version"] as? Int, v > PoolManifest.currentVersion { throw PoolError.unsupportedVersion(path, v) }
        do { return try JSONDecoder().decode(PoolManifest.self, from: data) } catch {
            throw PoolError.damagedManifest(path, "fields missing or of the wrong type")
        }
    }

    func writeManifest(_ m: PoolManifest) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(m)
        let tmp = manifestPath + ".tmp"
        let fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC)
        do {
            try data.withUnsafeBytes { try fd.writeAll($0, toAbsoluteOffset: 0) }
            try fd.dataSync()
        } catch { fd.closeQuietly(); throw error }
        try fd.close()
        try retryingInterrupts("rename", path: manifestPath) { rename(tmp, manifestPath) }
        try Sys.fsyncDirectory(of: manifestPath)
    }

    /// Takes the pool's lock; a holder that keeps it for `lockPatience` seconds (a stopped
    /// process, say) makes this a clear error instead of a hang.
    private func lock(_ fd: Int32) throws {
        let deadline = MonotonicClock.now() + UInt64(StoragePool.lockPatience * 1e9)
        var pause: UInt32 = 100
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            guard e == EWOULDBLOCK || e == EINTR else { throw PoolError.io(SystemError("flock", path: path + "/lock", errno: e)) }
            if MonotonicClock.now() > deadline {
                throw PoolError.busy("another process has held the pool's lock (\(path)/lock) for \(Int(StoragePool.lockPatience)) s; is one stopped?")
            }
            usleep(pause)
            pause = min(pause * 2, 5_000)
        }
    }
    static let lockPatience: Double = 10

    /// Runs `body` holding the pool's lock (not re-entrant: `body` must not take it again).
    ///
    /// The lock file is made only while the manifest exists (`delete` removes the manifest,
    /// then the lock): a process that finds the pool deleted under it gets `notAPool` and
    /// leaves nothing behind, so the deleting process's final rmdir finds the directory empty.
    func withLock<T>(_ body: () throws -> T) throws -> T {
        let lockPath = path + "/lock"
        let lockFD: FileDescriptor
        var created = false
        do { lockFD = try FileDescriptor.open(lockPath, O_RDWR) } catch let e as SystemError where e.errno == ENOENT {
            guard Sys.fileExists(manifestPath) else { throw PoolError.notAPool(path) }
            do {
                lockFD = try FileDescriptor.open(lockPath, O_RDWR | O_CREAT | O_EXCL)
                created = true
            } catch let e as SystemError where e.errno == EEXIST {
                lockFD = try FileDescriptor.open(lockPath, O_RDWR)
            }
        }
        // Closing the descriptor releases the lock; it was only read from, nothing to report.
        defer { lockFD.closeQuietly() }
        try lock(lockFD.rawValue)
        // `pool delete` may have removed the pool between the check above and the lock: then
        // the lock file this process made is the only thing left, and it goes too, so the
        // deleting process's rmdir finds the directory empty.
        guard Sys.fileExists(manifestPath) else {
            if created { try Sys.unlinkIfPresent(lockPath) }
            throw PoolError.notAPool(path)
        }
        return try body()
    }

    /// Reads, changes and writes the manifest under the pool's lock.
    @discardableResult
    func withManifest<T>(_ body: (inout PoolManifest) throws -> T) throws -> T {
        try withLock {
            var m = try readManifest()
            let before = m
            let result = try body(&m)
            if m != before { try writeManifest(m) }
            return result
        }
    }

}
