import CLinux
import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import Synchronization

/// Runs face detection on a session's sensor frames, off the frame path: every `every`th
/// frame is handed over (the capture thread only keeps a reference to its buffer, never
/// waits); a frame that comes while the detector is busy replaces the one waiting, so the
/// detector sees the newest and capture is never held up. `stepped` runs the detection on
/// the capture thread instead, for every `every`th frame without fail: results that do not
/// depend on timing (tests, `--no-realtime`).
public final class FaceTracking: Sendable {
    /// Told each detection's faces (sensor pixels), frame index and session time, and whether
    /// faces in profile were looked for in it.
    public typealias Handler = @Sendable (_ faces: [DetectedFace], _ frame: Int, _ time: Double, _ profiles: Bool) -> Void

    /// Detect every this many frames.
    public let every: Int
    /// Whether detection runs on the capture thread (frame-stepped).
    public let stepped: Bool
    private let detector: Mutex<FaceDetector>
    private let search: FaceDetector.Search
    /// Every this many detections also look for faces in profile (0: none do).
    public let profilesEvery: Int
    private let handler: Handler
    private struct State {
        var waiting: SourceFrame? = nil
        var stopped = false
        var detections = 0
        var skipped = 0
        var cpuSeconds = 0.0
        var wallSeconds = 0.0
    }
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Detection with `detector` on a square sensor of side `side`, every `every`th frame;
    /// every `profilesEvery`th detection also looks for faces in profile (`detector` must have
    /// the profile cascade; 0: never), searched as `FaceDetector.Search.withProfiles` says.
    public init(detector: FaceDetector, sensorSide: Int, every: Int, profilesEvery: Int = 0, stepped: Bool, handler: @escaping Handler) {
        self.detector = Mutex(detector)
        search = .forSensor(side: sensorSide)
        self.profilesEvery = detector.findsProfiles ? max(0, profilesEvery) : 0
        self.every = max(1, every)
        self.stepped = stepped
        self.handler = handler
        if !stepped {
            let t = Thread { [self] in loop() }
            t.name = "reel.faces"
            t.start()
        } else {
            finished.signal()
        }
    }

    /// A sensor frame, from the capture thread (before zoom and the effect: the whole sensor).
    public func offer(_ frame: SourceFrame) {
        guard frame.index % every == 0 else { return }
        if stepped { return detect(frame) }
        let replaced = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            let had = s.waiting != nil
            if had { s.skipped += 1 }
            s.waiting = frame
            return !had
        }
        if replaced { wake.signal() }
    }

    private func loop() {
        while true {
            wake.wait()
            let (frame, stop) = state.withLock { s -> (SourceFrame?, Bool) in
                defer { s.waiting = nil }
                return (s.waiting, s.stopped)
            }
            if let frame, !stop { detect(frame) }
            if stop { break }
        }
        finished.signal()
    }

    private func detect(_ frame: SourceFrame) {
        let buffer = frame.lease.buffer
        let (luma, stride) = buffer.plane(0)
        let profiles = state.withLock { profilesEvery > 0 && $0.detections % profilesEvery == 0 }
        let cpu0 = threadCPUSeconds(), wall0 = MonotonicClock.now()
        let found = (try? detector.withLock {
            try $0.detect(gray: luma, size: buffer.size, stride: stride, search: profiles ? search.withProfiles : search)
        }) ?? []
        let cpu = threadCPUSeconds() - cpu0, wall = MonotonicClock.seconds(since: wall0)
        state.withLock { $0.detections += 1; $0.cpuSeconds += cpu; $0.wallSeconds += wall }
        handler(found, frame.index, frame.pts.seconds, profiles)
    }

    /// Detections run, frames skipped because the detector was busy, and the mean CPU and
    /// wall time of one detection (ms).
    public var stats: (detections: Int, skipped: Int, cpuMs: Double, wallMs: Double) {
        state.withLock { s in
            let n = Double(max(1, s.detections))
            return (s.detections, s.skipped, s.cpuSeconds * 1000 / n, s.wallSeconds * 1000 / n)
        }
    }

    /// Ends detection once the frame in progress is done (a waiting frame is let go).
    public func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return }
        if !stepped { wake.signal() }
        finished.wait()
    }
}
