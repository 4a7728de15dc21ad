import Foundation
import Synchronization
import ReelAudio
import ReelCapture
import ReelCore

/// A recording's microphone: its capture thread starts at the first video frame — when the
/// session clock's 0 is known, which places the samples — and delivers into the writer; it
/// stops after the writer has finished, so that the last clip's sound reaches its last frame's end.
final class AudioCapture: Sendable {
    let source: any AudioSource
    private let writer: AssetWriter
    private let zero: @Sendable () -> UInt64?
    private let started = Atomic(false)
    private let zeroUsed = Atomic<UInt64>(0)

    /// The session clock's 0 the samples were placed by (monotonic ns), once started.
    var sessionZeroNs: UInt64? { let z = zeroUsed.load(ordering: .acquiring); return z == 0 ? nil : z }
    private let done = DispatchSemaphore(value: 0)

    /// `zero`: the video source's session-clock 0 on CLOCK_MONOTONIC (nil: not known, the first
    /// frame's arrival less its pts is used).
    init(source: any AudioSource, writer: AssetWriter, zero: @escaping @Sendable () -> UInt64?) {
        self.source = source; self.writer = writer; self.zero = zero
    }

    /// Starts the capture thread (once) for a session whose first frame, at `pts`, arrived now.
    func start(firstFrameAt pts: Timestamp) {
        guard started.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        let now = MonotonicClock.now()
        let zeroNs = zero() ?? (now &- UInt64(max(0, (pts.seconds * 1e9).rounded())))
        zeroUsed.store(zeroNs, ordering: .releasing)
        let thread = Thread { [source, writer, done] in
            do throws(AudioError) { try source.capture(sessionZeroNs: zeroNs, delegate: writer) } catch {
                writer.audio(didFail: error)
            }
            writer.audioSourceEnded()
            done.signal()
        }
        thread.name = "reel.audio"
        thread.start()
    }

    /// Stops the source and waits for its thread (at once when it never started) — at most
    /// 2 s: a device stuck in a call is left to its thread, and the recording ends all the same.
    func stopAndWait() {
        source.stop()
        if started.load(ordering: .acquiring) { _ = done.wait(timeout: .now() + 2) } else { writer.audioSourceEnded() }
    }
}

/// An output that takes nothing: the first frame starts the recording's microphone.
final class AudioStarter: FrameOutput, Sendable {
    private let capture: AudioCapture
    init(capture: AudioCapture) { self.capture = capture }

    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        capture.start(firstFrameAt: frame.pts)
        return .taken
    }
}

/// The writer, once made: what the synthetic sound, made before it, reads its pace from.
final class WriterBox: Sendable {
    private let value = Mutex<AssetWriter?>(nil)
    var writer: AssetWriter? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
