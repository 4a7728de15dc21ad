import Foundation
import Testing

/// The preloadable evdev emulation (`scripts/fake-evdev --build`; `scripts/test` builds it).
let fakeEvdevLibrary: String? = {
    if let p = ProcessInfo.processInfo.environment["FAKE_EVDEV_LIB"], FileManager.default.fileExists(atPath: p) { return p }
    let guess = ((reelBinary as NSString).deletingLastPathComponent as NSString).appendingPathComponent("../../fake-evdev/libfakeevdev.so")
    let path = (guess as NSString).standardizingPath
    return FileManager.default.fileExists(atPath: path) ? path : nil
}()

/// The environment that preloads the emulated input devices with FAKE_EVDEV `options` and
/// FAKE_EVDEV_SCRIPT `script` (steps: the top of scripts/fake-evdev.d/fakeevdev.c).
func evdevEnvironment(_ options: String = "", script: String = "") throws -> [String: String] {
    guard let lib = fakeEvdevLibrary else { throw ProbeFailed(message: "the fake evdev library is not built: run scripts/fake-evdev --build") }
    return ["LD_PRELOAD": lib, "FAKE_EVDEV": options, "FAKE_EVDEV_SCRIPT": script]
}

/// Runs an installed program with the emulated input devices, bounded by `timeout(1)`.
func toolWithInput(_ name: String, _ args: [String], options: String = "", script: String = "", stdin: String? = nil, seconds: Int = 30) throws -> Run {
    guard let path = installedTool(name) else { throw ProbeFailed(message: "\(name) is not installed (scripts/test installs it)") }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
    p.arguments = ["\(seconds)", path] + args
    var env = ProcessInfo.processInfo.environment
    for (k, v) in try evdevEnvironment(options, script: script) { env[k] = v }
    p.environment = env
    let out = Pipe(), err = Pipe(), input = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = input
    try p.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    let o = Launched(process: p, out: out, err: err)
    return o.wait()
}

/// One capture event of the JSON summary.
struct EventJSON: Decodable, Equatable {
    var phase: String
    var action: String
    var source: String
    var time: Double
    var frameIndex: Int?
}
struct MarkerJSON: Decodable { var frameIndex: Int?; var time: Double; var source: String }
struct ControlSummaryJSON: Decodable {
    var captureEvents: [EventJSON]
    var markers: [MarkerJSON]
    var stopReason: String
    var framesWritten: Int
}

let haveEvtest = installedTool("evtest") != nil

/// Waits (at most 60 s) until the recording behind the control socket `path` has logged
/// `count` capture events (`reel control status`), so it can be stopped: a scripted device
/// takes its time on a loaded machine.
func waitForEvents(_ count: Int, socket path: String) throws -> Bool {
    try waitUntil(60) {
        let status = try reel(["control", "--socket", path, "status"])
        guard status.status == 0, let json = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any] else { return false }
        return json["events"] as? Int ?? 0 >= count
    }
}

/// `reel record ARGS --input /dev/input/event0 --control-socket SOCKET` until SIGINT, with
/// the emulated input device playing `script` (or the `environment` given: a camera too);
/// stopped once `events` capture events are logged (at most 60 s); records an issue unless it
/// exits 0. Its output.
func recordWithButtons(_ args: [String], script: String, events: Int, socket: String, environment: [String: String]? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) throws -> Run {
    let rec = try launch(["record"] + args + ["--input", "/dev/input/event0", "--control-socket", socket] + untilSIGINT,
                         environment: try environment ?? evdevEnvironment(script: script))
    defer { if rec.process.isRunning { rec.signal(SIGINT); _ = rec.wait() } }
    #expect(waitForFile(socket), "no control socket", sourceLocation: sourceLocation)
    #expect(try waitForEvents(events, socket: socket), "the scripted presses were not all logged within 60 s", sourceLocation: sourceLocation)
    rec.signal(SIGINT)
    let run = rec.wait()
    #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLocation)
    return run
}

