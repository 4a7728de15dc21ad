import ReelCore

/// Every subcommand of `reel` and its options: what the parsers accept, what `reel help`
/// prints and what the README's tables are checked against. Ranges here are the ones the
/// parsers enforce (outside them: exit 64, one line).
public enum CommandTable {
    static let json = OptionSpec.flag("--json", "print exactly one JSON object on stdout")

    /// `reel record`'s options.
    public static let record = CommandSpec("record", [
        .value("--source", "SOURCE", "synthetic[:SIZE] (SIZE even, 1280–4032) or v4l2:/dev/videoN[:WxH][@FPS][:FOURCC] (W, H 1–16384, FPS 1–240)", sample: "synthetic:1280"),
        .value("--fps", "N", "frame rate 1–240: 30, 29.97, 30000/1001", sample: "30"),
        .value("--duration", "SECONDS", "seconds of media time, 0.001–86400 (default 5)", sample: "2"),
        .value("--frames", "N", "frames, 1–10000000", sample: "3"),
        .value("--codec", "C", "prores[:proxy|lt|standard|hq|4444], h264, hevc or ffv1", sample: "h264"),
        .value("--container", "mov|mp4|mkv", "the container (default mov)", sample: "mkv"),
        .value("--ratio", "R", "starting ratio: 16x9, 9x16, 1x1, 4x3, 3x4", sample: "1x1"),
        .value("--ratio-at", "T:R", "change ratio at T seconds (0–86400) or at frame #N (0–2147483647); repeatable", sample: "1:9x16"),
        .flag("--no-realtime", "the source waits for the writer instead of dropping frames"),
        .flag("--realtime", "the source keeps its rate and drops what the writer cannot take (the default)"),
        .flag("--eager-start", "initialise every output (pool, slot, encoder, muxer) before the first frame; default: Deferred Start"),
        .flag("--standby", "run the session (preview, controls, photos) with the movie output stopped until a start request"),
        .value("--out", "DIR", "output directory (default recordings)", sample: "recordings"),
        .value("--name", "PREFIX", "clip name prefix, without '/'", sample: "take"),
        .value("--fragment", "SECONDS", "fragment or cluster interval, 0.1–600 s (default 1)", sample: "0.5"),
        .value("--segment-duration", "SECONDS", "also start a new clip at every SECONDS of media time, at the first frame at or after each boundary, keyframe first; 0.001–86400", sample: "2"),
        .value("--segment-size", "SIZE", "also start a new clip, keyframe first, at the frame that would take the clip past SIZE (64K, 500M, 2G; 64K–64T), so each ends within about one frame of SIZE", sample: "500M"),
        .value("--keep", "SIZE|TIME", "loop recording: once the finished clips total more than SIZE (500M, 2G; 1M–64T) or TIME (600s, 10min, 1h; 1s–8760h), delete the oldest finished clips PREFIX.index.json lists, earlier runs' first (never the one being written)", sample: "10min"),
        .value("--pool", "PATH", "write through the storage pool at PATH", sample: "pool"),
        .flag("--plain", "write straight into the output files, no pool"),
        .flag("--strict", "refuse (exit 69) a real-time recording this machine cannot keep up with, naming an alternative that fits, instead of recording the first configuration down the ladder that fits (a lighter ProRes profile, then H.264, then a lower rate)"),
        .flag("--no-adjust", "record the configuration as asked even when this machine cannot keep up with it in real time (a warning says so; frames may be dropped): benchmarks, or a machine the cost model misjudges"),
        .flag("--fail-on-drop", "exit 75 when frames were dropped (default: exit 0 with a warning line)"),
        .value("--report", "DIR", "write the storage-write latencies as DIR/record.json and record.svg", sample: "report"),
        .value("--preview", "[HOST:]PORT", "serve the live preview over HTTP (HOST default 127.0.0.1; PORT 0 picks a free one)", sample: "127.0.0.1:0"),
        .value("--preview-token", "TOKEN", "access token for the preview (letters, digits, - and _); without it a random one is made for the session", sample: "secret"),
        // ReelControl: capture events from input devices.
        .value("--input", "DEVICE", "read capture events from an evdev input device (/dev/input/eventN; reel devices lists them); repeatable", sample: "/dev/input/event0"),
        .flag("--grab", "grab the --input devices (EVIOCGRAB) so no other program sees their keys"),
        .value("--keys", "MAP", "KEY_NAME=primary|secondary|none,... over the default key map", sample: "KEY_ENTER=primary"),
        .value("--control-socket", "PATH", "accept capture events and control changes as JSON lines on a UNIX socket at PATH (mode 0600)", sample: "/tmp/reel.sock"),
        // Colour LUTs for the effect picker (issue 14).
        .value("--lut", "FILE.cube", "add a 3D colour LUT (.cube) to the effect picker, titled by the file's name; repeatable", sample: "film.cube"),
        // Issue 28 item 6: remote presses heard.
        .value("--shutter-sound", "default|FILE|none", "a remote press (control socket, a headset's or remote's key; not KEY_CAMERA) plays a confirmation sound on ALSA's default playback device when it captures: the built-in tone, a sound file, or nothing (default none)", sample: "default"),
        // Photos during the recording (issue 12).
        .value("--photos", "DIR", "attach a photo output: the preview's shutter and primary presses take photos into DIR (synthetic sensor or V4L2 camera)", sample: "photos"),
        .value("--photo-format", "jpeg|heic|png", "the photos' format with --photos (default heic)", sample: "jpeg"),
        // Issue 14: what presses do.
        .value("--mode", "video|photo", "what a primary press does: video starts/stops recording, photo takes a photo (into --photos DIR, default OUT/photos); default video, photo with --photos", sample: "photo"),
        .value("--burst-rate", "N", "photo mode: photos per second while a primary press is held past 0.5 s, 0–30 (0: no bursts; default 5)", sample: "5"),
        .value("--secondary", "lock|marker|none", "what a secondary press does: lock/unlock a V4L2 camera's focus and exposure, lay a marker, or nothing (default lock where the camera can, else marker)", sample: "marker"),
        .value("--sensor-orientation", "landscape|portrait|landscapeLeft", "how the synthetic sensor is mounted: clips keep its turned read-out and carry the display matrix (MOV, MP4)", sample: "portrait"),
        .value("--scene", "pattern|realistic|people", "what the synthetic sensor shows: a realistic scene as hard to encode as a camera's picture (texture, pan, moving objects, sensor noise; the default), the same with people walking in it (people: faces with ground truth), or the flat test pattern", sample: "realistic"),
        // Sound (issue 28).
        .value("--audio", "none|synthetic|DEVICE", "record sound: none (the default), the synthetic test signal (a 1 kHz tone with a numbered click every second), or an ALSA capture device (default, hw:1,0, …); cut with the video to the sample at every seam", sample: "synthetic"),
        .value("--smart-framing", "zoom,rotate|recommend", "find the people and frame them (needs the 4032×4032 photo format: --source synthetic:4032): zoom applies Auto Zoom, rotate Auto Rotate (4x3 or 3x4), recommend records the recommendations and applies none", sample: "zoom,rotate"),
        .value("--center-stage", "cooperative|app", "Center Stage: a crop window (pan and zoom within the square sensor) that follows the people found, applied before every output; cooperative: the user's zoom takes precedence while it is not 1; app: the zoom control is disabled", sample: "cooperative"),
        .value("--stabilization", "off|lowLatency|cinematic|baseline", "video stabilisation: lowLatency steadies the picture with no frame of delay (the crop moves within a 1.1× zoom), cinematic looks 20 frames ahead (the picture leaves that much later), baseline is the benchmark's plain causal smoother; default off", sample: "lowLatency"),
        .value("--shake", "PIXELS", "the synthetic sensor's known camera shake, 0–64 pixels (the realistic and people scenes; the ground truth of stabilisation); default 0", sample: "24"),
        .value("--audio-codec", "pcm|aac|opus", "the sound's codec: pcm (16-bit; MOV, MKV), aac (MOV, MP4, MKV) or opus (MKV, MP4); default pcm, aac in MP4", sample: "pcm"),
        // System pressure (issue 13).
        .value("--pressure-handler", "on|off", "act on system pressure: lower the frame rate, thin or pause the preview, stop at shutdown (default on)", sample: "off"),
        json,
    ])

