import Foundation
import Testing

/// Issue 14, what presses do: `reel record --mode video|photo`, `--burst-rate`, `--secondary
/// lock|marker|none`, checked with real recordings (the control socket, the emulated evdev
/// device and the emulated V4L2 camera).

/// The summary keys these tests read.
struct CaptureModeSummaryJSON: Decodable {
    struct Shot: Decodable {
        let path: String; let frameIndex: Int; let pressedFrameIndex: Int; let lagFrames: Int; let burst: Int?
    }
    struct Event: Decodable { let phase: String; let action: String; let source: String; let time: Double; let frameIndex: Int?; let burst: Int? }
    struct Toggle: Decodable { let action: String }
    struct Lock: Decodable { let frameIndex: Int?; let locked: Bool; let controls: [String: Int]; let source: String }
    struct Clip: Decodable { let path: String }
    let photos: [Shot]
    let captureEvents: [Event]
    let markers: [MarkerJSON]
    let recordingToggles: [Toggle]
    let locks: [Lock]
    let clips: [Clip]
    let stopReason: String
}

/// The environment preloading the emulated camera (FAKE_V4L2 `camera`) and the emulated
/// input device playing `script`.
func cameraAndEvdevEnvironment(camera: String = "", script: String) throws -> [String: String] {
    guard let v4l2 = fakeV4L2Library else { throw ProbeFailed(message: "the fake V4L2 library is not built: run scripts/fake-v4l2 --build") }
    var env = try evdevEnvironment(script: script)
    env["LD_PRELOAD"] = v4l2 + ":" + env["LD_PRELOAD"]!
    env["FAKE_V4L2"] = camera
    return env
}

@Suite struct CaptureModeOptionTests {
    /// Bad values of the three options: exit 64 and one line naming the option; `--secondary
    /// lock` on the synthetic sensor (nothing to lock) too.
    @Test(arguments: [
        (["--mode", "film"], "reel: --mode: 'film' is not video or photo"),
        (["--burst-rate", "31"], "reel: --burst-rate: 31 is out of range (0–30)"),
        (["--burst-rate", "fast"], "reel: --burst-rate: 'fast' is not a whole number (0–30)"),
        (["--secondary", "zoom"], "reel: --secondary: 'zoom' is not lock, marker or none"),
        (["--secondary", "lock"], "reel: --secondary lock: the synthetic sensor has no focus or exposure to lock (use marker or none)"),
    ])
    func badValuesAreUsageErrors(args: [String], message: String) throws {
        let out = temporaryDirectory()
        defer { removeTree(out) }
        let run = try reel(["record", "--plain", "--frames", "3", "--out", out] + args)
        #expect(run.status == 64)
        #expect(run.stderr == message + "\n", "\(run.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).isEmpty, "nothing is recorded")
    }