/// Capture events from evdev devices, checked with real processes against the emulated device
/// (scripts/fake-evdev): `reel record --input`, `reel devices`, and Debian's `evtest`.
@Suite struct CaptureEventTests {
    /// evtest, an independent evdev client, accepts the emulation: it reads the name, the key
    /// bits and the events (value 1, 2, 0), and reports the removal as the kernel's ENODEV.
    @Test(.enabled(if: haveEvtest, "evtest is not installed (scripts/test installs it)"))
    func evtestReadsTheEmulatedDevice() throws {
        let run = try toolWithInput("evtest", ["/dev/input/event0"],
                                    script: "wait 300; press KEY_VOLUMEDOWN; wait 30; repeat KEY_VOLUMEDOWN; release KEY_VOLUMEDOWN; wait 100; unplug")
        #expect(run.stdout.contains("Input device name: \"Reel fake buttons\""))
        for key in ["KEY_VOLUMEDOWN", "KEY_VOLUMEUP", "KEY_CAMERA", "KEY_CAMERA_FOCUS", "KEY_PLAYPAUSE", "KEY_PLAYCD", "KEY_PAUSECD", "KEY_MEDIA"] {
            #expect(run.stdout.contains("(\(key))"), "evtest does not list \(key)")
        }
        for value in [1, 2, 0] {
            #expect(run.stdout.contains("code 114 (KEY_VOLUMEDOWN), value \(value)"), "no value \(value) event:\n\(run.stdout)")
        }
        #expect(run.status == 1 && run.stderr.contains("No such device"), "status \(run.status): \(run.stderr)")
        // With no argument it scans /dev/input and lists the devices (then reads the chosen one).
        let scan = try toolWithInput("evtest", [], options: "keyboard", script: "wait 300; unplug", stdin: "0\n")
        #expect(scan.stderr.contains("/dev/input/event0:\tReel fake buttons") && scan.stderr.contains("/dev/input/event1:\tReel fake keyboard"), "\(scan.stderr)")
        // --query: exit 0 while the key is up.
        let query = try toolWithInput("evtest", ["--query", "/dev/input/event0", "EV_KEY", "KEY_VOLUMEDOWN"])
        #expect(query.status == 0)
    }

    /// `reel devices` lists the devices with capture keys and what each key does; a keyboard
    /// without them is not listed; one this user may not open says what to do.
    @Test func devicesListsInputDevicesWithCaptureKeys() throws {
        let run = try reel(["devices", "--json"], environment: try evdevEnvironment("keyboard,name=AirPods Pro (AVRCP)"))
        #expect(run.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let inputs = try #require(json["inputDevices"] as? [[String: Any]])
        #expect(inputs.map { $0["path"] as? String } == ["/dev/input/event0"])
        let first = try #require(inputs.first)
        #expect(first["name"] as? String == "AirPods Pro (AVRCP)")
        #expect(Set(first["keys"] as? [String] ?? []) == ["KEY_VOLUMEDOWN", "KEY_VOLUMEUP", "KEY_CAMERA", "KEY_CAMERA_FOCUS", "KEY_PLAYPAUSE", "KEY_PLAYCD", "KEY_PAUSECD", "KEY_MEDIA"])
        #expect((first["actions"] as? [String: String])?["KEY_VOLUMEUP"] == "secondary")
        #expect((first["actions"] as? [String: String])?["KEY_VOLUMEDOWN"] == "primary")
        #expect(first["readable"] as? Bool == true)
        #expect(json["devices"] is [Any])

        let deniedJSON = try reel(["devices", "--json"], environment: try evdevEnvironment("denied"))
        #expect(deniedJSON.stdout.contains("\"readable\" : false"), "\(deniedJSON.stdout)")
        let text = try reel(["devices"], environment: try evdevEnvironment("denied"))
        #expect(text.status == 0)
        #expect(text.stdout.contains("/dev/input/event0: Reel fake buttons  KEY_VOLUMEDOWN=primary KEY_VOLUMEUP=secondary"), "\(text.stdout)")
        #expect(text.stdout.contains("(no access: join the 'input' group or add a udev rule)"))
        let none = try reel(["devices"], environment: try evdevEnvironment("devices=0"))
        #expect(none.stdout.contains("no input devices with capture keys"))
    }

