import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import ReelPreview
import Testing

// Issue 27 item 4, in-process: the gallery lists this session's clips and photos (the
// repository's fixture clips of each codec, added as the camera adds a finished clip), their
// thumbnails are JPEGs of the clip's first frame, the files answer range requests from their
// descriptor, and nothing but the listed files is reachable: not by a path, not by an id not
// in the list, not through a symlink planted in place of a clip; without the token, 401.

/// Fixtures/media/NAME, from this file's place in the repository.
private func fixture(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/media/\(name)").path
}

/// One request on a fresh connection, its body as bytes: the status code, the head and the body.
private func binaryRequest(_ port: UInt16, _ target: String, method: String = "GET", headers: [String] = [])
    -> (status: Int, head: String, body: [UInt8]) {
    guard let fd = connectLoopback(port, seconds: 10) else { return (0, "", []) }
    defer { close(fd) }
    let lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1:\(port)", "Connection: close"] + headers
    guard sendAll(fd, lines.joined(separator: "\r\n") + "\r\n\r\n") else { return (0, "", []) }
    var data = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = recv(fd, &chunk, chunk.count, 0)
        if n <= 0 { break }
        data += chunk[..<n]
    }
    let separator: [UInt8] = [13, 10, 13, 10]
    guard let end = (0..<max(0, data.count - 3)).first(where: { Array(data[$0..<($0 + 4)]) == separator }) else {
        return (0, String(decoding: data, as: UTF8.self), [])
    }
    let head = String(decoding: data[..<end], as: UTF8.self)
    let code = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return (code, head, Array(data[(end + 4)...]))
}

/// The value of header `name` in `head` (case-insensitive name), nil when absent.
private func headerValue(_ name: String, in head: String) -> String? {
    for line in head.split(separator: "\r\n") {
        let parts = line.split(separator: ":", maxSplits: 1)
        if parts.count == 2, parts[0].lowercased() == name.lowercased() { return parts[1].trimmingCharacters(in: .whitespaces) }
    }
    return nil
}

/// A session's output: the four fixture clips copied into `dir` (as the writer would have
/// published them) and a JPEG photo (the server's own preview picture), added to the server's
/// gallery as the camera adds them.
private func galleryServer(_ dir: String) throws -> (PreviewServer, [String: String]) {
    let server = try serverWithPicture()
    var paths: [String: String] = [:]
    for name in ["h264.mp4", "prores-proxy.mov", "ffv1.mkv", "hevc.mkv"] {
        let path = dir + "/clip-" + name
        try FileManager.default.copyItem(atPath: fixture(name), toPath: path)
        try server.clipFinished(at: path)
        paths[name] = path
    }
    let picture = try #require(server.output.frame(after: 0, timeout: 5))
    let photo = dir + "/photo-0001.jpg"
    try Data(picture.jpeg).write(to: URL(fileURLWithPath: photo))
    try server.photoFinished(at: photo, width: 640, height: 360, format: "jpeg")
    paths["photo"] = photo
    return (server, paths)
}

/// `GET /gallery`'s items, by bearer token.
private func items(_ server: PreviewServer) throws -> [[String: Any]] {
    let r = binaryRequest(server.address.port, "/gallery", headers: ["Authorization: Bearer \(server.token)"])
    #expect(r.status == 200, "\(r.head)")
    #expect(headerValue("Content-Type", in: r.head) == "application/json")
    let json = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
    return try #require(json["items"] as? [[String: Any]])
}

/// The mean of a plane, every `step`-th sample of every `step`-th row (0…255), of each sample
/// through `f` (the sample itself by default).
private func meanLuma(_ plane: LumaPlane, step: Int, _ f: (Int) -> Int = { $0 }) -> Double {
    var sum = 0, n = 0
    for y in stride(from: 0, to: plane.height, by: step) {
        for x in stride(from: 0, to: plane.width, by: step) { sum += f(plane.sample(x: x, y: y)); n += 1 }
    }
    return Double(sum) / Double(max(n, 1))
}

