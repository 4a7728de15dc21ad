import Foundation
import ReelCore
import Testing

/// `reel photo --json` as the tests read it.
struct PhotoRun: Decodable {
    struct Shot: Decodable {
        let path: String, format: String, width: Int, height: Int, bytes: Int
        let frameIndex: Int, pressedFrameIndex: Int, pressTime: Double, frameTime: Double
        let lagFrames: Int, lagMs: Double, quality: String, requestedQuality: String, buffered: Bool
        let exifOrientation: Int
    }
    let photos: [Shot]
    let presses: Int, delivered: Int, refused: Int, failed: Int
    let format: String, quality: String, prioritization: Bool, shutter: String, ring: Int, ratio: String
    let deferredStart: Bool
    let framesDropped: Int
    let error: String?
}

let havePhotoTools = installedTool("ffmpeg") != nil && installedTool("exiftool") != nil
    && installedTool("heif-convert") != nil && installedTool("heif-info") != nil

/// The frame-index barcode of a photo, decoded by independent decoders: ffmpeg for JPEG and
/// PNG, libheif's heif-convert (to PNG, then ffmpeg) for HEIC. Also its size.
func photoBarcode(_ path: String) throws -> (index: Int?, width: Int, height: Int) {
    var source = path
    let dir = temporaryDirectory("reel-photo-decode")
    defer { removeTree(dir) }
    if path.hasSuffix(".heic") {
        source = dir + "/decoded.png"
        let r = try runTool("heif-convert", [path, source])
        try #require(r.status == 0, "heif-convert could not decode \(path)")
    }
    let info = try #require(ffprobe(source), "ffprobe cannot open \(source)")
    let gray = try runTool("ffmpeg", ["-v", "error", "-i", source, "-f", "rawvideo", "-pix_fmt", "gray", "-"]).stdout
    try #require(gray.count == info.width * info.height)
    let index = gray.withUnsafeBytes { raw in
        FrameBarcode.read(LumaPlane(base: raw.baseAddress!, stride: info.width, width: info.width, height: info.height, depth: 8))
    }
    return (index, info.width, info.height)
}

/// exiftool's reading of a photo's tags (`-j -n`: numbers as numbers).
func exifTags(_ path: String) throws -> [String: Any] {
    let r = try runTool("exiftool", ["-j", "-n", "-a", path])
    try #require(r.status == 0)
    let list = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
    return try #require(list.first)
}