    /// No permission on the device: exit 77, one line that says what to do, nothing recorded.
    @Test func permissionDeniedExits77AndSaysWhatToDo() throws {
        let out = temporaryDirectory()
        defer { removeTree(out) }
        let run = try reel(["record", "--plain", "--frames", "3", "--out", out, "--input", "/dev/input/event0"],
                           environment: try evdevEnvironment("denied"))
        #expect(run.status == 77)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(run.stderr.hasPrefix("reel: cannot open /dev/input/event0: permission denied"))
        #expect(run.stderr.contains("'input' group") && run.stderr.contains("udev rule"))
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).isEmpty)
        // A device that is not there: 66. A bad key map: 64.
        let missing = try reel(["record", "--plain", "--frames", "3", "--out", out, "--input", "/dev/input/event9"], environment: try evdevEnvironment())
        #expect(missing.status == 66 && missing.stderr.hasPrefix("reel: no input device /dev/input/event9"))
        let badMap = try reel(["record", "--plain", "--frames", "3", "--out", out, "--keys", "KEY_NOPE=primary"])
        #expect(badMap.status == 64 && badMap.stderr.hasPrefix("reel: --keys:"))
    }

    /// EVIOCGRAB: a second grab of the same device is refused (75); one grab records.
    @Test func grabIsExclusive() throws {
        let out = temporaryDirectory()
        defer { removeTree(out) }
        let twice = try reel(["record", "--plain", "--frames", "3", "--out", out, "--grab", "--input", "/dev/input/event0", "--input", "/dev/input/event0"],
                             environment: try evdevEnvironment())
        #expect(twice.status == 75 && twice.stderr.contains("grabbed by another program"), "\(twice.status) \(twice.stderr)")
        let once = try reel(["record", "--plain", "--frames", "3", "--out", out, "--grab", "--input", "/dev/input/event0", "--codec", "h264"],
                            environment: try evdevEnvironment())
        #expect(once.status == 0, "\(once.stderr)")
    }

    /// Presses during a recording: press/release is began/ended (the auto-repeat between is
    /// ignored), volume up is secondary and lays a marker at its `ended`, a press cut by
    /// SYN_DROPPED or by the device's removal is cancelled, the device is read again once it is
    /// back, keys the map turns off are ignored; the recording is unaffected.
    @Test func pressesBecomeCaptureEventsInTheSummary() throws {
        let out = temporaryDirectory()
        defer { removeTree(out) }
        let script = [
            "wait 1500", "press KEY_VOLUMEDOWN", "wait 100", "repeat KEY_VOLUMEDOWN", "wait 100", "release KEY_VOLUMEDOWN",
            "wait 200", "press KEY_VOLUMEUP", "wait 100", "release KEY_VOLUMEUP",
            "wait 100", "press KEY_MEDIA", "wait 50", "release KEY_MEDIA",
            "wait 100", "press KEY_CAMERA", "drop", "release KEY_CAMERA",
            "wait 100", "press KEY_CAMERA_FOCUS", "wait 100", "unplug", "wait 300", "plug",
            "wait 600", "press KEY_PLAYCD", "wait 50", "release KEY_PLAYCD",
        ].joined(separator: ";")
        // Until SIGINT, once the script's ten events are logged (the control socket says how many).
        let socket = out + "/control.sock"
        let run = try recordWithButtons(["--plain", "--json", "--out", out, "--codec", "h264", "--source", "synthetic:1280", "--keys", "KEY_MEDIA=none"],
                                        script: script, events: 10, socket: socket)
        let s = try run.decode(ControlSummaryJSON.self)
        let seen = s.captureEvents.map { "\($0.source.split(separator: "(").last!.dropLast()) \($0.action) \($0.phase)" }
        #expect(seen == [
            "KEY_VOLUMEDOWN primary began", "KEY_VOLUMEDOWN primary ended",
            "KEY_VOLUMEUP secondary began", "KEY_VOLUMEUP secondary ended",
            "KEY_CAMERA primary began", "KEY_CAMERA primary cancelled",
            "KEY_CAMERA_FOCUS primary began", "KEY_CAMERA_FOCUS primary cancelled",
            "KEY_PLAYCD primary began", "KEY_PLAYCD primary ended",
        ])
        #expect(s.captureEvents.allSatisfy { $0.source.hasPrefix("evdev:/dev/input/event0 (") })
        // Times rise and are the kernel's monotonic stamps: the release 200 ms after the press.
        #expect(zip(s.captureEvents, s.captureEvents.dropFirst()).allSatisfy { $0.time <= $1.time })
        let hold = s.captureEvents[1].time - s.captureEvents[0].time
        #expect(hold > 0.15 && hold < 1.0, "held \(hold) s")
        // Frames rise with the events, and the marker is at the secondary `ended`'s frame.
        let frames = s.captureEvents.compactMap(\.frameIndex)
        #expect(frames.count == s.captureEvents.count && frames == frames.sorted())
        #expect(s.markers.count == 1)
        #expect(s.markers.first?.frameIndex == s.captureEvents[3].frameIndex)
        #expect(run.stderr.contains("reel: /dev/input/event0 went away; waiting for it to come back"))
        #expect(run.stderr.contains("reel: /dev/input/event0 is back"))
        #expect(s.stopReason == "interrupted" && s.framesWritten > 0)
        let text = run.stdout
        #expect(!text.isEmpty)
    }

    /// The summary always has `captureEvents` and `markers`, empty without --input; the text
    /// summary lists events and markers.
    @Test func theSummaryAlwaysHasTheEventKeys() throws {
        let out = temporaryDirectory()
        defer { removeTree(out) }
        let run = try reel(["record", "--plain", "--json", "--out", out, "--frames", "3", "--codec", "h264"])
        let s = try run.decode(ControlSummaryJSON.self)
        #expect(s.captureEvents.isEmpty && s.markers.isEmpty)
        let socket = out + "/control.sock"
        let text = try recordWithButtons(["--plain", "--out", out, "--codec", "h264"],
                                         script: "wait 1000; press KEY_VOLUMEUP; wait 50; release KEY_VOLUMEUP", events: 2, socket: socket)
        #expect(text.stdout.contains("event secondary began at frame "))
        #expect(text.stdout.contains("event secondary ended at frame "))
        #expect(text.stdout.contains("marker at frame "))
    }
}

