import Foundation
import Testing
import ReelCamera
import ReelCapacity
import ReelCapture
import ReelControl
import ReelCore
import ReelPreview
import ReelWriter
#if canImport(Glibc)
import Glibc
#endif

/// A fresh directory under the system's temporary directory.
func scratchDirectory(_ name: String) -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(getpid())-\(UUID().uuidString.prefix(8))").path
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// PSI files (`/proc/pressure`'s format) with `cpu.some` at `cpuSome` per cent, the rest 0.
func writePSI(_ dir: String, cpuSome: Double) throws {
    func line(_ kind: String, _ avg10: Double) -> String { "\(kind) avg10=\(String(format: "%.2f", avg10)) avg60=0.00 avg300=0.00 total=0\n" }
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    try (line("some", cpuSome) + line("full", 0)).write(toFile: dir + "/cpu", atomically: true, encoding: .utf8)
    try (line("some", 0) + line("full", 0)).write(toFile: dir + "/io", atomically: true, encoding: .utf8)
    try (line("some", 0) + line("full", 0)).write(toFile: dir + "/memory", atomically: true, encoding: .utf8)
}

/// A camera on the 1280 synthetic sensor, H.264 into plain files in `dir`, its pressure
/// monitor reading PSI files in `dir/psi` (nominal unless the test writes others) and an
/// empty `dir/sys`.
func testConfiguration(_ dir: String, frames: Int, realtime: Bool = false) throws -> CameraConfiguration {
    var c = CameraConfiguration()
    c.recording.scene = .pattern   // cheap frames: the scene is not these tests' subject
    c.recording.source = .synthetic(size: 1280)
    c.recording.length = .frames(frames)
    c.recording.codec = .h264
    c.recording.realtime = realtime
    c.validation = .asAsked   // what is recorded never depends on the load of the moment
    c.recording.storage = .plain
    c.recording.outputDirectory = dir + "/out"
    c.pressureDirectory = dir + "/psi"
    c.sysfsRoot = dir + "/sys"
    try writePSI(dir + "/psi", cpuSome: 1)
    try FileManager.default.createDirectory(atPath: dir + "/sys", withIntermediateDirectories: true)
    return c
}

/// `Camera.run` on its own thread; `wait()` returns its summary.
final class Running: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    // Written once by the thread before `done` is signalled; read after.
    private var summary: CameraSummary?
    init(_ camera: Camera) {
        Thread { [self] in
            summary = camera.run()
            done.signal()
        }.start()
    }
    func wait() -> CameraSummary {
        done.wait()
        return summary!
    }
    /// `wait()` off Swift's cooperative threads (an async test must not block one).
    func value() async -> CameraSummary {
        await withCheckedContinuation { c in
            DispatchQueue.global().async { c.resume(returning: self.wait()) }
        }
    }
}

/// A camera with a JPEG photo output into `dir`/photos, recording until stopped, started on its
/// own thread: `takesPresses` is photo mode (primary presses take photos).
func runningPhotoCamera(_ dir: String, realtime: Bool = false, takesPresses: Bool = true) throws -> (Camera, Running) {
    var c = try testConfiguration(dir, frames: 100_000, realtime: realtime)
    c.photos = CameraPhotoRequest(directory: dir + "/photos")
    c.photos?.format = .jpeg
    c.photos?.takesPresses = takesPresses
    let camera = try Camera(c)
    return (camera, Running(camera))
}

