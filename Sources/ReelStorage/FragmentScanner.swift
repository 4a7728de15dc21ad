import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// Walks the top-level boxes of a fragmented MOV/MP4 file to find where its last complete
/// fragment ends: what survives a crash or a full disk is everything up to that point.
public enum FragmentScanner {
    /// The byte length of the playable prefix of the file at `path`: through the last
    /// `mdat` whose `moof` and payload are complete (or through `moov` if no fragment is),
    /// or nil when the file does not start as an ISO BMFF file with a `moov`.
    /// - Parameter limit: bytes known to hold data (a preallocated slot is longer than its clip).
    public static func playableLength(of path: String, limit: Int64? = nil) -> Int64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        let fileSize = min(Int64(st.st_size), limit ?? .max)
        var offset: Int64 = 0
        var sawMoov = false
        var playable: Int64? = nil
        var pendingMoof = false
        var header = [UInt8](repeating: 0, count: 16)
        while offset + 8 <= fileSize {
            let n = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 16, off_t(offset)) }
            guard n >= 8 else { break }
            var size = Int64(header[0]) << 24 | Int64(header[1]) << 16 | Int64(header[2]) << 8 | Int64(header[3])
            let type = String(decoding: header[4..<8], as: UTF8.self)
            if size == 1 {
                guard n >= 16 else { break }
                size = header[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            }
            // size 0 ("to end of file") is how an unfinished box looks; stop there.
            guard size >= 8, offset + size <= fileSize else { break }
            let end = offset + size
            switch type {
            case "moov":
                sawMoov = true
                playable = end
            case "moof":
                pendingMoof = true
            case "mdat":
                if sawMoov && pendingMoof { playable = end }
                pendingMoof = false
            case "mfra":
                if sawMoov { playable = end }
            default:
                break
            }
            offset = end
        }
        return sawMoov ? playable : nil
    }
}
