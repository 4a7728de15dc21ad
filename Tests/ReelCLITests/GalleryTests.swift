import Foundation
import Testing
import ReelWriter

// Issue 27 item 4 on a real `reel record --preview`: the gallery lists the clips as the
// writer finishes them (a stop from the page, a seam) and the photos as they are saved, a
// real Chromium plays an H.264 MP4 clip in place, a ProRes MOV clip is download-only, and a
// symlink planted in the output directory in place of a clip is refused.

/// `reel record --preview 127.0.0.1:PORT ARGS…` once its preview answers `/status`: the
/// process and the preview's base address.
private func recordWithPreview(_ args: [String]) throws -> (Launched, String, UInt16) {
    let port = try freePort()
    let rec = try launch(["record", "--preview", "127.0.0.1:\(port)"] + args)
    let base = previewBase(port)
    let up = waitUntil(60) { !rec.process.isRunning || previewStatus(base) != nil }
    try #require(up && rec.process.isRunning, "the preview never answered: \(rec.stderrSoFar)")
    return (rec, base, port)
}

/// The gallery's items (`GET /gallery` with the token), by id.
private func galleryItems(_ base: String) throws -> [String: [String: Any]] {
    let answer = try curl(base + "gallery")
    #expect(answer.status == 200, "\(answer.text)")
    let items = answer.object?["items"] as? [[String: Any]] ?? []
    return Dictionary(uniqueKeysWithValues: items.map { ($0["id"] as? String ?? "", $0) })
}