    /// `--mode photo` without `--photos`: a primary press (the socket's `shutter`) takes a
    /// photo into OUT/photos and never stops the recording (one take, one clip, no toggles);
    /// the photo is of a single press (`burst` null).
    @Test func photoModeWithoutPhotosUsesTheOutputDirectory() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let socket = dir + "/control.sock"
        let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--codec", "h264", "--source", "synthetic:1280",
                              "--mode", "photo", "--photo-format", "jpeg", "--control-socket", socket] + untilSIGINT)
        var stopped = false
        defer { if !stopped { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(try waitUntilListening(socket))
        #expect(waitForFrame(socket, atLeast: 10) != nil, "the recording never captured 10 frames")
        let shutter = try reel(["control", "--socket", socket, "shutter"])
        #expect(shutter.status == 0, "\(shutter.stdout)")
        #expect(waitUntil(60) { ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/out/photos")) ?? []).contains { $0.hasSuffix(".jpg") } })
        rec.signal(SIGINT)
        let run = rec.wait()
        stopped = true
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(CaptureModeSummaryJSON.self)
        try #require(s.photos.count == 1)
        #expect(s.photos[0].path.hasPrefix(dir + "/out/photos/") && s.photos[0].burst == nil, "\(s.photos[0].path)")
        #expect(try photoBarcode(s.photos[0].path).index == s.photos[0].frameIndex)
        #expect(s.recordingToggles.isEmpty && s.clips.count == 1, "photo mode never starts or stops recording")
        #expect(s.locks.isEmpty)
    }

    /// `--mode video --photos DIR`: a primary press stops the recording (video mode) and
    /// takes no photo; `--secondary none`: a secondary press lays no marker (it is logged).
    @Test func videoModeWithPhotosTogglesAndSecondaryNoneLaysNoMarker() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let socket = dir + "/control.sock"
        let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--codec", "h264", "--source", "synthetic:1280",
                              "--mode", "video", "--photos", dir + "/photos", "--secondary", "none", "--control-socket", socket] + untilSIGINT)
        var stopped = false
        defer { if !stopped { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(try waitUntilListening(socket))
        #expect(waitForFrame(socket, atLeast: 10) != nil, "the recording never captured 10 frames")
        #expect(try reel(["control", "--socket", socket, "shutter", "marker"]).status == 0)
        #expect(try waitForEvents(4, socket: socket))
        // The mode dial through the socket's client: `mode photo` answers ok, and `status` has it.
        let mode = try reel(["control", "--socket", socket, "mode", "photo"])
        #expect(mode.status == 0 && mode.stdout.contains(#""title":"photo""#), "\(mode.stdout)\(mode.stderr)")
        #expect(waitUntil(10) {
            ((try? reel(["control", "--socket", socket, "status"]))?.stdout ?? "").contains(#""identifier":"mode","kind":"picker""#)
        }, "the socket's status lists no mode control")
        rec.signal(SIGINT)
        let run = rec.wait()
        stopped = true
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(CaptureModeSummaryJSON.self)
        #expect(s.recordingToggles.map(\.action) == ["stop"])
        #expect(s.photos.isEmpty)
        #expect(s.captureEvents.map { "\($0.action) \($0.phase)" } == ["primary began", "primary ended", "secondary began", "secondary ended"])
        #expect(s.markers.isEmpty, "--secondary none lays no marker")
    }

    /// The emulated camera's continuous autofocus, as v4l2-ctl (an independent client, under
    /// the preload) sees it: a boolean, on by default, that can be turned off; none with
    /// `noctrls`.
    @Test(.enabled(if: haveV4L2Tools && fakeV4L2Library != nil, "needs v4l-utils and the fake V4L2 library"))
    func theEmulatedCameraHasContinuousAutofocus() throws {
        let list = try toolWithCamera("v4l2-ctl", ["-d", "/dev/video0", "--list-ctrls"])
        #expect(list.status == 0 && list.stdout.contains("focus_automatic_continuous 0x009a090c (bool)   : default=1 value=1"), "\(list.stdout)")
        let set = try toolWithCamera("v4l2-ctl", ["-d", "/dev/video0", "-c", "focus_automatic_continuous=0", "-C", "focus_automatic_continuous,auto_exposure"])
        #expect(set.status == 0 && set.stdout == "focus_automatic_continuous: 0\nauto_exposure: 3 (Aperture Priority Mode)\n", "\(set.stdout) \(set.stderr)")
        let none = try toolWithCamera("v4l2-ctl", ["-d", "/dev/video0", "--list-ctrls"], faults: "noctrls")
        #expect(none.status == 0 && !none.stdout.contains("focus"), "\(none.stdout)")
    }

    /// `--secondary lock` on a camera with neither auto exposure nor autofocus: exit 69,
    /// one line; nothing recorded.
    @Test(.enabled(if: fakeV4L2Library != nil, "the fake V4L2 library is not built (scripts/fake-v4l2 --build)"))
    func lockOnACameraWithoutControlsIsUnavailable() throws {
        let out = temporaryDirectory()
        defer { removeTree(out) }
        let run = try reel(["record", "--plain", "--frames", "3", "--out", out, "--codec", "h264", "--source", "v4l2:/dev/video0", "--secondary", "lock"],
                           environment: ["LD_PRELOAD": fakeV4L2Library!, "FAKE_V4L2": "noctrls"])
        #expect(run.status == 69)
        #expect(run.stderr == "reel: --secondary lock: /dev/video0 has no auto exposure or continuous autofocus control to lock (VIDIOC_QUERYCTRL)\n", "\(run.stderr)")
    }
}

