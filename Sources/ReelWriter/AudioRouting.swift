import Foundation
import ReelAudio
import ReelCore
import ReelMedia

/// The clips' sound: its codec and what the source delivers.
public struct AudioTrackSettings: Sendable, Hashable {
    /// The codec (PCM, AAC, Opus).
    public var codec: AudioCodec
    /// The source's rate and channels.
    public var format: AudioFormat
    /// The samples are on the session clock itself (the synthetic source: its clicks mark
    /// whole seconds of it), which the clips say (`com.reel.audio_clock`: `session`, else
    /// `device`) so that `verify` measures the A/V offset from them.
    public var onSessionClock: Bool

    /// Sound of `format` recorded as `codec`.
    public init(codec: AudioCodec, format: AudioFormat, onSessionClock: Bool = false) {
        self.codec = codec; self.format = format; self.onSessionClock = onSessionClock
    }
}

/// What the writer counted of the sound, in sample frames.
public struct AudioCounts: Sendable, Equatable {
    /// Samples captured within the recording's clips' time (from each clip's first frame to
    /// the end of its last): what the clips should hold.
    public var captured: Int64 = 0
    /// Samples written into clips.
    public var written: Int64 = 0
    /// Samples lost, by reason: `overrun` (the device lost them: written as silence, so the
    /// sound stays in step), `late` (they came after their clip had closed).
    public var dropped: [String: Int64] = [:]
    /// The device's failure, if it failed while recording (the video went on).
    public var failure: String?
    /// The stream's origin on the session clock when the recording started (ns).
    public var originNs: Int64?
    /// A device's measured rate against the monotonic clock, in ppm off nominal (its sound is
    /// resampled to keep in step); nil for sound on the session clock.
    public var deviceRatePpm: Double?

    /// Samples lost in all.
    public var droppedTotal: Int64 { dropped.values.reduce(0, +) }
}

/// Samples delivered by the audio source (on its capture thread) and not yet taken by the
/// writer's encode thread. All state is guarded by `lock`.
final class AudioFeed: @unchecked Sendable {
    private let lock = NSCondition()
    private var chunks: [AudioChunk] = []
    private var clock: AudioClock?
    /// The stream frame after the last delivered.
    private var delivered: Int64 = 0
    /// The source ended (stopped or failed): nothing more comes.
    private var ended = false
    private var failure: AudioError?
    /// The last wait ran out and nothing came since: the device stalled, and clips close
    /// without waiting for it (each close would otherwise cost a second of frames).
    private var stalled = false

    func setClock(_ c: AudioClock) { lock.lock(); clock = c; lock.broadcast(); lock.unlock() }

    func deliver(_ chunk: AudioChunk) {
        lock.lock()
        chunks.append(chunk)
        delivered = max(delivered, chunk.endFrame)
        stalled = false
        lock.broadcast()
        lock.unlock()
    }

    func end(failure: AudioError?) {
        lock.lock()
        ended = true
        if let failure, self.failure == nil { self.failure = failure }
        lock.broadcast()
        lock.unlock()
    }

    /// Waits until the samples before stream frame `frame` are delivered — at most `timeout`
    /// seconds (a device a period or two behind the video), not at all once the source ended.
    func wait(until frame: Int64, timeout: Double) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        while delivered < frame && !ended && !stalled {
            if !lock.wait(until: deadline) { stalled = delivered < frame; break }
        }
        lock.unlock()
    }

    /// Waits until the clock is known (the source read its first samples), at most `timeout` s.
    func waitForClock(timeout: Double) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        while clock == nil && !ended && !stalled {
            if !lock.wait(until: deadline) { stalled = clock == nil; break }
        }
        lock.unlock()
    }

    /// What was delivered since the last call, the clock, and the failure if the source failed.
    func take() -> (chunks: [AudioChunk], clock: AudioClock?, failure: AudioError?) {
        lock.lock(); defer { lock.unlock() }
        let c = chunks
        chunks = []
        return (c, clock, failure)
    }
}

