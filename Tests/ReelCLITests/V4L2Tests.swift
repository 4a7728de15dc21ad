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
        let size = try reelWithCamera(["record", "--source", "v4l2:/dev/video0:1920x1080", "--frames", "5", "--out", dir])
        #expect(size.status == 64 && size.stderr.contains("does not offer") && size.stderr.contains("YUYV 1280x720@30"), "\(size.stderr)")
        let fourcc = try reelWithCamera(["record", "--source", "v4l2:/dev/video0:H264", "--frames", "5", "--out", dir])
        #expect(fourcc.status == 64 && fourcc.stderr.contains("does not offer"), "\(fourcc.stderr)")
        let notCamera = try reel(["record", "--source", "v4l2:/dev/null", "--frames", "5", "--out", dir])
        #expect(notCamera.status != 0 && notCamera.stderr.split(separator: "\n").count == 1, "\(notCamera.stderr)")
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
