import Testing
import ReelAudio
import ReelCore
import ReelWriter

/// Where sound is cut (issue 28 item 4), in-process: the clock's arithmetic, the cutter that
/// hands each sample to exactly one clip, and the test signal read back.
@Suite struct AudioCutTests {
    /// The first sample at or after a frame's time, exactly: 30 fps frames on a 48 kHz clock
    /// fall on whole samples (1,600 a frame); 29.97 fps ones round up; an origin moves them.
    @Test func theCutIsTheFirstSampleAtOrAfterTheFrame() {
        let c = AudioClock(originNs: 0, sampleRate: 48_000)
        #expect(c.firstFrame(atOrAfter: 60, timescale: 30) == 96_000)
        #expect(c.firstFrame(atOrAfter: 1, timescale: 30) == 1_600)
        // 1001/30000 s = 1601.6 samples: the cut is sample 1,602.
        #expect(c.firstFrame(atOrAfter: 1001, timescale: 30_000) == 1_602)
        // A device that started 0.25 ms after the first frame: its sample 0 is at 0.25 ms.
        let late = AudioClock(originNs: 250_000, sampleRate: 48_000)
        #expect(late.firstFrame(atOrAfter: 0, timescale: 30) == -12)
        #expect(late.firstFrame(atOrAfter: 1, timescale: 30) == 1_588)
        // Hours in: 128-bit arithmetic, no overflow (10 h on a microsecond clock).
        let us = Int64(36_000) * 1_000_000
        #expect(c.firstFrame(atOrAfter: us, timescale: 1_000_000) == 36_000 * 48_000)
    }

    /// Chunks of any size, cut at arbitrary frames: the clips' samples joined are the stream,
    /// each sample once.
    @Test func everySampleGoesToExactlyOneClip() {
        var cutter = AudioCutter(channels: 2)
        var stream: [Int16] = []
        var next: Int64 = 0
        for size in [7, 480, 1, 333, 1024, 10, 480, 2048] {
            let samples = (0..<size * 2).map { Int16(truncatingIfNeeded: Int(next) * 2 + $0) }
            stream += samples
            cutter.receive([AudioChunk(firstFrame: next, samples: samples, channels: 2)])
            next += Int64(size)
        }
        var clips: [[Int16]] = []
        for end in [Int64(100), 101, 1_500, 3_000, next] {
            var clip: [Int16] = []
            cutter.take(upTo: end) { s, first in
                #expect(first == Int64(clips.reduce(0) { $0 + $1.count } / 2))
                clip += s
            }
            clips.append(clip)
        }
        #expect(clips.map { $0.count / 2 } == [100, 1, 1_399, 1_500, Int(next) - 3_000])
        #expect(Array(clips.joined()) == stream)
    }

    /// Samples that have not come yet are not invented: a cut waits (the writer waits for them),
    /// and what comes later continues where the last take stopped.
    @Test func aCutBeyondWhatCameTakesWhatCame() {
        var cutter = AudioCutter(channels: 1)
        cutter.receive([AudioChunk(firstFrame: 0, samples: Array(repeating: 1, count: 50), channels: 1)])
        var got = 0
        #expect(cutter.take(upTo: 80) { s, _ in got += s.count } == 50)
        #expect(got == 50)
        cutter.receive([AudioChunk(firstFrame: 50, samples: Array(repeating: 2, count: 50), channels: 1)])
        var first: Int64 = -1
        cutter.take(upTo: 80) { s, f in first = f; got += s.count }
        #expect(first == 50 && got == 80)
    }

    /// A device that lost samples (an overrun: its next chunk starts later): the gap is silence,
    /// counted, so the sound after it stays at its time.
    @Test func aGapIsSilenceAndCounted() {
        var cutter = AudioCutter(channels: 1)
        cutter.receive([AudioChunk(firstFrame: 0, samples: Array(repeating: 5, count: 10), channels: 1),
                        AudioChunk(firstFrame: 15, samples: Array(repeating: 7, count: 5), channels: 1)])
        var all: [Int16] = []
        cutter.take(upTo: 20) { s, _ in all += s }
        #expect(all == Array(repeating: 5, count: 10) + Array(repeating: 0, count: 5) + Array(repeating: 7, count: 5))
        #expect(cutter.counts.dropped["overrun"] == 5)
    }

    /// Samples before a clip's start (before the first frame, or while stopped) are forgotten,
    /// including ones that come later.
    @Test func samplesBeforeTheClipAreNotRecorded() {
        var cutter = AudioCutter(channels: 1)
        cutter.receive([AudioChunk(firstFrame: 0, samples: Array(repeating: 1, count: 10), channels: 1)])
        cutter.discard(upTo: 25)
        cutter.receive([AudioChunk(firstFrame: 10, samples: (10..<40).map { Int16($0) }, channels: 1)])
        var all: [Int16] = []
        var start: Int64 = -1
        cutter.take(upTo: 40) { s, f in start = f; all += s }
        #expect(start == 25 && all == (25..<40).map { Int16($0) })
        #expect(cutter.counts.dropped.isEmpty)
    }

    /// The signal read back: numbered clicks exactly a second apart at 48 and 44.1 kHz.
    @Test(arguments: [48_000, 44_100])
    func theClicksAreFoundWhereTheyWereMade(rate: Int) {
        let signal = ClickSignal(sampleRate: rate)
        var samples = [Int16](repeating: 0, count: rate * 3 * 2 + 400)
        signal.fill(&samples, from: 0, channels: 2)
        let found = samples.withUnsafeBufferPointer { ClickSignal.findClicks(in: $0, channels: 2) }
        #expect(found == (0..<4).map { FoundClick(frame: Int64($0 * rate), number: UInt32($0)) })
        // From the middle of the stream on, the numbers go on.
        var later = [Int16](repeating: 0, count: rate * 2)
        signal.fill(&later, from: Int64(rate) * 7 - 10, channels: 1)
        let more = later.withUnsafeBufferPointer { ClickSignal.findClicks(in: $0, channels: 1) }
        #expect(more == [FoundClick(frame: 10, number: 7), FoundClick(frame: 10 + Int64(rate), number: 8)])
    }
}
