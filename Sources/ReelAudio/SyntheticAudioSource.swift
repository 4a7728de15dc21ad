import Foundation
import Synchronization
import ReelCore

/// The synthetic microphone (`--audio synthetic`): the ``ClickSignal`` on the session clock —
/// sample frame n at n / rate seconds of session time, so a click at every whole second lands
/// on the video frame of that second — delivered in 10 ms chunks as its time comes.
///
/// Paced by `now` (session-clock ns): real time by default (the monotonic clock from the
/// session's 0), or a recording's media time when the video runs faster than real time.
public final class SyntheticAudioSource: AudioSource, Sendable {
    /// 48 kHz stereo unless made otherwise.
    public let format: AudioFormat
    /// `synthetic`.
    public var name: String { "synthetic" }
    private let stopAt = Mutex<Int64?>(nil)
    private let stopping = Atomic(false)
    private let pace: (@Sendable () -> Int64?)?

    /// A source of `format`; `pace` gives the session time reached (nil: not started), for a
    /// recording not in real time — without it the monotonic clock paces the samples.
    public init(format: AudioFormat = .standard, pace: (@Sendable () -> Int64?)? = nil) {
        self.format = format
        self.pace = pace
    }

    /// Makes the signal in 10 ms chunks as their time comes, until `stop`.
    /// - Throws: nothing in practice (the protocol's requirement throws for devices).
    public func capture(sessionZeroNs: UInt64, delegate: any AudioSourceDelegate) throws(AudioError) {
        let rate = format.sampleRate, channels = format.channels
        let signal = ClickSignal(sampleRate: rate)
        let chunk = Int64(max(1, rate / 100))
        delegate.audio(clock: AudioClock(originNs: 0, sampleRate: rate))
        // The samples before session time `ns` (which is a whole ns, rounded down): ⌈ns × rate⌉.
        func framesBefore(_ ns: Int64) -> Int64 { Int64((Int128(ns) * Int128(rate) + 999_999_999) / 1_000_000_000) }
        var samples = [Int16](repeating: 0, count: Int(chunk) * channels)
        var next: Int64 = 0
        while true {
            var end = next + chunk
            let endNs = Int64(Int128(end) * 1_000_000_000 / Int128(rate))
            // Done once stopped and every sample up to the stop time is out.
            if stopping.load(ordering: .acquiring) {
                guard let limit = stopAt.withLock({ $0 }), next * 1_000_000_000 / Int64(rate) < limit else { return }
            }
            if let pace {
                // Paced by the video's media time: the samples up to where it has reached, a
                // part of a chunk when that is all there is (the last frame's end is rarely on
                // a 10 ms step, and a clip closing waits for the samples up to it).
                while true {
                    let reached = pace().map(framesBefore) ?? 0
                    if reached >= end { break }
                    if reached > next && stopReached(next: next, rate: rate) == false {
                        usleep(1000)
                        if let again = pace().map(framesBefore), again == reached { end = reached; break }
                        continue
                    }
                    if stopReached(next: next, rate: rate) { break }
                    usleep(1000)
                }
            } else {
                MonotonicClock.sleep(until: sessionZeroNs &+ UInt64(max(0, endNs)))
            }
            let frames = Int(end - next)
            if samples.count != frames * channels { samples = [Int16](repeating: 0, count: frames * channels) }
            signal.fill(&samples, from: next, channels: channels)
            delegate.audio(didCapture: AudioChunk(firstFrame: next, samples: samples, channels: channels))
            next = end
        }
    }

    private func stopReached(next: Int64, rate: Int) -> Bool {
        guard stopping.load(ordering: .acquiring) else { return false }
        guard let limit = stopAt.withLock({ $0 }) else { return true }
        return next * 1_000_000_000 / Int64(rate) >= limit
    }

    /// Ends `capture` once the samples up to session time `ns` are out (nil: at once).
    public func stop(afterSessionNs ns: Int64?) {
        stopAt.withLock { $0 = ns }
        stopping.store(true, ordering: .releasing)
    }
}
