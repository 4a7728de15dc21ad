import Foundation
import ReelWriter
import Testing

/// Writes PSI files (`cpu`, `io`, `memory`, as /proc/pressure has them) into `dir`, each
/// replaced whole (a reader never sees half a file).
private func writePSI(_ dir: String, cpuSome: Double = 1, memoryFull: Double = 0) throws {
    func line(_ kind: String, _ avg10: Double) -> String {
        "\(kind) avg10=\(String(format: "%.2f", avg10)) avg60=0.00 avg300=0.00 total=0\n"
    }
    try (line("some", cpuSome) + line("full", 0)).write(toFile: dir + "/cpu", atomically: true, encoding: .utf8)
    try (line("some", 0) + line("full", 0)).write(toFile: dir + "/io", atomically: true, encoding: .utf8)
    try (line("some", memoryFull) + line("full", memoryFull)).write(toFile: dir + "/memory", atomically: true, encoding: .utf8)
}


/// The summary's pressure part, as the documentation (docs/json.md) documents it.
private struct PressureJSON: Decodable {
    struct Action: Decodable { var framesPerSecond: Double; var previewPaused: Bool; var stop: Bool }
    struct Entry: Decodable {
        var level: String
        var action: Action?
        var frameIndex: Int?
        var preview: String?
        var note: String?
    }
    var level: String
    var handler: String
    var timeline: [Entry]
}
private struct SummaryWithPressure: Decodable { var pressure: PressureJSON }

private struct VerifyJSON: Decodable {
    struct Change: Decodable { var frameIndex: Int; var framesPerSecond: Double }
    var ok: Bool
    var violation: String?
    var cadenceChanges: [Change]
}

/// One `reel record --json` (H.264, 1280 sensor, a preview on a free port) whose pressure
/// monitor reads PSI files this test writes (`REEL_PRESSURE_DIR`), in a fresh directory:
/// started at nominal figures, it runs until SIGINT (or its handler stops it). `remove()`
/// kills it if it still runs and removes the directory.
private struct PressureRecording {
    let dir: String
    let psi: String
    let port: UInt16
    let rec: Launched

    init(extra: [String] = []) throws {
        let dir = temporaryDirectory("reel-pressure")
        do {
            let psi = dir + "/psi"
            try FileManager.default.createDirectory(atPath: psi, withIntermediateDirectories: true)
            try writePSI(psi)
            let port = try freePort()
            rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--duration", "600", "--codec", "h264",
                              "--source", "synthetic:1280", "--preview", "127.0.0.1:\(port)"] + extra,
                             environment: ["REEL_PRESSURE_DIR": psi])
            (self.dir, self.psi, self.port) = (dir, psi, port)
        } catch {
            removeTree(dir)
            throw error
        }
    }

    /// Kills the recording if it still runs; removes the directory.
    func remove() {
        if rec.process.isRunning { rec.signal(SIGKILL) }
        removeTree(dir)
    }

    /// Replaces the PSI files with these figures.
    func writeFigures(cpuSome: Double = 1, memoryFull: Double = 0) throws {
        try writePSI(psi, cpuSome: cpuSome, memoryFull: memoryFull)
    }

    /// Polls the preview's `/status` every 100 ms (generous deadline: CI is a loaded 2-core
    /// machine) until `condition` holds of its frames and pressure level; those, or nil.
    func waitForStatus(seconds: Double = 90, _ condition: (Int, String?) -> Bool) -> (frames: Int, pressure: String?)? {
        var found: (frames: Int, pressure: String?)? = nil
        waitUntil(seconds, every: 0.1) {
            guard let j = previewStatus(previewBase(port)), let frames = j["frames"] as? Int else { return false }
            let level = j["pressure"] as? String
            if condition(frames, level) { found = (frames, level) }
            return found != nil
        }
        return found
    }

    /// The outcome of a finished recording: exit 0 expected; its summary and the summary's
    /// pressure part.
    func summary(of run: Run, sourceLocation: SourceLocation = #_sourceLocation) throws -> (RecordingSummary, PressureJSON) {
        #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLocation)
        return (try run.decode(RecordingSummary.self), try run.decode(SummaryWithPressure.self).pressure)
    }

    /// SIGINT (the session finishes cleanly), then `summary(of:)` of what it printed.
    func stop(sourceLocation: SourceLocation = #_sourceLocation) throws -> (RecordingSummary, PressureJSON) {
        rec.signal(SIGINT)
        return try summary(of: rec.wait(), sourceLocation: sourceLocation)
    }

    /// `reel verify --json` of the recording's directory.
    func verify() throws -> Run { try reel(["verify", "--json", dir + "/out"]) }
}

