import Foundation
import Testing
import ReelWriter

/// The preloadable V4L2 emulation (`scripts/fake-v4l2 --build`; `scripts/test` builds it).
let fakeV4L2Library: String? = {
    if let p = ProcessInfo.processInfo.environment["FAKE_V4L2_LIB"], FileManager.default.fileExists(atPath: p) { return p }
    let guess = ((reelBinary as NSString).deletingLastPathComponent as NSString).appendingPathComponent("../../fake-v4l2/libfakev4l2.so")
    let path = (guess as NSString).standardizingPath
    return FileManager.default.fileExists(atPath: path) ? path : nil
}()

/// `reel args…` with the emulated camera; `faults` is the FAKE_V4L2 option string.
func reelWithCamera(_ args: [String], faults: String = "") throws -> Run {
    guard let lib = fakeV4L2Library else { throw ProbeFailed(message: "the fake V4L2 library is not built: run scripts/fake-v4l2 --build") }
    return try reel(args, environment: ["LD_PRELOAD": lib, "FAKE_V4L2": faults])
}

/// Runs an installed program with the emulated camera preloaded, bounded by `timeout(1)`.
func toolWithCamera(_ name: String, _ args: [String], faults: String = "", environment: [String: String] = [:], seconds: Int = 120) throws -> Run {
    guard let lib = fakeV4L2Library else { throw ProbeFailed(message: "the fake V4L2 library is not built: run scripts/fake-v4l2 --build") }
    guard let path = installedTool(name) else { throw ProbeFailed(message: "\(name) is not installed (scripts/setup installs it)") }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
    p.arguments = ["\(seconds)", path] + args
    var env = ProcessInfo.processInfo.environment
    env["LD_PRELOAD"] = lib
    env["FAKE_V4L2"] = faults
    for (k, v) in environment { env[k] = v }
    p.environment = env
    // Output to files: nothing can block on a full pipe, whatever the program prints.
    let dir = temporaryDirectory("reel-tool")
    defer { removeTree(dir) }
    guard FileManager.default.createFile(atPath: dir + "/out", contents: nil),
          FileManager.default.createFile(atPath: dir + "/err", contents: nil) else { throw ProbeFailed(message: "cannot create files in \(dir)") }
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/out"))
    let err = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/err"))
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    p.waitUntilExit()
    try out.close()
    try err.close()
    let outData = FileManager.default.contents(atPath: dir + "/out") ?? Data()
    let errData = FileManager.default.contents(atPath: dir + "/err") ?? Data()
    return Run(status: p.terminationStatus, stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self))
}

/// The MD5 of each frame's luma plane, in decoding order, by ffmpeg (an independent decoder).
func lumaDigests(_ path: String) throws -> [String] {
    let run = try toolWithCamera("ffmpeg", ["-v", "error", "-i", path, "-map", "0:v", "-vf", "extractplanes=y", "-f", "framemd5", "-"])
    guard run.status == 0 else { throw ProbeFailed(message: run.stderr) }
    return run.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) } }
}

let haveV4L2Tools = installedTool("v4l2-ctl") != nil && installedTool("v4l2-compliance") != nil
let haveFFmpeg = installedTool("ffmpeg") != nil
let haveGStreamer = installedTool("gst-launch-1.0") != nil

