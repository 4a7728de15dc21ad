import Foundation
import Synchronization
import Testing
import ReelCamera
import ReelCapture
import ReelCore
import ReelFraming

/// Smart framing through the library: the monitor observed while the camera runs, stopped on
/// the running session, and `recommend` applying nothing.
@Suite struct SmartFramingCameraTests {
    /// 360 frames of the people scene on the 4032 sensor with `recommend`: the first
    /// recommendation (the astronaut alone, portrait) reaches the observer as a
    /// `CameraEvent.framing`; the observer stops the monitor there, so the second person (who
    /// would make it recommend landscape at frame 330) brings nothing more. Nothing is applied:
    /// no seam, no control change. In standby (the session runs, nothing is encoded: the
    /// monitor needs no recording, and a 4032 recording would take most of a minute here).
    @Test func theMonitorIsObservedAndStoppedWhileTheCameraRuns() throws {
        let dir = scratchDirectory("reel-framing-camera")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = try testConfiguration(dir, frames: 360)
        c.recording.scene = .people
        c.recording.source = .synthetic(size: 4032)
        c.recording.ratio = .landscape4x3
        c.recording.standby = true
        var request = SmartFramingRequest(parts: [.recommend])
        request.stepped = true
        c.smartFraming = request
        let seen = Mutex<[FramingRecommendation]>([])
        let monitor = Mutex<SmartFramingMonitor?>(nil)
        let camera = try Camera(c) { event in
            guard case .framing(let r) = event else { return }
            seen.withLock { $0.append(r) }
            monitor.withLock { $0 }?.stopMonitoring()
        }
        let m = try #require(camera.smartFramingMonitor)
        monitor.withLock { $0 = m }
        #expect(m.isMonitoring)
        #expect(m.enabledFramings == m.supportedFramings && m.supportedFramings.count == 8)
        let summary = camera.run()
        let made = seen.withLock { $0 }
        #expect(made.count == 1, "\(made)")
        #expect(made.first?.ratio == "3x4" && made.first?.applied == false)
        #expect(summary.framingRecommendations?.count == 1)
        #expect(summary.framingRecommendations?.first?.appliedFrame == nil)
        #expect(m.recommendedFraming == made.first?.framing)
        #expect(!m.isMonitoring)
        #expect(summary.recording.seams.isEmpty && summary.controls.controlChanges.isEmpty)
        #expect(summary.recording.clips.isEmpty && summary.recording.framesCaptured == 360)
        #expect((summary.smartFraming?.detections ?? 0) >= 24, "every 15th frame of 360, stepped")
    }

    /// Without the 4032 photo format the camera is not made (64), and says why.
    @Test func theCameraRefusesSmartFramingWithoutThe4032Format() throws {
        let dir = scratchDirectory("reel-framing-gate")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var c = try testConfiguration(dir, frames: 5)
        c.smartFraming = SmartFramingRequest(parts: [.zoom])
        do {
            _ = try Camera(c)
            Issue.record("made")
        } catch let e as FramingError {
            #expect(e.exitStatus == 64 && e.description.contains("this session has the 1280×1280 photo format"))
        }
    }
}
