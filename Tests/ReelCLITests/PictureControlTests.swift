import Foundation
import ReelCore
import ReelWriter
import Testing


/// The newest frame the recording behind `socket` has captured (its status's `frame`).
func newestFrame(_ socket: String) -> Int? {
    guard let r = try? reel(["control", "--socket", socket, "status"]), r.status == 0,
          let s = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: Any] else { return nil }
    return s["frame"] as? Int
}

/// Waits (at most 60 s) until the recording behind `socket` has captured frame `index`;
/// returns the newest frame then (nil: it never did).
@discardableResult
func waitForFrame(_ socket: String, atLeast index: Int) -> Int? {
    for _ in 0..<300 {
        if let n = newestFrame(socket), n >= index { return n }
        usleep(200_000)
    }
    return nil
}

/// Waits (at most 60 s) until the recording behind `socket` has captured `count` frames after
/// the newest one now — call it once a request has been answered, so that the frames counted
/// come after the change however long the request took on a loaded machine; returns the
/// newest frame then (nil: it never did).
@discardableResult
func waitForFramesAfterNow(_ socket: String, _ count: Int) -> Int? {
    guard let now = waitForFrame(socket, atLeast: 0) else { return nil }
    return waitForFrame(socket, atLeast: now + count)
}

/// Waits (at most 20 s) until `reel control status` answers on `socket`.
func waitUntilListening(_ socket: String) throws -> Bool {
    for _ in 0..<100 {
        if try reel(["control", "--socket", socket, "status"]).status == 0 { return true }
        usleep(200_000)
    }
    return false
}

/// One decoded 8-bit 4:2:0 frame (ffmpeg's, an independent decoder): planes as arrays.
struct DecodedYUV {
    let width: Int, height: Int
    let y: [UInt8], u: [UInt8], v: [UInt8]

    /// Mean luma of the rectangle.
    func meanLuma(x: Int, y top: Int, width w: Int, height h: Int) -> Double {
        var sum = 0
        for r in top..<(top + h) { for c in x..<(x + w) { sum += Int(y[r * width + c]) } }
        return Double(sum) / Double(w * h)
    }

    /// The largest |U−128| + |V−128| of the frame: 0 for a black-and-white picture.
    var largestChroma: Int {
        zip(u, v).map { abs(Int($0) - 128) + abs(Int($1) - 128) }.max() ?? 0
    }

    /// The barcode read from the luma plane as it is.
    var barcodeAsIs: Int? {
        y.withUnsafeBytes { FrameBarcode.read(LumaPlane(base: $0.baseAddress!, stride: width, width: width, height: height, depth: 8)) }
    }

    /// The barcode read from the luma plane shrunk `factor` times about its centre: the
    /// barcode of a picture zoomed `factor` times comes back at its own size.
    func barcode(shrunkBy factor: Int) -> Int? {
        let w = width / factor, h = height / factor
        let ox = width / 2 - factor * (w / 2), oy = height / 2 - factor * (h / 2)
        var small = [UInt8](repeating: 0, count: w * h)
        for r in 0..<h { for c in 0..<w { small[r * w + c] = y[(oy + r * factor) * width + ox + c * factor] } }
        return small.withUnsafeBytes { FrameBarcode.read(LumaPlane(base: $0.baseAddress!, stride: w, width: w, height: h, depth: 8)) }
    }
}