/// Real time (the emulated camera runs at 30 fps): part of the real-time pass of `scripts/test`.
@Suite(.serialized) struct RealtimeV4L2Tests {
    @Test func devicesListsTheEmulatedCamera() throws {
        let run = try reelWithCamera(["devices", "--json"], faults: "devices=2,card=Bench Cam")
        #expect(run.status == 0, "\(run.stderr)")
        let text = run.stdout
        #expect(text.contains("/dev/video0") && text.contains("/dev/video1") && text.contains("Bench Cam") && text.contains("fakev4l2"))
        for f in ["YUYV", "NV12", "MJPG"] { #expect(text.contains("\"\(f)\"")) }
        let human = try reelWithCamera(["devices"])
        #expect(human.stdout.contains("YUYV") && human.stdout.contains("1280x720@30") && human.stdout.contains("1080x1080@30"), "\(human.stdout)")
    }

    @Test(arguments: ["YUYV", "NV12", "MJPG"])
    func recordsEachPixelFormatWithEveryFrameInOrder(fourcc: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reelWithCamera(["record", "--source", "v4l2:/dev/video0:1280x720@30:\(fourcc)", "--duration", "2", "--codec", "prores:proxy",
                                      "--ratio", "16x9", "--out", dir, "--name", "cam", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        let clip = try #require(s.clips.first)
        #expect(clip.width == 1280 && clip.height == 720 && s.framesCaptured == 60)
        let idx = try #require(try probeFrames(clip.path).frameIndices)
        // Real time: the emulated sensor runs at 30 fps whether or not Reel keeps up; what is
        // written is in order, and whatever was dropped is counted.
        #expect(idx.first == 0 && idx == idx.sorted() && Set(idx).count == idx.count && idx.allSatisfy { $0 >= 0 })
        #expect(idx.count + s.framesDropped == 60, "\(s.dropReasons)")
        #expect(s.framesDropped <= 3)
    }

    @Test func ratioChangesOnA16x9Camera() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reelWithCamera(["record", "--source", "v4l2:/dev/video0", "--duration", "3", "--codec", "prores:proxy",
                                      "--ratio-at", "1:9x16", "--ratio-at", "2:1x1", "--out", dir, "--name", "r", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.clips.map { "\($0.width)x\($0.height)" } == ["1280x720", "404x720", "720x720"])
        if s.framesDropped == 0 {
            let v = try reel(["verify", dir])
            #expect(v.status == 0, "\(v.stderr)")
        }
    }

    @Test func unplugMidRecordingKeepsAPlayablePrefixAndSaysSo() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reelWithCamera(["record", "--source", "v4l2:/dev/video0", "--duration", "10", "--codec", "prores:proxy",
                                      "--out", dir, "--name", "u", "--json"], faults: "unplug=45")
        #expect(run.status == 74, "\(run.stderr)")
        #expect(run.stderr.contains("the camera was lost") && run.stderr.contains("kept"), "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.stopReason == "failed")
        let clip = try #require(s.clips.first)
        let idx = try #require(try probeFrames(clip.path).frameIndices)
        #expect(idx.count == clip.frames && idx.first == 0 && idx.last! < 45 && idx == idx.sorted())
        #expect(run.stderr.contains("kept \(clip.frames) frames"))
    }

    @Test func eioIsALostCameraToo() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reelWithCamera(["record", "--source", "v4l2:/dev/video0", "--duration", "10", "--codec", "prores:proxy", "--out", dir], faults: "eio=20")
        #expect(run.status == 74 && run.stderr.contains("Input/output error"), "\(run.stderr)")
    }

    @Test func sequenceGapsCountAsDiscontinuityDrops() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reelWithCamera(["record", "--source", "v4l2:/dev/video0", "--frames", "60", "--codec", "prores:proxy",
                                      "--out", dir, "--name", "g", "--json"], faults: "skip=10:2")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        // Every 10th frame the sensor loses 2: 5 gaps of 2 within 60 sequence numbers.
        #expect(s.dropReasons["discontinuity"] == 10, "\(s.dropReasons)")
        let clip = try #require(s.clips.first)
        let idx = try #require(try probeFrames(clip.path).frameIndices)
        #expect(!idx.contains(10) && !idx.contains(11) && idx.contains(12))
        #expect(idx.count + s.framesDropped == 60)
    }

