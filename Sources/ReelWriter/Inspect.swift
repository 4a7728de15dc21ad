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
    /// With `--frames`: the barcode read from each decoded frame, in presentation order (-1: unreadable).
    public var frameIndices: [Int]?
    /// With `--frames`: presentation timestamps of the decoded frames, in seconds.
    public var framePTS: [Double]?
    /// The file ends in damaged or missing data (what came before was read).
    public var truncated: Bool
    /// The file's chapters (Reel writes one per marker into MKV clips), in order.
    public var chapters: [MediaChapter] = []
}

/// Errors of probe and verify.
public enum InspectError: UserFacingError {
    /// The file cannot be opened or read as media (exit status 66).
    case unreadable(String, MediaError)
    /// No clip files in the paths given (exit status 66).
    case noClips(String)

    /// 66: a missing or unreadable file (`verify` reports violations in ``VerifyReport``, exit 65).
    public var exitStatus: Int32 { ExitStatus.noInput }

    /// One line saying what could not be read or what is wrong.
    public var description: String {
        switch self {
        case .unreadable(let path, let e): return "cannot read \(path): \(e.text)"
        case .noClips(let path): return "no clips in \(path)"
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

    /// `probe`, and with `frames` also the first decoded frame whose size differs from the
    /// header's (a header can lie, and some containers allow size changes mid-stream).
    static func probeDecoding(_ path: String, frames readFrames: Bool) throws(InspectError) -> (result: ProbeResult, oddFrame: OddFrame?) {
        quietLibav()
        let reader: MediaReader
        do { reader = try MediaReader(path: path) } catch { throw .unreadable(path, error) }
        let info = reader.info
        let tb = Double(info.timeBase.num) / Double(info.timeBase.den)
        var count = 0
        var minPTS: Int64? = nil, maxPTS: Int64? = nil, lastDuration: Int64 = 0
        do {
            try reader.forEachPacket { p in
                count += 1
                if let pts = p.pts {
                    if minPTS == nil || pts < minPTS! { minPTS = pts }
                    if maxPTS == nil || pts >= maxPTS! { maxPTS = pts; lastDuration = p.duration }
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
                    found.append(FrameBarcode.read(picture.luma) ?? -1)
                    times.append(picture.pts.map { Double($0) * tb } ?? -1)
                }
            } catch { throw .unreadable(path, MediaError("decode", message: String(describing: error))) }
            truncated = truncated || reader.stoppedEarly != nil
            indices = found
            ptsList = times
        }
        let duration = (minPTS != nil && maxPTS != nil) ? Double(maxPTS! - minPTS! + lastDuration) * tb : 0
        var result = ProbeResult(path: path, container: info.formatName, codec: info.codecName,
                           width: info.width, height: info.height, pixelFormat: info.pixelFormat,
                           frames: count, durationSeconds: duration,
                           firstPTS: minPTS.map { Double($0) * tb }, lastPTS: maxPTS.map { Double($0) * tb },
                           frameRate: info.averageFrameRate,
                           sessionStart: info.metadata["com.reel.session_start"],
                           ratio: info.metadata["com.reel.ratio"],
                           frameIndices: indices, framePTS: ptsList, truncated: truncated)
        result.chapters = info.chapters
        return (result, odd)
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
    }
    /// No violation was found.
    public var ok: Bool
    /// The clips in recording order, up to the one with the first violation.
    public var clips: [Clip]
    /// Frames whose index was checked before the first violation (all of them when `ok`).
    public var framesChecked: Int
    /// Session-clock frame indices where one clip ends and the next begins.
    public var seams: [Int]
    /// The first violation, if any.
    @EncodedNull public var violation: String?
}

extension Inspector {
    /// Decodes every clip in recording order and checks that frame indices 0..N-1 appear
    /// exactly once and in order across clips; that each clip has one size, matching its
    /// ratio; that its timestamps rise by one frame at a time; and that on the session clock
    /// each clip starts exactly where the previous one ended (the seam the recording noted).
    /// A violation stops the check and is reported in the result (`ok` false), not thrown.
    /// - Throws: ``InspectError`` when a path is missing, holds no clips, or a clip cannot be read.
    public static func verify(_ paths: [String]) throws(InspectError) -> VerifyReport {
        let files = try clipPaths(paths)
        var probes: [ProbeResult] = []
        var oddFrames: [String: OddFrame] = [:]
        for f in files {
            let (p, odd) = try probeDecoding(f, frames: true)
            probes.append(p)
            oddFrames[f] = odd
        }
        probes.sort { a, b in
            switch (a.sessionStart.flatMap(Timestamp.init(parsing:)), b.sessionStart.flatMap(Timestamp.init(parsing:))) {
            case let (x?, y?) where x != y: return x < y
            default: return a.path < b.path
            }
        }
        var report = VerifyReport(ok: true, clips: [], framesChecked: 0, seams: [], violation: nil)
        var expected = 0
        var previousEnd: Double? = nil
        var lastStep: Double? = nil
        func fail(_ s: String) -> VerifyReport {
            report.ok = false
            report.violation = s
            return report
        }
        for p in probes {
            let indices = p.frameIndices ?? []
            report.clips.append(.init(path: p.path, width: p.width, height: p.height, ratio: p.ratio, frames: indices.count,
                                      firstFrameIndex: indices.first, lastFrameIndex: indices.last, sessionStart: p.sessionStart))
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
            // Frame indices, in order, none missing or repeated.
            for (k, idx) in indices.enumerated() {
                report.framesChecked += 1
                if idx < 0 { return fail("\(name): frame \(k) of the clip has no readable barcode (expected index \(expected))") }
                if idx != expected {
                    return fail(idx < expected
                                ? "\(name): frame index \(idx) repeated (expected \(expected))"
                                : "\(name): frame index \(expected) missing (found \(idx))")
                }
                expected += 1
            }
            // Timestamps: one frame apart, starting at 0.
            let times = p.framePTS ?? []
            let measured = times.count > 1 ? (times.last! - times.first!) / Double(times.count - 1) : nil
            guard let step = measured ?? lastStep ?? p.frameRate.map({ 1 / $0 }) else {
                return fail("\(name): cannot tell its frame duration")
            }
            lastStep = step
            if let first = times.first, abs(first) > step / 2 {
                return fail("\(name): the clip's timeline starts at \(first) s, not 0")
            }
            // Half a frame of tolerance: camera timestamps jitter, but a lost or doubled frame
            // moves a timestamp by a whole frame.
            for k in times.indices.dropFirst() where abs(times[k] - times[k - 1] - step) > step * 0.5 {
                return fail("\(name): timestamps jump from \(times[k - 1]) s to \(times[k]) s at frame \(k)")
            }
            // On the session clock, this clip starts where the previous one ended.
            if let start = p.sessionStart.flatMap(Timestamp.init(parsing:))?.seconds {
                if let end = previousEnd, abs(start - end) > step * 0.5 {
                    return fail("\(name): starts at \(start) s on the session clock, the previous clip ended at \(end) s")
                }
                previousEnd = start + Double(times.count) * step
            }
            if report.clips.count > 1 { report.seams.append(indices[0]) }
        }
        return report
    }

    static func ratioFromName(_ name: String) -> AspectRatio? {
        let stem = name.split(separator: ".").first.map(String.init) ?? name
        return stem.split(separator: "-").last.flatMap { AspectRatio(parsing: String($0)) }
    }
}
