import Foundation
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelWriter

/// Segments by size (docs/cli.md `--segment-size`, docs/json.md `segments`): a new clip starts
/// at the frame that would take the clip past the size; each clip but the last ends within one
/// frame of it, and no frame is lost or repeated across the cuts.
@Suite struct SegmentSizeTests {
    @Test func theSizeCutsOnlyAClipInProgressThatWouldGrowPastIt() {
        var p = CutPolicy(segmentDuration: nil, segmentBytes: 1000)
        let clip = (ratio: AspectRatio.landscape16x9, size: Size(width: 1280, height: 720))
        let t = { (i: Int64) in Timestamp(value: i, timescale: 30) }
        #expect(p.cut(before: t(0), ratio: .landscape16x9, size: clip.size, clip: nil, projectedBytes: 5000) == nil)
        #expect(p.cut(before: t(1), ratio: .landscape16x9, size: clip.size, clip: clip, projectedBytes: 1000) == nil)
        #expect(p.cut(before: t(2), ratio: .landscape16x9, size: clip.size, clip: clip, projectedBytes: 1001)
                == CutPolicy.Cut(reasons: .size, boundary: nil))
        // A ratio change on the same frame is one cut with both reasons.
        #expect(p.cut(before: t(3), ratio: .square, size: Size(width: 720, height: 720), clip: clip, projectedBytes: 2000)
                == CutPolicy.Cut(reasons: [.ratio, .size], boundary: nil))
        // Without a size, the projection is not consulted.
        var q = CutPolicy(segmentDuration: nil)
        #expect(q.cut(before: t(4), ratio: .landscape16x9, size: clip.size, clip: clip, projectedBytes: .max) == nil)
        #expect(CutPolicy(segmentDuration: nil, segmentBytes: 0).segmentBytes == nil)
    }

    func record(frames: Int, codec: VideoCodec, container: Container, size: Int64?, in dir: String) throws -> RecordingSummary {
        var options = RecordOptions()
        options.source = .synthetic(size: 1280)
        // The realistic scene: frames of a camera's sizes, so the cuts are not of toy clips.
        options.scene = .realistic
        options.length = .frames(frames)
        options.codec = codec
        options.container = container
        options.realtime = false
        options.storage = .plain
        options.namePrefix = "size"
        options.segmentSize = size
        options.outputDirectory = dir
        return try Recording(options: options).run()
    }

    /// Payload bytes of each packet of the clip at `path`, in file order.
    func packetSizes(_ path: String) throws -> [Int] {
        var sizes: [Int] = []
        try MediaReader(path: path).forEachPacket { sizes.append($0.size) }
        return sizes
    }

    /// The size is a third of the same recording (realistic scene, 240 frames) without
    /// segments: three to five clips, every one but the last within its largest frame of the
    /// size (sizes by stat, frames by the decoder's barcodes), each starting with a keyframe,
    /// 240 frames in all, each once. (A clip is then many times x264's delay of about 17
    /// frames: the frames inside the encoder are counted at the clip's mean inter frame.)
    @Test(arguments: [(VideoCodec.prores(.proxy), Container.mov), (.h264, .mp4), (.ffv1, .mkv)])
    func eachClipButTheLastEndsWithinOneFrameOfTheSize(codec: VideoCodec, container: Container) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let whole = try record(frames: 240, codec: codec, container: container, size: nil, in: dir + "/whole")
        let total = try #require(whole.clips.first).bytes
        let limit = total / 3
        let summary = try record(frames: 240, codec: codec, container: container, size: limit, in: dir + "/cut")
        #expect(summary.error == nil && summary.framesWritten == 240 && summary.framesLost == 0)
        let report = try Inspector.verify([dir + "/cut"])
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(report.framesChecked == 240)
        #expect((3...5).contains(summary.clips.count), "\(summary.clips.map(\.bytes)) for \(limit)")
        for (n, c) in summary.clips.enumerated() {
            let onDisk = try #require(try FileManager.default.attributesOfItem(atPath: c.path)[.size] as? Int64)
            let packets = try packetSizes(c.path)
            let largest = Int64(try #require(packets.max()))
            #expect(packets.count == c.frames)
            #expect(onDisk <= limit + largest, "clip \(n + 1): \(onDisk) bytes for \(limit), largest frame \(largest)")
            if n < summary.clips.count - 1 {
                #expect(onDisk >= limit - largest, "clip \(n + 1): \(onDisk) bytes for \(limit), largest frame \(largest)")
            }
            #expect(try keyframes(c.path).first == 0, "clip \(n + 1) does not start with a keyframe")
        }
        #expect(summary.segments.map(\.frameIndex) == summary.clips.dropFirst().map(\.firstFrameIndex))
        #expect(summary.segments.allSatisfy { $0.reason == "size" && $0.boundarySeconds == nil && !$0.ratioSeam })
        // docs/json.md: a cut by size has `"boundarySeconds": null`.
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(summary)) as? [String: Any]
        let first = (json?["segments"] as? [[String: Any]])?.first
        #expect(first?["boundarySeconds"] is NSNull && first?["reason"] as? String == "size")
    }

    /// Below 64 KiB is refused before anything is written.
    @Test func aSizeBelow64KiBIsRefused() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(throws: UsageError.self) { _ = try record(frames: 10, codec: .h264, container: .mp4, size: 1000, in: dir) }
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).isEmpty)
    }
}
