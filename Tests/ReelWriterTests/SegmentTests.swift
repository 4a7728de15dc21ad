import Foundation
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelWriter

/// The cut policy alone, on plain timestamps (docs/json.md `segments`, docs/cli.md `--segment-duration`).
@Suite struct CutPolicyTests {
    let wide = AspectRatio.landscape16x9
    let tall = AspectRatio.portrait9x16
    let wideSize = Size(width: 1280, height: 720)
    let tallSize = Size(width: 404, height: 720)

    /// The frame indices (of `count` frames, frame k at `k · step` ticks of `timescale` after
    /// `start`) at which `policy` cuts, with the clip always open at the frame's ratio.
    func cuts(_ policy: inout CutPolicy, count: Int, step: Int64, timescale: Int32, start: Int64 = 0) -> [Int] {
        var out: [Int] = []
        for k in 0..<count {
            let pts = Timestamp(value: start + Int64(k) * step, timescale: timescale)
            let open = k == 0 ? nil : (wide, wideSize)
            if let c = policy.cut(before: pts, ratio: wide, size: wideSize, clip: open) {
                #expect(c.reasons == .segment)
                out.append(k)
            }
        }
        return out
    }

    @Test func withoutSegmentsOnlyRatioChangesCut() {
        var p = CutPolicy(segmentDuration: nil)
        #expect(p.segmentDuration == nil)
        #expect(cuts(&p, count: 1000, step: 1, timescale: 30).isEmpty)
        let c = p.cut(before: Timestamp(value: 1000, timescale: 30), ratio: tall, size: tallSize, clip: (wide, wideSize))
        #expect(c == CutPolicy.Cut(reasons: .ratio, boundary: nil))
        // A new crop size at the same ratio is a cut too (the clip has one size).
        let s = p.cut(before: Timestamp(value: 1001, timescale: 30), ratio: wide, size: Size(width: 640, height: 360), clip: (wide, wideSize))
        #expect(s?.reasons == .ratio)
    }

    @Test func oneSecondAt30fpsCutsEvery30Frames() {
        var p = CutPolicy(segmentDuration: 1)
        #expect(cuts(&p, count: 95, step: 1, timescale: 30) == [30, 60, 90])
    }

    /// 2.1 s is 63 frames at 30 fps: 2.1 · 3 is 6.300000000000001 in floating point, which a
    /// grid of doubles would put one frame late.
    @Test func offGridDurationStaysExactForAnHour() {
        var p = CutPolicy(segmentDuration: 2.1)
        let got = cuts(&p, count: 30 * 3600, step: 1, timescale: 30, start: 123_456)
        #expect(got == Array(stride(from: 63, to: 30 * 3600, by: 63)))
        var q = CutPolicy(segmentDuration: 0.1)
        #expect(cuts(&q, count: 30 * 600, step: 1, timescale: 30) == Array(stride(from: 3, to: 30 * 600, by: 3)))
    }

    /// 30000/1001 fps: boundary b falls on frame ceil(b · 30000 / 1001), for ten hours.
    @Test func fractionalFrameRateCutsAtTheFirstFrameAtOrAfterEachBoundary() {
        let count = 30 * 36_000
        var p = CutPolicy(segmentDuration: 1)
        let got = cuts(&p, count: count, step: 1001, timescale: 30000)
        var expected: [Int] = []
        var b = 1
        while true {
            let k = (b * 30000 + 1000) / 1001   // ceil(b · 30000 / 1001)
            if k >= count { break }
            expected.append(k)
            b += 1
        }
        #expect(got.count == expected.count)
        #expect(got == expected)
        #expect(Array(got.prefix(3)) == [30, 60, 90] && got[9] == 300)
        // On a nanosecond clock (a camera's), 1001/30000 s is not a whole number of ticks.
        var n = CutPolicy(segmentDuration: 1)
        var onNs: [Int] = []
        for k in 0..<3000 {
            let pts = Timestamp(value: 5_000_000_000 + Int64(k) * 1_001_000_000 / 30, timescale: 1_000_000_000)
            if n.cut(before: pts, ratio: wide, size: wideSize, clip: k == 0 ? nil : (wide, wideSize)) != nil { onNs.append(k) }
        }
        #expect(onNs == expected.filter { $0 < 3000 })
    }

