import Foundation
import Testing
import ReelAudio
import ReelCamera
import ReelControl

/// The shutter sound of remote presses (issue 28 item 6): which presses should play one, the
/// default tone, and the option (in-process).
@Suite struct ShutterSoundTests {
    /// A press from the socket or from a key that is not the camera's own button is remote.
    @Test(arguments: [("socket", true), ("evdev:/dev/input/event0 (KEY_VOLUMEDOWN)", true),
                      ("evdev:/dev/input/event3 (KEY_PLAYPAUSE)", true), ("evdev:/dev/input/event0 (KEY_CAMERA)", false),
                      ("evdev:/dev/input/event0 (KEY_CAMERA_FOCUS)", false), ("terminal", false), ("page", false)])
    func remotePressesShouldPlayASound(source: String, remote: Bool) {
        #expect(CaptureEvent(phase: .ended, action: .primary, source: source).shouldPlaySound == remote)
    }

    /// 80 ms of 2 kHz at half of full scale, mono 48 kHz, ramped: 3,840 samples, a peak of
    /// half of full scale, 320 zero crossings, silent at both ends.
    @Test func theDefaultToneIsWhatTheDocsSay() {
        let t = ShutterSound.tone
        #expect(t.sampleRate == 48_000 && t.channels == 1 && t.frames == 3_840 && t.name == "tone")
        let peak = t.samples.map { abs(Int($0)) }.max() ?? 0
        #expect((16_200...16_384).contains(peak), "\(peak)")
        #expect(ToneCheck.crossings(t.samples) == 319 || ToneCheck.crossings(t.samples) == 320, "\(ToneCheck.crossings(t.samples))")
        #expect(abs(Int(t.samples.first ?? 99)) < 10 && abs(Int(t.samples.last ?? 99)) < 700)
    }

    @Test func theOptionParses() throws {
        #expect(try ShutterSoundRequest(parsing: "none") == nil)
        #expect(try ShutterSoundRequest(parsing: "default") == ShutterSoundRequest(sound: .tone, device: "default"))
        #expect(try ShutterSoundRequest(parsing: "click.wav") == ShutterSoundRequest(sound: .file("click.wav")))
        #expect(throws: (any Error).self) { try ShutterSoundRequest(parsing: "") }
    }
}

/// Counting a tone's zero crossings (sign changes, zeros skipped).
enum ToneCheck {
    static func crossings(_ s: [Int16]) -> Int {
        var n = 0, last = 0
        for x in s where x != 0 {
            let sign = x > 0 ? 1 : -1
            if last != 0 && sign != last { n += 1 }
            last = sign
        }
        return n
    }
}

/// `reel record --shutter-sound` through the emulated device's playback side (each sound a
/// WAV file: PATH, PATH.0001, …), pressed through emulated input devices and the control
/// socket, in photo mode (each press takes a photo).
@Suite(.serialized) struct RealtimeShutterSoundTests {
    static var alsa: [String: String]? { RealtimeALSARecordingTests.alsa }

