import Foundation
import ReelCore
import ReelMedia

/// What `reel probe` reports of one file.
public struct ProbeResult: Sendable, Codable {
    /// The file probed.
    public var path: String
    /// The demuxer's name (`mov,mp4,m4a,3gp,3g2,mj2` for MOV and MP4, `matroska,webm` for MKV).
    public var container: String
    /// The codec's short name (`prores`, `h264`, `hevc`, `ffv1`).
    public var codec: String
    /// Width in pixels, as the stream header gives it.
    public var width: Int
    /// Height in pixels, as the stream header gives it.
    public var height: Int
    /// The pixel format's name (`yuv422p10le`, …).
    public var pixelFormat: String
    /// Packets of the video stream: one per frame.
    public var frames: Int
    /// From the first packet's presentation time to the end of the last packet, in seconds.
    public var durationSeconds: Double
    /// The earliest presentation time in seconds (null without timestamps).
    @EncodedNull public var firstPTS: Double?
    /// The latest presentation time in seconds (null without timestamps).
    @EncodedNull public var lastPTS: Double?
    /// The stream's average frame rate (null when the file does not say).
    @EncodedNull public var frameRate: Double?
    /// Where the clip starts on the recording's session clock (`com.reel.session_start`).
    @EncodedNull public var sessionStart: String?
    /// The aspect ratio the clip was recorded at (`com.reel.ratio`), null for a file Reel did not write.
    @EncodedNull public var ratio: String?
    /// The display matrix's rotation in degrees, as ffprobe prints it (counter-clockwise:
    /// `-90` means a player turns the picture 90° clockwise); 0 without one. Barcodes are
    /// read from the picture as displayed.
    public var rotation: Int = 0
    /// With `--frames`: the barcode read from each decoded frame, in presentation order (-1: unreadable).
    public var frameIndices: [Int]?
    /// With `--frames`: presentation timestamps of the decoded frames, in seconds.
    public var framePTS: [Double]?
    /// The file ends in damaged or missing data (what came before was read).
    public var truncated: Bool
    /// The file's chapters (Reel writes one per marker into MKV clips), in order.
    public var chapters: [MediaChapter] = []
    /// The file's sound stream (codec, rate, channels, duration); absent without one.
    public var audio: AudioStreamInfo? = nil
}

/// Errors of probe and verify.
public enum InspectError: UserFacingError {
    /// The file cannot be opened or read as media (exit status 66).
    case unreadable(String, MediaError)
    /// No clip files in the paths given (exit status 66).
    case noClips(String)
    /// A directory's index (`PREFIX.index.json`) does not parse or is not a Reel index (exit status 65).
    case badIndex(SegmentIndexError)

    /// 66: a missing or unreadable file (`verify` reports violations in ``VerifyReport``, exit
    /// 65); 65: an index that cannot be used.
    public var exitStatus: Int32 {
        if case .badIndex = self { return ExitStatus.dataError }
        return ExitStatus.noInput
    }

    /// One line saying what could not be read or what is wrong.
    public var description: String {
        switch self {
        case .unreadable(let path, let e): return "cannot read \(path): \(e.text)"
        case .noClips(let path): return "no clips in \(path)"
        case .badIndex(let e): return "index \(e.path) is damaged or not a Reel index (\(e.reason))"
        }
    }
}

/// Reads clips back and checks them: `reel probe` and `reel verify`.
public enum Inspector {
    /// Reads a file's stream, counts its frames (packets) and, with `frames`, decodes every
    /// frame and reads its barcode (``MediaReader``: libavformat and libavcodec).
    /// - Throws: ``InspectError/unreadable(_:_:)`` when the file cannot be opened or read.
    public static func probe(_ path: String, frames readFrames: Bool = false) throws(InspectError) -> ProbeResult {
        try probeDecoding(path, frames: readFrames).result
    }

    /// A decoded frame whose size is not the one the file's header gives.
    struct OddFrame { var frame: Int; var width: Int; var height: Int }