    /// `reel preview`: the session with the preview output alone (no recording). Its source,
    /// rate, ratio and token options are `reel record`'s; where to serve and how long differ
    /// in their defaults.
    public static let preview = CommandSpec("preview", ["--source", "--fps", "--ratio", "--scene", "--preview", "--preview-token", "--duration"].compactMap { name in
        previewDefaults.first { $0.name == name } ?? record.options.first { $0.name == name }
    })
    static let previewDefaults: [OptionSpec] = [
        .value("--preview", "[HOST:]PORT", "where to serve (HOST default 127.0.0.1; PORT 0 picks a free one; default 8080)", sample: "127.0.0.1:0"),
        .value("--duration", "SECONDS", "seconds of media time, 0.001–86400 (default: until SIGINT)", sample: "2"),
    ]

    /// `reel photo`'s options.
    public static let photo = CommandSpec("photo", [
        .value("--count", "N", "photos to take, 1–1000 (default 1)", sample: "2"),
        .value("--interval", "S", "seconds between presses, 0.001–60 (default 0.5)", sample: "0.2"),
        .value("--format", "jpeg|heic|png", "file format (default heic; png: 16-bit RGB)", sample: "jpeg"),
        .value("--quality", "speed|balanced|quality", "processing level asked for (default balanced)", sample: "quality"),
        .flag("--no-prioritization", "keep quality for every press (off: a quality press that finds the encoder busy gets balanced)"),
        .flag("--no-deferred", "merge noisy quality photos before delivery (default: a proxy at once, the final on a second thread)"),
        .flag("--finish-pending", "only finish the deferred photos a killed or ended run left in --out"),
        .flag("--no-responsive", "refuse a press while the output initialises or encodes (default: buffer it)"),
        .value("--ratio", "4x3|3x4", "photo ratio; the 4032x4032 photo format has only these (default 4x3)", sample: "3x4"),
        .value("--ring", "N", "full-sensor frames kept for zero shutter lag, 1–30 (default 3)", sample: "3"),
        .value("--shutter", "zsl|next-frame", "which frame a press takes: the nearest in the ring (default) or the next one", sample: "zsl"),
        .value("--sensor-noise", "SIGMA", "synthetic sensor read-out noise, 0.1–50 luma levels; quality photos then merge the ring's frames", sample: "8"),
        .value("--sensor-orientation", "landscape|portrait|landscapeLeft", "how the synthetic sensor is mounted (default landscape)", sample: "portrait"),
        .value("--scene", "pattern|realistic|people", "what the synthetic sensor shows: the realistic scene (default), the same with people in it, or the flat test pattern", sample: "realistic"),
        .flag("--no-compensation", "store pixels as the sensor reads them out, with the EXIF Orientation a viewer needs"),
        .flag("--eager", "initialise the photo output before capture starts (default: after the first frame)"),
        .flag("--unprepared", "prepare nothing ahead: encoders and copy buffers made at the first press (to measure prepared settings)"),
        .value("--fps", "N", "sensor frame rate, 1–60 (default 30)", sample: "30"),
        .value("--out", "DIR", "output directory (default photos)", sample: "photos"),
        .value("--name", "PREFIX", "photo name prefix, without '/'", sample: "shot"),
        json,
    ])