/// The encode thread's side of the sound: the samples not yet written, indexed by stream frame,
/// and where clips cut them. A cut at a frame at session time t puts the first sample at or after
/// t (``AudioClock/firstFrame(atOrAfter:timescale:)``) first in the new clip: every sample goes
/// to exactly one clip, none repeated, none lost.
package struct AudioCutter {
    package let channels: Int
    package var clock: AudioClock?
    /// Samples from stream frame `head` on (interleaved).
    package private(set) var pending: [Int16] = []
    package private(set) var head: Int64 = 0
    /// The stream frame after the last received (gaps are filled with silence).
    package private(set) var received: Int64 = 0
    package var counts = AudioCounts()

    package init(channels: Int) { self.channels = channels }

    /// Takes delivered chunks; a chunk after a gap (the device lost samples) gets silence in
    /// the gap, counted as `overrun`; samples before those already received are ignored.
    package mutating func receive(_ chunks: [AudioChunk]) {
        for c in chunks {
            if c.firstFrame > received {
                let gap = c.firstFrame - received
                if received > 0 || !pending.isEmpty { counts.dropped["overrun", default: 0] += gap }
                pending.append(contentsOf: repeatElement(0, count: Int(gap) * channels))
                received = c.firstFrame
            }
            let skip = Int(received - c.firstFrame)
            guard skip < c.frames else { continue }
            pending.append(contentsOf: c.samples[(skip * channels)...])
            received = c.endFrame
        }
    }

    /// The stream frame that opens a clip (or ends one) at `pts`; nil before the clock is known.
    package func frame(at pts: Timestamp) -> Int64? {
        clock?.firstFrame(atOrAfter: pts.value, timescale: pts.timescale)
    }

    /// Hands samples up to (not including) stream frame `end` — as many of them as have arrived —
    /// to `body`, and forgets them. Returns the stream frame after the last handed.
    @discardableResult
    package mutating func take(upTo end: Int64, _ body: (UnsafeBufferPointer<Int16>, Int64) throws -> Void) rethrows -> Int64 {
        let upTo = min(end, received)
        guard upTo > head else { return head }
        let n = Int(upTo - head) * channels
        try pending.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[0..<n]), head) }
        pending.removeFirst(n)
        head = upTo
        return head
    }

    /// Forgets the samples before stream frame `end` (not recorded: before the recording's
    /// first frame, between a stop and a start); later ones that have not come yet are
    /// skipped when they come.
    package mutating func discard(upTo end: Int64) {
        if end <= head { return }
        let have = min(end, received)
        pending.removeFirst(Int(have - head) * channels)
        head = end
        if received < end {
            received = end
        }
    }
}

/// A device's sound put on the session clock: resampled so that output frame m is at the
/// session time origin + m / rate, where the device's own frames are placed by its measured
/// clock (origin and true rate). The step is the device's rate over the nominal one, plus a
/// correction that takes out the position's error over a quarter second — so a clock some ppm
/// off neither drifts against the picture nor jumps.
struct DeviceTimeline {
    var resampler: DriftResampler
    let rate: Int
    /// The output stream's origin on the session clock (the device's first measured origin).
    let outOrigin: Int64
    /// Device frames lost (overruns), filled with silence.
    var overrun: Int64 = 0

    init(channels: Int, rate: Int, origin: Int64) {
        resampler = DriftResampler(channels: channels)
        self.rate = rate
        outOrigin = origin
    }

    /// Where output frame `m` is read on the device's frames, by `clock`.
    func position(ofOutput m: Int64, _ clock: AudioClock) -> Double {
        let deviceRate = clock.deviceRate ?? Double(rate)
        let t = Double(outOrigin - clock.originNs) / 1e9 + Double(m) / Double(rate)
        return t * deviceRate
    }

    /// The device frames to wait for before output frame `m` can be made: by the fit, and by
    /// where the resampler reads now (ahead of the fit by the error it has yet to take out).
    func inputNeeded(forOutput m: Int64, _ clock: AudioClock) -> Int64 {
        let byFit = position(ofOutput: m, clock)
        let byReader = resampler.position + Double(max(0, m - resampler.framesOut)) * resampler.step
        return Int64(max(byFit, byReader).rounded(.up)) + 3
    }

    mutating func take(_ chunks: [AudioChunk], clock: AudioClock) -> [AudioChunk] {
        var out: [AudioChunk] = []
        let channels = resampler.channels
        for c in chunks {
            var samples = c.samples[...]
            if c.firstFrame > resampler.framesIn {
                let gap = c.firstFrame - resampler.framesIn
                overrun += gap
                samples = (Array(repeating: 0, count: Int(gap) * channels) + c.samples)[...]
            } else if c.firstFrame < resampler.framesIn {
                let skip = Int(resampler.framesIn - c.firstFrame)
                guard skip < c.frames else { continue }
                samples = c.samples[(skip * channels)...]
            }
            let deviceRate = clock.deviceRate ?? Double(rate)
            let error = position(ofOutput: resampler.framesOut, clock) - resampler.position
            // The error is taken out over a quarter second.
            resampler.step = deviceRate / Double(rate) + max(-0.01, min(0.01, 4 * error / Double(rate)))
            let first = resampler.framesOut
            let made = samples.withUnsafeBufferPointer { resampler.process($0) }
            if !made.isEmpty { out.append(AudioChunk(firstFrame: first, samples: made, channels: channels)) }
        }
        return out
    }
}