/// The JPEG at `path` decoded by ffmpeg to 8-bit planar 4:4:4 (Y, then Cb, then Cr, no
/// range conversion: a JPEG's samples as they are); nil when ffmpeg fails.
private func planarPixels(_ path: String) -> [UInt8]? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    p.arguments = ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "yuvj444p", "-"]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return p.terminationStatus == 0 ? Array(data) : nil
}

@Suite("PreviewGalleryTests", .serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg"), "needs ffmpeg (scripts/test installs it)"))
struct PreviewGalleryTests {
    /// `GET /gallery` lists each clip and photo with its id, kind, name, size in bytes (the
    /// file's), length and frames (clips), size and ratio, codec, type, whether it plays in
    /// place, and its thumbnail and download URLs; the status's `gallery` counts them.
    @Test func theListHasEachItemsFacts() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, paths) = try galleryServer(dir)
        defer { server.stop() }
        let list = try items(server)
        #expect(list.map { $0["id"] as? String } == ["clip-1", "clip-2", "clip-3", "clip-4", "photo-1"])
        #expect(Set(list[0].keys) == ["id", "kind", "name", "bytes", "seconds", "frames", "width", "height", "ratio", "codec",
                                      "type", "playable", "thumbnail", "download"])
        let expected: [(String, String, String, Bool)] = [("h264.mp4", "h264", "video/mp4", true),
                                                          ("prores-proxy.mov", "prores", "video/quicktime", false),
                                                          ("ffv1.mkv", "ffv1", "video/x-matroska", false),
                                                          ("hevc.mkv", "hevc", "video/x-matroska", false)]
        for (item, (name, codec, type, playable)) in zip(list, expected) {
            let size = try #require(try FileManager.default.attributesOfItem(atPath: paths[name]!)[.size] as? Int)
            #expect(item["kind"] as? String == "clip")
            #expect(item["name"] as? String == "clip-" + name)
            #expect(item["bytes"] as? Int == size)
            #expect(item["frames"] as? Int == 10, "\(name)")
            // Matroska's time base is 1 ms: each frame's duration is 33 ms there.
            #expect(abs((item["seconds"] as? Double ?? 0) - 10.0 / 30) <= (name.hasSuffix(".mkv") ? 0.0034 : 0.001),
                    "\(name): \(item["seconds"] ?? "none")")
            #expect(item["width"] as? Int == 1280 && item["height"] as? Int == 720)
            #expect(item["ratio"] as? String == "16x9")
            #expect(item["codec"] as? String == codec)
            #expect(item["type"] as? String == type)
            #expect(item["playable"] as? Bool == playable, "\(name)")
            let id = item["id"] as! String
            #expect(item["thumbnail"] as? String == "/gallery/\(id).jpg")
            #expect(item["download"] as? String == "/media/\(id)")
        }
        let photo = list[4]
        #expect(photo["kind"] as? String == "photo" && photo["name"] as? String == "photo-0001.jpg")
        #expect(photo["seconds"] is NSNull && photo["frames"] is NSNull)
        #expect(photo["type"] as? String == "image/jpeg" && photo["ratio"] as? String == "16x9" && photo["playable"] as? Bool == false)
        let status = binaryRequest(server.address.port, "/status", headers: ["Authorization: Bearer \(server.token)"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any])
        #expect(json["gallery"] as? Int == 5)
        // A clip added again is not listed twice.
        try server.clipFinished(at: paths["h264.mp4"]!)
        #expect(try items(server).count == 5)
    }

    /// Each thumbnail is a JPEG (it decodes as one, 4:2:0) at most 320 wide with the item's
    /// ratio; a clip's is its first frame in colour: its mean Y, Cb and Cr are the first frame's.
    @Test func thumbnailsAreJPEGsOfTheFirstFrame() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, paths) = try galleryServer(dir)
        defer { server.stop() }
        for (id, name) in [("clip-1", "h264.mp4"), ("clip-2", "prores-proxy.mov"), ("clip-3", "ffv1.mkv"), ("clip-4", "hevc.mkv"), ("photo-1", "photo")] {
            let r = binaryRequest(server.address.port, "/gallery/\(id).jpg", headers: ["Authorization: Bearer \(server.token)"])
            #expect(r.status == 200, "\(id): \(r.head)")
            #expect(headerValue("Content-Type", in: r.head) == "image/jpeg")
            let file = dir + "/\(id)-thumbnail.jpg"
            try Data(r.body).write(to: URL(fileURLWithPath: file))
            let thumb = try MediaReader(path: file)
            #expect(thumb.info.codecName == "mjpeg", "\(id)")
            #expect(thumb.info.pixelFormat == "yuvj420p", "\(id): \(thumb.info.pixelFormat)")
            #expect(thumb.info.width == 320 && thumb.info.height == 180, "\(id): \(thumb.info.width)x\(thumb.info.height)")
            guard id.hasPrefix("clip") else { continue }
            // The thumbnail's mean Y, Cb and Cr (ffmpeg decodes it to 4:4:4) are the first frame's.
            let yuv = try #require(planarPixels(file), "ffmpeg did not decode \(file)")
            try #require(yuv.count == 3 * 320 * 180)
            let means = (0..<3).map { p in Double(yuv[(p * 320 * 180)..<((p + 1) * 320 * 180)].reduce(0) { $0 + Int($1) }) / Double(320 * 180) }
            var frameMeans: [Double] = []
            struct First: Error {}
            do {
                try MediaReader(path: paths[name]!).forEachFrame { picture in
                    frameMeans = [meanLuma(picture.luma, step: 4)]
                        + (picture.chroma.map { [meanLuma($0.cb, step: 2), meanLuma($0.cr, step: 2),
                                                 meanLuma($0.cb, step: 2) { abs($0 - 128) } + meanLuma($0.cr, step: 2) { abs($0 - 128) }] } ?? [])
                    throw First()
                }
            } catch is First {}
            try #require(frameMeans.count == 4, "\(id): the first frame is not planar YUV")
            for p in 0..<3 { #expect(abs(means[p] - frameMeans[p]) < 4, "\(id) plane \(p): thumbnail \(means), first frame \(frameMeans)") }
            // Colour, not grey: the chroma's mean distance from neutral is the frame's (and not 0).
            let n = 320 * 180
            let colour = Double(yuv[n..<(3 * n)].reduce(0) { $0 + abs(Int($1) - 128) }) / Double(n)
            #expect(frameMeans[3] > 8 && abs(colour - frameMeans[3]) < 4, "\(id): chroma away from neutral: thumbnail \(colour), first frame \(frameMeans[3])")
        }
        let none = binaryRequest(server.address.port, "/gallery/clip-9.jpg", headers: ["Authorization: Bearer \(server.token)"])
        #expect(none.status == 404)
    }

    /// `/media/ID` sends the file (its bytes, its type, `Accept-Ranges: bytes`); a range is 206
    /// with `Content-Range` and exactly those bytes; a range past the end is 416 with
    /// `Content-Range: bytes */SIZE`; HEAD has the length and no body; `?download=1` is an attachment.
    @Test func downloadsAnswerRangeRequests() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, paths) = try galleryServer(dir)
        defer { server.stop() }
        let port = server.address.port, auth = "Authorization: Bearer \(server.token)"
        for (id, name, type) in [("clip-1", "h264.mp4", "video/mp4"), ("clip-2", "prores-proxy.mov", "video/quicktime"),
                                 ("clip-3", "ffv1.mkv", "video/x-matroska"), ("photo-1", "photo", "image/jpeg")] {
            let file = Array(try Data(contentsOf: URL(fileURLWithPath: paths[name]!)))
            let whole = binaryRequest(port, "/media/\(id)", headers: [auth])
            #expect(whole.status == 200, "\(id): \(whole.head)")
            #expect(whole.body == file, "\(id): \(whole.body.count) bytes of \(file.count)")
            #expect(headerValue("Content-Type", in: whole.head) == type)
            #expect(headerValue("Accept-Ranges", in: whole.head) == "bytes")
            #expect(headerValue("Content-Length", in: whole.head) == "\(file.count)")

            let several = binaryRequest(port, "/media/\(id)", headers: [auth, "Range: bytes=0-9,20-29"])
            #expect(several.status == 200 && several.body == file, "\(id): several ranges: \(several.head)")

            let part = binaryRequest(port, "/media/\(id)", headers: [auth, "Range: bytes=100-1123"])
            #expect(part.status == 206, "\(id): \(part.head)")
            #expect(headerValue("Content-Range", in: part.head) == "bytes 100-1123/\(file.count)")
            #expect(part.body == Array(file[100...1123]))

            let open = binaryRequest(port, "/media/\(id)", headers: [auth, "Range: bytes=\(file.count - 10)-"])
            #expect(open.status == 206 && open.body == Array(file[(file.count - 10)...]), "\(id): \(open.head)")
            let suffix = binaryRequest(port, "/media/\(id)", headers: [auth, "Range: bytes=-300"])
            #expect(suffix.status == 206 && suffix.body == Array(file.suffix(300)), "\(id): \(suffix.head)")
            #expect(headerValue("Content-Range", in: suffix.head) == "bytes \(file.count - 300)-\(file.count - 1)/\(file.count)")
            let clipped = binaryRequest(port, "/media/\(id)", headers: [auth, "Range: bytes=\(file.count - 5)-\(file.count + 1000)"])
            #expect(clipped.status == 206 && clipped.body == Array(file.suffix(5)), "\(id): \(clipped.head)")

            let past = binaryRequest(port, "/media/\(id)", headers: [auth, "Range: bytes=\(file.count)-"])
            #expect(past.status == 416, "\(id): \(past.head)")
            #expect(headerValue("Content-Range", in: past.head) == "bytes */\(file.count)")
            #expect(!past.body.starts(with: file.prefix(16)))

            let head = binaryRequest(port, "/media/\(id)", method: "HEAD", headers: [auth])
            #expect(head.status == 200 && head.body.isEmpty && headerValue("Content-Length", in: head.head) == "\(file.count)")
            let download = binaryRequest(port, "/media/\(id)?download=1", headers: [auth])
            let disposition = headerValue("Content-Disposition", in: download.head) ?? ""
            #expect(download.status == 200 && disposition.hasPrefix("attachment; filename=\""), "\(download.head)")
        }
    }

    /// Only the listed files are reachable: paths with `..`, encoded dots and slashes, an
    /// absolute path, an id not in the list are 404 (or 403), never /etc/passwd's bytes.
    @Test func pathsAndUnknownIdsAreRefused() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, _) = try galleryServer(dir)
        defer { server.stop() }
        let auth = "Authorization: Bearer \(server.token)"
        let targets = ["/media/../../etc/passwd", "/media/..%2f..%2fetc%2fpasswd", "/media/%2e%2e/%2e%2e/etc/passwd",
                       "/media/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/media/%2fetc%2fpasswd", "/media//etc/passwd",
                       "/media/clip-9", "/media/clip-1/../../../etc/passwd", "/media/clip-1%2f..%2f..%2fetc%2fpasswd",
                       "/media/photo-2", "/media/", "/gallery/../../etc/passwd", "/gallery/..%2f..%2fetc%2fpasswd.jpg",
                       "/gallery/%2e%2e/%2e%2e/etc/passwd.jpg", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
                       "/media/" + dir + "/clip-h264.mp4"]
        for target in targets {
            let r = binaryRequest(server.address.port, target, headers: [auth])
            #expect(r.status == 404 || r.status == 403 || r.status == 400, "\(target): \(r.head)")
            #expect(!String(decoding: r.body, as: UTF8.self).contains("root:"), "\(target) sent /etc/passwd")
        }
    }

    /// A symlink planted in the output directory in place of a listed clip (pointing at
    /// /etc/passwd) is refused (403), as is another file put there; a symlink handed to the
    /// gallery as a finished clip is not added.
    @Test func aSymlinkInPlaceOfAClipIsRefused() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, paths) = try galleryServer(dir)
        defer { server.stop() }
        let auth = "Authorization: Bearer \(server.token)"
        let clip = paths["h264.mp4"]!
        #expect(unlink(clip) == 0)
        #expect(symlink("/etc/passwd", clip) == 0)
        let r = binaryRequest(server.address.port, "/media/clip-1", headers: [auth, "Range: bytes=0-"])
        #expect(r.status == 403, "\(r.head)")
        // The thumbnail was made when the clip was added, and kept: still served.
        #expect(binaryRequest(server.address.port, "/gallery/clip-1.jpg", headers: [auth]).status == 200)
        #expect(!String(decoding: r.body, as: UTF8.self).contains("root:"))
        // Another regular file moved in its place (the same bytes): not the file recorded.
        #expect(unlink(clip) == 0)
        try FileManager.default.copyItem(atPath: fixture("h264.mp4"), toPath: clip + ".new")
        #expect(rename(clip + ".new", clip) == 0)
        #expect(binaryRequest(server.address.port, "/media/clip-1", headers: [auth]).status == 403)
        // The clip written to after it finished: refused too.
        let photo = paths["photo"]!
        let fd = open(photo, O_WRONLY | O_APPEND)
        #expect(fd >= 0 && write(fd, "x", 1) == 1 && close(fd) == 0)
        #expect(binaryRequest(server.address.port, "/media/photo-1", headers: [auth]).status == 403)
        // A symlink reported as a finished clip is refused, and not listed.
        let planted = dir + "/clip-planted.mp4"
        #expect(symlink("/etc/passwd", planted) == 0)
        #expect(throws: GalleryRefusal.self) { try server.clipFinished(at: planted) }
        #expect(try items(server).count == 5)
    }

    /// A file owned by another user is not added (as root: the file is given to nobody).
    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func aFileOfAnotherUserIsNotAdded() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try serverWithPicture()
        defer { server.stop() }
        let path = dir + "/clip.mp4"
        try FileManager.default.copyItem(atPath: fixture("h264.mp4"), toPath: path)
        #expect(chown(path, 65534, 65534) == 0)
        #expect(throws: GalleryRefusal.self) { try server.clipFinished(at: path) }
        #expect(try items(server).isEmpty)
    }

    /// Without the token the list, a thumbnail and a download are 401, and send nothing of the
    /// file; with the cookie but from another site's page (`Sec-Fetch-Site: cross-site`), 403.
    @Test func withoutTheTokenEveryGalleryRouteIs401() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, paths) = try galleryServer(dir)
        defer { server.stop() }
        let file = Array(try Data(contentsOf: URL(fileURLWithPath: paths["h264.mp4"]!)))
        for target in ["/gallery", "/gallery/clip-1.jpg", "/media/clip-1", "/media/clip-1?download=1", "/media/photo-1"] {
            for headers in [[], ["Authorization: Bearer " + String(repeating: "0", count: 32)], ["Cookie: \(server.cookieName)=nope"]] {
                let r = binaryRequest(server.address.port, target, headers: headers + ["Range: bytes=0-99"])
                #expect(r.status == 401, "\(target) \(headers): \(r.head)")
                #expect(!r.body.starts(with: file.prefix(32)))
            }
            // With the cookie, but fetched or embedded by another site's page: 403.
            let embedded = binaryRequest(server.address.port, target, headers: ["Cookie: \(server.cookieName)=\(server.token)",
                                                                                 "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors"])
            #expect(embedded.status == 403, "\(target): \(embedded.head)")
            #expect(!embedded.body.starts(with: file.prefix(32)))
        }
    }

    /// A download is sent from the file's descriptor, not read into memory: 256 MiB (a sparse
    /// file) go out whole, and a range of its last bytes, while this process (the server's)
    /// grows by far less than the file.
    @Test func aLargeFileIsNotReadIntoMemory() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try serverWithPicture()
        defer { server.stop() }
        let path = dir + "/large.heic", size = 256 << 20
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(fd >= 0)
        #expect(ftruncate(fd, off_t(size - 4)) == 0 && pwrite(fd, "tail", 4, off_t(size - 4)) == 4 && close(fd) == 0)
        try server.photoFinished(at: path, width: 4032, height: 3024, format: "heic")
        let before = residentBytes()
        // The whole file, counted and dropped as it comes.
        let conn = try #require(connectLoopback(server.address.port, seconds: 10))
        defer { close(conn) }
        #expect(sendAll(conn, "GET /media/photo-1 HTTP/1.1\r\nHost: 127.0.0.1:\(server.address.port)\r\nAuthorization: Bearer \(server.token)\r\nConnection: close\r\n\r\n"))
        var received = 0, peak = before
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = recv(conn, &chunk, chunk.count, 0)
            if n <= 0 { break }
            received += n
            if received % (32 << 20) < n { peak = max(peak, residentBytes()) }
        }
        peak = max(peak, residentBytes())
        #expect(received > size && received < size + 4096, "\(received) bytes")
        #expect(peak - before < 64 << 20, "the process grew by \(peak - before) bytes while sending \(size)")
        let tail = binaryRequest(server.address.port, "/media/photo-1", headers: ["Authorization: Bearer \(server.token)", "Range: bytes=-4"])
        #expect(tail.status == 206 && tail.body == Array("tail".utf8))
    }

    /// A HEIC or PNG photo's thumbnail is the preview's picture when the photo was added
    /// (640x360 here), scaled to 320 wide; its download carries `image/heic` or `image/png`.
    @Test func heicAndPNGPhotosHaveThePicturesThumbnail() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try serverWithPicture()
        defer { server.stop() }
        let auth = "Authorization: Bearer \(server.token)"
        for (n, format, type) in [(1, "heic", "image/heic"), (2, "png", "image/png")] {
            let path = dir + "/photo.\(format)"
            try Data("not decoded by the gallery".utf8).write(to: URL(fileURLWithPath: path))
            try server.photoFinished(at: path, width: 4032, height: 3024, format: format)
            let thumb = binaryRequest(server.address.port, "/gallery/photo-\(n).jpg", headers: [auth])
            #expect(thumb.status == 200, "\(thumb.head)")
            let file = dir + "/thumb-\(n).jpg"
            try Data(thumb.body).write(to: URL(fileURLWithPath: file))
            let reader = try MediaReader(path: file)
            #expect(reader.info.codecName == "mjpeg" && reader.info.width == 320 && reader.info.height == 180)
            let media = binaryRequest(server.address.port, "/media/photo-\(n)", headers: [auth])
            #expect(media.status == 200 && headerValue("Content-Type", in: media.head) == type && media.body == Array("not decoded by the gallery".utf8))
        }
        // A size none of the five ratios has: the size reduced.
        let odd = dir + "/odd.png"
        try Data("png".utf8).write(to: URL(fileURLWithPath: odd))
        try server.photoFinished(at: odd, width: 1000, height: 300, format: "png")
        let list = try items(server)
        #expect(list.map { $0["ratio"] as? String } == ["4x3", "4x3", "10x3"] && list.map { $0["codec"] as? String } == ["heic", "png", "png"])
    }

    /// A clip added to the gallery is pushed on `/events` at once: the status's `gallery` grows.
    @Test func aNewClipIsPushedOnTheEventStream() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try serverWithPicture()
        defer { server.stop() }
        let events = try #require(EventReader(port: server.address.port, token: server.token))
        let first = try #require(events.next(within: 5))
        #expect(first.contains(#""gallery":0"#), "\(first)")
        let path = dir + "/clip.mp4"
        try FileManager.default.copyItem(atPath: fixture("h264.mp4"), toPath: path)
        try server.clipFinished(at: path)
        var seen: String? = nil
        while let e = events.next(within: 5) { if e.contains(#""gallery":1"#) { seen = e; break } }
        #expect(seen != nil, "no event said gallery 1")
    }

    /// A portrait clip stored landscape (a display matrix of a quarter turn, as a turned
    /// sensor's clip has): its thumbnail is upright, 180x320, and matches ffmpeg's own upright
    /// picture of the first frame (ffmpeg turns by the matrix), not that picture turned half round.
    @Test func aTurnedClipsThumbnailIsUpright() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let turned = dir + "/turned.mp4"
        let mux = Process()
        mux.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        mux.arguments = ["-v", "error", "-i", fixture("h264.mp4"), "-c", "copy", "-metadata:s:v:0", "rotate=90", turned]
        try mux.run()
        mux.waitUntilExit()
        try #require(mux.terminationStatus == 0)
        try #require(try MediaReader(path: turned).info.displayQuarterTurns % 2 == 1, "ffmpeg wrote no quarter turn")
        let server = try serverWithPicture()
        defer { server.stop() }
        try server.clipFinished(at: turned)
        let thumb = binaryRequest(server.address.port, "/gallery/clip-1.jpg", headers: ["Authorization: Bearer \(server.token)"])
        #expect(thumb.status == 200)
        let file = dir + "/thumb.jpg"
        try Data(thumb.body).write(to: URL(fileURLWithPath: file))
        func grey(_ args: [String]) throws -> [UInt8] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            p.arguments = ["-v", "error"] + args + ["-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-"]
            let out = Pipe()
            p.standardOutput = out
            try p.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            return Array(data)
        }
        let size = try MediaReader(path: file).info
        #expect(size.width == 180 && size.height == 320, "the thumbnail is \(size.width)x\(size.height), not 180x320")
        let shown = try grey(["-i", file])
        try #require(shown.count == 180 * 320)
        // Against ffmpeg's upright picture, and the same turned half round (the other way of a
        // quarter turn): the thumbnail is close to the first (a decimated JPEG against a
        // scaled picture) and far from the second.
        let upright = try grey(["-i", turned, "-vf", "scale=180:320"])
        let wrongWay = try grey(["-i", turned, "-vf", "scale=180:320,hflip,vflip"])
        try #require(upright.count == 180 * 320 && wrongWay.count == 180 * 320)
        func difference(_ other: [UInt8]) -> Double {
            Double(zip(shown, other).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(shown.count)
        }
        let (right, wrong) = (difference(upright), difference(wrongWay))
        #expect(right < 12 && wrong > 2 * right, "mean grey difference from ffmpeg's upright picture \(right), from it turned half round \(wrong)")
    }

    /// A clip gone from its directory (`clipGone`: `--keep`'s loop budget deleted it) leaves
    /// the list; its id answers 404 and is not given again; the status's `gallery` moves on
    /// (a removal is a change too) and the event stream says so. A path never listed: nothing.
    @Test func aDeletedClipLeavesTheList() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, paths) = try galleryServer(dir)
        defer { server.stop() }
        let events = try #require(EventReader(port: server.address.port, token: server.token))
        let first = try #require(events.next(within: 5))
        #expect(first.contains(#""gallery":5"#), "\(first)")
        let gone = try #require(paths["prores-proxy.mov"])
        #expect(unlink(gone) == 0)
        server.clipGone(at: gone)
        server.clipGone(at: dir + "/never-listed.mov")
        #expect(try items(server).map { $0["id"] as? String } == ["clip-1", "clip-3", "clip-4", "photo-1"])
        let media = binaryRequest(server.address.port, "/media/clip-2", headers: ["Authorization: Bearer \(server.token)"])
        #expect(media.status == 404)
        var seen: String? = nil
        while let e = events.next(within: 5) { if e.contains(#""gallery":6"#) { seen = e; break } }
        #expect(seen != nil, "no event said gallery 6")
        #expect(server.gallery.changes == 6, "a path never listed changed nothing")
        let again = dir + "/clip-again.mp4"
        try FileManager.default.copyItem(atPath: fixture("h264.mp4"), toPath: again)
        try server.clipFinished(at: again)
        #expect(try items(server).last { ($0["id"] as? String ?? "").hasPrefix("clip") }?["id"] as? String == "clip-5")
    }
}