/// Types, through `term`'s pseudo-terminal, a space once the progress line shows 10 frames,
/// `m` 10 frames later and `q` 10 frames after that (60 s for each), and checks that the
/// recording then ends with status 0; the progress line the space was typed at.
func typeSpaceMAndQ(_ term: TerminalRun) throws -> (frames: Int, ratio: String) {
    let started = try #require(term.waitForProgress(60) { frames, _ in frames >= 10 }, "no progress line: \(term.screen)")
    term.type(" ")
    _ = try #require(term.waitForProgress(60) { frames, _ in frames >= started.frames + 10 })
    term.type("m")
    _ = try #require(term.waitForProgress(60) { frames, _ in frames >= started.frames + 20 })
    term.type("q")
    let end = term.waitForExit(60)
    #expect(end.status == 0, "\(term.screen.suffix(300))")
    return started
}

/// The terminal as a capture-event source: typed through a pseudo-terminal while recording.
@Suite(.serialized) struct RealtimeTerminalEventTests {
    /// Space is a primary press and `m` a secondary one (began, then ended at once: a terminal
    /// reports no release); `m` lays a marker; `q` still stops.
    @Test func spaceAndMAreCaptureEvents() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let term = try TerminalRun(["record", "--source", "synthetic:1280", "--codec", "h264",
                                    "--plain", "--out", dir, "--json"] + untilSIGINT)
        defer { term.finish() }
        let started = try typeSpaceMAndQ(term)
        let s = try JSONDecoder().decode(ControlSummaryJSON.self, from: Data(term.stdout.utf8))
        #expect(s.captureEvents.map { "\($0.action) \($0.phase) \($0.source)" } == [
            "primary began terminal", "primary ended terminal", "secondary began terminal", "secondary ended terminal",
        ])
        #expect(s.markers.count == 1 && s.markers.first?.frameIndex == s.captureEvents.last?.frameIndex)
        let first = try #require(s.captureEvents.first?.frameIndex)
        #expect(first >= started.frames - 1, "the space came after frame \(started.frames), logged at \(first)")
    }
}

/// With `--photos`, the terminal's space (primary began + ended) takes a photo of the frame
/// it was typed at; `m` (secondary) lays a marker and takes none.
@Suite(.serialized, .enabled(if: havePhotoTools, "needs ffmpeg, exiftool and heif-convert"))
struct RealtimeTerminalPhotoTests {
    struct Summary: Decodable {
        var photos: [PhotoRun.Shot]
        var captureEvents: [EventJSON]
        var markers: [MarkerJSON]
    }

    @Test func spaceTakesAPhotoWithPhotos() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let term = try TerminalRun(["record", "--source", "synthetic:1280", "--codec", "h264", "--plain", "--out", dir + "/video",
                                    "--photos", dir + "/photos", "--photo-format", "png", "--json"] + untilSIGINT)
        defer { term.finish() }
        _ = try typeSpaceMAndQ(term)
        let s = try JSONDecoder().decode(Summary.self, from: Data(term.stdout.utf8))
        #expect(s.markers.count == 1)
        let shot = try #require(s.photos.first, "space took no photo: \(term.screen.suffix(300))")
        #expect(s.photos.count == 1)
        let began = try #require(s.captureEvents.first { $0.action == "primary" && $0.phase == "began" }?.frameIndex)
        // The logged frame is the newest captured when the event was handled (a frame or two
        // behind the clock on a loaded machine).
        #expect(abs(shot.pressedFrameIndex - began) <= 2, "pressed at frame \(began), photo says \(shot.pressedFrameIndex)")
        #expect(shot.format == "png" && shot.width == 1280 && shot.height == 960)
        #expect(try photoBarcode(shot.path).index == shot.frameIndex)
    }
}
