import Foundation
import Synchronization
import ReelCore
import ReelMedia
#if canImport(Glibc)
import Glibc
#endif

/// One item of the gallery: a clip or a photo this session recorded, as `GET /gallery` lists it.
public struct GalleryItem: Sendable, Codable, Equatable {
    /// `clip` or `photo`.
    public enum Kind: String, Sendable, Codable {
        /// A clip the movie output finished.
        case clip
        /// A photo the photo output saved.
        case photo
    }
    /// The item's id in the session's list (`clip-1`, `photo-1`, …): the only way to address it.
    public var id: String
    /// `clip` or `photo`.
    public var kind: Kind
    /// The file's name (its last path component).
    public var name: String
    /// The file's size in bytes, when it finished.
    public var bytes: Int64
    /// A clip's length in seconds of media (from its first frame's presentation time to its
    /// last one's end, as ffprobe gives the stream's duration); null for a photo.
    @EncodedNull public var seconds: Double?
    /// A clip's frame count (its video packets); null for a photo.
    @EncodedNull public var frames: Int?
    /// Width and height in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// The aspect ratio (`16x9`, `9x16`, `1x1`, `4x3`, `3x4`, or `WxH` reduced).
    public var ratio: String
    /// A clip's codec (`h264`, `prores`, …; libavcodec's name) or a photo's format (`jpeg`, `heic`, `png`).
    public var codec: String
    /// The file's `Content-Type` (`video/mp4`, `video/quicktime`, `video/x-matroska`, `image/jpeg`, `image/heic`, `image/png`).
    public var type: String
    /// True when Chromium plays it in a `<video>` element: H.264 in MP4.
    public var playable: Bool
    /// `/gallery/ID.jpg`: its thumbnail.
    public var thumbnail: String
    /// `/media/ID`: the file itself (range requests answered).
    public var download: String
}

/// A file of the gallery as it was when it finished: its path, and the device, inode, size and
/// modification time `fstat` gave then. Opening it again must find the same file there,
/// unchanged (an inode number freed and given to a new file is not enough).
struct GalleryFile: Sendable {
    let path: String
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modified: Int64

    init(path: String, _ st: stat) {
        self.path = path
        device = UInt64(st.st_dev); inode = UInt64(st.st_ino); size = Int64(st.st_size)
        modified = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
    }

    /// The same file, unchanged.
    func matches(_ st: stat) -> Bool {
        let other = GalleryFile(path: path, st)
        return other.device == device && other.inode == inode && other.size == size && other.modified == modified
    }
}

/// Why a gallery file was not added or cannot be served.
public struct GalleryRefusal: Error, CustomStringConvertible, Sendable {
    /// One line: what was refused and why.
    public let description: String
    /// The file is gone (ENOENT) or holds no video: a clip the writer opened ahead and then
    /// discarded, nothing to report.
    public var isGone = false
}

/// This session's clips and photos, addressed by id — never by path: the preview serves
/// nothing else. Each file is checked when it is added (opened with `O_NOFOLLOW`, a regular
/// file owned by this user) and its device, inode, size and modification time kept; every later
/// open must find that same file unchanged (`open` with `O_NOFOLLOW`, `fstat`), or it is refused. Thumbnails are made once,
/// when the item is added, and kept.
public final class PreviewGallery: Sendable {
    private struct Entry: Sendable { var item: GalleryItem; var file: GalleryFile; var thumbnail: [UInt8] }
    private struct State: Sendable { var entries: [Entry] = []; var clips = 0; var photos = 0; var paths: Set<String> = []; var changes = 0 }
    private let state = Mutex(State())
    private let refresher = Mutex<(@Sendable () -> Void)?>(nil)

    /// An empty gallery.
    public init() {}

    /// Called before the list is read (`GET /gallery`): the camera adds what it learned since.
    public func setRefresher(_ body: @escaping @Sendable () -> Void) { refresher.withLock { $0 = body } }

    /// The items, oldest first.
    public var items: [GalleryItem] {
        refresher.withLock { $0 }?()
        return state.withLock { $0.entries.map(\.item) }
    }

    /// True when the file at `path` was added.
    public func contains(_ path: String) -> Bool { state.withLock { $0.paths.contains(path) } }