    /// The take a clip belongs to (`com.reel.take`) and the index of the take's first frame
    /// (`com.reel.take_first_frame_index`): a recording stopped and started again on a running
    /// session has one take per start, each starting at the first frame after its request.
    struct Take: Equatable { var number: Int; var firstFrameIndex: Int }

    /// `probe`, and with `frames` also the first decoded frame whose size differs from the
    /// header's (a header can lie, and some containers allow size changes mid-stream).
    static func probeDecoding(_ path: String, frames readFrames: Bool) throws(InspectError) -> (result: ProbeResult, oddFrame: OddFrame?, take: Take?) {
        quietLibav()
        let reader: MediaReader
        do { reader = try MediaReader(path: path) } catch { throw .unreadable(path, error) }
        let info = reader.info
        let tb = Double(info.timeBase.num) / Double(info.timeBase.den)
        var count = 0
        var minPTS: Int64? = nil, maxPTS: Int64? = nil, lastDuration: Int64 = 0, belowMax: Int64? = nil
        do {
            try reader.forEachPacket { p in
                count += 1
                if let pts = p.pts {
                    if minPTS == nil || pts < minPTS! { minPTS = pts }
                    if maxPTS == nil || pts >= maxPTS! {
                        if let m = maxPTS, pts > m { belowMax = m }
                        maxPTS = pts; lastDuration = p.duration
                    } else if belowMax == nil || pts > belowMax! {
                        belowMax = pts
                    }
                }
            }
        } catch { throw .unreadable(path, MediaError("read", message: String(describing: error))) }
        var truncated = reader.stoppedEarly != nil
        var indices: [Int]? = nil
        var ptsList: [Double]? = nil
        var odd: OddFrame? = nil
        if readFrames {
            var found: [Int] = []
            var times: [Double] = []
            found.reserveCapacity(count)
            do {
                try reader.forEachFrame { picture in
                    if odd == nil && (picture.width != info.width || picture.height != info.height) {
                        odd = OddFrame(frame: found.count, width: picture.width, height: picture.height)
                    }
                    found.append(FrameBarcode.read(picture.luma, displayQuarterTurns: info.displayQuarterTurns) ?? -1)
                    times.append(picture.pts.map { Double($0) * tb } ?? -1)
                }
            } catch { throw .unreadable(path, MediaError("decode", message: String(describing: error))) }
            truncated = truncated || reader.stoppedEarly != nil
            indices = found
            ptsList = times
        }
        // The last frame lasts as long as the step before it: H.264's parser gives packets one
        // tick of the stream's timing (its VUI), a frame only when the clock ticks once a frame.
        if let m = maxPTS, let b = belowMax, m > b { lastDuration = m - b }
        let duration = (minPTS != nil && maxPTS != nil) ? Double(maxPTS! - minPTS! + lastDuration) * tb : 0
        var result = ProbeResult(path: path, container: info.formatName, codec: info.codecName,
                           width: info.width, height: info.height, pixelFormat: info.pixelFormat,
                           frames: count, durationSeconds: duration,
                           firstPTS: minPTS.map { Double($0) * tb }, lastPTS: maxPTS.map { Double($0) * tb },
                           frameRate: info.averageFrameRate,
                           sessionStart: info.metadata["com.reel.session_start"],
                           ratio: info.metadata["com.reel.ratio"], rotation: info.rotation,
                           frameIndices: indices, framePTS: ptsList, truncated: truncated)
        result.chapters = info.chapters
        result.audio = AudioReader.streamInfo(path)
        var take: Take? = nil
        if let t = info.metadata["com.reel.take"].flatMap({ Int($0) }),
           let first = info.metadata["com.reel.take_first_frame_index"].flatMap({ Int($0) }) {
            take = Take(number: t, firstFrameIndex: first)
        }
        return (result, odd, take)
    }

