import Foundation
import ReelAudio
import ReelCore
import ReelMedia

/// The A/V offset as read back from the clips when the recording ends: each click of the
/// synthetic sound against the frame whose barcode is its second (click k with frame k × fps),
/// in the first seconds of the first clip and the last seconds of the last. A microphone's
/// sound has no marks to measure by (then the summary has none); `reel verify` reads every
/// click of every clip.
public struct MeasuredAVOffset: Sendable, Codable, Equatable {
    /// Sound minus picture at the first click read, in ms (positive: the sound is late).
    public var firstMs: Double
    /// The same at the last click read (the end of the last clip).
    public var lastMs: Double
    /// The largest of those offsets in either direction, in ms.
    public var largestMs: Double
    /// Clicks read and matched with their frame.
    public var clicks: Int
    /// Seconds read at each end (of the first clip's start and of the last clip's end).
    public var windowSeconds: Double

    /// The longest clip read back at the end of a recording, in seconds: its sound is decoded
    /// whole (its video only at the ends), so longer clips are left to `reel verify`.
    public static let longestClipRead: Double = 120

    /// `measure` on a finished recording's `clips`: the first still on disk (loop recording
    /// deletes) and the last, when each is at most `longestClipRead` seconds long.
    static func readBack(_ clips: [ClipSummary], frameRate: Double) -> MeasuredAVOffset? {
        let kept = clips.filter { FileManager.default.fileExists(atPath: $0.path) }
        guard let first = kept.first, let last = kept.last,
              first.durationSeconds <= longestClipRead, last.durationSeconds <= longestClipRead else { return nil }
        return measure(first: first.path, last: last.path, frameRate: frameRate)
    }

    /// Reads the clicks within `window` seconds of the start of `first` and of the end of
    /// `last` (both ends of one clip for a one-clip recording), each against its frame. Nil when
    /// no click could be matched (no synthetic sound, too short a recording, an unreadable clip).
    public static func measure(first: String, last: String, frameRate: Double, window: Double = 3) -> MeasuredAVOffset? {
        guard frameRate > 0, abs(frameRate - frameRate.rounded()) < 1e-6 else { return nil }
        let fps = Int(frameRate.rounded())
        let offsets = first == last
            ? clickOffsets(in: first, fps: fps, start: true, end: true, window: window)
            : clickOffsets(in: first, fps: fps, start: true, end: false, window: window)
                + clickOffsets(in: last, fps: fps, start: false, end: true, window: window)
        guard let a = offsets.first, let b = offsets.last else { return nil }
        let round: (Double) -> Double = { ($0 * 1000).rounded() / 1000 }
        return MeasuredAVOffset(firstMs: round(a), lastMs: round(b), largestMs: round(offsets.map(abs).max() ?? 0),
                                clicks: offsets.count, windowSeconds: window)
    }

    private struct FirstFrameRead: Error {}

    /// Sound minus picture, in ms, for each click within `window` seconds of the clip's start
    /// and/or end whose frame was read there, in order.
    static func clickOffsets(in path: String, fps: Int, start: Bool, end: Bool, window: Double) -> [Double] {
        guard AudioReader.hasAudio(path), let reader = try? MediaReader(path: path),
              reader.info.metadata["com.reel.audio_clock"] == "session",
              let sound = try? AudioReader.decode(path) else { return [] }
        let info = reader.info
        let tb = Double(info.timeBase.num) / Double(max(1, info.timeBase.den))
        // The clip's first frame: what the sound's sample 0 is placed against.
        var origin: Double? = nil
        do {
            try reader.forEachFrame { p in
                if let t = p.pts { origin = Double(t) * tb }
                throw FirstFrameRead()
            }
        } catch {}
        guard let origin else { return [] }
        let clipSeconds = Double(sound.startFrame + Int64(sound.frames)) / Double(max(1, sound.sampleRate))
        var windows: [ClosedRange<Double>] = []
        if start { windows.append(0...min(window, clipSeconds)) }
        if end {
            let tail = max(0, clipSeconds - window)...clipSeconds
            if let w = windows.first, w.upperBound >= tail.lowerBound { windows = [0...clipSeconds] } else { windows.append(tail) }
        }
        var frameTimes: [Int: Double] = [:]
        for w in windows {
            _ = try? reader.forEachFrame(from: origin + w.lowerBound, until: origin + w.upperBound + 0.5) { p in
                guard let t = p.pts, let index = FrameBarcode.read(p.luma, displayQuarterTurns: info.displayQuarterTurns) else { return }
                frameTimes[index] = Double(t) * tb - origin
            }
        }
        let clicks = sound.samples.withUnsafeBufferPointer { ClickSignal.findClicks(in: $0, channels: sound.channels) }
        return clicks.compactMap { c in
            let at = Double(sound.startFrame + c.frame) / Double(sound.sampleRate)
            guard windows.contains(where: { $0.contains(at) }), let shown = frameTimes[Int(c.number) * fps] else { return nil }
            return (at - shown) * 1000
        }
    }
}
