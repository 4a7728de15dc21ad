import ReelAudio
import ReelCore
import Synchronization

// The writer's sound: what the microphone's thread calls, and what the recording reads. The
// encode thread's side is `AudioTrackWriter` (AudioRouting.swift).
extension AssetWriter {
    /// How far the video has got: where the last frame offered ends on the session clock (ns),
    /// nil before the first. What paces the synthetic sound when the video is not in real time.
    public var videoReachedNs: Int64? { lock.lock(); defer { lock.unlock() }; return _videoReachedNs }

    /// The sound source ended (stopped after the recording, or failed): a clip closing waits no
    /// longer for sound.
    public func audioSourceEnded() {
        audioFeed.end(failure: nil)
        lock.lock(); audioWaiting = true; lock.broadcast(); lock.unlock()
    }

    /// The largest sample (absolute) since the last call, nil before any sound: the level meter.
    public func takeAudioPeak() -> Int? {
        let p = audioPeak.exchange(-1, ordering: .acquiringAndReleasing)
        return p < 0 ? nil : p
    }

    /// What the writer counted of the sound (nil without sound, or before it finished).
    public var audioCounts: AudioCounts? { lock.lock(); defer { lock.unlock() }; return audioResult }
}

/// The microphone's thread delivers into the writer: the samples wait in the feed, and the
/// encode thread is woken to take them.
extension AssetWriter: AudioSourceDelegate {
    /// The stream's clock, for the encode thread's next look.
    public func audio(clock: AudioClock) { audioFeed.setClock(clock) }

    /// Samples, queued for the encode thread.
    public func audio(didCapture chunk: AudioChunk) {
        var peak = 0
        for s in chunk.samples { peak = max(peak, abs(Int(s))) }
        audioLevel.record(peak: peak)
        var seen = audioPeak.load(ordering: .relaxed)
        while peak > seen {
            let (done, now) = audioPeak.compareExchange(expected: seen, desired: peak, ordering: .acquiringAndReleasing)
            if done { break }
            seen = now
        }
        audioFeed.deliver(chunk)
        lock.lock(); audioWaiting = true; lock.broadcast(); lock.unlock()
    }

    /// The device failed: clips close without waiting for more sound.
    public func audio(didFail error: AudioError) {
        audioFeed.end(failure: error)
        lock.lock(); audioWaiting = true; lock.broadcast(); lock.unlock()
    }
}