/// The pressure handler with real `reel record` processes: the monitor reads PSI files the
/// test writes (`REEL_PRESSURE_DIR`), the handler acts on the running session.
@Suite(.serialized) struct RealtimePressureHandlerTests {
    // `serious` stepping the rate at a stated frame, and the handler off, are tested in
    // process (ReelCameraTests: `seriousStepsTheRateFromTheNextFrame`,
    // `theHandlerOffOnlyLogsTheLevel`), without the clock; these keep what needs the binary:
    // the PSI files read by a real process, `/status`, the exit at shutdown.

    /// `critical` goes straight to the lowest rate with the preview paused; figures back under
    /// the thresholds (for the 5 s hold-down) restore the configured rate and the preview. The
    /// clip has both changes at the frames stated, and verifies.
    @Test(.enabled(if: haveCurl, "curl reads the preview's status"))
    func criticalPausesThePreviewAndNominalRestores() throws {
        let session = try PressureRecording()
        defer { session.remove() }
        try #require(session.waitForStatus { frames, level in frames >= 30 && level == "nominal" } != nil)
        try session.writeFigures(cpuSome: 90)
        let critical = try #require(session.waitForStatus { _, level in level == "critical" })
        #expect(session.waitForStatus { frames, _ in frames >= critical.frames + 15 } != nil)
        try session.writeFigures(cpuSome: 1)
        let back = try #require(session.waitForStatus { _, level in level == "nominal" }, "never back to nominal")
        #expect(session.waitForStatus { frames, _ in frames >= back.frames + 30 } != nil)
        let (summary, pressure) = try session.stop()
        #expect(summary.framesDropped == 0, "\(summary.dropReasons)")
        let changes = summary.frameRateChanges
        try #require(changes.count == 2, "\(changes)")
        #expect(changes.map(\.from) == [30, 15] && changes.map(\.to) == [15, 30])
        #expect(pressure.timeline.map(\.level) == ["nominal", "critical", "nominal"])
        #expect(pressure.timeline.map { $0.action?.framesPerSecond } == [30, 15, 30])
        #expect(pressure.timeline.map(\.preview) == ["full", "paused", "full"])
        #expect(pressure.timeline.map(\.frameIndex) == [nil, changes[0].frameIndex, changes[1].frameIndex])
        let verify = try session.verify()
        let report = try verify.decode(VerifyJSON.self)
        #expect(verify.status == 0 && report.ok, "\(report.violation ?? "")")
        #expect(report.cadenceChanges.map(\.frameIndex) == changes.map(\.frameIndex))
        #expect(report.cadenceChanges.map(\.framesPerSecond) == [15, 30])
    }

    /// `shutdown` figures: the handler finishes the clip and stops; `stopReason: "pressure"`,
    /// exit 0, and the clip is whole.
    @Test(.enabled(if: haveCurl, "curl reads the preview's status"))
    func shutdownFinishesTheClipAndStops() throws {
        let session = try PressureRecording()
        defer { session.remove() }
        try #require(session.waitForStatus { frames, _ in frames >= 30 } != nil)
        try session.writeFigures(memoryFull: 70)
        // It stops by itself; a SIGINT after a generous deadline only keeps a failure from hanging.
        let stoppedByItself = waitUntil(60, every: 0.1) { !session.rec.process.isRunning }
        if !stoppedByItself { session.rec.signal(SIGINT) }
        let run = session.rec.wait()
        #expect(stoppedByItself, "the recording did not stop at shutdown")
        let (summary, pressure) = try session.summary(of: run)
        #expect(summary.stopReason == "pressure" && summary.error == nil)
        #expect(pressure.timeline.last?.level == "shutdown" && pressure.timeline.last?.action?.stop == true)
        #expect(summary.clips.count == 1 && summary.framesWritten >= 30 && summary.clips.allSatisfy { !$0.salvaged })
        let verify = try session.verify()
        #expect(verify.status == 0, "\(verify.stderr)")
    }

    /// A value other than on/off is a usage error.
    @Test func pressureHandlerTakesOnOrOff() throws {
        let run = try reel(["record", "--pressure-handler", "maybe", "--frames", "1"])
        #expect(run.status == 64)
        #expect(run.stderr == "reel: --pressure-handler: 'maybe' is not on or off\n")
    }
}