@Suite("RealtimeGalleryTests", .serialized, .enabled(if: haveCurl && installedTool("ffprobe") != nil, "needs curl and ffprobe (scripts/test installs them)"))
struct RealtimeGalleryTests {
    /// H.264 MP4 clips and JPEG photos in Chromium (Playwright): a photo is taken, the page's
    /// stop finishes the clip, the gallery shows both with their thumbnails, and the clip's
    /// <video> plays (half a second of it, no error); at 390 px the page does not scroll
    /// sideways. `/gallery` agrees with the file on disk and with the summary, and a range
    /// request gets the file's own bytes.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func theGalleryPlaysAnH264ClipInABrowser() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("gallery")
        let (rec, base, port) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "h264", "--container", "mp4",
                                                       "--plain", "--photos", dir + "/photos", "--photo-format", "jpeg",
                                                       "--json", "--out", dir + "/out"] + untilSIGINT)
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        let shutter = try curl(base + "shutter", post: true, seconds: 30)
        #expect(shutter.status == 200, "\(shutter.text)")
        // No page or status client watches yet: `GET /gallery` itself learns of the photo.
        #expect(try galleryItems(base)["photo-1"]?["kind"] as? String == "photo")
        let (code, text, why) = try runPreviewBrowser(previewPage(port), shots: shots, click: "gallery")
        print("gallery screenshots: \(shots)")
        #expect(code == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        #expect(result["galleryStop"] as? Int == 200)
        let video = try #require(result["video"] as? [String: Any], "\(result)")
        #expect(video["error"] is NSNull, "\(video)")
        #expect((video["readyState"] as? Int ?? 0) >= 2 && (video["currentTime"] as? Double ?? 0) >= 0.5, "\(video)")
        #expect(video["src"] as? String == "/media/clip-1" && video["width"] as? Int == 1280 && video["height"] as? Int == 720)
        #expect(video["poster"] as? String == "/gallery/clip-1.jpg", "\(video)")
        let shown = result["galleryItems"] as? [[String: Any]] ?? []
        #expect(Set(shown.compactMap { $0["id"] as? String }) == ["clip-1", "photo-1"], "\(shown)")
        let photo = try #require(shown.first { $0["kind"] as? String == "photo" })
        #expect(photo["thumbnail"] as? [Int] == [320, 240], "\(photo)")
        #expect(photo["download"] as? String == "/media/photo-1?download=1")
        let clip = try #require(shown.first { $0["kind"] as? String == "clip" })
        #expect(clip["video"] as? Bool == true)
        let errors = result["consoleErrors"] as? [String] ?? []
        #expect(!errors.contains { $0.contains("Content Security Policy") }, "\(errors)")
        let widths = result["galleryPhoneWidths"] as? [Double] ?? []
        #expect(widths.count == 2 && widths[0] <= 390 && widths[1] <= 390 && widths[1] > 300, "\(widths)")

        let items = try galleryItems(base)
        let listed = try #require(items["clip-1"])
        let name = try #require(listed["name"] as? String)
        let path = dir + "/out/" + name
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(listed["bytes"] as? Int == file.count)
        #expect(listed["playable"] as? Bool == true && listed["type"] as? String == "video/mp4")
        let part = try curl(base + "media/clip-1", extra: ["-H", "Range: bytes=1000-1999"])
        #expect(part.status == 206 && part.body == file.subdata(in: 1000..<2000), "\(part.headers)")
        #expect(part.headers["content-range"] == "bytes 1000-1999/\(file.count)")
        let photoFile = try Data(contentsOf: URL(fileURLWithPath: dir + "/photos/" + (items["photo-1"]?["name"] as? String ?? "")))
        let photoDownload = try curl(base + "media/photo-1")
        #expect(photoDownload.status == 200 && photoDownload.body == photoFile && photoDownload.headers["content-type"] == "image/jpeg")

        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("gallery"), "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        try #require(summary.clips.count == 1, "\(summary.clips)")
        #expect((summary.clips[0].path as NSString).lastPathComponent == name)
        #expect(listed["frames"] as? Int == summary.clips[0].frames)
        #expect(abs((listed["seconds"] as? Double ?? 0) - summary.clips[0].durationSeconds) < 0.05,
                "\(listed["seconds"] ?? "none") against \(summary.clips[0].durationSeconds)")
    }

    /// ProRes in MOV through the storage pool: a seam (`POST /ratio`) finishes the first clip,
    /// which the gallery then lists as download-only (`playable` false, `video/quicktime`) with
    /// a JPEG thumbnail of its first frame; a symlink planted in the output directory in place
    /// of it (pointing at /etc/passwd) is refused with 403 and none of /etc/passwd's bytes;
    /// paths are 404; without the token, 401.
    @Test func aProResClipIsDownloadOnlyAndAPlantedSymlinkIsRefused() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (rec, base, _) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "prores:proxy", "--container", "mov",
                                                    "--json", "--out", dir + "/out"] + untilSIGINT)
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        #expect(waitUntil(every: 0.05) { (previewStatus(base)?["frames"] as? Int ?? 0) >= 15 })
        let seam = try curl(base + "ratio?to=9x16", post: true, seconds: 30)
        #expect(seam.status == 200, "\(seam.text)")
        // The status's `gallery` count says when the clip is listed (pushed to the page on /events).
        #expect(waitUntil(60, every: 0.05) { (previewStatus(base)?["gallery"] as? Int ?? 0) >= 1 }, "the clip never joined the gallery")
        let listed = try #require(try galleryItems(base)["clip-1"])
        #expect(listed["playable"] as? Bool == false && listed["type"] as? String == "video/quicktime")
        #expect(listed["codec"] as? String == "prores" && listed["ratio"] as? String == "16x9")
        let thumbnail = try curl(base + "gallery/clip-1.jpg")
        #expect(thumbnail.status == 200 && thumbnail.headers["content-type"] == "image/jpeg")
        let thumbFile = dir + "/thumb.jpg"
        try thumbnail.body.write(to: URL(fileURLWithPath: thumbFile))
        let probed = try #require(ffprobe(thumbFile))
        #expect(probed.codec == "mjpeg" && probed.width == 320 && probed.height == 180, "\(probed)")

        let path = dir + "/out/" + (listed["name"] as? String ?? "")
        #expect(try curl(base + "media/clip-1", extra: ["-H", "Range: bytes=0-99"]).status == 206)
        // Swapped in one rename (a deletion would take the clip off the list): still listed, refused.
        #expect(symlink("/etc/passwd", path + ".planted") == 0 && rename(path + ".planted", path) == 0)
        let planted = try curl(base + "media/clip-1")
        #expect(planted.status == 403 && !planted.text.contains("root:"), "\(planted.status) \(planted.text)")
        for target in ["media/../../etc/passwd", "media/%2e%2e/%2e%2e/etc/passwd", "media/..%2f..%2fetc%2fpasswd", "media/clip-7"] {
            let r = try curl(base + target, extra: ["--path-as-is"])
            #expect(r.status == 404 && !r.text.contains("root:"), "\(target): \(r.status)")
        }
        for target in ["gallery", "gallery/clip-1.jpg", "media/clip-1"] {
            #expect(try curl(base + target, authorized: false).status == 401, "\(target)")
        }
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.clips.first?.storage == "pool", "the clip was moved from its pool slot to its name (IN_MOVED_TO)")
        #expect(summary.clips.first.map { ($0.path as NSString).lastPathComponent } == listed["name"] as? String)
    }

    /// Loop recording (`--segment-duration 1 --keep 1s`): a clip the loop budget deletes leaves
    /// the gallery. The first clip is listed; once its file is gone from the directory, it
    /// leaves the list (within 10 s: the inotify event), its download answers 404, and the
    /// status's `gallery` counts more changes than items listed (an item was removed).
    @Test func aClipTheLoopBudgetDeletesLeavesTheGallery() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let out = dir + "/out"
        let (rec, base, _) = try recordWithPreview(["--source", "synthetic:1280", "--codec", "prores:proxy", "--plain",
                                                    "--segment-duration", "1", "--keep", "1s", "--name", "loop",
                                                    "--json", "--out", out] + untilSIGINT)
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        var first: String? = nil
        #expect(waitUntil(60, every: 0.05) {
            first = (try? galleryItems(base))?["clip-1"]?["name"] as? String
            return first != nil
        }, "the first clip was never listed")
        let name = try #require(first)
        #expect(waitUntil(60, every: 0.05) { !FileManager.default.fileExists(atPath: out + "/" + name) }, "\(name) was never deleted")
        #expect(waitUntil(10, every: 0.05) { (try? galleryItems(base))?["clip-1"] == nil }, "\(name) stayed listed after its deletion")
        #expect(try curl(base + "media/clip-1").status == 404)
        let listed = try galleryItems(base).count
        #expect((previewStatus(base)?["gallery"] as? Int ?? 0) > listed, "the status's gallery changes against \(listed) listed")
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.loopDeletions.contains { ($0.path as NSString).lastPathComponent == name }, "\(summary.loopDeletions)")
    }
}