    @Test func ratioChangeOnABoundaryIsOneCut() {
        var p = CutPolicy(segmentDuration: 1)
        _ = cuts(&p, count: 30, step: 1, timescale: 30)
        let c = p.cut(before: Timestamp(value: 30, timescale: 30), ratio: tall, size: tallSize, clip: (wide, wideSize))
        #expect(c == CutPolicy.Cut(reasons: [.ratio, .segment], boundary: 1))
        #expect(p.boundarySeconds(1) == 1)
        // The next frame, at the new ratio in its own clip, is no cut.
        #expect(p.cut(before: Timestamp(value: 31, timescale: 30), ratio: tall, size: tallSize, clip: (tall, tallSize)) == nil)
    }

    @Test func ratioChangeInsideASegmentKeepsTheGrid() {
        var p = CutPolicy(segmentDuration: 1)
        var got: [(Int, CutReasons)] = []
        for k in 0..<95 {
            let ratio = k >= 45 ? tall : wide
            let size = k >= 45 ? tallSize : wideSize
            let clipRatio = k > 45 ? tall : wide
            let clip = k == 0 ? nil : (clipRatio, clipRatio == tall ? tallSize : wideSize)
            if let c = p.cut(before: Timestamp(value: Int64(k), timescale: 30), ratio: ratio, size: size, clip: clip) {
                got.append((k, c.reasons))
            }
        }
        #expect(got.map(\.0) == [30, 45, 60, 90])
        #expect(got.map(\.1) == [.segment, .ratio, .segment, .segment])
    }

    /// A gap (dropped frames) across several boundaries: one cut, then the grid goes on.
    @Test func aGapAcrossBoundariesIsOneCut() {
        var p = CutPolicy(segmentDuration: 1)
        var got: [(Int64, Int64?)] = []
        for v: Int64 in [0, 1, 29, 100, 101, 119, 120, 150] {
            if let c = p.cut(before: Timestamp(value: v, timescale: 30), ratio: wide, size: wideSize, clip: v == 0 ? nil : (wide, wideSize)) {
                got.append((v, c.boundary))
            }
        }
        #expect(got.map(\.0) == [100, 120, 150])
        #expect(got.map(\.1) == [1, 4, 5])
    }

    @Test func durationsBelowAMillisecondMeanNoSegments() {
        #expect(CutPolicy(segmentDuration: 0).segmentDuration == nil)
        #expect(CutPolicy(segmentDuration: -1).segmentDuration == nil)
        #expect(CutPolicy(segmentDuration: .nan).segmentDuration == nil)
        #expect(CutPolicy(segmentDuration: 0.0005).segmentDuration == nil)
        #expect(CutPolicy(segmentDuration: 0.001).segmentDuration == 0.001)
        #expect(CutPolicy(segmentDuration: 2.1).segmentDuration == 2.1)
    }
}

/// Whole recordings with segments, decoded (docs/cli.md `--segment-duration`, docs/json.md `segments`).
@Suite struct SegmentRecordingTests {
    func record(frames: Int, segment: Double?, ratioAt: [(Int, AspectRatio)] = [],
                codec: VideoCodec = .h264) throws -> (RecordingSummary, VerifyReport, String) {
        var options = RecordOptions()
        options.scene = .pattern   // cheap frames: the scene is not this test's subject
        options.source = .synthetic(size: 1280)
        options.length = .frames(frames)
        options.codec = codec
        options.container = .mov
        options.realtime = false
        options.storage = .plain
        options.namePrefix = "seg"
        options.segmentDuration = segment
        options.ratioChanges = ratioAt.map { (.frame($0.0), $0.1) }
        options.outputDirectory = temporaryDirectory()
        let summary = try Recording(options: options).run()
        let report = try Inspector.verify([options.outputDirectory])
        return (summary, report, options.outputDirectory)
    }

