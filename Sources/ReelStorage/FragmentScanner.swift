import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// Walks the top-level boxes of a fragmented MOV/MP4 file (or the clusters of a Matroska one)
/// to find where its last complete fragment ends: what survives a crash or a full disk is
/// everything up to that point.
public enum FragmentScanner {
    /// The byte length of the playable prefix of the file at `path`: through the last
    /// `mdat` whose `moof` and payload are complete (or through `moov` if no fragment is),
    /// or nil when the file does not start as an ISO BMFF file with a `moov`.
    /// - Parameter limit: bytes known to hold data (a preallocated slot is longer than its clip).
    public static func playableLength(of path: String, limit: Int64? = nil) -> Int64? {
        scanISO(path, limit: limit).map { $0.length }
    }

    /// Where the last complete fragment (`moof` + `mdat`) after the `moov` ends, and how many
    /// complete fragments there are (0: the file holds headers only, no frame); nil when the
    /// file is not an ISO BMFF file with a `moov`.
    public static func completeFragments(of path: String, limit: Int64? = nil) -> (length: Int64, count: Int)? {
        scanISO(path, limit: limit).map { (length: $0.length, count: $0.fragments) }
    }

    /// The file opened read-only and the length to scan (its size, or `limit` if smaller);
    /// nil when it cannot be opened or stat'ed.
    private static func openForScan(_ path: String, limit: Int64?) -> (fd: Int32, size: Int64)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            if close(fd) != 0 { /* only read from: nothing to report */ }
            return nil
        }
        return (fd, min(Int64(st.st_size), limit ?? .max))
    }

    private static func scanISO(_ path: String, limit: Int64?) -> (length: Int64, fragments: Int)? {
        guard let (fd, fileSize) = openForScan(path, limit: limit) else { return nil }
        defer { if close(fd) != 0 { /* only read from: nothing to report */ } }
        var offset: Int64 = 0
        var sawMoov = false
        var playable: Int64? = nil
        var pendingMoof = false
        var fragments = 0
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
                if sawMoov && pendingMoof { playable = end; fragments += 1 }
                pendingMoof = false
            case "mfra":
                if sawMoov { playable = end }
            default:
                break
            }
            offset = end
        }
        guard sawMoov, let playable else { return nil }
        return (playable, fragments)
    }

    /// Where the last complete Matroska cluster ends and how many complete clusters there are
    /// (0: headers only, no frame), or nil when the file does not start with an EBML header
    /// and a segment. Clusters are written whole (libavformat buffers each until it closes),
    /// so a complete cluster holds complete blocks starting with a keyframe.
    public static func completeClusters(of path: String, limit: Int64? = nil) -> (length: Int64, count: Int)? {
        guard let (fd, fileSize) = openForScan(path, limit: limit) else { return nil }
        defer { if close(fd) != 0 { /* only read from: nothing to report */ } }
        var buf = [UInt8](repeating: 0, count: 12)

        /// An element header at `offset`: its id, the size of its payload (nil: unknown) and
        /// where the payload starts.
        func element(at offset: Int64) -> (id: UInt32, size: Int64?, payload: Int64)? {
            guard offset < fileSize else { return nil }
            let n = buf.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 12, off_t(offset)) }
            guard n >= 2 else { return nil }
            let first = buf[0]
            guard first != 0 else { return nil }
            let idLength = first.leadingZeroBitCount + 1
            guard idLength <= 4, n >= idLength + 1 else { return nil }
            var id: UInt32 = 0
            for i in 0..<idLength { id = id << 8 | UInt32(buf[i]) }
            let sizeFirst = buf[idLength]
            guard sizeFirst != 0 else { return nil }
            let sizeLength = sizeFirst.leadingZeroBitCount + 1
            guard n >= idLength + sizeLength else { return nil }
            var size = Int64(sizeFirst & (0xFF >> sizeLength))
            var allOnes = size == Int64(0xFF >> sizeLength)
            for i in 1..<sizeLength {
                size = size << 8 | Int64(buf[idLength + i])
                allOnes = allOnes && buf[idLength + i] == 0xFF
            }
            return (id, allOnes ? nil : size, offset + Int64(idLength + sizeLength))
        }

        guard let ebml = element(at: 0), ebml.id == 0x1A45_DFA3, let ebmlSize = ebml.size,
              let segment = element(at: ebml.payload + ebmlSize), segment.id == 0x1853_8067 else { return nil }
        let segmentEnd = segment.size.map { segment.payload + $0 } ?? .max
        var offset = segment.payload
        var end: Int64? = nil
        var clusters = 0
        var sawTracks = false
        while offset < min(fileSize, segmentEnd), let e = element(at: offset), let size = e.size {
            let next = e.payload + size
            guard next <= fileSize else { break }
            switch e.id {
            case 0x1654_AE6B: sawTracks = true
            case 0x1F43_B675: if sawTracks { clusters += 1; end = next }
            default: break
            }
            offset = next
        }
        guard sawTracks else { return nil }
        return (end ?? offset, clusters)
    }
}
