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

    func setClock(_ c: AudioClock) { lock.lock(); clock = c; lock.broadcast(); lock.unlock() }

    func deliver(_ chunk: AudioChunk) {
        lock.lock()
        chunks.append(chunk)
        delivered = max(delivered, chunk.endFrame)
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
        while delivered < frame && !ended && lock.wait(until: deadline) {}
        lock.unlock()
    }

    /// Waits until the clock is known (the source read its first samples), at most `timeout` s.
    func waitForClock(timeout: Double) {
        let deadline = Date(timeIntervalSinceNow: timeout)
        lock.lock()
        while clock == nil && !ended && lock.wait(until: deadline) {}
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

/// The encode thread's sound: takes what the feed delivered and writes it into the clip of its
/// time — up to the latest frame while a clip records, up to the cut when it closes.
struct AudioTrackWriter {
    let feed: AudioFeed
    private var cutter: AudioCutter
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
            if cutter.clock == nil { cutter.counts.originNs = clock.originNs }
            cutter.clock = clock
        }
        if let failure, cutter.counts.failure == nil { cutter.counts.failure = failure.description }
        cutter.receive(chunks)
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
        feed.wait(until: last, timeout: AudioTrackWriter.closeWait)
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