/// Decodes every frame of `path` with ffmpeg to 8-bit 4:2:0 and hands each to `body`, in
/// presentation order (one at a time: a clip of raw frames is hundreds of megabytes); returns
/// how many there were.
@discardableResult
func forEachDecodedYUV(_ path: String, width: Int, height: Int, _ body: (DecodedYUV) throws -> Void) throws -> Int {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try #require(installedTool("ffmpeg")))
    // passthrough: one output frame per decoded frame (no duplicates filling the gaps drops leave).
    p.arguments = ["-v", "error", "-i", path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let ySize = width * height, cSize = (width / 2) * (height / 2)
    let frameSize = ySize + 2 * cSize
    var count = 0
    var pending = Data()
    while let chunk = try out.fileHandleForReading.read(upToCount: 1 << 20), !chunk.isEmpty {
        pending.append(chunk)
        while pending.count >= frameSize {
            let f = [UInt8](pending.prefix(frameSize))
            pending = Data(pending.dropFirst(frameSize))
            try body(DecodedYUV(width: width, height: height, y: Array(f[0..<ySize]),
                                u: Array(f[ySize..<(ySize + cSize)]), v: Array(f[(ySize + cSize)...])))
            count += 1
        }
    }
    p.waitUntilExit()
    #expect(p.terminationStatus == 0 && pending.isEmpty, "ffmpeg could not decode \(path)")
    return count
}

struct PictureChangeJSON: Decodable { var control: String; var value: Double; var title: String?; var frameIndex: Int? }
struct PictureClipJSON: Decodable { var path: String; var width: Int; var height: Int; var firstFrameIndex: Int; var frames: Int }
struct PictureSummaryJSON: Decodable {
    var controlChanges: [PictureChangeJSON]
    var clips: [PictureClipJSON]
    var markers: [MarkerJSON]
    var stopReason: String
}

/// Checks every decoded frame of `clip` (1280x720, lossless: FFV1) of the synthetic sensor
/// against the picture changes the summary stated: before `zoomAt` the barcode at its own
/// size, from it on twice as large (read after shrinking the picture by 2 about its centre);
/// with `exposureAt`, the dark panel below the barcode under luma 52 before it and over 52
/// from it on (one stop brighter); before `effectAt` the LEDs' colour, from it on no chroma
/// (grayscale). The clip holds frames before the zoom and 5 after the effect.
func expectPictureChanges(_ clip: PictureClipJSON, zoomAt: Int, exposureAt: Int?, effectAt: Int) throws {
    let indices = try frameIndices(of: clip)
    try #require(indices.count == clip.frames)
    #expect(indices.contains { $0 < zoomAt } && indices.contains { $0 >= effectAt + 5 })
    var position = 0
    let decoded = try forEachDecodedYUV(clip.path, width: 1280, height: 720) { f in
        guard position < indices.count else { return }
        let index = indices[position]
        position += 1
        if index < zoomAt {
            #expect(f.barcodeAsIs == index, "frame \(index), before the zoom at \(zoomAt), does not show its barcode at 1×")
        } else {
            #expect(f.barcode(shrunkBy: 2) == index, "frame \(index), from the zoom at \(zoomAt) on, does not show its barcode at 2×")
        }
        if let exposureAt, index >= zoomAt {
            // The dark panel below the barcode, clear of the digits and LEDs at 2×.
            let panel = f.meanLuma(x: 260, y: 520, width: 100, height: 160)
            if index < exposureAt {
                #expect(panel < 52, "frame \(index), before the exposure change at \(exposureAt): panel luma \(panel)")
            } else {
                #expect(panel > 52, "frame \(index), from the exposure change at \(exposureAt) on: panel luma \(panel)")
            }
        }
        if index < effectAt {
            #expect(f.largestChroma >= 12, "frame \(index), before grayscale at \(effectAt): the LEDs have no colour")
        } else {
            #expect(f.largestChroma <= 4, "frame \(index), from grayscale at \(effectAt) on: chroma \(f.largestChroma)")
        }
    }
    #expect(decoded == indices.count)
}

/// The capture indices of a synthetic recording's clip, one per decoded frame: its first
/// frame's index plus the frame's time on the clip's timeline in frames (30 fps; gaps are
/// drops), read with `reel probe --frames`.
func frameIndices(of clip: PictureClipJSON) throws -> [Int] {
    let probe = try probeFrames(clip.path)
    return try #require(probe.framePTS).map { clip.firstFrameIndex + Int(($0 * 30).rounded()) }
}

/// Zoom, exposure and the effect change the picture itself, each from the frame the summary
/// states, with real processes: `reel record` with a control socket and a preview, `reel
/// control`, and the clip decoded by ffmpeg.
@Suite struct PictureControlTests {
    /// `reel control zoom 2`, then `exposure 1`, then `effect grayscale` during a recording:
    /// frames before the zoom's stated frame carry the barcode at its own size, frames from it
    /// on carry it twice as large (read back after shrinking the picture by 2 about its
    /// centre), at the same track size (no seam, one clip); from the exposure's frame on the
    /// panel is brighter by 24 (one stop), and from the effect's frame on chroma is neutral
    /// where the LEDs were coloured. The page's `/status` shows zoom 2, exposure 1, grayscale.
    @Test func zoomExposureAndEffectChangeThePictureFromTheStatedFrame() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let socket = dir + "/control.sock"
        let port = try freePort()
        // Until SIGINT (an hour at most): every check below runs while it records, however loaded the machine.
        // FFV1 (lossless): the decoded pixels are the ones Reel made (a lossy P-frame may keep
        // a block's old colour), so chroma and brightness are checked exactly.
        let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--duration", "3600", "--codec", "ffv1", "--container", "mkv",
                              "--source", "synthetic:1280", "--control-socket", socket, "--preview", "127.0.0.1:\(port)"])
        var stopped = false
        defer { if !stopped { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(try waitUntilListening(socket))
        try #require(waitForFrame(socket, atLeast: 10) != nil, "the recording never captured 10 frames")
        for request in [["zoom", "2"], ["exposure", "1"], ["effect", "grayscale"]] {
            let r = try reel(["control", "--socket", socket] + request)
            #expect(r.status == 0 && r.stdout.contains("\"ok\":true"), "\(request): \(r.stdout) \(r.stderr)")
            try #require(waitForFramesAfterNow(socket, 15) != nil, "the recording stalled after \(request)")
        }
        let page = try #require(previewStatus(previewBase(port), seconds: 5))
        #expect(page["zoom"] as? Double == 2 && page["exposure"] as? Double == 1 && page["effect"] as? String == "grayscale", "\(page)")
        let status = try reel(["control", "--socket", socket, "status"])
        #expect(status.stdout.contains("\"identifier\":\"effect\"") && status.stdout.contains("\"title\":\"grayscale\""), "\(status.stdout)")
        rec.signal(SIGINT)
        let run = rec.wait()
        stopped = true
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PictureSummaryJSON.self)
        try #require(summary.controlChanges.map(\.control) == ["zoom", "exposure", "effect"])
        #expect(summary.controlChanges.map(\.value) == [2, 1, 1] && summary.controlChanges.last?.title == "grayscale")
        let zoomAt = try #require(summary.controlChanges[0].frameIndex)
        let exposureAt = try #require(summary.controlChanges[1].frameIndex)
        let effectAt = try #require(summary.controlChanges[2].frameIndex)
        #expect(zoomAt < exposureAt && exposureAt < effectAt)
        #expect(summary.clips.count == 1, "a zoom is no seam: one clip")
        let clip = try #require(summary.clips.first)
        #expect(clip.width == 1280 && clip.height == 720)

        try expectPictureChanges(clip, zoomAt: zoomAt, exposureAt: exposureAt, effectAt: effectAt)
    }

    /// `reel preview` has no picture controls: `/status` has `zoom`, `exposure` and `effect`
    /// as `null`.
    @Test func thePreviewAloneHasNoPictureControls() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let port = try freePort()
        let run = try launch(["preview", "--preview", "127.0.0.1:\(port)", "--source", "synthetic:1280"], in: dir)
        var status: [String: Any]? = nil
        for _ in 0..<200 where status == nil {
            status = previewStatus(previewBase(port), seconds: 5)
            if status == nil { usleep(100_000) }
        }
        run.signal(SIGINT)
        #expect(run.wait().status == 0)
        let s = try #require(status, "the preview never answered")
        #expect(s["recording"] as? Bool == false)
        #expect(s["zoom"] is NSNull && s["exposure"] is NSNull && s["effect"] is NSNull, "\(s)")
    }

    /// `reel control effect` takes a title or an index; an unknown effect is refused (65) with
    /// the titles, and the recording goes on.
    @Test func theEffectPickerTakesTitlesAndRefusesOthers() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let socket = dir + "/control.sock"
        let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--duration", "3600", "--codec", "h264", "--source", "synthetic:1280",
                              "--control-socket", socket])
        #expect(try waitUntilListening(socket))
        let bad = try reel(["control", "--socket", socket, "effect", "vivid"])
        #expect(bad.status == 65 && bad.stdout.contains("is not one of none, grayscale, sepia, cool, warm"), "\(bad.stdout)")
        let byIndex = try reel(["control", "--socket", socket, "effect", "1", "effect", "none"])
        #expect(byIndex.status == 0 && byIndex.stdout.contains("\"title\":\"grayscale\"") && byIndex.stdout.contains("\"title\":\"none\""), "\(byIndex.stdout)")
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PictureSummaryJSON.self)
        #expect(summary.controlChanges.map { $0.title ?? "" } == ["grayscale", "none"])
    }
}