/// Bursts and the focus-exposure lock against the emulated evdev device, timed against the
/// capture clock (a held press's shots must be in the zero shutter lag ring): the serial
/// real-time pass. The burst tests keep the sensor at 30 fps (`--pressure-handler off`: on a
/// loaded machine the handler would step it to 15 and the shots' frames would be 3 apart).
@Suite("RealtimeCaptureModeTests", .serialized, .enabled(if: installedTool("ffmpeg") != nil, "needs ffmpeg"))
struct RealtimeCaptureModeTests {
    /// Photo mode: volume down held 1.6 s is burst 1 — a photo every 1/5 s from 0.5 s after
    /// the press until the release (6, ±1 for a shot racing the release on a loaded machine),
    /// the pressed frames 6 apart at 30 fps, each showing its frame; the release takes no
    /// extra photo. A short camera-key press after it takes exactly one photo (`burst` null).
    @Test func aHeldPrimaryIsABurstAndAShortPressOnePhoto() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let script = [
            "wait 4000", "press KEY_VOLUMEDOWN", "wait 1600", "release KEY_VOLUMEDOWN",
            "wait 600", "press KEY_CAMERA", "wait 50", "release KEY_CAMERA",
        ].joined(separator: ";")
        let socket = dir + "/control.sock"
        let run = try recordWithButtons(["--plain", "--json", "--out", dir + "/video", "--codec", "h264", "--source", "synthetic:1280",
                                         "--mode", "photo", "--photos", dir + "/photos", "--photo-format", "jpeg", "--burst-rate", "5",
                                         "--pressure-handler", "off"], script: script, events: 4, socket: socket)
        let s = try run.decode(CaptureModeSummaryJSON.self)
        try #require(s.captureEvents.count == 4)
        let held = s.captureEvents[1].time - s.captureEvents[0].time
        #expect(held >= 1.55, "held \(held) s")
        // The log marks the burst on the press that made it, not on the short one.
        #expect(s.captureEvents.map(\.burst) == [1, 1, nil, nil])
        let burst = s.photos.filter { $0.burst == 1 }
        let single = s.photos.filter { $0.burst == nil }
        let expected = Int(((held - 0.5) * 5).rounded(.down)) + 1   // shots at 0.5, 0.7, … s before the release
        #expect(abs(burst.count - expected) <= 1 && abs(burst.count - 6) <= 1, "burst of \(burst.count) for a hold of \(held) s")
        #expect(s.photos.allSatisfy { $0.burst == nil || $0.burst == 1 })
        let pressed = burst.map(\.pressedFrameIndex)
        for (a, b) in zip(pressed, pressed.dropFirst()) {
            #expect((5...7).contains(b - a), "burst pressed frames \(pressed): 6 apart at 5/s and 30 fps")
        }
        // The first shot 0.5 s (15 frames) after the press's frame.
        if let began = s.captureEvents[0].frameIndex, let first = pressed.first {
            #expect(abs(first - (began + 15)) <= 3, "pressed at frame \(began), first burst shot \(first)")
        }
        try #require(single.count == 1, "a short press takes exactly one photo: \(single.map(\.path))")
        #expect(single[0].lagFrames == 0 && single[0].frameIndex == single[0].pressedFrameIndex)
        for shot in s.photos {
            #expect(try photoBarcode(shot.path).index == shot.frameIndex, "\(shot.path)")
        }
        #expect(s.markers.isEmpty && s.locks.isEmpty)
    }

    /// A burst cut by the device's removal (`cancelled`) keeps the shots it took — at 10/s
    /// here, 3 frames apart — and the log marks the `cancelled` with the burst; with
    /// `--burst-rate 0` a held press is a single photo.
    @Test(arguments: ["10", "0"])
    func aCancelledBurstKeepsItsShotsAndRateZeroHasNoBursts(rate: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let script = rate == "0"
            ? "wait 4000;press KEY_VOLUMEDOWN;wait 1000;release KEY_VOLUMEDOWN"
            : "wait 4000;press KEY_VOLUMEDOWN;wait 1000;unplug;wait 300;plug"
        let socket = dir + "/control.sock"
        let run = try recordWithButtons(["--plain", "--json", "--out", dir + "/video", "--codec", "h264", "--source", "synthetic:1280",
                                         "--mode", "photo", "--photo-format", "jpeg", "--burst-rate", rate, "--pressure-handler", "off"],
                                        script: script, events: 2, socket: socket)
        let s = try run.decode(CaptureModeSummaryJSON.self)
        try #require(s.captureEvents.count == 2)
        if rate == "0" {
            #expect(s.captureEvents.map(\.burst) == [nil, nil])
            #expect(s.photos.count == 1 && s.photos.first?.burst == nil, "\(s.photos.map(\.path))")
            return
        }
        #expect(s.captureEvents.map(\.phase) == ["began", "cancelled"])
        #expect(s.captureEvents.map(\.burst) == [1, 1])
        let held = s.captureEvents[1].time - s.captureEvents[0].time
        let expected = Int(((held - 0.5) * 10).rounded(.down)) + 1
        #expect(abs(s.photos.count - expected) <= 1 && s.photos.allSatisfy { $0.burst == 1 }, "\(s.photos.count) shots for \(held) s")
        let pressed = s.photos.map(\.pressedFrameIndex)
        for (a, b) in zip(pressed, pressed.dropFirst()) {
            #expect((2...4).contains(b - a), "burst pressed frames \(pressed): 3 apart at 10/s and 30 fps")
        }
        for shot in s.photos {
            #expect(try photoBarcode(shot.path).index == shot.frameIndex, "\(shot.path)")
        }
    }

    /// Secondary presses on the emulated camera (auto exposure, continuous autofocus): the
    /// first volume-up locks (manual exposure at the time the camera had, autofocus off, as
    /// the camera reports them back), the second unlocks (aperture priority and autofocus
    /// again), the third locks, and the end of the recording unlocks; no marker is laid.
    /// Without controls (`noctrls`) the default is a marker.
    @Test(.enabled(if: fakeV4L2Library != nil, "the fake V4L2 library is not built (scripts/fake-v4l2 --build)"),
          arguments: ["", "noctrls"])
    func volumeUpLocksAndUnlocksFocusAndExposure(camera: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let press = ["press KEY_VOLUMEUP", "wait 50", "release KEY_VOLUMEUP"]
        let script = (["wait 3000"] + press + ["wait 500"] + press + ["wait 500"] + press).joined(separator: ";")
        let socket = dir + "/control.sock"
        let run = try recordWithButtons(["--plain", "--json", "--out", dir + "/video", "--codec", "h264", "--source", "v4l2:/dev/video0"],
                                        script: script, events: 6, socket: socket,
                                        environment: try cameraAndEvdevEnvironment(camera: camera, script: script))
        let s = try run.decode(CaptureModeSummaryJSON.self)
        let ends = s.captureEvents.filter { $0.phase == "ended" }
        try #require(ends.count == 3)
        if camera == "noctrls" {
            #expect(s.locks.isEmpty)
            #expect(s.markers.map(\.frameIndex) == ends.map(\.frameIndex))
            return
        }
        #expect(s.markers.isEmpty, "the lock lays no marker")
        let locked = ["auto_exposure": 1, "exposure_time_absolute": 250, "focus_automatic_continuous": 0]
        let unlocked = ["auto_exposure": 3, "exposure_time_absolute": 250, "focus_automatic_continuous": 1]
        #expect(s.locks.map(\.locked) == [true, false, true, false])
        #expect(s.locks.map(\.controls) == [locked, unlocked, locked, unlocked])
        #expect(s.locks.prefix(3).map(\.frameIndex) == ends.map(\.frameIndex))
        #expect(s.locks.map(\.source).last == "end of recording")
    }
}
