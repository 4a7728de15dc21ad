import CLinux
import Foundation
import ReelCore

/// Saves a file so that its final name only ever holds a complete file: the bytes go to a
/// hidden temporary name (`O_EXCL`), are synced (`fsync`), and are moved under the final name
/// with `renameat2(RENAME_NOREPLACE)` (an existing file is never replaced), then the
/// directory is synced.
enum PhotoFile {
    /// Writes `bytes` as `directory/name`, or — when that exists — the first free
    /// `directory/stem-N.ext`. Returns the path written.
    /// - Throws: `PhotoError.save` naming the call that failed; the temporary file is removed.
    static func save(_ bytes: [UInt8], directory: String, name: String, replacing: Bool = false) throws(PhotoError) -> String {
        let temp = "\(directory)/.\(name).partial-\(getpid())"
        do {
            let fd = try FileDescriptor.open(temp, O_WRONLY | O_CREAT | O_EXCL, permissions: 0o644)
            do {
                try bytes.withUnsafeBytes { try fd.writeAll($0, toAbsoluteOffset: 0) }
                try fd.sync()
                try fd.close()
            } catch {
                fd.closeQuietly()
                throw error
            }
        } catch let e as SystemError {
            if unlink(temp) != 0 { /* never created, or already gone */ }
            throw PhotoError.save(e, kept: "no file written for \(name)")
        } catch {
            throw PhotoError.encoder("\(error)")
        }
        var target = "\(directory)/\(name)"
        var attempt = 1
        while true {
            if replacing {
                if rename(temp, target) == 0 { break }
            } else if CLinux_renameat2(AT_FDCWD, temp, AT_FDCWD, target, CLinux_RENAME_NOREPLACE) == 0 {
                break
            }
            let e = SystemError.last("renameat2", path: target)
            if e.errno == EEXIST && !replacing && attempt < 10_000 {
                attempt += 1
                let stem = (name as NSString).deletingPathExtension, ext = (name as NSString).pathExtension
                target = "\(directory)/\(stem)-\(attempt).\(ext)"
                continue
            }
            if unlink(temp) != 0 { /* left for --finish-pending's sweep */ }
            throw PhotoError.save(e, kept: "nothing under \(name)")
        }
        try syncDirectory(directory)
        return target
    }

    /// `fsync` of the directory, so the rename itself survives a crash.
    static func syncDirectory(_ directory: String) throws(PhotoError) {
        do {
            let dir = try FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY)
            defer { dir.closeQuietly() }
            try dir.sync()
        } catch let e as SystemError {
            throw PhotoError.save(e, kept: "the file is complete but its name may not survive a crash")
        } catch {
            throw PhotoError.encoder("\(error)")
        }
    }
}
