import CLinux
import Foundation
import ReelCore

/// `clip.mov` → `clip-recovered.mov`, `clip-recovered-2.mov`, … (whichever is free); with no
/// tag, `clip-2.mov`, `clip-3.mov`, ….
func uniqueName(_ path: String, tag: String?) -> String {
    let dir = parentDirectory(of: path), name = fileName(of: path)
    let dot = name.lastIndex(of: ".") ?? name.endIndex
    let stem = String(name[..<dot]), ext = String(name[dot...])
    var k = tag == nil ? 2 : 1
    while true {
        let candidate = dir + "/" + stem + (tag.map { "-" + $0 } ?? "") + (k == 1 ? "" : "-\(k)") + ext
        if !Sys.fileExists(candidate) { return candidate }
        k += 1
    }
}

/// Copies the first `length` bytes of the open file `input` into a new file `destination`
/// (copy_file_range: in the kernel, a reflink where the filesystem has them), then syncs it.
func copyOut(_ input: FileDescriptor, length: Int64, to destination: String,
             progress: ((Int64, Int64) -> Void)? = nil) throws {
    let output: FileDescriptor
    do { output = try FileDescriptor.open(destination, O_WRONLY | O_CREAT | O_EXCL) } catch let s as SystemError where s.errno == EEXIST {
        throw StorageError.exists(destination)
    }
    var ok = false
    defer {
        output.closeQuietly()
        // Our own half-made copy (O_EXCL made it); a failure to remove it leaves a file
        // named as the clip that the error already says is incomplete.
        if !ok { do { try Sys.unlinkIfPresent(destination) } catch {} }
    }
    var off: Int64 = 0
    while off < length {
        let n = CLinux_copy_range(input.rawValue, off, output.rawValue, off, min(length - off, 64 << 20))
        if n < 0 {
            if errno == EINTR { continue }
            if errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL { break }
            throw StorageError.io(.last("copy_file_range", path: destination))
        }
        if n == 0 { break }
        off += n
        progress?(off, length)
    }
    if off < length {
        // No in-kernel copy between these files: read and write.
        let chunk = 4 << 20
        let buf = Sys.alignedAlloc(chunk)
        defer { free(buf) }
        while off < length {
            let n = try input.read(into: UnsafeMutableRawBufferPointer(start: buf, count: Int(min(Int64(chunk), length - off))), fromAbsoluteOffset: off)
            if n == 0 { break }
            try output.writeAll(buf, count: n, toAbsoluteOffset: off)
            off += Int64(n)
            progress?(off, length)
        }
    }
    try output.dataSync()
    try Sys.fsyncDirectory(of: destination)
    ok = true
}

/// Publishes `source` at `destination`, or — when another file has that name — at the first
/// free `NAME-TAG.EXT`, `NAME-TAG-2.EXT`, …; never replaces a file. Returns the path used.
func publishFile(from source: String, toFreeNameLike destination: String, tag: String?,
                 progress: ((Int64, Int64) -> Void)? = nil) throws -> String {
    var target = destination
    for _ in 0..<1000 {
        do { return try publishFile(from: source, to: target, progress: progress) } catch StorageError.exists {
            target = uniqueName(destination, tag: tag)
        }
    }
    throw StorageError.exists(target)
}

/// Moves `source` to `destination` without replacing anything (renameat2 RENAME_NOREPLACE),
/// syncing the destination directory; across filesystems, copies (with progress), syncs and
/// removes the source. Returns the path written.
func publishFile(from source: String, to destination: String, progress: ((Int64, Int64) -> Void)?) throws -> String {
    if CLinux_renameat2(AT_FDCWD, source, AT_FDCWD, destination, CLinux_RENAME_NOREPLACE) == 0 {
        try Sys.fsyncDirectory(of: destination)
        return destination
    }
    let e = SystemError.last("renameat2", path: destination)
    if e.errno == EEXIST { throw StorageError.exists(destination) }
    guard e.errno == EXDEV || e.errno == EINVAL || e.errno == ENOSYS else { throw StorageError.io(e) }
    // Another filesystem (or no renameat2): copy, then sync, then drop the source.
    let input = try FileDescriptor.open(source, O_RDONLY)
    defer { input.closeQuietly() }
    var st = stat()
    try retryingInterrupts("fstat", path: source) { fstat(input.rawValue, &st) }
    try copyOut(input, length: Int64(st.st_size), to: destination, progress: progress)
    try Sys.unlinkIfPresent(source)
    return destination
}
