import Foundation
import ReelAudio
import ReelCore
import ReelMedia

/// What `reel verify` found of the clips' sound (absent when no clip has sound).
public struct AudioVerifyReport: Sendable, Codable, Equatable {
    /// One clip's sound as `verify` read it.
    public struct Clip: Sendable, Codable, Equatable {
        /// The clip file.
        public var path: String
        /// `pcm_s16le`, `aac`, `opus`.
        public var codec: String
        /// Sample frames after Reel applied the priming and the track's end (the edit list).
        public var samples: Int
        /// Sample frames the decoder gave before that: what FFmpeg 5.1 plays from a
        /// fragmented MOV/MP4, which it does not trim.
        public var decodedSamples: Int
        /// Sample frames of priming cut at the start.
        public var primingSamples: Int
    }
    /// The clips with sound, in recording order.
    public var clips: [Clip] = []
    /// Sample frames of all the clips joined.
    public var samples: Int = 0
    /// Clicks found (the synthetic signal's, or the emulated device's), and those checked in
    /// order (one a second, numbered one after another, exactly a second of samples apart).
    public var clicks: Int = 0
    /// The largest gap between a click and the frame of its time (its barcode), in ms, over
    /// the clips whose sound is on the session clock (the synthetic signal); null otherwise.
    @EncodedNull public var largestOffsetMs: Double? = nil
}

extension Inspector {
    /// Checks the sound of `probes` (one recording's clips, in order, already checked as video):
    /// within each take, the clips' sound joined has its clicks one period of samples apart
    /// and numbered one after another — a sample lost or repeated at a seam moves every click
    /// after it — and, for sound on the session clock, each click at the time of its frame. A
    /// device's sound (its clicks on its own clock) is checked against the clicks' median
    /// spacing within 0.1 % of a second: a lost chunk shows, a single sample does not.
    /// Returns false at the first violation (in `report`).
    static func checkAudio(_ probes: [ProbeResult], takes: [String: Take], into report: inout VerifyReport) -> Bool {
        var audio = AudioVerifyReport()
        var joined: [Int16] = []
        var channels = 0, rate = 0
        var takeOfJoined: Int? = nil
        /// Where each clip starts in `joined`, and its name.
        var starts: [(at: Int, name: String)] = []
        var offsets: [Double] = []
        /// Whether the sound is a device's (`com.reel.audio_clock` `device`), not on the session clock.
        var onDeviceClock = false
        func fail(_ s: String) -> Bool { report.ok = false; report.violation = s; report.audio = audio; return false }
        func checkJoined() -> Bool {
            guard channels > 0, rate > 0 else { return true }
            let clicks = joined.withUnsafeBufferPointer { ClickSignal.findClicks(in: $0, channels: channels) }
            audio.clicks += clicks.count
            // A device's clicks mark its own seconds, which its clock's error (put right by
            // resampling) makes a few samples a second longer or shorter on the session clock:
            // they are checked against their median spacing, within 0.1 % of a second.
            let pairs = Array(zip(clicks, clicks.dropFirst()))
            let spacings = pairs.filter { $0.1.number > $0.0.number }.map { Double($0.1.frame - $0.0.frame) / Double($0.1.number - $0.0.number) }.sorted()
            let perClick = onDeviceClock && !spacings.isEmpty ? spacings[spacings.count / 2] : Double(rate)
            let tolerance = onDeviceClock ? Double(rate) / 1000 : 0
            for (a, b) in pairs {
                guard b.number > a.number else {
                    return fail("audio: click \(b.number) follows click \(a.number) (the sound is out of order or repeated)")
                }
                let expected = Int64((Double(b.number - a.number) * perClick).rounded())
                let found = b.frame - a.frame
                if abs(Double(found) - Double(b.number - a.number) * perClick) > tolerance {
                    let seam = starts.last { $0.at > Int(a.frame) && $0.at <= Int(b.frame) }
                    let where_ = seam.map { " at the seam into \($0.name)" } ?? ""
                    let d = abs(found - expected)
                    return fail("audio: \(d) sample\(d == 1 ? "" : "s") \(found < expected ? "missing" : "repeated") between click \(a.number) and click \(b.number)\(where_)")
                }
            }
            return true
        }
        for p in probes {
            guard AudioReader.hasAudio(p.path) else { continue }
            let name = (p.path as NSString).lastPathComponent
            let sound: DecodedAudio
            do { sound = try AudioReader.decode(p.path) } catch { return fail("\(name): its sound cannot be decoded (\(error))") }
            let take = takes[p.path]?.number ?? 1
            if take != takeOfJoined {
                guard checkJoined() else { return false }
                joined = []; starts = []
                takeOfJoined = take
            }
            if channels != 0 && (sound.channels != channels || sound.sampleRate != rate) {
                return fail("\(name): its sound is \(sound.sampleRate) Hz, \(sound.channels) channels; the clip before's \(rate) Hz, \(channels)")
            }
            channels = sound.channels; rate = sound.sampleRate
            starts.append((joined.count / channels, name))
            joined += sound.samples
            audio.clips.append(.init(path: p.path, codec: sound.codecName, samples: sound.frames,
                                     decodedSamples: sound.decodedFrames, primingSamples: sound.primingFrames))
            audio.samples += sound.frames
            // On the session clock: click k (at k s) belongs with frame k × fps.
            let tags = (try? MediaReader(path: p.path))?.info.metadata ?? [:]
            if tags["com.reel.audio_clock"] == "device" { onDeviceClock = true }
            if tags["com.reel.audio_clock"] == "session", let fps = p.frameRate, let indices = p.frameIndices,
               let times = p.framePTS, indices.count == times.count, abs(fps - fps.rounded()) < 1e-6 {
                let clicks = sound.samples.withUnsafeBufferPointer { ClickSignal.findClicks(in: $0, channels: sound.channels) }
                for c in clicks {
                    guard let j = indices.firstIndex(of: Int(c.number) * Int(fps.rounded())) else { continue }
                    let at = Double(sound.startFrame + c.frame) / Double(sound.sampleRate)
                    offsets.append(abs(at - (times[j] - (times.first ?? 0))) * 1000)
                }
            }
        }
        guard !audio.clips.isEmpty else { return true }
        guard checkJoined() else { return false }
        audio.largestOffsetMs = offsets.max().map { ($0 * 1000).rounded() / 1000 }
        report.audio = audio
        return true
    }
}