    /// `reel cost`: the options of `reel record` (issue 13).
    public static let cost = CommandSpec("cost", record.options.filter { !["--segment-duration", "--segment-size", "--keep", "--input", "--grab", "--keys", "--control-socket", "--lut", "--report", "--eager-start", "--standby", "--photos", "--photo-format", "--sensor-orientation", "--strict", "--no-adjust", "--pressure-handler", "--mode", "--burst-rate", "--secondary", "--smart-framing", "--center-stage", "--stabilization", "--shake", "--shutter-sound"].contains($0.name) })
    /// `reel calibrate` (issue 13).
    public static let calibrate = CommandSpec("calibrate", [
        .flag("--refresh", "measure again even when this machine's calibration is cached"), json,
    ])

    /// `reel devices [--json]`.
    public static let devices = CommandSpec("devices", [json])
    /// ReelControl: a client of `reel record --control-socket`.
    public static let control = CommandSpec("control", operands: "REQUEST...", maxOperands: .max, [
        .value("--socket", "PATH", "the recording's control socket (reel record --control-socket PATH)", sample: "/tmp/reel.sock", required: true),
        .value("--timeout", "SECONDS", "give up when the connection and the answers take longer (exit 75), 0.1–3600 s (default 10)", sample: "5"),
    ])
    /// `reel probe FILE... [--frames] [--json]`.
    public static let probe = CommandSpec("probe", operands: "FILE...", maxOperands: .max, [
        .flag("--frames", "decode every frame and read back the barcodes"), json,
    ])
    /// `reel verify FILES-or-DIR... [--json]`.
    public static let verify = CommandSpec("verify", operands: "FILES-or-DIR...", maxOperands: .max, [json])

    /// `reel jitter`'s options.
    public static let jitter = CommandSpec("jitter", [
        .value("--pool", "PATH", "measure on the filesystem of the pool at PATH", sample: "pool"),
        .value("--dir", "DIR", "measure in DIR", sample: "."),
        .value("--rate", "RATE", "bytes per second, 1M–10G (decimal: 150M = 150 000 000; default 150M)", sample: "150M"),
        .value("--block", "SIZE", "bytes per write, 4K–64M, a multiple of 4K (default 1M)", sample: "1M"),
        .value("--duration", "SECONDS", "seconds per arm, 0.1–3600 (default 30)", sample: "30"),
        .value("--contention", "LIST", "none, bulk, fsync, metadata, memory or all, comma-separated", sample: "none"),
        .value("--arms", "LIST", "pool, pool-direct, pool-fallocate, buffered, buffered-fdatasync, direct, comma-separated", sample: "pool,buffered"),
        .value("--ring", "SIZE", "capture ring to simulate, 1M–1G (default 64M)", sample: "64M"),
        .value("--fps", "N", "frame rate for the frame budget, 1–1000 (default 30)", sample: "30"),
        .value("--rounds", "N", "rounds of every scenario, arms interleaved, 1–100 (default 1); with pool and buffered, the verdict over the rounds", sample: "1"),
        .flag("--no-floor", "skip the device floor (pool-direct alone)"),
        .value("--report", "DIR", "write DIR/jitter.json and DIR/jitter.svg", sample: "report"),
        json,
    ])