    @Test func busyMissingAndUnsupportedAreClearErrors() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let busy = try reelWithCamera(["record", "--source", "v4l2:/dev/video0", "--frames", "5", "--out", dir], faults: "busy")
        #expect(busy.status == 69 && busy.stderr.contains("is busy"), "\(busy.stderr)")
        let missing = try reelWithCamera(["record", "--source", "v4l2:/dev/video7", "--frames", "5", "--out", dir])
        #expect(missing.status == 66 && missing.stderr.contains("no such video device"), "\(missing.stderr)")
        let size = try reelWithCamera(["record", "--source", "v4l2:/dev/video0:3840x2160", "--frames", "5", "--out", dir])
        #expect(size.status == 64 && size.stderr.contains("does not offer") && size.stderr.contains("YUYV 1280x720@30"), "\(size.stderr)")
        let fourcc = try reelWithCamera(["record", "--source", "v4l2:/dev/video0:H264", "--frames", "5", "--out", dir])
        #expect(fourcc.status == 64 && fourcc.stderr.contains("does not offer"), "\(fourcc.stderr)")
        let notCamera = try reel(["record", "--source", "v4l2:/dev/null", "--frames", "5", "--out", dir])
        #expect(notCamera.status != 0 && notCamera.stderr.split(separator: "\n").count == 1, "\(notCamera.stderr)")
    }

    // MARK: Other V4L2 programs against the same emulation

    /// The node is a character device of the V4L major (81), as stat(1), bash's `test -c` and
    /// v4l2-ctl (which stats it first) see it; `--all` and `--list-formats-ext` describe it.
    @Test(.enabled(if: haveV4L2Tools, "v4l-utils is not installed (scripts/setup v4l-utils)"))
    func v4l2CtlDescribesTheEmulatedCamera() throws {
        let st = try toolWithCamera("stat", ["-c", "%F %t:%T %G", "/dev/video0"])
        #expect(st.status == 0 && st.stdout == "character special file 51:0 video\n", "\(st.stdout) \(st.stderr)")
        let test = try toolWithCamera("bash", ["-c", "test -c /dev/video0 && test -r /dev/video0 && test ! -e /dev/video1"])
        #expect(test.status == 0, "\(test.stderr)")

        let all = try toolWithCamera("v4l2-ctl", ["-d", "/dev/video0", "--all"])
        #expect(all.status == 0, "\(all.stderr)")
        for line in ["Driver name      : fakev4l2", "Video input : 0 (Camera 1: ok)", "Pixel Format      : 'YUYV' (YUYV 4:2:2)",
                     "Frames per second: 30.000 (30/1)", "Priority: 2",
                     "brightness 0x00980900 (int)    : min=-64 max=64 step=1 default=0 value=0 flags=slider",
                     "auto_exposure 0x009a0901 (menu)   : min=0 max=3 default=3 value=3 (Aperture Priority Mode)",
                     "exposure_time_absolute 0x009a0902 (int)    : min=3 max=2047 step=1 default=250 value=250 flags=inactive"] {
            #expect(all.stdout.contains(line), "missing \(line) in\n\(all.stdout)")
        }
        let list = try toolWithCamera("v4l2-ctl", ["-d", "/dev/video0", "--list-formats-ext"])
        #expect(list.status == 0, "\(list.stderr)")
        for text in ["'YUYV' (YUYV 4:2:2)", "'NV12' (Y/CbCr 4:2:0)", "'MJPG' (Motion-JPEG, compressed)",
                     "Size: Discrete 1080x1080", "Size: Discrete 1920x1080", "Interval: Discrete 0.033s (30.000 fps)", "Interval: Discrete 0.067s (15.000 fps)"] {
            #expect(list.stdout.contains(text), "missing \(text) in\n\(list.stdout)")
        }
        // Controls: manual exposure makes the exposure time active; values are clamped to the range.
        let set = try toolWithCamera("v4l2-ctl", ["-d", "/dev/video0", "-c", "auto_exposure=1,exposure_time_absolute=5000,brightness=10",
                                                  "-C", "auto_exposure,exposure_time_absolute,brightness"])
        #expect(set.status == 0 && Set(set.stdout.split(separator: "\n")) == ["auto_exposure: 1 (Manual Mode)", "exposure_time_absolute: 2047", "brightness: 10"],
                "\(set.stdout) \(set.stderr)")
        let bad = try toolWithCamera("v4l2-ctl", ["-d", "/dev/video0", "-c", "auto_exposure=2"])
        #expect(bad.status != 0 && bad.stderr.contains("Invalid argument"), "\(bad.stderr)")
        // Through libv4l2 (-w), which calls the kernel with syscall(2) and adds converted formats.
        let wrapped = try toolWithCamera("v4l2-ctl", ["-w", "-d", "/dev/video0", "--all", "--list-formats"])
        #expect(wrapped.status == 0 && wrapped.stdout.contains("Driver Info (using libv4l2):") && wrapped.stdout.contains("'YU12' (YU12, emulated)"),
                "\(wrapped.stdout) \(wrapped.stderr)")
        // S_PARM settles on an offered rate.
        let parm = try toolWithCamera("v4l2-ctl", ["-d", "/dev/video0", "-p", "14", "-P"])
        #expect(parm.status == 0 && parm.stdout.contains("Frames per second: 15.000 (15/1)"), "\(parm.stdout)")
    }

    /// The device fd behaves as the kernel's: fstat says char device 81:0; dup, dup2 and
    /// F_DUPFD share the open file (and its buffer queue, which another open cannot take:
    /// EBUSY); the queue is released with the last descriptor; read() is refused (EINVAL: no
    /// read I/O is advertised); access() and the old __xstat find the node; a control event
    /// (the initial one, then one when another open file sets the control) is POLLPRI for
    /// poll, the exception set for select, EPOLLPRI for epoll. Driven from Python's os/fcntl/select modules
    /// (plain libc calls).
    @Test(.enabled(if: installedTool("python3") != nil, "python3 is not installed"))
    func theDeviceFdIsSharedByDupAndReleasedByItsLastClose() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let script = dir + "/fd.py"
        try Self.fdScript.write(toFile: script, atomically: true, encoding: .utf8)
        let run = try toolWithCamera("python3", [script])
        #expect(run.status == 0 && run.stdout == "ok\n", "\(run.stdout)\(run.stderr)")
    }

    static let fdScript = #"""
