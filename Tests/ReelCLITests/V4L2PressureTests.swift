import Foundation
import ReelWriter
import Testing

/// PSI files (`cpu`, `io`, `memory`, /proc/pressure's format) with `cpuSome` as the cpu `some`
/// avg10, each replaced whole.
private func writeCameraPSI(_ dir: String, cpuSome: Double) throws {
    func line(_ kind: String, _ avg10: Double) -> String {
        "\(kind) avg10=\(String(format: "%.2f", avg10)) avg60=0.00 avg300=0.00 total=0\n"
    }
    try (line("some", cpuSome) + line("full", 0)).write(toFile: dir + "/cpu", atomically: true, encoding: .utf8)
    for name in ["io", "memory"] { try (line("some", 0) + line("full", 0)).write(toFile: dir + "/" + name, atomically: true, encoding: .utf8) }
}

/// The preview's `/status` frames and pressure level (curl), polled until `condition` holds
/// (generous deadline: CI is a loaded 2-core machine); nil if it never did.
private func waitForCameraStatus(_ port: UInt16, seconds: Double = 90, _ condition: (Int, String?) -> Bool) -> (frames: Int, level: String?)? {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if let j = previewStatus(previewBase(port)), let frames = j["frames"] as? Int, condition(frames, j["pressure"] as? String) {
            return (frames, j["pressure"] as? String)
        }
        usleep(100_000)
    }
    return nil
}

private struct CameraPressureJSON: Decodable {
    struct Action: Decodable { var framesPerSecond: Double }
    struct Entry: Decodable { var level: String; var action: Action?; var frameIndex: Int?; var note: String? }
    struct Pressure: Decodable { var timeline: [Entry] }
    var pressure: Pressure
}

private struct CameraVerifyJSON: Decodable {
    struct Change: Decodable { var frameIndex: Int; var framesPerSecond: Double; var keepsOneFrameIn: Int? }
    var ok: Bool
    var violation: String?
    var cadenceChanges: [Change]
}

/// The pressure handler on a V4L2 camera (the emulation, at 30 fps): `serious` steps the rate
/// down while streaming — by VIDIOC_S_PARM where the driver takes it (`parm-live`), else by
/// keeping every 2nd frame (uvcvideo's EBUSY, the emulation's default; `noparm`: no frame-rate
/// control at all) — and `nominal` undoes it. Real time: the camera paces the frames.
@Suite(.serialized) struct RealtimeV4L2PressureTests {
    static let cannotRun = fakeV4L2Library == nil || installedTool("curl") == nil

    /// One recording through serious and back to nominal; the summary, the clip's barcodes
    /// (the camera's sequence numbers) and timestamps checked against the method.
    @Test(.enabled(if: !cannotRun, "needs the V4L2 emulation (scripts/fake-v4l2 --build) and curl"),
          arguments: [("parm-live", "S_PARM"), ("", "decimation"), ("noparm", "decimation")])
    func seriousStepsTheCameraAndNominalRestoresIt(faults: String, method: String) throws {
        let lib = try #require(fakeV4L2Library)
        let dir = temporaryDirectory("reel-v4l2-pressure")
        defer { removeTree(dir) }
        let psi = dir + "/psi"
        try FileManager.default.createDirectory(atPath: psi, withIntermediateDirectories: true)
        try writeCameraPSI(psi, cpuSome: 1)
        let port = try freePort()
        let rec = try launch(["record", "--source", "v4l2:/dev/video0:640x480@30", "--codec", "prores:proxy", "--plain", "--json",
                              "--out", dir + "/out", "--preview", "127.0.0.1:\(port)"] + untilSIGINT,
                             environment: ["LD_PRELOAD": lib, "FAKE_V4L2": faults, "REEL_PRESSURE_DIR": psi])
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        try #require(waitForCameraStatus(port) { frames, level in frames >= 30 && level == "nominal" } != nil, "never recorded at nominal")
        try writeCameraPSI(psi, cpuSome: 60)
        let serious = try #require(waitForCameraStatus(port) { _, level in level == "serious" }, "/status never said serious")
        try #require(waitForCameraStatus(port) { frames, _ in frames >= serious.frames + 30 } != nil)
        try writeCameraPSI(psi, cpuSome: 1)
        let nominal = try #require(waitForCameraStatus(port) { _, level in level == "nominal" }, "/status never said nominal again")
        try #require(waitForCameraStatus(port) { frames, _ in frames >= nominal.frames + 30 } != nil)
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.framesDropped == 0, "\(s.dropReasons)")
        #expect(s.fps == "30")
        // 30 → 24 asked: the camera offers 30 and 15, and 24 is no whole divisor of 30: 15.
        try #require(s.frameRateChanges.count == 2, "\(s.frameRateChanges)")
        let (down, up) = (s.frameRateChanges[0], s.frameRateChanges[1])
        #expect(down.from == 30 && down.to == 15 && down.method == method && down.frameIndex > 30)
        #expect(up.from == 15 && up.to == 30 && up.method == method && up.frameIndex > down.frameIndex)
        let timeline = try run.decode(CameraPressureJSON.self).pressure.timeline
        let step = try #require(timeline.first { $0.level == "serious" })
        #expect(step.action?.framesPerSecond == 15 && step.frameIndex == down.frameIndex)
        let note = step.note ?? ""
        #expect(note.hasPrefix(method), "\(note)")
        switch faults {
        case "parm-live": #expect(note.contains("24 fps is not offered by the camera"), "\(note)")
        case "noparm": #expect(note.contains("no frame-rate control") && note.contains("one frame in 2 is kept, 15 fps"), "\(note)")
        default: #expect(note.contains("Device or resource busy") && note.contains("one frame in 2 is kept, 15 fps"), "\(note)")
        }
        #expect(timeline.last?.level == "nominal" && timeline.last?.action?.framesPerSecond == 30 && timeline.last?.frameIndex == up.frameIndex)

