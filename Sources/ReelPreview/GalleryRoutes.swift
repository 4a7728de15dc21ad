import CMicroHTTPD
import Foundation
import ReelCore
#if canImport(Glibc)
import Glibc
#endif

/// The gallery's routes: `GET /gallery` (the list as JSON), `GET /gallery/ID.jpg` (a
/// thumbnail), `GET /media/ID` (the file, with range requests). An item is found by its id in
/// the session's own list, never by a path: anything else is 404.
enum GalleryRoutes {
    /// Answers `path` when it is one of the gallery's routes; nil when it is not.
    static func answer(_ connection: OpaquePointer, _ server: PreviewServer, path: String) -> MHD_Result? {
        if path == "/gallery" { return list(connection, server) }
        if path.hasPrefix("/gallery/"), path.hasSuffix(".jpg") {
            let id = String(path.dropFirst("/gallery/".count).dropLast(".jpg".count))
            guard let jpeg = server.gallery.thumbnail(id) else { return notFound(connection) }
            return respond(connection, 200, jpeg, type: "image/jpeg")
        }
        if path.hasPrefix("/media/") { return media(connection, server, id: String(path.dropFirst("/media/".count))) }
        return nil
    }

    /// `{"items": [...]}`, oldest first.
    private static func list(_ connection: OpaquePointer, _ server: PreviewServer) -> MHD_Result {
        struct List: Encodable { var items: [GalleryItem] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(List(items: server.gallery.items))) ?? Data(#"{"items":[]}"#.utf8)
        return respond(connection, 200, Array(body), type: "application/json")
    }

    private static func notFound(_ connection: OpaquePointer) -> MHD_Result {
        respond(connection, 404, Array("404 not found\n".utf8), type: "text/plain")
    }

    /// The file of item `id`, opened and checked (`PreviewGallery.open`), sent from its
    /// descriptor (`MHD_create_response_from_fd_at_offset64`: never read into memory): 200
    /// whole, 206 for one satisfiable `Range: bytes=…` (`Content-Range`), 416 for an
    /// unsatisfiable one. 404 for an id not in the list, 403 when the file there is not the
    /// one recorded (a symlink, another file). `?download=1` adds `Content-Disposition: attachment`.
    private static func media(_ connection: OpaquePointer, _ server: PreviewServer, id: String) -> MHD_Result {
        let opened: (fd: FileDescriptor, size: Int64, item: GalleryItem)
        do {
            guard let o = try server.gallery.open(id) else { return notFound(connection) }
            opened = o
        } catch {
            return respond(connection, 403, Array("403 this file is not the one recorded\n".utf8), type: "text/plain")
        }
        let size = opened.size
        var code: UInt32 = 200
        var start: Int64 = 0, length = size
        var headers: [(String, String)] = [("Accept-Ranges", "bytes")]
        if let header = server.value(connection, CMicroHTTPD_headerKind, "Range") {
            switch byteRange(header, size: size) {
            case .whole: break
            case .unsatisfiable:
                opened.fd.closeQuietly()
                return respond(connection, 416, Array("416 range not satisfiable\n".utf8), type: "text/plain",
                               headers: headers + [("Content-Range", "bytes */\(size)")])
            case .part(let first, let last):
                code = 206; start = first; length = last - first + 1
                headers.append(("Content-Range", "bytes \(first)-\(last)/\(size)"))
            }
        }
        if server.value(connection, CMicroHTTPD_argumentKind, "download") != nil {
            let safe = opened.item.name.filter { $0 != "\"" && $0 != "\\" && !$0.isNewline }
            headers.append(("Content-Disposition", "attachment; filename=\"\(safe)\""))
        }
        // libmicrohttpd owns the descriptor from here (it closes it with the response).
        guard let response = MHD_create_response_from_fd_at_offset64(UInt64(length), opened.fd.rawValue, UInt64(start)) else {
            opened.fd.closeQuietly()
            return CMicroHTTPD_no
        }
        defer { MHD_destroy_response(response) }
        let all = [("Content-Type", opened.item.type), ("Cache-Control", "no-store"),
                   ("Content-Security-Policy", PreviewAssets.contentSecurityPolicy), ("X-Content-Type-Options", "nosniff")] + headers
        for (name, value) in all where MHD_add_response_header(response, name, value) != CMicroHTTPD_yes { return CMicroHTTPD_no }
        return MHD_queue_response(connection, code, response)
    }

    /// What a `Range` header asks of a file of `size` bytes.
    enum ByteRange: Equatable {
        /// No range this server answers (not `bytes=`, several ranges, malformed): the whole file.
        case whole
        /// No byte of the range is in the file: 416.
        case unsatisfiable
        /// Bytes `first` through `last`, both included.
        case part(Int64, Int64)
    }

    /// Parses `bytes=FIRST-LAST`, `bytes=FIRST-` and `bytes=-SUFFIX` (one range; several are
    /// answered with the whole file, as RFC 9110 allows).
    static func byteRange(_ header: String, size: Int64) -> ByteRange {
        let text = header.trimmingCharacters(in: .whitespaces)
        guard text.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = text.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let a = spec[..<dash].trimmingCharacters(in: .whitespaces), b = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        let digits: (String) -> Bool = { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }
        if a.isEmpty {
            guard digits(b), let suffix = Int64(b) else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - suffix), size - 1)
        }
        guard digits(a), let first = Int64(a) else { return .whole }
        var last = size - 1
        if !b.isEmpty {
            guard digits(b), let l = Int64(b) else { return .whole }
            guard l >= first else { return .whole }   // invalid: ignored
            last = min(l, size - 1)
        }
        guard first < size else { return .unsatisfiable }
        return .part(first, last)
    }
}