    /// KEY_CAMERA (the machine's own button) takes a photo and plays nothing; KEY_VOLUMEDOWN (a
    /// headset's key) and a socket press each take one and play the tone once: two WAV files,
    /// each the tone as played (80 ms at 48 kHz: 2 kHz, half of full scale), no third. The
    /// summary's events say which should play, and `shutterSound` counts two played.
    @Test(.enabled(if: alsa != nil, "FAKE_ALSA_CONF is not set: run scripts/test, which builds the emulated device"))
    func remotePressesAreHeardAndTheCameraButtonIsNot() throws {
        let dir = temporaryDirectory("reel-shutter-sound")
        defer { removeTree(dir) }
        let played = dir + "/played.wav", socket = dir + "/control.sock"
        var env = try evdevEnvironment(script: "wait 1500; press KEY_CAMERA; wait 50; release KEY_CAMERA; wait 300; press KEY_VOLUMEDOWN; wait 50; release KEY_VOLUMEDOWN")
        for (k, v) in Self.alsa! { env[k] = v }
        env["REEL_FAKE_ALSA_PLAYBACK"] = played
        env["REEL_FAKE_ALSA_PLAYBACK_TRUNCATE"] = "false"
        let rec = try launch(["record", "--source", "synthetic:1280", "--codec", "prores:proxy", "--plain", "--json", "--out", dir + "/out",
                              "--photos", dir + "/photos", "--photo-format", "jpeg", "--shutter-sound", "default",
                              "--input", "/dev/input/event0", "--control-socket", socket] + untilSIGINT, environment: env)
        defer { if rec.process.isRunning { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(waitForFile(socket), "no control socket")
        #expect(try waitForEvents(4, socket: socket), "the two key presses were not logged within 60 s")
        #expect(try reel(["control", "--socket", socket, "shutter"]).status == 0)
        #expect(try waitForEvents(6, socket: socket))
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        struct Event: Decodable { var phase: String; var source: String; var shouldPlaySound: Bool }
        struct Sound: Decodable { var device: String; var sound: String; var played: Int; var failed: Int; var lastError: String? }
        struct Photo: Decodable {}
        struct Summary: Decodable { var captureEvents: [Event]; var shutterSound: Sound; var photos: [Photo] }
        let s = try run.decode(Summary.self)
        let ended = s.captureEvents.filter { $0.phase == "ended" }
        #expect(ended.map(\.source) == ["evdev:/dev/input/event0 (KEY_CAMERA)", "evdev:/dev/input/event0 (KEY_VOLUMEDOWN)", "socket"], "\(ended)")
        #expect(ended.map(\.shouldPlaySound) == [false, true, true])
        #expect(s.photos.count == 3, "every press took its photo")
        #expect(s.shutterSound.device == "default" && s.shutterSound.sound == "tone" && s.shutterSound.played == 2 && s.shutterSound.failed == 0
                && s.shutterSound.lastError == nil)
        // What the device was given: two sounds, each the tone.
        #expect(!FileManager.default.fileExists(atPath: played + ".0002"), "a third sound")
        for file in [played, played + ".0001"] {
            let r = try runTool("ffmpeg", ["-v", "error", "-i", file, "-f", "s16le", "-ac", "1", "-ar", "48000", "-"])
            #expect(r.status == 0, "\(file) does not decode")
            let samples = r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
            #expect(samples.count >= 3_840 && samples.count < 48_000, "\(file): \(samples.count) samples")
            let tone = Array(samples.prefix(3_840))
            #expect(tone == ShutterSound.tone.samples, "\(file) is not the tone as Reel made it")
        }
    }

    /// `--shutter-sound FILE`: a 44.1 kHz stereo WAV (ffmpeg's 0.1 s sine) is played as it is —
    /// the device gets exactly its samples, at its rate and channels — once for a socket press.
    @Test(.enabled(if: alsa != nil, "FAKE_ALSA_CONF is not set"))
    func aSoundFileIsPlayedAsItIs() throws {
        let dir = temporaryDirectory("reel-shutter-file")
        defer { removeTree(dir) }
        let wav = dir + "/beep.wav", played = dir + "/played.wav", socket = dir + "/control.sock"
        #expect(try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:duration=0.1", "-ar", "44100", "-ac", "2", wav]).status == 0)
        let rec = try launch(["record", "--source", "synthetic:1280", "--codec", "prores:proxy", "--plain", "--json", "--out", dir + "/out",
                              "--photos", dir + "/photos", "--photo-format", "jpeg", "--shutter-sound", wav, "--control-socket", socket] + untilSIGINT,
                             environment: Self.alsa!.merging(["REEL_FAKE_ALSA_PLAYBACK": played, "REEL_FAKE_ALSA_PLAYBACK_TRUNCATE": "false"]) { $1 })
        defer { if rec.process.isRunning { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(waitForFile(socket), "no control socket")
        #expect(try reel(["control", "--socket", socket, "shutter"]).status == 0)
        #expect(try waitForEvents(2, socket: socket))
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        struct Sound: Decodable { var sound: String; var played: Int; var failed: Int }
        struct Summary: Decodable { var shutterSound: Sound }
        let s = try run.decode(Summary.self).shutterSound
        #expect(s.sound == wav && s.played == 1 && s.failed == 0)
        #expect(!FileManager.default.fileExists(atPath: played + ".0001"))
        let probe = try runTool("ffprobe", ["-v", "error", "-show_entries", "stream=sample_rate,channels", "-of", "csv=p=0", played])
        #expect(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "44100,2")
        func samples(_ path: String) throws -> [Int16] {
            let r = try runTool("ffmpeg", ["-v", "error", "-i", path, "-f", "s16le", "-"])
            return r.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        }
        let given = try samples(wav), got = try samples(played)
        #expect(given.count == 8_820 && Array(got.prefix(given.count)) == given, "\(got.count) samples played for \(given.count)")
    }

    /// A device that fails after the start — here ALSA's `file` plugin cannot make its file, as
    /// its directory is missing, which the start's check (committing nothing) cannot see — is
    /// said once on stderr; both presses still take their photos, the recording ends 0, and
    /// the summary counts two failed, none played, with the reason.
    @Test(.enabled(if: alsa != nil, "FAKE_ALSA_CONF is not set"))
    func aDeviceThatFailsLaterIsSaidOnceAndTheCameraGoesOn() throws {
        let dir = temporaryDirectory("reel-shutter-fails")
        defer { removeTree(dir) }
        let socket = dir + "/control.sock"
        let rec = try launch(["record", "--source", "synthetic:1280", "--codec", "prores:proxy", "--plain", "--json", "--out", dir + "/out",
                              "--photos", dir + "/photos", "--photo-format", "jpeg", "--shutter-sound", "default", "--control-socket", socket] + untilSIGINT,
                             environment: Self.alsa!.merging(["REEL_FAKE_ALSA_PLAYBACK": dir + "/missing/played.wav", "REEL_FAKE_ALSA_PLAYBACK_TRUNCATE": "false"]) { $1 })
        defer { if rec.process.isRunning { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(waitForFile(socket), "no control socket")
        #expect(try reel(["control", "--socket", socket, "shutter"]).status == 0)
        #expect(try reel(["control", "--socket", socket, "shutter"]).status == 0)
        #expect(try waitForEvents(4, socket: socket))
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let said = run.stderr.split(separator: "\n").filter { $0.hasPrefix("reel: shutter sound: audio device 'default' cannot play the sound (") }
        #expect(said.count == 1 && said.first?.hasSuffix("; the camera goes on without it") == true, "\(run.stderr)")
        struct Sound: Decodable { var played: Int; var failed: Int; var lastError: String? }
        struct Photo: Decodable {}
        struct Summary: Decodable { var shutterSound: Sound; var photos: [Photo] }
        let s = try run.decode(Summary.self)
        #expect(s.photos.count == 2 && s.shutterSound.played == 0 && s.shutterSound.failed == 2)
        #expect(s.shutterSound.lastError?.hasPrefix("audio device 'default' cannot play the sound") == true, "\(s.shutterSound)")
    }

    /// Refused before anything is recorded, one line each: a missing file (66), a file without
    /// sound (65), a playback device that cannot play (69), a busy one (75), one the user may
    /// not open (77) — the emulated capture-only device as `default` for the last three.
    @Test(.enabled(if: alsa != nil, "FAKE_ALSA_CONF is not set"))
    func badSoundsAndDevicesAreRefusedBeforeRecording() throws {
        let dir = temporaryDirectory("reel-shutter-refused")
        defer { removeTree(dir) }
        let out = dir + "/out"
        func record(_ sound: String, _ env: [String: String]) throws -> Run {
            try reel(["record", "--out", out, "--frames", "5", "--no-realtime", "--shutter-sound", sound], environment: env)
        }
        let missing = try record(dir + "/nope.wav", Self.alsa!)
        #expect(missing.status == 66 && missing.stderr == "reel: --shutter-sound: \(dir)/nope.wav: no such file\n", "\(missing.stderr)")
        try "not a sound".write(toFile: dir + "/text.wav", atomically: true, encoding: .utf8)
        let text = try record(dir + "/text.wav", Self.alsa!)
        #expect(text.status == 65 && text.stderr.hasPrefix("reel: --shutter-sound: \(dir)/text.wav: no sound libavformat can decode"), "\(text.stderr)")
        #expect(text.stderr.split(separator: "\n").count == 1)
        // `default` played on the capture-only emulated device.
        let conf = dir + "/capture-only.conf"
        try "<\(Self.alsa!["ALSA_CONFIG_PATH"]!)>\npcm.!default { type reelfake }\n".write(toFile: conf, atomically: true, encoding: .utf8)
        let cannot = try record("default", ["ALSA_CONFIG_PATH": conf])
        #expect(cannot.status == 69 && cannot.stderr.hasPrefix("reel: --shutter-sound: audio device 'default': no such playback device"), "\(cannot.stderr)")
        let busy = try record("default", ["ALSA_CONFIG_PATH": conf, "FAKE_ALSA": "busy"])
        #expect(busy.status == 75 && busy.stderr == "reel: --shutter-sound: audio device 'default' is busy: another program is playing on it\n", "\(busy.stderr)")
        let denied = try record("default", ["ALSA_CONFIG_PATH": conf, "FAKE_ALSA": "denied"])
        #expect(denied.status == 77 && denied.stderr == "reel: --shutter-sound: audio device 'default': permission denied (is the user in the 'audio' group?)\n", "\(denied.stderr)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).isEmpty, "nothing recorded")
    }
}
