import Foundation
import Synchronization
import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// Learns when the writer finishes a clip, without a hook in the writer: inotify on the
/// recording's output directory. A clip written straight into its file (`--plain`, or before
/// the pool is ready) is finished when the writer closes it after its last sync
/// (`IN_CLOSE_WRITE`); a pool slot is finished when it is moved to the clip's name
/// (`IN_MOVED_TO`). A clip deleted (`--keep`'s loop budget, or by hand: `IN_DELETE`) or moved
/// away (`IN_MOVED_FROM`) is gone. Only names the writer gives its clips
/// (`PREFIX-NNNN-RATIO.EXT`) are passed on; the gallery then checks the file itself (owner,
/// regular file) and keeps its inode.
final class ClipWatcher: Sendable {
    private let inotify: Int32
    private let wake: (read: Int32, write: Int32)
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)

    /// Watches `directory` for clips named `prefix`-NNNN-RATIO.`fileExtension`; `finished` is
    /// called on the watcher's own thread with each one's path when it is finished, `gone` when
    /// it is deleted or moved away.
    /// - Throws: `SystemError` for `inotify_init1`, `inotify_add_watch` or `pipe`.
    init(directory: String, prefix: String, fileExtension: String, finished: @escaping @Sendable (String) -> Void,
         gone: @escaping @Sendable (String) -> Void) throws {
        let fd = inotify_init1(Int32(IN_CLOEXEC))
        guard fd >= 0 else { throw SystemError.last("inotify_init1", path: directory) }
        let events = UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM)
        guard inotify_add_watch(fd, directory, events) >= 0 else {
            let error = SystemError.last("inotify_add_watch", path: directory)
            if close(fd) != 0 { /* the watch's failure is the one reported */ }
            throw error
        }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let error = SystemError.last("pipe", path: directory)
            if close(fd) != 0 { /* the pipe's failure is the one reported */ }
            throw error
        }
        for end in ends where fcntl(end, F_SETFD, FD_CLOEXEC) != 0 { /* only a child started meanwhile would inherit it */ }
        let stop = ends[0]
        inotify = fd; wake = (ends[0], ends[1])
        let done = self.done
        let t = Thread {
            Self.run(inotify: fd, wake: stop, directory: directory, prefix: prefix, fileExtension: fileExtension,
                     finished: finished, gone: gone)
            done.signal()
        }
        t.name = "reel.clipwatch"
        t.start()
    }

    /// Stops watching: wakes the thread, waits for it, closes the descriptors. Once.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        // Closing the write end wakes the thread (its poll sees the read end's end of file).
        if close(wake.write) != 0 { /* closed all the same (Linux releases it whatever close returns) */ }
        done.wait()
        if close(inotify) != 0 { /* read only: nothing to lose */ }
        if close(wake.read) != 0 { /* read only: nothing to lose */ }
    }

    /// True for `PREFIX-NNNN-RATIO.EXT`, the names the writer gives its clips.
    static func isClipName(_ name: String, prefix: String, fileExtension: String) -> Bool {
        guard name.hasPrefix(prefix + "-"), name.hasSuffix("." + fileExtension) else { return false }
        let middle = name.dropFirst(prefix.count + 1).dropLast(fileExtension.count + 1)
        let parts = middle.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count >= 4, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
        return AspectRatio(rawValue: String(parts[1])) != nil
    }

    private static func run(inotify: Int32, wake: Int32, directory: String, prefix: String, fileExtension: String,
                            finished: @Sendable (String) -> Void, gone: @Sendable (String) -> Void) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return   // nothing more can be learned; the gallery stops growing
            }
            if fds[1].revents != 0 { return }
            if fds[0].revents & Int16(POLLIN) == 0 { if fds[0].revents != 0 { return }; continue }
            let n = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return
            }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= n {
                let (mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self), Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                let nameBytes = buffer[(offset + header)..<min(n, offset + header + length)].prefix { $0 != 0 }
                offset += header + length
                guard mask & UInt32(IN_ISDIR) == 0 else { continue }
                let name = String(decoding: nameBytes, as: UTF8.self)
                guard isClipName(name, prefix: prefix, fileExtension: fileExtension) else { continue }
                if mask & (UInt32(IN_DELETE) | UInt32(IN_MOVED_FROM)) != 0 { gone(directory + "/" + name) }
                if mask & (UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO)) != 0 { finished(directory + "/" + name) }
            }
        }
    }
}