    /// 95 frames at 30 fps in 1 s segments: 30/30/30/5 frames, every index once, each clip
    /// starting with a keyframe.
    @Test func oneSecondSegmentsAreFrameExact() throws {
        let (summary, report, dir) = try record(frames: 95, segment: 1)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(summary.error == nil)
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.framesChecked == 95)
        #expect(report.clips.map(\.frames) == [30, 30, 30, 5])
        #expect(report.seams == [30, 60, 90])
        #expect(summary.clips.map(\.frames) == [30, 30, 30, 5])
        #expect(summary.clips.map(\.firstFrameIndex) == [0, 30, 60, 90])
        #expect(summary.seams.isEmpty)
        #expect(summary.segments.map(\.frameIndex) == [30, 60, 90])
        #expect(summary.segments.map(\.boundarySeconds) == [1, 2, 3])
        #expect(summary.segments.map(\.clip) == [2, 3, 4])
        #expect(summary.segments.allSatisfy { !$0.ratioSeam })
        #expect(summary.framesLost == 0 && summary.framesWritten == 95)
        // Each next segment's clip was opened ahead, off the frame path.
        #expect(summary.clipsOpenedAhead >= 3, "\(summary.clipsOpenedAhead)")
        // docs/json.md: the keys of `segments`.
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(summary)) as? [String: Any]
        let first = (json?["segments"] as? [[String: Any]])?.first
        #expect(Set(first?.keys.map { $0 } ?? []) == ["frameIndex", "pts", "boundarySeconds", "reason", "clip", "ratioSeam"])
        #expect(summary.segments.allSatisfy { $0.reason == "duration" })
        #expect(first?["frameIndex"] as? Int == 30 && first?["clip"] as? Int == 2 && first?["ratioSeam"] as? Bool == false)
        #expect(abs((first?["pts"] as? Double ?? 0) - (summary.clips[1].firstPTS)) < 1e-9)
        for (n, c) in summary.clips.enumerated() {
            let ratio = c.ratio
            #expect((c.path as NSString).lastPathComponent == "seg-000\(n + 1)-\(ratio).mov")
            #expect(try keyframes(c.path).first == 0)
        }
    }

    /// The issue's case: 2.1 s over 7 s at 30 fps is 63/63/63/21 frames; 2.1 s is off the
    /// encoder's 1 s keyframe grid, so every clip's first frame is a forced keyframe.
    @Test(arguments: [VideoCodec.h264, .prores(.proxy)])
    func offGridSegmentsStartWithAForcedKeyframe(codec: VideoCodec) throws {
        let (summary, report, dir) = try record(frames: 210, segment: 2.1, codec: codec)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.framesChecked == 210)
        #expect(report.clips.map(\.frames) == [63, 63, 63, 21])
        #expect(summary.segments.map(\.frameIndex) == [63, 126, 189])
        for c in summary.clips { #expect(try keyframes(c.path).first == 0) }
    }

    /// A ratio change inside a segment is a seam; the segment grid stays where it was.
    @Test func ratioSeamInsideASegmentKeepsTheGrid() throws {
        let (summary, report, dir) = try record(frames: 95, segment: 1, ratioAt: [(45, .portrait9x16)])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.framesChecked == 95)
        #expect(report.seams == [30, 45, 60, 90])
        #expect(summary.seams.map(\.frameIndex) == [45])
        #expect(summary.segments.map(\.frameIndex) == [30, 60, 90])
        #expect(summary.clips.map(\.ratio) == ["16x9", "16x9", "9x16", "9x16", "9x16"])
        #expect((summary.clips[2].path as NSString).lastPathComponent == "seg-0003-9x16.mov")
    }

    /// A ratio change on a boundary is one cut, listed in both `seams` and `segments`.
    @Test func ratioSeamOnABoundaryIsOneCut() throws {
        let (summary, report, dir) = try record(frames: 95, segment: 1, ratioAt: [(60, .portrait9x16)])
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.seams == [30, 60, 90])
        #expect(summary.seams.map(\.frameIndex) == [60])
        #expect(summary.segments.map(\.frameIndex) == [30, 60, 90])
        #expect(summary.segments.map(\.ratioSeam) == [false, true, false])
    }

    @Test func aSegmentBelowAMillisecondIsAUsageError() throws {
        var options = RecordOptions()
        options.scene = .pattern   // cheap frames: the scene is not this test's subject
        options.storage = .plain
        options.outputDirectory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: options.outputDirectory) }
        options.segmentDuration = 0
        #expect(throws: UsageError.self) { try Recording(options: options) }
        options.segmentDuration = .infinity
        #expect(throws: UsageError.self) { try Recording(options: options) }
    }
}