    /// The clip files in `paths`: files as given, and the `.mov`, `.mp4` and `.mkv` files of
    /// directories (one level deep, hidden files skipped) sorted by name. (``verify(_:)`` then
    /// puts the clips in recording order by session-clock start.)
    /// - Throws: ``InspectError/unreadable(_:_:)`` for a path that does not exist,
    ///   ``InspectError/noClips(_:)`` when no clip file is found.
    public static func clipPaths(_ paths: [String]) throws(InspectError) -> [String] {
        var files: [String] = []
        let fm = FileManager.default
        for p in paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: p, isDirectory: &isDir) else {
                throw .unreadable(p, MediaError("open", message: "no such file or directory"))
            }
            if isDir.boolValue {
                let names = (try? fm.contentsOfDirectory(atPath: p)) ?? []
                let clips = names.filter { n in ["mov", "mp4", "mkv"].contains { n.hasSuffix("." + $0) } && !n.hasPrefix(".") }
                files += clips.sorted().map { p.hasSuffix("/") ? p + $0 : p + "/" + $0 }
            } else {
                files.append(p)
            }
        }
        guard !files.isEmpty else { throw .noClips(paths.joined(separator: " ")) }
        return files
    }
}

/// The position of the first frame whose timestamp breaks the cadence.
struct CadenceBreak: Error {
    let frame: Int
    /// The changes found before it (position of the frame the new step starts from, rate).
    var changesBefore: [(frame: Int, fps: Double)] = []
    init(_ frame: Int, after changes: [(frame: Int, fps: Double)] = []) { self.frame = frame; self.changesBefore = changes }
}

/// What `reel verify` found.
public struct VerifyReport: Sendable, Codable {
    /// One clip as `verify` read it.
    public struct Clip: Sendable, Codable {
        /// The clip file.
        public var path: String
        /// Width in pixels (stream header).
        public var width: Int
        /// Height in pixels (stream header).
        public var height: Int
        /// The recorded aspect ratio (`com.reel.ratio`), null when the file has none.
        @EncodedNull public var ratio: String?
        /// Frames decoded.
        public var frames: Int
        /// Barcode of the first decoded frame (-1: unreadable), null without frames.
        @EncodedNull public var firstFrameIndex: Int?
        /// Barcode of the last decoded frame (-1: unreadable), null without frames.
        @EncodedNull public var lastFrameIndex: Int?
        /// Where the clip starts on the session clock (`com.reel.session_start`, `value/timescale`).
        @EncodedNull public var sessionStart: String?
        /// The display matrix's rotation in degrees, as ffprobe prints it (0: none); the
        /// barcodes were read from the picture as displayed.
        public var rotation: Int = 0
    }
    /// No violation was found.
    public var ok: Bool
    /// The clips in recording order, up to the one with the first violation.
    public var clips: [Clip]
    /// Frames whose index was checked before the first violation (all of them when `ok`).
    public var framesChecked: Int
    /// Session-clock frame indices where one clip ends and the next begins.
    public var seams: [Int]
    /// Where a clip's cadence changes (a variable frame rate): the frame (its barcode) from
    /// which its frames are one frame of the new rate apart, and that rate.
    public var cadenceChanges: [CadenceChange] = []
    /// The first violation, if any.
    @EncodedNull public var violation: String?
    /// The indexes read (`PREFIX.index.json` of a directory given): their clips were checked
    /// against them, and the directory's other files were not read. Empty without one.
    public var indexes: [String] = []
    /// Clips the indexes list as deleted by loop recording (not read: their frames are a gap
    /// the index accounts for).
    public var deletedClips = 0
    /// The clips' sound, when they have any: samples, clicks in order, the largest A/V offset.
    public var audio: AudioVerifyReport? = nil
}