import os, fcntl, struct, errno, stat, sys
QUERYCAP = 0x80685600; G_INPUT = 0x80045626; REQBUFS = 0xc0145608
def card(fd):
    b = bytearray(104); fcntl.ioctl(fd, QUERYCAP, b); return bytes(b[16:48]).rstrip(b"\0").decode()
def fails(f, code):
    try: f()
    except OSError as e: return e.errno == code
    return False
fd = os.open("/dev/video0", os.O_RDWR | os.O_NONBLOCK)
st = os.fstat(fd)
assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 81 and os.minor(st.st_rdev) == 0, st
a = os.dup(fd); b = os.dup2(fd, 99); c = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 200)
assert b == 99 and c >= 200
# The queue belongs to the open file: a dup shares it, another open does not.
fcntl.ioctl(fd, REQBUFS, bytearray(struct.pack("IIIIB3x", 2, 1, 1, 0, 0)))
other = os.open("/dev/video0", os.O_RDWR)
assert fails(lambda: fcntl.ioctl(other, REQBUFS, bytearray(struct.pack("IIIIB3x", 2, 1, 1, 0, 0))), errno.EBUSY)
fcntl.ioctl(c, REQBUFS, bytearray(struct.pack("IIIIB3x", 2, 1, 1, 0, 0)))
os.close(fd)
for d in (a, b, c): assert card(d) == "Reel fake camera"
assert fails(lambda: os.read(a, 100), errno.EINVAL)            # no read() I/O advertised
os.close(a); os.close(b)
assert fails(lambda: fcntl.ioctl(other, REQBUFS, bytearray(struct.pack("IIIIB3x", 2, 1, 1, 0, 0))), errno.EBUSY)
os.close(c)                                                    # the last descriptor: the queue is free
fcntl.ioctl(other, REQBUFS, bytearray(struct.pack("IIIIB3x", 2, 1, 1, 0, 0)))
assert fails(lambda: card(c), errno.EBADF)
i = bytearray(b"\xff" * 4); fcntl.ioctl(other, G_INPUT, i); assert i == bytearray(4)
assert fails(lambda: os.open("/dev/video1", os.O_RDWR), errno.ENOENT)
# The node is found by access() and by the pre-2.33 glibc entry points (old binaries).
import select, ctypes
assert os.access("/dev/video0", os.R_OK | os.W_OK)
buf = ctypes.create_string_buffer(144)
assert ctypes.CDLL(None).__xstat(1, b"/dev/video0", buf) == 0
assert stat.S_ISCHR(struct.unpack_from("I", buf.raw, 24)[0]) and os.major(struct.unpack_from("Q", buf.raw, 40)[0]) == 81
# Control events: POLLPRI for poll, the exception set for select.
SUB = 0x4020565a; DQ = 0x80885659; SCTRL = 0xc008561c; BRIGHTNESS = 0x00980900
watcher = os.open("/dev/video0", os.O_RDWR | os.O_NONBLOCK)
p = select.poll(); p.register(watcher, select.POLLPRI)
assert p.poll(0) == []
fcntl.ioctl(watcher, SUB, bytearray(struct.pack("III20x", 3, BRIGHTNESS, 1)))   # V4L2_EVENT_CTRL, SEND_INITIAL
assert select.select([], [], [watcher], 1)[2] == [watcher]
ev = bytearray(136); fcntl.ioctl(watcher, DQ, ev)
assert struct.unpack_from("I", ev, 0)[0] == 3 and struct.unpack_from("I", ev, 96)[0] == BRIGHTNESS and struct.unpack_from("i", ev, 16)[0] == 0
assert p.poll(0) == []
fcntl.ioctl(other, SCTRL, bytearray(struct.pack("Ii", BRIGHTNESS, 7)))          # another open file changes it
assert p.poll(1000) == [(watcher, select.POLLPRI)]
fcntl.ioctl(watcher, DQ, ev)
assert struct.unpack_from("I", ev, 8)[0] & 1 and struct.unpack_from("i", ev, 16)[0] == 7   # V4L2_EVENT_CTRL_CH_VALUE, the new value
assert fails(lambda: fcntl.ioctl(watcher, DQ, ev), errno.ENOENT)
os.close(watcher)
# ... and EPOLLPRI for epoll, beside EPOLLIN on the same registration.
ep = select.epoll()
watcher = os.open("/dev/video0", os.O_RDWR | os.O_NONBLOCK)
ep.register(watcher, select.EPOLLPRI | select.EPOLLIN)
assert ep.poll(0) == []
fcntl.ioctl(watcher, SUB, bytearray(struct.pack("III20x", 3, BRIGHTNESS, 1)))
assert ep.poll(1) == [(watcher, select.EPOLLPRI)]
fcntl.ioctl(watcher, DQ, ev)
assert ep.poll(0) == []
ep.modify(watcher, select.EPOLLIN)                                                # no longer asked for
fcntl.ioctl(other, SCTRL, bytearray(struct.pack("Ii", BRIGHTNESS, 9)))
assert ep.poll(0) == []
ep.modify(watcher, select.EPOLLPRI)
assert ep.poll(1) == [(watcher, select.EPOLLPRI)]
ep.close(); os.close(watcher)
os.close(other)
print("ok")
"""#

    /// v4l2-compliance with streaming tests (controls, control events through select's
    /// exception set, priorities, formats, MMAP streaming with and without poll, select and
    /// epoll, blocking DQBUF): every test passes, no warning.
    @Test(.enabled(if: haveV4L2Tools, "v4l-utils is not installed (scripts/setup v4l-utils)"))
    func v4l2CompliancePassesWithStreaming() throws {
        let run = try toolWithCamera("v4l2-compliance", ["-d", "/dev/video0", "-s"], seconds: 300)
        let lines = run.stdout.split(separator: "\n").map(String.init)
        let total = try #require(lines.first { $0.hasPrefix("Total for fakev4l2 device /dev/video0:") }, "\(run.stdout)\n\(run.stderr)")
        let failed = lines.filter { $0.hasSuffix(": FAIL") }.map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(run.status == 0 && failed.isEmpty, "\(total)\n\(run.stdout)")
        #expect(total.hasSuffix("Failed: 0, Warnings: 0"), "\(total)")
        #expect(lines.contains { $0.contains("test VIDIOC_(UN)SUBSCRIBE_EVENT/DQEVENT: OK") }
                && lines.contains { $0.contains("test MMAP (select): OK") } && lines.contains { $0.contains("test MMAP (epoll): OK") }
                && lines.contains { $0.contains("test blocking wait: OK") }, "\(run.stdout)")
    }

    /// ffmpeg records the same camera as Reel: the same barcodes (the V4L2 sequence numbers),
    /// and, both losslessly encoded, the same luma, frame for frame.
    @Test(.enabled(if: haveFFmpeg, "ffmpeg is not installed"))
    func ffmpegAsAPeerRecordsTheSameFrames() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let peer = dir + "/ffmpeg.mkv"
        // The emulated camera at 10 fps: Reel's writer holds 36 frames (3.6 s), far more than
        // the FFV1 encoder takes to open (170–600 ms here), so nothing may be lost; ffmpeg keeps
        // 32 buffers queued. Both must record the same 60 frames, frame for frame.
        let ff = try toolWithCamera("ffmpeg", ["-v", "error", "-f", "v4l2", "-input_format", "yuyv422", "-video_size", "1280x720",
                                               "-i", "/dev/video0", "-frames:v", "60", "-c:v", "ffv1", peer], faults: "fps=10")
        #expect(ff.status == 0, "\(ff.stderr)")
        let run = try reelWithCamera(["record", "--plain", "--source", "v4l2:/dev/video0:1280x720:YUYV", "--frames", "60", "--codec", "ffv1",
                                      "--container", "mkv", "--out", dir, "--name", "reel", "--json"], faults: "fps=10")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        let clip = try #require(s.clips.first)
        let peerIndices = try #require(try probeFrames(peer).frameIndices)
        let reelIndices = try #require(try probeFrames(clip.path).frameIndices)
        #expect(peerIndices == Array(0..<60))
        #expect(s.framesDropped == 0, "\(s.dropReasons)")
        #expect(reelIndices == peerIndices)
        let peerLuma = try lumaDigests(peer), reelLuma = try lumaDigests(clip.path)
        #expect(peerLuma.count == peerIndices.count && reelLuma.count == reelIndices.count)
        let byIndex = Dictionary(uniqueKeysWithValues: zip(peerIndices, peerLuma))
        for (i, digest) in zip(reelIndices, reelLuma) {
            #expect(byIndex[i] == digest, "frame \(i): Reel's luma differs from ffmpeg's")
        }
    }

    /// GStreamer's v4l2src records the emulated camera too (the benchmark's pipeline), on its
    /// own and through libv4l2 (which converts YUYV to I420 itself).
    @Test(.enabled(if: haveGStreamer, "GStreamer is not installed (scripts/setup gstreamer1.0-tools gstreamer1.0-plugins-good)"),
          arguments: [false, true])
    func gstreamerRecordsTheEmulatedCamera(libv4l2: Bool) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let out = dir + "/gst.y4m"
        let caps = libv4l2 ? ["video/x-raw,format=I420,width=1280,height=720"]
                           : ["video/x-raw,format=YUY2,width=1280,height=720", "!", "videoconvert", "!", "video/x-raw,format=I420"]
        let run = try toolWithCamera("gst-launch-1.0", ["-q", "v4l2src", "device=/dev/video0", "num-buffers=60", "!"] + caps
                                                        + ["!", "y4menc", "!", "filesink", "location=\(out)"],
                                     environment: ["GST_V4L2_USE_LIBV4L2": libv4l2 ? "1" : "0"])
        #expect(run.status == 0, "\(run.stderr)")
        // 60 frames, barcodes from 0 rising: the sequence numbers; consecutive unless
        // GStreamer itself fell behind the real-time camera on a loaded machine.
        let idx = try #require(try probeFrames(out).frameIndices)
        #expect(idx.count == 60 && idx.first == 0 && zip(idx, idx.dropFirst()).allSatisfy { $0 < $1 }, "\(idx)")
    }

    // MARK: What the summary says about a camera

    /// `fps` is the rate the camera settled on (S_PARM / G_PARM, or its only rate when it has
    /// no frame-rate control), not `--fps`; a camera is always real time.
    @Test func summaryReportsTheRateTheCameraDelivers() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // A 24 fps camera (it offers 24 and 12), no rate asked for.
        let run = try reelWithCamera(["record", "--plain", "--source", "v4l2:/dev/video0", "--frames", "24", "--codec", "prores:proxy",
                                      "--no-realtime", "--out", dir, "--name", "a", "--json"], faults: "fps=24")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.fps == "24" && s.realtime, "fps \(s.fps) realtime \(s.realtime)")
        // A camera draws nothing of Reel's: no sensor drawing cost (docs/json.md).
        #expect(s.sensorDrawingCPUSeconds == nil)
        // 12 fps asked for in the source: 24 frames take 2 s, and the clip plays at 12 fps.
        let half = try reelWithCamera(["record", "--plain", "--source", "v4l2:/dev/video0:@12", "--frames", "24", "--codec", "prores:proxy",
                                       "--fps", "30", "--out", dir, "--name", "b", "--json"], faults: "fps=24")
        #expect(half.status == 0, "\(half.stderr)")
        let h = try half.decode(RecordingSummary.self)
        #expect(h.fps == "12" && h.realtime && h.elapsedSeconds > 1.8, "fps \(h.fps) elapsed \(h.elapsedSeconds)")
        let hclip = try #require(h.clips.first)
        let probe = try probeFrames(hclip.path)
        #expect(abs((probe.frameRate ?? 0) - 12) < 0.5, "\(String(describing: probe.frameRate))")
        // A camera without frame-rate control (S_PARM, G_PARM: ENOTTY) streams at its own
        // rate whatever is asked: the summary says so (24 frames take 1 s).
        let fixed = try reelWithCamera(["record", "--plain", "--source", "v4l2:/dev/video0:@12", "--frames", "24", "--codec", "prores:proxy",
                                        "--out", dir, "--name", "c", "--json"], faults: "fps=24,noparm")
        #expect(fixed.status == 0, "\(fixed.stderr)")
        let f = try fixed.decode(RecordingSummary.self)
        #expect(f.fps == "24" && f.elapsedSeconds < 1.8, "fps \(f.fps) elapsed \(f.elapsedSeconds)")
    }

    /// An MJPEG frame that does not decode is dropped with reason `corrupt` (not `late`), and
    /// so is a buffer the driver flags V4L2_BUF_FLAG_ERROR; the frames around it are kept.
    @Test(arguments: ["MJPG", "YUYV"])
    func undecodableFramesAreCountedAsCorrupt(fourcc: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reelWithCamera(["record", "--plain", "--source", "v4l2:/dev/video0:\(fourcc)", "--frames", "30", "--codec", "prores:proxy",
                                      "--out", dir, "--name", "c", "--json"], faults: "corrupt=5")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.dropReasons["corrupt"] == 1, "\(s.dropReasons)")
        let clip = try #require(s.clips.first)
        let idx = try #require(try probeFrames(clip.path).frameIndices)
        #expect(!idx.contains(5) && idx.count + s.framesDropped == 30, "\(idx)")
        // Nothing else lost (a loaded machine may still drop a frame late: then only frame 5 is checked).
        if s.framesDropped == 1 { #expect(idx == Array(0..<5) + Array(6..<30)) }
    }

    /// The machine's own cameras.
    static let realCameras = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? [])
        .filter { $0.hasPrefix("video") }.sorted().map { "/dev/" + $0 }

    /// Smoke test of the defaults (the driver's first format, H.264): the machine's first
    /// camera, or the emulated one where there is none.
    @Test(.enabled(if: !realCameras.isEmpty || fakeV4L2Library != nil,
                   "no /dev/video* and the emulated camera is not built (scripts/fake-v4l2 --build; scripts/test does it)"))
    func aCameraSmokeTest() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let emulated = Self.realCameras.isEmpty
        let args = ["record", "--source", "v4l2:" + (Self.realCameras.first ?? "/dev/video0"), "--duration", "2", "--codec", "h264",
                    "--out", dir, "--name", "smoke", "--json"]
        let run = emulated ? try reelWithCamera(args) : try reel(args)
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        let clip = try #require(s.clips.first)
        #expect(s.clips.count == 1 && s.stopReason == "completed" && s.framesCaptured > 0)
        #expect(s.framesWritten + s.framesDropped == s.framesCaptured && s.framesWritten == clip.frames)
        let probe = try probeFrames(clip.path)
        #expect(probe.codec == "h264" && probe.width == clip.width && probe.height == clip.height)
        let idx = try #require(probe.frameIndices)
        #expect(idx.count == clip.frames)
        if emulated {
            // The emulated camera's frames carry their sequence numbers: in order, none twice.
            #expect(s.framesCaptured == 60 && idx.first == 0 && idx == idx.sorted() && Set(idx).count == idx.count, "\(idx)")
        }
    }
}

