import Foundation
import ReelCore

/// Writes an index so that a crash at any moment leaves either the old index or the new one,
/// whole: the JSON goes into `.PREFIX.index.json.tmp` in the same directory, is synced
/// (`fsync`), renamed over `PREFIX.index.json` (`rename(2)`, atomic within a filesystem), and
/// the directory is synced so that the rename itself is on disk.
enum SegmentIndexFile {
    /// The temporary file the next index is written to before its rename.
    static func temporaryPath(directory: String, prefix: String) -> String {
        directory + "/." + SegmentIndex.fileName(prefix: prefix) + ".tmp"
    }

    /// Replaces `directory/PREFIX.index.json` with `index`.
    /// - Throws: ``SystemError`` for `open`, `pwrite`, `fsync`, `close` or `rename`.
    static func write(_ index: SegmentIndex, directory: String) throws {
        let data = index.encoded()
        let tmp = temporaryPath(directory: directory, prefix: index.prefix)
        let final = directory + "/" + SegmentIndex.fileName(prefix: index.prefix)
        let fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC)
        do {
            try data.withUnsafeBytes { try fd.writeAll($0, toAbsoluteOffset: 0) }
            try fd.sync()
        } catch {
            fd.closeQuietly()
            throw error
        }
        try fd.close()
        try retryingInterrupts("rename", path: final) { rename(tmp, final) }
        let dir = try FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY)
        do { try dir.sync() } catch {
            dir.closeQuietly()
            throw error
        }
        dir.closeQuietly()
    }
}