/// A change of frame rate `reel verify` found inside a clip.
public struct CadenceChange: Sendable, Codable, Equatable {
    /// The frame (barcode) from which the frames are `framesPerSecond` apart: the step from
    /// it to the next frame is the first of the new cadence.
    public var frameIndex: Int
    /// The new rate, frames per second (3 decimals).
    public var framesPerSecond: Double
    /// When the camera kept one frame in k from here on (decimation: its frame indices
    /// `keepsOneFrameIn` apart, each that many of its periods later), k; null when every frame
    /// is kept (the camera's own rate changed).
    @EncodedNull public var keepsOneFrameIn: Int?

    /// A change to `framesPerSecond` from frame `frameIndex` on.
    public init(frameIndex: Int, framesPerSecond: Double, keepsOneFrameIn: Int? = nil) {
        self.frameIndex = frameIndex; self.framesPerSecond = framesPerSecond; self.keepsOneFrameIn = keepsOneFrameIn
    }
}

extension Inspector {
    /// Decodes every clip in recording order and checks that frame indices 0..N-1 appear
    /// exactly once and in order across clips; that each clip has one size, matching its
    /// ratio; that its timestamps strictly increase, one frame at a time of the clip's cadence
    /// (a cadence may change — a variable frame rate — where the new step holds for two frames
    /// or ends the clip: those changes are listed in `cadenceChanges`); and that on the session clock
    /// each clip starts exactly where the previous one ended (the seam the recording noted).
    /// A violation stops the check and is reported in the result (`ok` false), not thrown.
    /// - Throws: ``InspectError`` when a path is missing, holds no clips, or a clip cannot be read.
    public static func verify(_ paths: [String]) throws(InspectError) -> VerifyReport {
        // A directory with an index (`PREFIX.index.json`) is checked against it: the clips it
        // lists, and only those (`verifyIndexed`).
        var report = VerifyReport(ok: true, clips: [], framesChecked: 0, seams: [], violation: nil)
        var others: [String] = []
        var indexes: [String] = []
        for p in paths {
            let found = indexFiles(in: p)
            if found.isEmpty { others.append(p) } else { indexes += found }
        }
        if !others.isEmpty || indexes.isEmpty {
            let files = try clipPaths(others)
            var probes: [ProbeResult] = []
            var oddFrames: [String: OddFrame] = [:]
            var takes: [String: Take] = [:]
            for f in files {
                let (p, odd, take) = try probeDecoding(f, frames: true)
                probes.append(p)
                oddFrames[f] = odd
                takes[f] = take
            }
            probes.sort { a, b in
                switch (a.sessionStart.flatMap(Timestamp.init(parsing:)), b.sessionStart.flatMap(Timestamp.init(parsing:))) {
                case let (x?, y?) where x != y: return x < y
                default: return a.path < b.path
                }
            }
            guard check(probes, oddFrames: oddFrames, takes: takes, resumeAt: nil, into: &report) else { return report }
        }
        for index in indexes {
            guard try verifyIndexed(index, into: &report) else { return report }
        }
        return report
    }