    /// How many items are listed.
    public var count: Int { state.withLock { $0.entries.count } }

    /// How many times the list changed: each item added, each one removed (the status's
    /// `gallery`: when it moves, the page fetches the list).
    public var changes: Int { state.withLock { $0.changes } }

    /// Removes the item of the file at `path` (deleted or moved away); true when one was listed.
    /// Its id is not given to another item.
    @discardableResult
    public func remove(path: String) -> Bool {
        state.withLock { s in
            guard let i = s.entries.firstIndex(where: { $0.file.path == path }) else { return false }
            s.entries.remove(at: i)
            s.changes += 1
            return true
        }
    }

    /// Adds the clip at `path` (finished: it is not written any more): opens it with
    /// `O_NOFOLLOW` and checks it (a regular file owned by this user), reads its length and
    /// frames (its packets), decodes its first frame for the thumbnail, all through the
    /// descriptor checked. A path added before is ignored (returns nil).
    /// - Throws: `GalleryRefusal` when the file is not one to serve or cannot be read.
    @discardableResult
    public func addClip(at path: String) throws -> GalleryItem? {
        guard state.withLock({ !$0.paths.contains(path) }) else { return nil }
        let (fd, st) = try Self.openChecked(path, expecting: nil)
        defer { fd.closeQuietly() }
        // libavformat opens the descriptor checked, through /proc: never the path again.
        let reader: MediaReader
        do { reader = try MediaReader(path: "/proc/self/fd/\(fd.rawValue)") } catch {
            throw GalleryRefusal(description: "\(path): \(error)", isGone: st.st_size == 0)
        }
        // The length is the span of the packets' presentation times, the last one's duration
        // included (what ffprobe gives as the stream's duration).
        var frames = 0, first = Int64.max, end = Int64.min
        do {
            try reader.forEachPacket { packet in
                frames += 1
                guard let pts = packet.pts else { return }
                first = min(first, pts); end = max(end, pts + packet.duration)
            }
        } catch {
            throw GalleryRefusal(description: "\(path): \(error)")
        }
        let base = reader.info.timeBase
        let seconds = base.den > 0 && end > first ? Double(end - first) * Double(base.num) / Double(base.den) : 0
        let thumbnail = GalleryThumbnails.firstFrame(of: reader)
        let name = (path as NSString).lastPathComponent
        let ext = (name as NSString).pathExtension.lowercased()
        let type = ext == "mp4" ? "video/mp4" : ext == "mkv" ? "video/x-matroska" : "video/quicktime"
        let file = GalleryFile(path: path, st)
        return add(kind: .clip, file: file, thumbnail: thumbnail ?? []) { id in
            GalleryItem(id: id, kind: .clip, name: name, bytes: Int64(st.st_size), seconds: seconds, frames: frames,
                        width: reader.info.width, height: reader.info.height,
                        ratio: Self.ratio(reader.info.width, reader.info.height), codec: reader.info.codecName, type: type,
                        playable: type == "video/mp4" && reader.info.codecName == "h264",
                        thumbnail: "/gallery/\(id).jpg", download: "/media/\(id)")
        }
    }

    /// Adds the photo at `path` (saved: `width`×`height`, `format` `jpeg`, `heic` or `png`):
    /// checked as a clip is; its thumbnail is the photo scaled down (a JPEG photo), or
    /// `picture` scaled down (the preview's picture when the photo was saved: HEIC and PNG).
    /// A path added before is ignored (returns nil).
    /// - Throws: `GalleryRefusal` when the file is not one to serve or cannot be read.
    @discardableResult
    public func addPhoto(at path: String, width: Int, height: Int, format: String, picture: [UInt8]?) throws -> GalleryItem? {
        guard state.withLock({ !$0.paths.contains(path) }) else { return nil }
        let (fd, st) = try Self.openChecked(path, expecting: nil)
        defer { fd.closeQuietly() }
        var source = picture
        if format == "jpeg" { source = try Self.readAll(fd, size: Int(st.st_size)) }
        let thumbnail = source.flatMap { GalleryThumbnails.scaled($0, maxWidth: GalleryThumbnails.maxWidth) } ?? []
        let name = (path as NSString).lastPathComponent
        let type = format == "jpeg" ? "image/jpeg" : format == "heic" ? "image/heic" : "image/png"
        let file = GalleryFile(path: path, st)
        return add(kind: .photo, file: file, thumbnail: thumbnail) { id in
            GalleryItem(id: id, kind: .photo, name: name, bytes: Int64(st.st_size), seconds: nil, frames: nil,
                        width: width, height: height, ratio: Self.ratio(width, height), codec: format, type: type,
                        playable: false, thumbnail: "/gallery/\(id).jpg", download: "/media/\(id)")
        }
    }

