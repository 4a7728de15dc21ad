import Foundation
import Testing
import ReelCamera
import ReelCapacity
import ReelCapture
import ReelControl
import ReelCore
import ReelPreview
import ReelWriter
import Glibc

/// The camera tests that await its events (`camera.events`) on Swift's cooperative threads.
/// In the parallel phase the blocking tests beside them (processes waited for) hold both of
/// this 2-core machine's cooperative threads: in a clean-clone run of `scripts/test` all four
/// started with the phase and resumed together only as it ended, 385–388 s later, one past its
/// 1-minute limit. They run in the serial phase, as the real-time suites do.
@Suite struct RealtimeCameraEventTests {
    /// A `critical` reading pauses the preview and steps the frame rate to the ladder's lowest
    /// step (15 fps for 30); the timeline says so. Waits on the camera's events, not the clock.
    @Test(.timeLimit(.minutes(1))) func criticalPressurePausesThePreviewAndStepsTheRate() async throws {
        let dir = scratchDirectory("reel-camera-pressure")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = try testConfiguration(dir, frames: 1_000_000)
        c.preview = PreviewRequest(address: PreviewAddress(host: "127.0.0.1", port: 0))
        try writePSI(dir + "/psi", cpuSome: 90)
        let camera = try Camera(c)
        let running = Running(camera)
        for await event in camera.events {
            if case .pressure(.critical) = event { break }
        }
        #expect(camera.pressureHandler.current.framesPerSecond == 15 && camera.pressureHandler.current.previewPaused)
        camera.stop()
        let summary = await running.value()
        let critical = summary.pressure.timeline.first { $0.state.level == .critical }
        #expect(critical?.action?.framesPerSecond == 15 && critical?.preview == "paused", "\(summary.pressure.timeline)")
        #expect(summary.recording.stopReason == "interrupted")
    }

    /// With the pressure handler off the same reading is only logged: the rate stays.
    @Test(.timeLimit(.minutes(1))) func theHandlerOffOnlyLogsTheLevel() async throws {
        let dir = scratchDirectory("reel-camera-pressure-off")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = try testConfiguration(dir, frames: 1_000_000)
        c.pressureHandler = false
        try writePSI(dir + "/psi", cpuSome: 90)
        let camera = try Camera(c)
        let running = Running(camera)
        for await event in camera.events {
            if case .pressure(.critical) = event { break }
        }
        camera.stop()
        let summary = await running.value()
        #expect(summary.pressure.handler == "off" && summary.pressure.timeline.contains { $0.state.level == .critical && $0.action == nil })
        #expect(summary.recording.frameRateChanges.isEmpty)
    }

    /// Secondary presses on the synthetic sensor lay markers (it has no lock); a primary press
    /// in video mode toggles the movie output, and both are in the summary.
    @Test(.timeLimit(.minutes(1))) func pressesLayMarkersAndToggleRecording() async throws {
        let dir = scratchDirectory("reel-camera-presses")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = try testConfiguration(dir, frames: 100_000, realtime: true)
        c.recording.standby = true
        let camera = try Camera(c)
        let running = Running(camera)
        for await event in camera.events {
            if case .firstFrame = event { break }   // the session runs: presses get frame indices
        }
        camera.send(CaptureEvent(phase: .began, action: .secondary, source: "test"))
        camera.send(CaptureEvent(phase: .ended, action: .secondary, source: "test"))
        let started = try camera.startRecording(source: "test")
        let stopped = try camera.stopRecording(source: "test")
        camera.stop()
        let summary = await running.value()
        #expect(summary.controls.markers.count == 1 && summary.controls.markers.first?.frameIndex != nil)
        #expect(started.action == .start && stopped.action == .stop && summary.recording.recordingToggles.count == 2)
        #expect(summary.recording.recordingToggles.map(\.source) == ["test", "test"])
    }

    /// A `serious` level handed to the handler between frames 30 and 31 (the capture thread
    /// held at 30, not in real time): the rate steps 30 → 24 from frame 31, the preview is
    /// thinned, the timeline states the frame, and the clip's timestamps follow the new cadence
    /// from it (`verify` names the change). No clock decides anything.
    @Test(.timeLimit(.minutes(1))) func seriousStepsTheRateFromTheNextFrame() async throws {
        let dir = scratchDirectory("reel-camera-serious")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = try testConfiguration(dir, frames: 90)
        c.preview = PreviewRequest(address: PreviewAddress(host: "127.0.0.1", port: 0))
        let camera = try Camera(c)
        let gate = FrameGate(at: 30)
        try camera.session.addOutput(gate)
        let running = Running(camera)
        for await event in camera.events {
            if case .pressure(.nominal) = event { break }   // the monitor's first reading is in
        }
        await gate.arrived()
        camera.pressureHandler.handle(PressureState(atSeconds: 1, level: .serious, factors: ["cpu.some 60%"], cost: 0.75,
                                                    sample: PressureSample(cpuSome: 60)))
        gate.release.signal()
        let summary = await running.value()
        #expect(summary.recording.stopReason == "completed" && summary.recording.framesDropped == 0)
        let changes = summary.recording.frameRateChanges
        #expect(changes.map(\.frameIndex) == [31] && changes.map(\.from) == [30] && changes.map(\.to) == [24], "\(changes)")
        let step = try #require(summary.pressure.timeline.last)
        #expect(step.state.level == .serious && step.action?.framesPerSecond == 24 && step.frameIndex == 31 && step.preview == "reduced")
        let report = try Inspector.verify([dir + "/out"])
        #expect(report.ok && report.framesChecked == 90, "\(report.violation ?? "")")
        #expect(report.cadenceChanges.map(\.frameIndex) == [31] && report.cadenceChanges.map(\.framesPerSecond) == [24])
    }
}