/// The encode thread's sound: takes what the feed delivered and writes it into the clip of its
/// time — up to the latest frame while a clip records, up to the cut when it closes.
struct AudioTrackWriter {
    let feed: AudioFeed
    private var cutter: AudioCutter
    /// A device's sound on its way to the session clock; nil for sound already on it.
    private var timeline: DeviceTimeline?
    /// The source's latest clock.
    private var sourceClock: AudioClock?
    /// How long a closing clip waits for its last samples (a device delivers a period, about
    /// 10 ms, behind): beyond it they are counted `late`.
    static let closeWait = 1.0

    init(settings: AudioTrackSettings, feed: AudioFeed) {
        self.feed = feed
        cutter = AudioCutter(channels: settings.format.channels)
    }

    var counts: AudioCounts { cutter.counts }

    /// Takes what the source delivered. With no clip recording, samples older than 10 s go:
    /// no clip can start that far back.
    mutating func pull(recording: Bool) {
        let (chunks, clock, failure) = feed.take()
        if let clock {
            if cutter.clock == nil {
                cutter.counts.originNs = clock.originNs
                if clock.deviceRate != nil {
                    timeline = DeviceTimeline(channels: cutter.channels, rate: clock.sampleRate, origin: clock.originNs)
                }
                cutter.clock = AudioClock(originNs: clock.originNs, sampleRate: clock.sampleRate)
            }
            sourceClock = clock
            if let r = clock.deviceRate { cutter.counts.deviceRatePpm = ((r / Double(clock.sampleRate) - 1) * 1e7).rounded() / 10 }
        }
        if let failure, cutter.counts.failure == nil { cutter.counts.failure = failure.description }
        if timeline != nil, let c = sourceClock {
            cutter.receive(timeline!.take(chunks, clock: c))
            cutter.counts.dropped["overrun"] = timeline!.overrun > 0 ? timeline!.overrun : nil
        } else {
            cutter.receive(chunks)
        }
        if !recording, let clock = cutter.clock {
            cutter.discard(upTo: max(cutter.head, cutter.received - Int64(clock.sampleRate) * 10))
        }
    }

    /// Writes into `clip` the samples from its start up to the first at or after `pts` that have arrived.
    mutating func write(_ clip: ClipRecorder, upTo pts: Timestamp) throws {
        guard clip.audio != nil, let end = cutter.frame(at: pts) else { return }
        if clip.audioStart == nil {
            guard let start = cutter.frame(at: clip.sessionStart) else { return }
            clip.audioStart = start
            cutter.discard(upTo: start)
        }
        try cutter.take(upTo: end) { samples, first in try clip.appendAudio(samples, first: first) }
    }

    /// Ends `clip`'s sound at `end` (the cut, or its last frame's end): waits for the samples
    /// before it, writes them, and counts what the clip should hold and what it lacks.
    mutating func close(_ clip: ClipRecorder, at end: Timestamp) throws {
        guard clip.audio != nil else { return }
        if cutter.clock == nil { feed.waitForClock(timeout: AudioTrackWriter.closeWait) ; pull(recording: true) }
        guard let last = cutter.frame(at: end) else { return }
        // A device's frames are counted on its own clock: the ones the resampler needs.
        let needed = timeline.flatMap { t in sourceClock.map { t.inputNeeded(forOutput: last, $0) } } ?? last
        feed.wait(until: needed, timeout: AudioTrackWriter.closeWait)
        pull(recording: true)
        try write(clip, upTo: end)
        guard let start = clip.audioStart else { return }
        // What the clip should hold: its time, from the stream's first sample on.
        let expected = max(0, last - max(start, 0))
        cutter.counts.captured += expected
        cutter.counts.written += clip.audioWritten
        let missing = expected - clip.audioWritten
        if missing > 0 {
            // Not delivered in time: a failed device's, or late ones (skipped when they come).
            cutter.counts.dropped[cutter.counts.failure != nil ? "deviceFailed" : "late", default: 0] += missing
            cutter.discard(upTo: last)
        }
    }
}
