import Foundation
import Testing
import ReelWriter

/// Fixtures/media (made by scripts/make-fixtures): a 10-frame clip of each codec and what
/// `reel probe --frames` read from it when it was made.
struct MediaFixture: Decodable {
    struct Clip: Decodable {
        var file: String
        /// The `reel record` arguments that made the clip.
        var record: [String]
        var codec: String
        var container: String
        var width: Int
        var height: Int
        var pixelFormat: String
        var frames: Int
        var frameIndices: [Int]
        var framePTS: [Double]
        var ratio: String?
    }
    var clips: [Clip]

    static let directory = repositoryRoot + "/Fixtures/media"
    static let files = ["prores-proxy.mov", "h264.mp4", "hevc.mkv", "ffv1.mkv"]

    static func clip(_ file: String) throws -> Clip {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/expected.json"))
        let all = try JSONDecoder().decode(MediaFixture.self, from: data)
        return try #require(all.clips.first { $0.file == file }, "\(file) is not in expected.json")
    }

    /// Checks what a decode of a clip gives against the fixture's expected values.
    static func expectMatches(_ p: ProbeResult, _ e: Clip, _ what: String) {
        #expect(p.codec == e.codec && p.container == e.container, "\(what): \(p.codec)/\(p.container), expected \(e.codec)/\(e.container)")
        #expect(p.width == e.width && p.height == e.height, "\(what): \(p.width)x\(p.height), expected \(e.width)x\(e.height)")
        #expect(p.pixelFormat == e.pixelFormat, "\(what): pixel format \(p.pixelFormat), expected \(e.pixelFormat)")
        #expect(p.frames == e.frames && !p.truncated, "\(what): \(p.frames) frames (truncated: \(p.truncated)), expected \(e.frames)")
        #expect(p.frameIndices == e.frameIndices, "\(what): barcodes \(p.frameIndices ?? []), expected \(e.frameIndices)")
        let pts = p.framePTS ?? []
        #expect(pts.count == e.framePTS.count && zip(pts, e.framePTS).allSatisfy { abs($0 - $1) < 1e-6 },
                "\(what): timestamps \(pts), expected \(e.framePTS)")
        #expect(p.ratio == e.ratio, "\(what): ratio \(p.ratio ?? "nil"), expected \(e.ratio ?? "nil")")
    }
}

@Suite struct FixtureTests {
    /// The reference clips still decode to what they decoded to when they were made.
    @Test(arguments: MediaFixture.files)
    func referenceClipDecodesToItsExpectedValues(file: String) throws {
        let e = try MediaFixture.clip(file)
        let p = try probeFrames(MediaFixture.directory + "/" + file)
        MediaFixture.expectMatches(p, e, file)
    }

    /// Recording the same frames today, with the same arguments, decodes to the same values.
    @Test(arguments: MediaFixture.files)
    func todaysRecordingDecodesLikeTheReference(file: String) throws {
        let e = try MediaFixture.clip(file)
        let out = temporaryDirectory("reel-fixture")
        defer { removeTree(out) }
        let (run, summary) = try record(e.record + ["--name", "today"], out: out)
        #expect(run.status == 0, "reel record \(e.record.joined(separator: " ")): \(run.stderr)")
        let clip = try #require(summary?.clips.first)
        #expect(summary?.clips.count == 1)
        MediaFixture.expectMatches(try probeFrames(clip.path), e, "today's \(file)")
    }
}