@Suite("PhotoTests", .enabled(if: havePhotoTools, "needs ffmpeg, exiftool (libimage-exiftool-perl) and heif-convert/heif-info (libheif-examples)"))
struct PhotoTests {
    @Test(arguments: ["jpeg", "heic", "png"])
    func photosShowThePressedFrameAndCarryTheirExif(format: String) throws {
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let run = try reel(["photo", "--count", "3", "--interval", "0.25", "--format", format, "--out", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRun.self)
        #expect(summary.presses == 3 && summary.delivered == 3 && summary.refused == 0 && summary.failed == 0)
        #expect(summary.photos.count == 3)
        #expect(Set(summary.photos.map(\.frameIndex)).count == 3, "each press its own frame")
        for shot in summary.photos {
            #expect(shot.format == format)
            #expect(shot.path.hasSuffix(format == "jpeg" ? ".jpg" : "." + format))
            #expect(FileManager.default.fileExists(atPath: shot.path))
            let attributes = try FileManager.default.attributesOfItem(atPath: shot.path)
            #expect((attributes[.size] as? NSNumber)?.intValue == shot.bytes)
            // Zero shutter lag: the photo is the frame nearest the press — unless the sensor
            // dropped that frame (a loaded machine), then the nearest one it delivered.
            if summary.framesDropped == 0 {
                #expect(shot.lagFrames == 0 && shot.frameIndex == shot.pressedFrameIndex)
                #expect(abs(shot.frameTime - shot.pressTime) <= 1.0 / 30 / 2 + 1e-6)
            } else {
                #expect(abs(shot.lagFrames) <= summary.framesDropped)
            }
            let decoded = try photoBarcode(shot.path)
            #expect(decoded.index == shot.frameIndex, "\(shot.path): barcode \(String(describing: decoded.index)), reported \(shot.frameIndex)")
            #expect(decoded.width == 4032 && decoded.height == 3024)
            #expect(shot.width == 4032 && shot.height == 3024)
            // Every EXIF field written, as exiftool reads it.
            let tags = try exifTags(shot.path)
            #expect(tags["Make"] as? String == "Reel")
            #expect(tags["Model"] as? String == "Synthetic 4032x4032 sensor")
            #expect((tags["Orientation"] as? NSNumber)?.intValue == 1)
            #expect((tags["ExifImageWidth"] as? NSNumber)?.intValue == 4032)
            #expect((tags["ExifImageHeight"] as? NSNumber)?.intValue == 3024)
            let date = try #require(tags["DateTimeOriginal"] as? String)
            #expect(date.range(of: #"^\d{4}:\d\d:\d\d \d\d:\d\d:\d\d$"#, options: .regularExpression) != nil)
            #expect(tags["SubSecTimeOriginal"] != nil)
            let comment = try #require(tags["UserComment"] as? String)
            #expect(comment.hasPrefix("reel frame=\(shot.frameIndex) sessionTime="))
            #expect(comment.contains(String(format: "sessionTime=%.6f", shot.frameTime)))
            let id = try #require(tags["ImageUniqueID"] as? String)
            #expect(id.count == 32 && id.hasPrefix(String(format: "%08X", shot.frameIndex)))
            #expect(id.dropFirst(8).prefix(16) == Substring(String(format: "%016llX", UInt64((shot.frameTime * 1e6).rounded()))))
            #expect(tags["Warning"] == nil, "exiftool warns: \(String(describing: tags["Warning"]))")
            if format == "heic" {
                let info = try runTool("heif-info", [shot.path])
                #expect(info.status == 0)
                #expect(String(decoding: info.stdout, as: UTF8.self).contains("4032x3024"))
            }
        }
        // Nothing half-written is left behind.
        let names = try FileManager.default.contentsOfDirectory(atPath: out)
        #expect(names.allSatisfy { !$0.hasPrefix(".") }, "\(names)")
    }

    @Test func portraitRatioGivesA3x4Photo() throws {
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let run = try reel(["photo", "--ratio", "3x4", "--format", "jpeg", "--out", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let shot = try #require(try run.decode(PhotoRun.self).photos.first)
        let decoded = try photoBarcode(shot.path)
        #expect(decoded.width == 3024 && decoded.height == 4032)
        #expect(decoded.index == shot.frameIndex)
    }

    @Test(arguments: [
        (["--ratio", "16x9"], "ratio 16x9 is not supported by the 4032x4032 photo format (supported: 4x3, 3x4)"),
        (["--ratio", "1x1"], "ratio 1x1 is not supported by the 4032x4032 photo format"),
        (["--format", "gif"], "--format: unknown photo format 'gif'"),
        (["--quality", "best"], "--quality: unknown level 'best'"),
        (["--count", "0"], "--count: 0 is out of range"),
        (["--ring", "31"], "--ring: 31 is out of range"),
        (["--shutter", "late"], "--shutter: unknown shutter 'late'"),
    ])
    func badPhotoOptionsAreUsageErrors(args: [String], message: String) throws {
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let run = try reel(["photo", "--out", out] + args)
        #expect(run.status == 64)
        #expect(run.stderr.hasPrefix("reel: ") && run.stderr.contains(message), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).isEmpty)
    }

    @Test func anUnwritableDirectoryExits73() throws {
        let run = try reel(["photo", "--out", "/proc/reel-photos"])
        #expect(run.status == 73)
        #expect(run.stderr.hasPrefix("reel: photo: cannot create or write"))
    }

    /// Responsive capture: the first press comes with the first frame, before the deferred
    /// output has prepared its encoders; it is buffered with its frame and delivered.
    @Test func aPressBeforeTheOutputIsReadyIsBufferedAndDelivered() throws {
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let run = try reel(["photo", "--format", "heic", "--out", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRun.self)
        #expect(summary.deferredStart)
        let shot = try #require(summary.photos.first)
        #expect(shot.buffered, "the press came before the HEIC encoder was ready")
        #expect(shot.lagFrames == 0 || summary.framesDropped > 0, "the first frames, or the nearest kept after drops")
        #expect(try photoBarcode(shot.path).index == shot.frameIndex)

        let eager = try reel(["photo", "--format", "jpeg", "--eager", "--out", out, "--json"])
        #expect(eager.status == 0)
        let e = try eager.decode(PhotoRun.self)
        #expect(!e.deferredStart && e.photos.count == 1 && e.photos[0].buffered == false)
    }

    /// The naive shutter takes the next frame delivered after the press, never an earlier one.
    @Test func theNextFrameShutterNeverTakesAnEarlierFrame() throws {
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let run = try reel(["photo", "--shutter", "next-frame", "--count", "3", "--interval", "0.2", "--format", "jpeg", "--out", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRun.self)
        #expect(summary.shutter == "next-frame" && summary.photos.count == 3)
        for shot in summary.photos {
            #expect(shot.frameTime >= shot.pressTime - 1.0 / 30)
            #expect(try photoBarcode(shot.path).index == shot.frameIndex)
        }
    }
}

@Suite("RealtimePhotoTests", .serialized, .enabled(if: havePhotoTools, "needs ffmpeg and exiftool"))
struct RealtimePhotoTests {
    /// Fast-capture prioritisation: presses every 10 ms ask for `quality`; those that find a
    /// `quality` photo still waiting get `balanced`, and every press yields its frame. (Every
    /// 40 ms, as before, was about one `quality` encode here — 30–58 ms — so whether the second
    /// press found the first still waiting was a race: CI once saw none lowered.)
    @Test func burstPressesAreLoweredToBalancedAndNoneIsLost() throws {
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let on = try reel(["photo", "--count", "6", "--interval", "0.01", "--quality", "quality", "--format", "jpeg", "--out", out, "--json"])
        #expect(on.status == 0, "\(on.stderr)")
        let s = try on.decode(PhotoRun.self)
        #expect(s.delivered == 6 && s.photos.count == 6)
        #expect(s.photos[0].quality == "quality")
        #expect(s.photos.dropFirst().contains { $0.quality == "balanced" })
        #expect(s.photos.allSatisfy { $0.requestedQuality == "quality" && ($0.lagFrames == 0 || s.framesDropped > 0) })
        for shot in s.photos { #expect(try photoBarcode(shot.path).index == shot.frameIndex) }

        let off = try reel(["photo", "--count", "6", "--interval", "0.04", "--quality", "quality", "--no-prioritization", "--format", "jpeg", "--out", out, "--json"])
        #expect(off.status == 0, "\(off.stderr)")
        let o = try off.decode(PhotoRun.self)
        #expect(!o.prioritization && o.photos.count == 6 && o.photos.allSatisfy { $0.quality == "quality" })
    }

    /// Responsive capture off: presses that find the output initialising or encoding are
    /// refused (blocked) instead of buffered; on, the same presses all yield photos.
    @Test func withoutResponsiveCapturePressesAreBlocked() throws {
        struct Counts: Decodable { let delivered: Int; let blocked: Int; let responsive: Bool }
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let off = try reel(["photo", "--no-responsive", "--count", "4", "--interval", "0.03", "--format", "heic", "--out", out, "--json"])
        #expect(off.status == 0, "\(off.stderr)")
        let o = try off.decode(Counts.self)
        #expect(!o.responsive && o.blocked >= 1 && o.delivered + o.blocked == 4, "\(o)")
        let on = try reel(["photo", "--count", "4", "--interval", "0.03", "--format", "heic", "--out", out, "--json"])
        let r = try on.decode(Counts.self)
        #expect(r.responsive && r.blocked == 0 && r.delivered == 4)
    }
}

@Suite("PhotoNoiseTests", .enabled(if: havePhotoTools, "needs ffmpeg and exiftool"))
struct PhotoNoiseTests {
    /// Multi-frame noise reduction: a `quality` photo of a noisy sensor merges the ring's
    /// frames and is measurably closer to the clean pattern than one noisy frame; its barcode
    /// still reads the pressed frame.
    @Test func qualityMergesTheRingAndRaisesPSNR() throws {
        struct Noisy: Decodable {
            struct Shot: Decodable { let path: String; let frameIndex: Int; let mergedFrames: Int; let psnrProxy: Double?; let psnrFinal: Double?; let quality: String; let deferred: Bool; let finalMs: Double? }
            let photos: [Shot]
            let sensorNoise: Double?
        }
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        // The second press: the first comes with the first frame, when the ring holds one.
        let run = try reel(["photo", "--sensor-noise", "8", "--quality", "quality", "--no-prioritization", "--ring", "5",
                            "--count", "2", "--interval", "0.4", "--format", "jpeg", "--out", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(Noisy.self)
        #expect(s.sensorNoise == 8)
        #expect(s.photos.first?.mergedFrames == 1)
        let shot = try #require(s.photos.last)
        #expect(shot.quality == "quality" && shot.mergedFrames >= 3)
        let proxy = try #require(shot.psnrProxy), final = try #require(shot.psnrFinal)
        // σ 8: one frame ≈ 30 dB; merging k frames gains up to 10·log10(k) dB.
        #expect(proxy > 28 && proxy < 32)
        #expect(final > proxy + 2, "proxy \(proxy) dB, final \(final) dB")
        #expect(try photoBarcode(shot.path).index == shot.frameIndex)
        // Deferred processing (the default): a proxy first, the final in its place before exit.
        #expect(shot.deferred && shot.finalMs != nil)
        #expect((try exifTags(shot.path)["UserComment"] as? String)?.hasSuffix("quality=quality") == true)
        #expect(DisruptivePhotoTests.pendingJobs(out).isEmpty)

        let now = try reel(["photo", "--sensor-noise", "8", "--quality", "quality", "--no-prioritization", "--no-deferred", "--ring", "5",
                            "--count", "2", "--interval", "0.4", "--format", "jpeg", "--out", out, "--json"])
        let n = try #require(try now.decode(Noisy.self).photos.last)
        #expect(!n.deferred && n.mergedFrames >= 3 && (n.psnrFinal ?? 0) > (n.psnrProxy ?? 99) + 2)

        let balanced = try reel(["photo", "--sensor-noise", "8", "--quality", "balanced", "--format", "jpeg", "--out", out, "--json"])
        let b = try #require(try balanced.decode(Noisy.self).photos.first)
        #expect(b.mergedFrames == 1 && b.psnrFinal == nil && b.psnrProxy != nil)
    }

    @Test func aNoiseLevelOutOfRangeIsAUsageError() throws {
        let run = try reel(["photo", "--sensor-noise", "80"])
        #expect(run.status == 64 && run.stderr.hasPrefix("reel: --sensor-noise: '80' is not a noise level"))
    }
}

/// A gray picture turned as EXIF `orientation` tells a viewer (1, 3, 6 or 8).
func upright(_ gray: [UInt8], width: Int, height: Int, orientation: Int) -> (pixels: [UInt8], width: Int, height: Int) {
    switch orientation {
    case 3: return (gray.reversed(), width, height)
    case 6: // rotate 90° clockwise: new (x, y) = old (y, h-1-x)
        var out = [UInt8](repeating: 0, count: gray.count)
        for y in 0..<width { for x in 0..<height { out[y * height + x] = gray[(height - 1 - x) * width + y] } }
        return (out, height, width)
    case 8:
        var out = [UInt8](repeating: 0, count: gray.count)
        for y in 0..<width { for x in 0..<height { out[y * height + x] = gray[x * width + (width - 1 - y)] } }
        return (out, height, width)
    default: return (gray, width, height)
    }
}

@Suite("PhotoOrientationTests", .enabled(if: havePhotoTools, "needs ffmpeg, exiftool and heif-convert"))
struct PhotoOrientationTests {
    /// The barcode of a photo after a viewer applies its EXIF Orientation, and the stored size.
    func viewed(_ path: String) throws -> (index: Int?, stored: (Int, Int), orientation: Int) {
        var source = path
        let dir = temporaryDirectory("reel-photo-decode")
        defer { removeTree(dir) }
        if path.hasSuffix(".heic") {
            source = dir + "/decoded.png"
            // heif-convert applies no EXIF rotation (HEIC rotation is an irot box, which Reel does not write).
            #expect(try runTool("heif-convert", [path, source]).status == 0)
        }
        let info = try #require(ffprobe(source))
        let gray = [UInt8](try runTool("ffmpeg", ["-v", "error", "-noautorotate", "-i", source, "-f", "rawvideo", "-pix_fmt", "gray", "-"]).stdout)
        try #require(gray.count == info.width * info.height)
        let orientation = (try exifTags(path)["Orientation"] as? NSNumber)?.intValue ?? 1
        let shown = upright(gray, width: info.width, height: info.height, orientation: orientation)
        let index = shown.pixels.withUnsafeBytes { raw in
            FrameBarcode.read(LumaPlane(base: raw.baseAddress!, stride: shown.width, width: shown.width, height: shown.height, depth: 8))
        }
        return (index, (info.width, info.height), orientation)
    }

    @Test(arguments: [
        // format, mounting, compensation → stored size, EXIF orientation
        ("jpeg", "portrait", true, 4032, 3024, 1),
        ("jpeg", "portrait", false, 3024, 4032, 6),
        ("heic", "portrait", true, 4032, 3024, 1),
        ("jpeg", "landscapeLeft", false, 4032, 3024, 3),
        ("png", "portrait", true, 3024, 4032, 6),   // the uncompressed still is never turned
    ])
    func mountedSensorsArePhotographedUprightOrTaggedForTheViewer(format: String, mount: String, compensation: Bool,
                                                                   width: Int, height: Int, orientation: Int) throws {
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let run = try reel(["photo", "--format", format, "--sensor-orientation", mount, "--out", out, "--json"]
                           + (compensation ? [] : ["--no-compensation"]))
        #expect(run.status == 0, "\(run.stderr)")
        let shot = try #require(try run.decode(PhotoRun.self).photos.first)
        #expect(shot.exifOrientation == orientation && shot.width == width && shot.height == height)
        let v = try viewed(shot.path)
        #expect(v.stored == (width, height))
        #expect(v.orientation == orientation)
        #expect(v.index == shot.frameIndex, "viewed upright, the barcode reads the pressed frame")
    }

    @Test func anUnknownOrientationIsAUsageError() throws {
        let run = try reel(["photo", "--sensor-orientation", "sideways"])
        #expect(run.status == 64 && run.stderr.hasPrefix("reel: --sensor-orientation: unknown orientation 'sideways'"))
    }
}

@Suite("DisruptivePhotoTests", .serialized, .enabled(if: havePhotoTools, "needs ffmpeg, exiftool and heif-convert"))
struct DisruptivePhotoTests {
    static func pendingJobs(_ out: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: out + "/.reel-pending")) ?? []).filter { $0.hasSuffix(".job") }
    }

    /// Starts a run whose second photo is deferred and kills it (SIGKILL) once the job is on disk.
    func killedRun(_ out: String, format: String) throws {
        let suffix = format == "jpeg" ? ".jpg" : "." + format
        func shots() -> Set<String> {
            Set(((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).filter { $0.hasSuffix(suffix) && !$0.hasPrefix(".") })
        }
        let before = shots()
        let p = try launch(["photo", "--sensor-noise", "8", "--quality", "quality", "--no-prioritization", "--ring", "5",
                            "--count", "2", "--interval", "0.4", "--format", format, "--out", out, "--json"])
        let start = Date()
        while Self.pendingJobs(out).isEmpty && Date().timeIntervalSince(start) < 120 && p.process.isRunning { usleep(2000) }
        try #require(!Self.pendingJobs(out).isEmpty, "no deferred job appeared")
        p.signal(SIGKILL)
        _ = p.wait()
        #expect(p.process.terminationReason == .uncaughtSignal)
        // What the killed run left under photo names is whole: it decodes and shows its frame.
        let photos = shots().subtracting(before)
        #expect(photos.count == 2)
        for name in photos { #expect(try photoBarcode(out + "/" + name).index != nil, "\(name) is not a whole photo") }
    }

    @Test func aKilledRunsDeferredPhotoIsFinishedByFinishPendingAndAtTheNextStart() throws {
        struct Finished: Decodable {
            struct F: Decodable { let path: String; let frameIndex: Int; let mergedFrames: Int; let psnrProxy: Double; let psnrFinal: Double }
            let finished: [F]; let failed: Int
        }
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        try killedRun(out, format: "heic")
        let job = try #require(Self.pendingJobs(out).first)
        let proxyPath = out + "/" + job.dropLast(4)
        #expect((try exifTags(proxyPath)["UserComment"] as? String)?.hasSuffix("quality=balanced") == true, "the proxy")

        let run = try reel(["photo", "--finish-pending", "--out", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let f = try run.decode(Finished.self)
        #expect(f.failed == 0 && f.finished.count == 1)
        let done = try #require(f.finished.first)
        #expect(done.path == proxyPath && done.mergedFrames >= 3 && done.psnrFinal > done.psnrProxy + 2)
        #expect((try exifTags(proxyPath)["UserComment"] as? String)?.hasSuffix("quality=quality") == true, "the final replaced the proxy")
        #expect(try photoBarcode(proxyPath).index == done.frameIndex)
        #expect(Self.pendingJobs(out).isEmpty)
        // Nothing half-written is left: no partial photo, no partial job.
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? [])
            + ((try? FileManager.default.contentsOfDirectory(atPath: out + "/.reel-pending")) ?? [])
        #expect(leftovers.allSatisfy { !$0.contains(".partial-") }, "\(leftovers)")

        // Killed again (JPEG this time: a deferred job is the same for every format, and a
        // 12 MP JPEG takes a tenth of a HEIC's time); the next `reel photo` finishes it at its start.
        try killedRun(out, format: "jpeg")
        let next = try reel(["photo", "--format", "jpeg", "--out", out, "--json"])
        #expect(next.status == 0, "\(next.stderr)")
        struct Next: Decodable { struct F: Decodable { let path: String }; let pendingFinished: [F] }
        #expect(try next.decode(Next.self).pendingFinished.count == 1)
        #expect(Self.pendingJobs(out).isEmpty)
    }

    @Test func finishPendingWithNothingPendingSaysSo() throws {
        let out = temporaryDirectory("reel-photo")
        defer { removeTree(out) }
        let run = try reel(["photo", "--finish-pending", "--out", out])
        #expect(run.status == 0 && run.stdout.contains("nothing pending in \(out)"))
    }
}

@Suite("PhotoFullDiskTests", .enabled(if: canMountTmpfs && havePhotoTools, "needs to mount tmpfs (root)"))
struct PhotoFullDiskTests {
    /// A full disk while saving: exit 74, one line saying what was kept, and nothing
    /// half-written in the directory.
    @Test func aFullDiskExits74AndLeavesNoPartialPhoto() throws {
        let dir = try #require(mountTmpfs(sizeKiB: 256))
        defer { unmount(dir) }
        let run = try reel(["photo", "--format", "png", "--out", dir, "--json"])
        #expect(run.status == 74, "\(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("reel: photo: saving failed: ") && lines[0].contains("No space left on device")
                && lines[0].contains("no file written for"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
        let summary = try run.decode(PhotoRun.self)
        #expect(summary.delivered == 0 && summary.failed == 1 && summary.error?.contains("No space left") == true)
    }
}
