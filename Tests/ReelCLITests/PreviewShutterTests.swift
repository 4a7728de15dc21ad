import Foundation
import ReelCore
import ReelWriter
import Testing

/// `reel record --json --photos`: the summary's `photos` (each as `reel photo --json` lists it)
/// and the capture events.
private struct PhotoRecordingJSON: Decodable {
    var photos: [PhotoRun.Shot]
    var captureEvents: [EventJSON]
    var framesDropped: Int
    var dropReasons: [String: Int]
}

/// The shutter during a recording, timed against the clock: the page's `POST /shutter`
/// (twice) takes photos of the pressed frames, and not one video frame is dropped.
@Suite("RealtimeShutterTests", .serialized, .enabled(if: haveTools && havePhotoTools, "needs curl, ffmpeg, ffprobe, exiftool and heif-convert"))
struct RealtimeShutterTests {
    /// `reel record --preview --photos DIR` (HEIC, the default) in real time: each `POST
    /// /shutter` answers with its saved photo (path, frameIndex, pressedFrameIndex, lagFrames),
    /// whose barcode, decoded by libheif's heif-convert, is that frame; the summary lists the
    /// same photos; the video has no dropped frame and `reel verify` accepts it.
    @Test func thePagesShutterTakesPhotosDuringARecordingWithoutADroppedFrame() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // Until SIGINT (below).
        let rec = try serve(["record", "--photos", dir + "/photos", "--source", "synthetic:1280", "--codec", "h264",
                             "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        let base = rec.base
        // A second of frames before the first press, 0.7 s (21 frames) between the presses.
        try rec.waitForFrames(30)
        var answers: [[String: Any]] = []
        for _ in 0..<2 {
            let shot = try curl(base + "shutter", post: true)
            #expect(shot.status == 200, "\(shot.text)")
            #expect(shot.headers["content-type"] == "application/json")
            let answer = try #require(shot.object)
            answers.append(answer)
            try rec.waitForFrames((answer["frameIndex"] as? Int ?? 0) + 21)
        }
        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.framesDropped == 0, "drops: \(summary.dropReasons)")
        #expect(summary.photos.count == 2)
        for (answer, shot) in zip(answers, summary.photos) {
            let path = try #require(answer["path"] as? String)
            let frame = try #require(answer["frameIndex"] as? Int)
            let pressed = try #require(answer["pressedFrameIndex"] as? Int)
            #expect(answer["lagFrames"] as? Int == frame - pressed)
            #expect(abs(frame - pressed) <= 1, "zero shutter lag: the frame nearest the press")
            #expect(shot.path == path && shot.frameIndex == frame && shot.pressedFrameIndex == pressed)
            #expect(shot.format == "heic" && shot.width == 1280 && shot.height == 960, "the sensor's 4x3 crop")
            let read = try photoBarcode(path)
            #expect(read.index == frame, "the photo shows the frame it reports")
            #expect(read.width == 1280 && read.height == 960)
        }
        #expect(Set(summary.photos.map(\.frameIndex)).count == 2)
        let verify = try reel(["verify", dir + "/video"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
    }
}

/// `--photos` in the parallel pass (nothing timed against the clock): a photo on a full disk,
/// one with Eager Start, bad `--photos`.
@Suite("RecordPhotoTests", .enabled(if: haveTools && havePhotoTools, "needs curl, ffmpeg, ffprobe, exiftool and heif-convert"))
struct RecordPhotoTests {
    /// A photo that cannot be saved (a full disk): `POST /shutter` answers 409 with the
    /// reason; the recording is kept and the command exits 74 with the error on stderr.
    @Test(.enabled(if: canMountTmpfs, "needs to mount tmpfs (root)"))
    func aPhotoThatCannotBeSavedIs409AndExit74() throws {
        let photos = try #require(mountTmpfs(sizeKiB: 32))   // a 1280x960 PNG of the pattern is ~125 kB
        defer { unmount(photos) }
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let rec = try serve(["record", "--photos", photos, "--photo-format", "png", "--source", "synthetic:1280", "--codec", "h264",
                             "--plain", "--json", "--out", dir] + untilSIGINT)
        let shot = try curl(rec.base + "shutter", post: true, seconds: 60)
        #expect(shot.status == 409)
        #expect(shot.text.contains("No space left on device"))
        let run = rec.stop()
        #expect(run.status == 74, "\(run.stderr)")
        #expect(run.stderr.contains("reel: photo: saving failed: "), "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.photos.isEmpty)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).contains { $0.hasSuffix(".mov") }, "the recording is kept")
        #expect(try FileManager.default.contentsOfDirectory(atPath: photos).isEmpty, "no half-written photo")
    }

    /// `--photos` with `--eager-start`: the photo output is prepared before the first frame,
    /// so a press made as the recording starts is never buffered. (That the session prepares it
    /// eagerly is checked deterministically in PhotoOutputDeferredStartTests.)
    @Test func withEagerStartThePhotoOutputIsReadyAtTheFirstFrame() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/control.sock"
        // Until SIGINT, once the photo is saved (a loaded machine could otherwise end a short
        // recording before the press arrives).
        let rec = try launch(["record", "--eager-start", "--control-socket", path, "--photos", dir + "/photos", "--photo-format", "jpeg",
                              "--source", "synthetic:1280", "--codec", "h264", "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        #expect(waitForFile(path))
        #expect(try reel(["control", "--socket", path, "shutter"]).status == 0)
        #expect(waitUntil(60) { ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/photos")) ?? []).contains { $0.hasSuffix(".jpg") } })
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        let shot = try #require(summary.photos.first)
        #expect(summary.photos.count == 1 && !shot.buffered)
        #expect(try photoBarcode(shot.path).index == shot.frameIndex)
    }

    @Test func photosNeedAWritableDirectory() throws {
        // A V4L2 camera takes photos too (RealtimeV4L2PhotoTests); a missing one is still 66.
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let v4l2 = try reel(["record", "--photos", dir + "/photos", "--source", "v4l2:/dev/video99", "--plain"])
        #expect(v4l2.status == 66)
        #expect(v4l2.stderr == "reel: /dev/video99: no such video device\n", "\(v4l2.stderr)")
        let unwritable = try reel(["record", "--photos", "/proc/reel-photos", "--plain", "--frames", "3"])
        #expect(unwritable.status == 73)
        #expect(unwritable.stderr == "reel: --photos: cannot create or write the photo directory '/proc/reel-photos'\n")
        let format = try reel(["record", "--photos", "photos", "--photo-format", "gif"])
        #expect(format.status == 64 && format.stderr.contains("jpeg, heic or png"))
    }
}

extension RealtimeShutterTests {
    /// The control socket's shutter and a held press, timed against the clock (a press held
    /// 0.3 s): in the real-time pass of `scripts/test`.
    @Test func theControlSocketsShutterTakesAPhotoWithTheTimeOfItsPress() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/control.sock"
        // --burst-rate 0: the held press below must stay one press even when the two `reel
        // control` launches take longer than the 0.5 s burst threshold on a loaded machine.
        let rec = try launch(["record", "--control-socket", path, "--photos", dir + "/photos", "--photo-format", "jpeg", "--burst-rate", "0",
                              "--source", "synthetic:1280", "--codec", "h264", "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        #expect(waitForFile(path))
        // Capture has begun (its first clip is there) and 15 frames more were captured: the
        // photo output, prepared after the first frame, holds frames in its ring (a press before
        // is buffered, which is not checked here).
        #expect(waitForFirstClip(in: dir + "/video"))
        #expect(waitForFramesAfterNow(path, 15) != nil)
        // A cancelled press: no photo. `shutter`: primary began + ended, one photo.
        #expect(try reel(["control", "--socket", path, "event", "began", "primary", "event", "cancelled", "primary"]).status == 0)
        #expect(try reel(["control", "--socket", path, "shutter"]).status == 0)
        // A press held for 0.3 s: the photo is of the frame at its `began` (the ring's oldest
        // frame when it is older than the ring: then lagFrames says how late).
        #expect(try reel(["control", "--socket", path, "event", "began", "primary"]).status == 0)
        usleep(300_000)
        #expect(try reel(["control", "--socket", path, "event", "ended", "primary"]).status == 0)
        // Both photos saved before the recording stops.
        let saved = waitUntil(60) { ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/photos")) ?? []).filter { $0.hasSuffix(".jpg") }.count == 2 }
        #expect(saved, "the two photos were never saved")
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.captureEvents.map { "\($0.action) \($0.phase)" } == [
            "primary began", "primary cancelled", "primary began", "primary ended", "primary began", "primary ended",
        ])
        try #require(summary.photos.count == 2, "one photo per ended press, none for the cancelled one")
        for shot in summary.photos {
            #expect(shot.format == "jpeg" && shot.path.hasSuffix(".jpg"))
            #expect(shot.lagFrames == shot.frameIndex - shot.pressedFrameIndex)
            #expect(try photoBarcode(shot.path).index == shot.frameIndex)
        }
        // The held press: pressed at its `began`, not at its `ended` 0.3 s (9 frames) later.
        // (The logged frames are the newest captured when each event was handled: a loaded
        // machine may log a frame or two behind the clock, hence the margin of 3.)
        let held = summary.photos[1]
        let began = try #require(summary.captureEvents[4].frameIndex), ended = try #require(summary.captureEvents[5].frameIndex)
        #expect(abs(held.pressedFrameIndex - began) <= 3, "pressed at frame \(began), the photo says \(held.pressedFrameIndex)")
        #expect(ended - held.pressedFrameIndex >= 6, "ended at frame \(ended): the press time is the began's")
        #expect(summary.photos[1].lagFrames >= 5, "held 0.3 s: the pressed frame had left the ring of 3")
    }

    /// The page's shutter button clicked in a real browser (Playwright, Debian's chromium):
    /// the page shows the photo's JSON (200), and the photo it names shows the frame it reports;
    /// the status stream brings the photo's thumbnail to the page.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func theShutterButtonInABrowserTakesAPhoto() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-shutter")
        // Until SIGINT (below): a browser starts slowly on a loaded machine.
        let rec = try serve(["record", "--photos", dir + "/photos", "--photo-format", "jpeg", "--source", "synthetic:1280",
                             "--codec", "h264", "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        let (status, text, why) = try runPreviewBrowser(rec.page, shots: shots, click: "shutter")
        rec.process.signal(SIGINT)
        #expect(status == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        #expect(result["shutterStatus"] as? Int == 200)
        let answer = try #require(result["shutterAnswer"] as? [String: Any], "\(result)")
        let path = try #require(answer["path"] as? String)
        let frame = try #require(answer["frameIndex"] as? Int)
        #expect(try photoBarcode(path).index == frame)
        #expect((result["thumbnail"] as? [Int])?.first ?? 0 > 0, "the page showed no thumbnail: \(result)")
        let run = rec.process.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.photos.map(\.path) == [path])
    }

    /// The mode picker in a real browser (Playwright, Debian's chromium), with a photo output
    /// in video mode: the page offers `video` and `photo`, picks `photo` (200, the answer says
    /// photo, the status stream leaves the picker there); then a primary press from the control
    /// socket (`reel control shutter`) takes a photo and does not stop the recording.
    @Test(.enabled(if: havePlaywright, "needs Playwright for Python and /usr/bin/chromium (scripts/test installs them)"))
    func theModePickerInABrowserTurnsPressesIntoPhotos() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-mode")
        let socket = dir + "/control.sock"
        let rec = try serve(["record", "--mode", "video", "--photos", dir + "/photos", "--photo-format", "jpeg", "--control-socket", socket,
                             "--source", "synthetic:1280", "--codec", "h264", "--plain", "--json", "--out", dir + "/video"] + untilSIGINT)
        let (status, text, why) = try runPreviewBrowser(rec.page, shots: shots, click: "mode")
        #expect(status == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any], "\(String(decoding: text, as: UTF8.self))")
        #expect(result["modeStatus"] as? Int == 200 && (result["modeAnswer"] as? [String: Any])?["title"] as? String == "photo", "\(result)")
        #expect(result["modeOptions"] as? [String] == ["video", "photo"] && result["modeAfter"] as? String == "photo", "\(result)")
        let press = try reel(["control", "--socket", socket, "shutter"])
        #expect(press.status == 0, "\(press.stdout)\(press.stderr)")
        #expect(waitUntil(30) { (try? rec.status())?["photo"] is String }, "the press took no photo")
        let run = rec.stop()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PhotoRecordingJSON.self)
        #expect(summary.photos.count == 1, "\(summary.photos.map(\.path))")
        let toggles = try run.decode(RecordingSummary.self).recordingToggles
        #expect(toggles.isEmpty, "a press in photo mode toggled the recording: \(toggles)")
    }

    /// The secondary button on a V4L2 camera that can lock focus and exposure (the
    /// emulation), in a real browser: it says `lock`; a click (`POST /press`, 200) locks, and
    /// the status stream turns it into `unlock`. The summary has the lock (and the unlock at the
    /// end), from the page, and no marker.
    @Test(.enabled(if: havePlaywright && fakeV4L2Library != nil, "needs Playwright, chromium and the V4L2 emulation (scripts/test builds it)"))
    func theSecondaryButtonLocksAV4L2CameraInABrowser() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let shots = try artifactDirectory("preview-lock")
        let rec = try serve(["record", "--source", "v4l2:/dev/video0", "--secondary", "lock", "--codec", "h264", "--plain", "--json",
                             "--out", dir + "/video"] + untilSIGINT, environment: ["LD_PRELOAD": try #require(fakeV4L2Library)])
        let (status, text, why) = try runPreviewBrowser(rec.page, shots: shots, click: "marker")
        let run = rec.stop()
        #expect(status == 0, "\(String(decoding: why, as: UTF8.self))")
        let result = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any], "\(String(decoding: text, as: UTF8.self))")
        #expect(result["secondaryBefore"] as? String == "lock" && result["pressStatus"] as? Int == 200, "\(result)")
        #expect(result["secondaryAfter"] as? String == "unlock", "\(result)")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(CaptureModeSummaryJSON.self)
        #expect(s.locks.map(\.locked) == [true, false] && s.locks.first?.source == "page" && s.locks.last?.source == "end of recording",
                "\(s.locks.map { ($0.locked, $0.source) })")
        #expect(s.markers.isEmpty, "the lock lays no marker")
    }
}