    static let capacity = OptionSpec.value("--capacity", "SIZE", "pool size, 4M–64T, at most 65536 slots", sample: "1G", required: true)
    static let background = OptionSpec.flag("--background", "prepare the slots in a detached process and return at once")
    static let seconds = OptionSpec.value("--seconds", "S", "seconds per write mode of the measurement, 0.5–600 (default 8)", sample: "8")
    /// The `reel pool` verbs and their options (the hidden `pool _prepare` included).
    public static let pool: [CommandSpec] = [
        CommandSpec("pool create", operands: "[PATH]", maxOperands: 1, [
            capacity,
            .value("--slot", "SIZE", "slot size, 4M–64G, a whole number of MiB (default 256M)", sample: "64M"),
            .value("--write-mode", "auto|buffered|direct", "how the pool writes (default auto: measured)", sample: "buffered"),
            .value("--prefill", "zero|fallocate", "how slots are prepared (default zero)", sample: "zero"),
            background, seconds, json,
        ]),
        CommandSpec("pool status", operands: "[PATH]", maxOperands: 1, [json]),
        CommandSpec("pool recover", operands: "[PATH]", maxOperands: 1, [json]),
        CommandSpec("pool delete", operands: "[PATH]", maxOperands: 1, [json]),
        CommandSpec("pool resize", operands: "[PATH]", maxOperands: 1, [capacity, background, json]),
        CommandSpec("pool wait", operands: "[PATH]", maxOperands: 1, [
            .value("--timeout", "SECONDS", "give up after this long (exit 75), 0.1–86400 s", sample: "10"), json,
        ]),
        CommandSpec("pool calibrate", operands: "[PATH]", maxOperands: 1, [seconds, json]),
        // The detached half of --background.
        CommandSpec("pool _prepare", operands: "PATH", maxOperands: 1, hidden: true, [
            .value("--from", "PID", "the process that reserved the slots, 1–2147483647", sample: "1", hidden: true),
            .flag("--idle", "prepare at the idle I/O class and a recording's pace (the default pool's first use)", hidden: true),
        ]),
    ]

    /// `reel _load KIND --dir D --seconds S`: one contention load of `reel jitter`.
    public static let load = CommandSpec("_load", operands: "KIND", maxOperands: 1, hidden: true, [
        .value("--dir", "DIR", "where the load writes", sample: ".", hidden: true),
        .value("--seconds", "S", "how long it runs, 0.1–86400", sample: "1", hidden: true),
    ])

    /// Every subcommand, hidden ones included.
    public static var all: [CommandSpec] { [record, preview, photo, cost, calibrate, devices, control, probe, verify, jitter] + pool + [load] }

    /// The command called `name` (`record`, `pool create`), if there is one.
    public static func spec(_ name: String) -> CommandSpec? { all.first { $0.name == name } }

    /// The usage text (`reel help`), made from the tables above.
    public static var usage: String {
        var lines: [String] = []
        for c in all where !c.hidden {
            // Wrap at about 110 columns under the command name.
            let words = c.synopsis.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            var line = lines.isEmpty ? "usage: " : "       "
            let indent = String(repeating: " ", count: line.count + c.name.count + 6)
            // Keep bracketed groups together: split on "] [" boundaries.
            var groups: [String] = []
            var current = ""
            for w in words {
                current += current.isEmpty ? w : " " + w
                let opens = current.filter { $0 == "[" }.count, closes = current.filter { $0 == "]" }.count
                if opens == closes { groups.append(current); current = "" }
            }
            if !current.isEmpty { groups.append(current) }
            var first = true
            for g in groups {
                if !first && line.count + g.count + 1 > 110 { lines.append(line); line = indent + g } else { line += first ? g : " " + g }
                first = false
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    /// `reel help`: the usage text and every option with its meaning and range.
    public static var help: String {
        var text = usage + "\n"
        for c in all where !c.hidden {
            let visible = c.options.filter { !$0.hidden }
            guard !visible.isEmpty else { continue }
            text += "\nreel \(c.name):\n"
            for o in visible {
                let head = o.value.map { "\(o.name) \($0)" } ?? o.name
                text += "  " + head.padding(toLength: max(head.count, 30), withPad: " ", startingAt: 0) + "  " + o.help + "\n"
            }
        }
        return text
    }
}