        let clip = try #require(s.clips.first)
        let probe = try probeFrames(clip.path)
        let idx = try #require(probe.frameIndices), pts = try #require(probe.framePTS)
        try #require(idx.count == pts.count && idx.count == s.framesWritten)
        let (n, r) = (try #require(idx.firstIndex(of: down.frameIndex)), try #require(idx.firstIndex(of: up.frameIndex)))
        try #require(r + 2 < idx.count)
        if method == "S_PARM" {
            // Every frame of the camera kept: barcodes consecutive; 1/30 s apart up to the step,
            // 1/15 s from it to the restore, 1/30 s after; `verify` finds both cadence changes.
            #expect(idx == Array(0..<idx.count) && s.framesDecimated == 0)
            #expect(abs(pts[n] - pts[n - 1] - 1.0 / 30) < 1e-3 && abs(pts[n + 1] - pts[n] - 1.0 / 15) < 1e-3, "\(pts[(n - 2)...(n + 2)])")
            #expect(abs(pts[r] - pts[r - 1] - 1.0 / 15) < 1e-3 && abs(pts[r + 1] - pts[r] - 1.0 / 30) < 1e-3, "\(pts[(r - 2)...(r + 2)])")
            let verify = try reel(["verify", "--json", dir + "/out"])
            let report = try verify.decode(CameraVerifyJSON.self)
            #expect(verify.status == 0 && report.ok, "\(report.violation ?? "")")
            #expect(report.cadenceChanges.map(\.frameIndex) == [down.frameIndex, up.frameIndex])
            // (The camera's timestamps are whole microseconds: 1/30 s is 33333 µs, so ±0.01 fps.)
            #expect(zip(report.cadenceChanges.map(\.framesPerSecond), [15.0, 30.0]).allSatisfy { abs($0 - $1) < 0.01 } && report.cadenceChanges.count == 2,
                    "\(report.cadenceChanges.map(\.framesPerSecond))")
        } else {
            // One frame in 2 kept between the step and the restore: the camera's sequence numbers
            // (the barcodes) go up by exactly 2 there and by 1 elsewhere; every frame keeps its
            // capture time (1/30 s per sequence number); the frames let go are counted, not dropped.
            let gaps = zip(idx, idx.dropFirst()).map { $1 - $0 }
            #expect(idx.first == 0)
            #expect(gaps[..<n].allSatisfy { $0 == 1 } && gaps[n..<r].allSatisfy { $0 == 2 } && gaps[r...].allSatisfy { $0 == 1 }, "\(gaps)")
            #expect(zip(idx, pts).allSatisfy { abs($1 - Double($0) / 30) < 1e-3 })
            #expect(s.framesDecimated == r - n)
            #expect(s.framesCaptured == s.framesWritten)
            // `verify` accepts the gaps as decimation (one frame in 2 from the step to the
            // restore), and nothing else.
            let verify = try reel(["verify", "--json", dir + "/out"])
            let report = try verify.decode(CameraVerifyJSON.self)
            #expect(verify.status == 0 && report.ok, "\(report.violation ?? "")")
            #expect(report.cadenceChanges.map(\.frameIndex) == [down.frameIndex, up.frameIndex])
            #expect(report.cadenceChanges.map(\.keepsOneFrameIn) == [2, nil], "\(report.cadenceChanges.map(\.keepsOneFrameIn))")
        }
    }
}