    /// Checks `probes`, one recording's clips in recording order, and adds them to `report`
    /// (the body of ``verify(_:)``). `resumeAt`: the first clip's first frame, when the clips
    /// before it were deleted by loop recording (the index says so); nil: from the take's
    /// first frame (0 for a recording that records from its first frame). Returns false at
    /// the first violation (in `report`).
    static func check(_ probes: [ProbeResult], oddFrames: [String: OddFrame], takes: [String: Take], resumeAt: Int?,
                      into report: inout VerifyReport) -> Bool {
        var expected = 0
        var previousEnd: Double? = nil
        var lastStep: Double? = nil
        // Barcodes between frames (1; k while a camera keeps one frame in k) and the time one
        // barcode stands for (the frames' period while every frame is kept).
        var indexStep = 1
        var framePeriod: Double? = nil
        var currentTake: Int? = nil
        func fail(_ s: String) -> Bool {
            report.ok = false
            report.violation = s
            return false
        }
        for p in probes {
            let indices = p.frameIndices ?? []
            report.clips.append(.init(path: p.path, width: p.width, height: p.height, ratio: p.ratio, frames: indices.count,
                                      firstFrameIndex: indices.first, lastFrameIndex: indices.last, sessionStart: p.sessionStart,
                                      rotation: p.rotation))
            let name = (p.path as NSString).lastPathComponent
            if indices.isEmpty { return fail("\(name): no frames") }
            if p.truncated { return fail("\(name): the file is damaged or truncated after \(indices.count) frames") }
            // One size, matching the ratio the clip was recorded at.
            if let r = p.ratio.flatMap(AspectRatio.init(parsing:)) ?? ratioFromName(name) {
                let (a, b) = r.components
                if abs(p.width * b - p.height * a) > 4 * max(a, b) {
                    return fail("\(name): \(p.width)x\(p.height) is not \(r.rawValue)")
                }
            }
            // Every decoded frame has that size, not only the header.
            if let odd = oddFrames[p.path] {
                return fail("\(name): frame \(odd.frame) of the clip is \(odd.width)x\(odd.height), the clip's header says \(p.width)x\(p.height)")
            }
            // A new take (the first clip checked, or a start request after a stop) starts at
            // its own first frame, the first captured after the request; a file without takes
            // is take 1 from frame 0. The session clock has a gap between takes.
            let take = takes[p.path] ?? Take(number: 1, firstFrameIndex: 0)
            if take.number != currentTake {
                if currentTake != nil, take.number < currentTake! {
                    return fail("\(name): take \(take.number) comes after take \(currentTake!)")
                }
                if currentTake == nil || take.firstFrameIndex >= expected { expected = take.firstFrameIndex }
                if currentTake == nil, let resumeAt { expected = resumeAt }
                currentTake = take.number
                previousEnd = nil
            }
            // Timestamps: starting at 0, strictly increasing, one frame of the cadence apart.
            let times = p.framePTS ?? []
            let measured = times.count > 1 ? times[1] - times[0] : nil
            let firstStep = measured ?? lastStep ?? p.frameRate.map({ 1 / $0 })
            let walked = firstStep.flatMap { $0 > 0 ? cadence(of: times, firstStep: $0) : nil }
            // Frame indices, in order, none missing or repeated: consecutive, or — from a
            // cadence change on whose new step is a whole number k of the frames' period, a
            // camera keeping one frame in k (decimation) — k apart for the whole cadence.
            let boundaries: Set<Int>
            switch walked {
            case _ where times.count != indices.count, nil: boundaries = []
            case .success(let (changes, _))?: boundaries = Set(changes.map(\.frame))
            case .failure(let b)?: boundaries = Set(b.changesBefore.map(\.frame))
            }
            for (k, idx) in indices.enumerated() {
                report.framesChecked += 1
                if idx < 0 { return fail("\(name): frame \(k) of the clip has no readable barcode (expected index \(expected))") }
                if k > 0, boundaries.contains(k - 1) {
                    // A new cadence: either the frames' period changed (step 1) or one frame in
                    // `n` is kept, each the same period apart as before.
                    let n = idx - indices[k - 1], d = times[k] - times[k - 1]
                    if n > 1, let period = framePeriod, abs(d / Double(n) - period) <= period * cadenceChangeShare {
                        indexStep = n
                        expected = indices[k - 1] + n
                        report.cadenceChanges.append(CadenceChange(frameIndex: indices[k - 1], framesPerSecond: (1000 / d).rounded() / 1000, keepsOneFrameIn: n))
                    } else if n >= 1, indexStep != 1 {
                        indexStep = 1
                        expected = indices[k - 1] + 1
                    }
                }
                if idx != expected {
                    return fail(idx < expected
                                ? "\(name): frame index \(idx) repeated (expected \(expected))"
                                : "\(name): frame index \(expected) missing (found \(idx))")
                }
                if k > 0, indexStep == 1, times.count == indices.count { framePeriod = times[k] - times[k - 1] }
                expected += indexStep
            }
            guard let firstStep, firstStep > 0, let walked else {
                return fail("\(name): cannot tell its frame duration")
            }
            if let first = times.first, abs(first) > firstStep / 2 {
                return fail("\(name): the clip's timeline starts at \(first) s, not 0")
            }
            switch walked {
            case .failure(let b):
                let k = b.frame
                let how = times[k] <= times[k - 1] ? "do not increase" : "jump"
                return fail("\(name): timestamps \(how) from \(times[k - 1]) s to \(times[k]) s at frame \(k)")
            case .success(let (changes, step)):
                let decimated = Set(report.cadenceChanges.map(\.frameIndex))
                report.cadenceChanges += changes.map { CadenceChange(frameIndex: indices[$0.frame], framesPerSecond: $0.fps) }
                    .filter { !decimated.contains($0.frameIndex) }
                report.cadenceChanges.sort { $0.frameIndex < $1.frameIndex }
                lastStep = step
                // On the session clock, this clip starts where the previous one ended.
                if let start = p.sessionStart.flatMap(Timestamp.init(parsing:))?.seconds {
                    if let end = previousEnd, abs(start - end) > firstStep * 0.5 {
                        return fail("\(name): starts at \(start) s on the session clock, the previous clip ended at \(end) s")
                    }
                    previousEnd = start + (times.last ?? 0) - (times.first ?? 0) + step
                }
            }
            if report.clips.count > 1 { report.seams.append(indices[0]) }
        }
        return checkAudio(probes, takes: takes, into: &report)
    }