/// This process's resident memory (`VmRSS` of /proc/self/status), in bytes.
private func residentBytes() -> Int {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = text.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
}

/// A fresh directory under /tmp.
private func temporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "reel-gallery-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Playwright for Python is importable by the `python3` on PATH and Debian's chromium is there.
private let havePlaywright: Bool = {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium") else { return false }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", "import playwright.sync_api"]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return false }
    p.waitUntilExit()
    return p.terminationStatus == 0
}()

@Suite("RealtimePreviewGalleryPageTests", .serialized)
struct RealtimePreviewGalleryPageTests {
    /// The page's gallery in Chromium (Playwright, scripts/preview-browser.py --click gallery)
    /// with a clip of each codec and a photo: only the H.264 MP4 clip is a <video>, and it
    /// plays (to its end, 10 frames, without an error); the ProRes MOV, FFV1 and HEVC Matroska
    /// clips and the photo show their thumbnails (320 wide) and a download link each, the
    /// non-playable clips marked `download only`; no content-security-policy error; at 390 px
    /// the page does not scroll sideways.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func everyCodecIsShownAndOnlyH264MP4Plays() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (server, _) = try galleryServer(dir)
        defer { server.stop() }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("scripts/preview-browser.py").path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", script, server.pageURL, dir, "--click", "gallery"]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let text = out.fileHandleForReading.readDataToEndOfFile()
        let why = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        let video = try #require(result["video"] as? [String: Any], "\(result)")
        #expect(video["error"] is NSNull && video["src"] as? String == "/media/clip-1", "\(video)")
        #expect((video["readyState"] as? Int ?? 0) >= 2 && (video["currentTime"] as? Double ?? 0) > 0.3, "\(video)")
        let shown = result["galleryItems"] as? [[String: Any]] ?? []
        #expect(shown.map { $0["id"] as? String } == ["clip-1", "clip-2", "clip-3", "clip-4", "photo-1"], "\(shown)")
        #expect(shown.map { $0["video"] as? Bool } == [true, false, false, false, false])
        for item in shown.dropFirst() {
            #expect(item["thumbnail"] as? [Int] == [320, 180], "\(item)")
            #expect(item["download"] as? String == "/media/\(item["id"] as? String ?? "")?download=1")
        }
        let metas = shown.map { $0["meta"] as? String ?? "" }
        #expect(metas.map { $0.contains("(download only)") } == [false, true, true, true, false], "\(metas)")
        #expect(result["galleryCount"] as? String == "5")
        let errors = result["consoleErrors"] as? [String] ?? []
        #expect(!errors.contains { $0.contains("Content Security Policy") }, "\(errors)")
        let widths = result["galleryPhoneWidths"] as? [Double] ?? []
        #expect(widths.count == 2 && widths[0] <= 390 && widths[1] <= 390 && widths[1] > 300, "\(widths)")
    }
}