@Suite struct CameraTests {
    /// A camera made and run in-process records every frame; its summary carries the
    /// recording's keys and the camera's (pressure, events, photos, locks) in one JSON object.
    @Test func aCameraRecordsEveryFrameAndSummarisesInProcess() throws {
        let dir = scratchDirectory("reel-camera")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let camera = try Camera(try testConfiguration(dir, frames: 45))
        let summary = camera.run()
        #expect(camera.recording.failure == nil)
        #expect(summary.recording.stopReason == "completed" && summary.recording.framesDropped == 0)
        let report = try Inspector.verify([dir + "/out"])
        #expect(report.ok && report.framesChecked == 45, "\(report.violation ?? "")")
        #expect(report.clips.first?.firstFrameIndex == 0 && report.clips.last?.lastFrameIndex == 44)
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(summary)) as? [String: Any] ?? [:]
        for key in ["schemaVersion", "clips", "stopReason", "hardwareCost", "pressure", "captureEvents", "markers", "controlChanges", "photos", "locks"] {
            #expect(json.keys.contains(key), "no \(key) in \(json.keys.sorted())")
        }
        #expect((json["pressure"] as? [String: Any])?["handler"] as? String == "on")
        #expect(camera.controls.controls.control("mode") == nil, "no photo output: no mode dial")
    }

    /// `takePhoto` while the camera records: it waits for a frame, saves the photo and the
    /// summary lists it (no burst); the recording goes on until `stop`, every frame kept.
    @Test func aPhotoTakenWhileRecordingIsInTheSummary() throws {
        let dir = scratchDirectory("reel-camera-photo")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (camera, running) = try runningPhotoCamera(dir)
        let photo = try camera.takePhoto()
        camera.stop()
        let summary = running.wait()
        #expect(FileManager.default.fileExists(atPath: photo.path) && photo.path.hasPrefix(dir + "/photos/"))
        #expect(photo.width == 1280 && photo.height == 960, "a 4x3 photo of the 1280 sensor: \(photo.width)x\(photo.height)")
        #expect(summary.photos.count == 1 && summary.photos.first?.burst == nil && summary.photos.first?.photo.path == photo.path)
        #expect(summary.recording.stopReason == "interrupted")
        let report = try Inspector.verify([dir + "/out"])
        let frames = summary.recording.clips.reduce(0) { $0 + $1.frames }
        #expect(report.ok && report.framesChecked == frames && report.clips.last?.lastFrameIndex == frames - 1)
        #expect(photo.frameIndex >= 0 && photo.frameIndex < frames + 16)
    }

    /// A primary press held for one second in photo mode is a burst: at 5 photos a second
    /// after the half-second hold, its shots are due at 0.5, 0.7 and 0.9 s — three photos, all
    /// of burst 1 — whatever the timer managed before the release was handled.
    @Test func aHeldPressTakesABurstOfThree() throws {
        let dir = scratchDirectory("reel-camera-burst")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (camera, running) = try runningPhotoCamera(dir, realtime: true)
        _ = try camera.takePhoto()   // the first frame is there: press times map to frames
        let began = Double(MonotonicClock.now()) / 1e9
        camera.send(CaptureEvent(phase: .began, action: .primary, source: "test", time: began))
        camera.send(CaptureEvent(phase: .ended, action: .primary, source: "test", time: began + 1.0))
        camera.stop()
        let summary = running.wait()
        let burst = summary.photos.filter { $0.burst != nil }
        #expect(summary.photos.count == 4 && burst.count == 3 && burst.allSatisfy { $0.burst == 1 },
                "\(summary.photos.map { ($0.photo.frameIndex, $0.burst ?? 0) })")
        #expect(summary.controls.captureEvents.count == 2)
    }

    /// `stop` before `run` is not lost: the run ends as it begins, nothing recorded.
    @Test func aStopBeforeRunEndsTheRunAsItBegins() throws {
        let dir = scratchDirectory("reel-camera-early-stop")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let camera = try Camera(try testConfiguration(dir, frames: 100_000, realtime: true))
        camera.stop()
        let summary = camera.run()
        #expect(summary.recording.stopReason == "interrupted" && camera.session.stats.framesCaptured == 0)
    }

    /// A camera that cannot serve its preview (the port is taken) refuses with 75, and what it
    /// had opened before — the control socket — is closed and its file gone.
    @Test func aRefusedCameraClosesWhatItOpened() throws {
        let dir = scratchDirectory("reel-camera-refused")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (fd, port) = try listeningSocket()
        defer { close(fd) }
        var c = try testConfiguration(dir, frames: 10)
        c.preview = PreviewRequest(address: PreviewAddress(host: "127.0.0.1", port: port))
        c.controls.socket = dir + "/control.sock"
        var opened: [CameraEvent] = []
        let events = EventLog()
        do {
            _ = try Camera(c) { events.append($0) }
            Issue.record("a camera was made on a port in use")
        } catch let error as CameraError {
            #expect(error.exitStatus == ExitStatus.busy, "\(error)")
        }
        opened = events.all
        #expect(opened.contains(.controlSocket(dir + "/control.sock")), "the socket was opened first: \(opened)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/control.sock"))
        let made = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/out")) ?? []
        #expect(made.isEmpty, "\(made)")
    }

}