    /// A step that differs from the cadence by more than this share is a new cadence, if it holds.
    static let cadenceChangeShare = 0.05
    /// Steps this close (as a share) are the same cadence.
    static let sameStepShare = 0.01

    /// Walks the steps between timestamps: each must be within half a frame of the cadence
    /// (camera timestamps jitter; a lost or doubled frame moves a timestamp by a whole frame),
    /// unless the cadence changes there — a step more than 5 % off that the next step repeats
    /// (within 1 %; both at least 1.1 ms, Matroska's millisecond rounding), or the clip's last
    /// step when it is one frame of a common rate. Returns the
    /// changes (position of the frame the new step starts from, its rate) and the last cadence,
    /// or the position of the first frame whose timestamp does not fit.
    static func cadence(of times: [Double], firstStep: Double) -> Result<([(frame: Int, fps: Double)], Double), CadenceBreak> {
        var step = firstStep
        var changes: [(frame: Int, fps: Double)] = []
        // Matroska stores milliseconds: a step may be off by one, whatever the share.
        func same(_ a: Double, _ b: Double, _ share: Double) -> Bool { abs(a - b) <= max(share * max(a, b), 0.0011) }
        for k in times.indices.dropFirst() {
            let d = times[k] - times[k - 1]
            guard d > 0 else { return .failure(CadenceBreak(k, after: changes)) }
            if !same(d, step, cadenceChangeShare) {
                let next = k + 1 < times.count ? times[k + 1] - times[k] : nil
                let holds = next.map { same(d, $0, sameStepShare) }
                    ?? commonRates.contains { same(d, 1 / $0, sameStepShare) }
                if holds {
                    step = d
                    changes.append((k - 1, (1000 / d).rounded() / 1000))
                    continue
                }
            }
            if abs(d - step) > step * 0.5 { return .failure(CadenceBreak(k, after: changes)) }
        }
        return .success((changes, step))
    }

    /// Rates a clip's last frame may switch to without a second frame to confirm it.
    static let commonRates: [Double] = [120, 60, 50, 48, 30, 30000.0 / 1001, 25, 24, 24000.0 / 1001, 20, 15, 12, 10, 5, 2, 1]

    static func ratioFromName(_ name: String) -> AspectRatio? {
        let stem = name.split(separator: ".").first.map(String.init) ?? name
        return stem.split(separator: "-").last.flatMap { AspectRatio(parsing: String($0)) }
    }
}