    private func add(kind: GalleryItem.Kind, file: GalleryFile, thumbnail: [UInt8], make: (String) -> GalleryItem) -> GalleryItem? {
        state.withLock { s in
            guard !s.paths.contains(file.path) else { return nil }
            let id: String
            if kind == .clip { s.clips += 1; id = "clip-\(s.clips)" } else { s.photos += 1; id = "photo-\(s.photos)" }
            let item = make(id)
            s.entries.append(Entry(item: item, file: file, thumbnail: thumbnail))
            s.paths.insert(file.path)
            s.changes += 1
            return item
        }
    }

    /// The thumbnail of the item `id` (a JPEG); nil for an id not in the list or an item without one.
    public func thumbnail(_ id: String) -> [UInt8]? {
        state.withLock { s in s.entries.first { $0.item.id == id }.flatMap { $0.thumbnail.isEmpty ? nil : $0.thumbnail } }
    }

    /// The item `id` opened for reading, checked: opened with `O_NOFOLLOW` (a symlink in its
    /// place is refused), a regular file, the device, inode, size and modification time it had when it finished. The
    /// caller owns the descriptor. nil for an id not in the list.
    /// - Throws: `GalleryRefusal` when the file there is not the one recorded.
    func open(_ id: String) throws -> (fd: FileDescriptor, size: Int64, item: GalleryItem)? {
        guard let entry = state.withLock({ s in s.entries.first { $0.item.id == id } }) else { return nil }
        let (fd, st) = try Self.openChecked(entry.file.path, expecting: entry.file)
        return (fd, Int64(st.st_size), entry.item)
    }

    /// `open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)` and `fstat`: a regular file owned by
    /// this user and, with `expecting`, that file (device, inode, size, modification time).
    /// Else closed and refused.
    static func openChecked(_ path: String, expecting: GalleryFile?) throws -> (FileDescriptor, stat) {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) } catch let error as SystemError {
            throw GalleryRefusal(description: "\(path): \(error)", isGone: error.errno == ENOENT)
        }
        var st = stat()
        guard fstat(fd.rawValue, &st) == 0 else {
            let e = errno
            fd.closeQuietly()
            throw GalleryRefusal(description: "\(path): fstat: \(String(cString: strerror(e)))")
        }
        var why: String? = nil
        if st.st_mode & S_IFMT != S_IFREG { why = "not a regular file" }
        else if st.st_uid != geteuid() { why = "not owned by this user" }
        else if let expecting, !expecting.matches(st) { why = "not the file recorded there" }
        if let why {
            fd.closeQuietly()
            throw GalleryRefusal(description: "\(path): \(why)")
        }
        return (fd, st)
    }

    /// The first `size` bytes of `fd` (pread until the end).
    private static func readAll(_ fd: FileDescriptor, size: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: size)
        var got = 0
        while got < size {
            let n = try bytes.withUnsafeMutableBytes { raw in
                try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[got...]), fromAbsoluteOffset: Int64(got))
            }
            if n == 0 { break }
            got += n
        }
        return Array(bytes[..<got])
    }

    /// The ratio `width`×`height` is (one of the five, within 1 %), or the size reduced (`WxH`).
    static func ratio(_ width: Int, _ height: Int) -> String {
        guard width > 0, height > 0 else { return "\(width)x\(height)" }
        let value = Double(width) / Double(height)
        for (w, h, name) in [(1.0, 1.0, "1x1"), (4.0, 3.0, "4x3"), (3.0, 4.0, "3x4"), (16.0, 9.0, "16x9"), (9.0, 16.0, "9x16")]
        where abs(value / (w / h) - 1) < 0.01 { return name }
        var a = width, b = height
        while b != 0 { (a, b) = (b, a % b) }
        return "\(width / a)x\(height / a)"
    }
}