extension CameraTests {
    /// The mode dial: a camera with a photo output in video mode has a `mode` picker; a
    /// primary press toggles the movie output and takes no photo; `set("mode", to: "photo")`
    /// switches it, and the next press takes a photo and toggles nothing. The summary lists
    /// the switch among the control changes.
    @Test func theModeDialSwitchesWhatAPressDoes() throws {
        let dir = scratchDirectory("reel-camera-mode")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (camera, running) = try runningPhotoCamera(dir, takesPresses: false)
        #expect(camera.controls.controls.control("mode")?.state.title == "video")
        _ = try camera.takePhoto()   // the first frame is there (and one photo, the app's)
        camera.send(CaptureEvent(phase: .began, action: .primary, source: "test"))
        camera.send(CaptureEvent(phase: .ended, action: .primary, source: "test"))
        camera.controls.dispatcher.drain()
        let switched = camera.set("mode", to: "photo")
        #expect(switched.ok && switched.title == "photo", "\(switched)")
        camera.controls.controls.drain()
        #expect(camera.controls.controls.control("mode")?.state.title == "photo")
        camera.send(CaptureEvent(phase: .began, action: .primary, source: "test"))
        camera.send(CaptureEvent(phase: .ended, action: .primary, source: "test"))
        camera.controls.dispatcher.drain()
        camera.stop()
        let summary = running.wait()
        #expect(summary.recording.recordingToggles.map(\.action) == [.stop], "\(summary.recording.recordingToggles)")
        #expect(summary.photos.count == 2, "the app's photo and the photo-mode press: \(summary.photos.count)")
        #expect(summary.controls.controlChanges.map(\.control) == ["mode"] && summary.controls.controlChanges.first?.title == "photo")
    }

    /// A switch in the middle of a press takes the next press: a press that began in photo
    /// mode ends there (one photo, no toggle of the recording) although the dial went to video
    /// before its release; the next press, in video mode, stops the recording.
    @Test func aSwitchMidPressTakesTheNextPress() throws {
        let dir = scratchDirectory("reel-camera-mode-mid")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (camera, running) = try runningPhotoCamera(dir)
        _ = try camera.takePhoto()   // the first frame is there (and one photo, the app's)
        camera.send(CaptureEvent(phase: .began, action: .primary, source: "test"))
        camera.controls.dispatcher.drain()
        #expect(camera.set("mode", to: "video").ok)
        camera.controls.controls.drain()
        camera.send(CaptureEvent(phase: .ended, action: .primary, source: "test"))
        camera.send(CaptureEvent(phase: .began, action: .primary, source: "test"))
        camera.send(CaptureEvent(phase: .ended, action: .primary, source: "test"))
        camera.controls.dispatcher.drain()
        camera.stop()
        let summary = running.wait()
        #expect(summary.photos.count == 2, "the app's photo and the press begun in photo mode: \(summary.photos.count)")
        #expect(summary.recording.recordingToggles.map(\.action) == [.stop], "\(summary.recording.recordingToggles)")
    }
}

/// An output that holds the capture thread at frame `at` (not in real time) until `release`:
/// the test acts on the camera between two known frames.
final class FrameGate: FrameOutput, @unchecked Sendable {
    let at: Int
    let reached = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    init(at: Int) { self.at = at }
    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        if frame.index == at {
            reached.signal()
            release.wait()
        }
        return .taken
    }
    /// `reached.wait()` off Swift's cooperative threads.
    func arrived() async {
        await withCheckedContinuation { c in DispatchQueue.global().async { self.reached.wait(); c.resume() } }
    }
}


/// Events told to an observer, from any thread.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [CameraEvent] = []
    func append(_ e: CameraEvent) { lock.lock(); events.append(e); lock.unlock() }
    var all: [CameraEvent] { lock.lock(); defer { lock.unlock() }; return events }
}

/// A TCP socket listening on 127.0.0.1 at a port the kernel chose.
func listeningSocket() throws -> (Int32, UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && listen(fd, 4) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard ok else { close(fd); throw POSIXError(.EADDRINUSE) }
    return (fd, UInt16(bigEndian: addr.sin_port))
}
