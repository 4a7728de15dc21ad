import Foundation
import Testing
import ReelCore
import ReelWriter

/// A walk through the five ratios that takes every ordered pair (from ≠ to) exactly once
/// (an Eulerian circuit of the complete directed graph, by Hierholzer's algorithm).
func everyOrderedPair(startingAt start: AspectRatio = .landscape16x9) -> [AspectRatio] {
    let all = AspectRatio.allCases
    var unused: [AspectRatio: [AspectRatio]] = [:]
    for a in all { unused[a] = all.filter { $0 != a } }
    var stack = [start], circuit: [AspectRatio] = []
    while let top = stack.last {
        if var next = unused[top], !next.isEmpty {
            stack.append(next.removeFirst())
            unused[top] = next
        } else {
            circuit.append(stack.removeLast())
        }
    }
    return circuit.reversed()
}

@Suite(.serialized) struct SeamTests {
    /// Records with ratio changes at the given frames and checks the clips against the plan.
    func recordAndCheck(_ changes: [(Int, AspectRatio)], frames: Int, codec: String = "prores:proxy",
                        container: String = "mov", sensor: Int = 1920,
                        sourceLine: SourceLocation = #_sourceLocation) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let args = ["--frames", "\(frames)", "--no-realtime", "--codec", codec, "--container", container,
                    "--source", "synthetic:\(sensor)", "--name", "seam"]
            + changes.flatMap { ["--ratio-at", "#\($0.0):\($0.1.rawValue)"] }
        let (run, summary) = try record(args, out: dir)
        #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLine)
        let s = try #require(summary, sourceLocation: sourceLine)

        // The plan: runs of one ratio, a clip per run.
        var runs: [(ratio: AspectRatio, first: Int)] = [(.landscape16x9, 0)]
        for (frame, ratio) in changes.sorted(by: { $0.0 < $1.0 }) {
            if frame == 0 { runs[0].ratio = ratio; continue }
            if runs.last!.first == frame { runs[runs.count - 1].ratio = ratio } else if runs.last!.ratio != ratio { runs.append((ratio, frame)) }
        }
        let sensorSize = Size(width: sensor, height: sensor)
        #expect(s.clips.count == runs.count, "clips \(s.clips.map(\.path))", sourceLocation: sourceLine)
        #expect(s.seams.count == runs.count - 1, sourceLocation: sourceLine)
        for (k, (clip, planned)) in zip(s.clips, runs).enumerated() {
            let end = k + 1 < runs.count ? runs[k + 1].first : frames
            let size = planned.ratio.crop(in: sensorSize)
            #expect(clip.ratio == planned.ratio.rawValue && clip.width == size.width && clip.height == size.height, sourceLocation: sourceLine)
            #expect(clip.path.hasSuffix(String(format: "seam-%04d-%@.%@", k + 1, planned.ratio.rawValue, container)), sourceLocation: sourceLine)
            #expect(clip.firstFrameIndex == planned.first && clip.lastFrameIndex == end - 1 && clip.frames == end - planned.first, sourceLocation: sourceLine)
            #expect(abs(clip.firstPTS - Double(planned.first) / 30) < 1e-9, sourceLocation: sourceLine)
        }
        for (seam, planned) in zip(s.seams, runs.dropFirst()) {
            #expect(seam.frameIndex == planned.first && seam.to == planned.ratio, sourceLocation: sourceLine)
        }
        // Decode everything: each index once, in order, clips of one size, timelines joined.
        let verify = try reel(["verify", "--json", dir])
        #expect(verify.status == 0, "\(verify.stderr)", sourceLocation: sourceLine)
        let report = try verify.decode(VerifyReport.self)
        #expect(report.ok && report.framesChecked == frames, sourceLocation: sourceLine)
        #expect(report.seams == runs.dropFirst().map(\.first), sourceLocation: sourceLine)
    }

    @Test func everyOrderedPairOfRatios() throws {
        let walk = everyOrderedPair()
        #expect(walk.count == 21)
        let pairs = Set(zip(walk, walk.dropFirst()).map { "\($0.0)>\($0.1)" })
        #expect(pairs.count == 20)
        let changes = walk.enumerated().dropFirst().map { ($0.offset * 3, $0.element) }
        try recordAndCheck(changes, frames: 63)
    }

    @Test(arguments: ["prores:proxy", "h264"])
    func changesOnConsecutiveFramesMakeOneFrameClips(codec: String) throws {
        try recordAndCheck([(5, .portrait9x16), (6, .square), (7, .landscape16x9)], frames: 12, codec: codec,
                           container: codec == "h264" ? "mp4" : "mov")
    }

    @Test func changeAtFrameZero() throws {
        try recordAndCheck([(0, .portrait9x16), (10, .landscape4x3)], frames: 20)
    }

    @Test(arguments: ["prores:proxy", "h264"])
    func fiftyChangesInTenSeconds(codec: String) throws {
        let order: [AspectRatio] = [.portrait9x16, .square, .landscape4x3, .portrait3x4, .landscape16x9]
        let changes = (1...50).map { (5 + ($0 - 1) * 6, order[($0 - 1) % order.count]) }
        try recordAndCheck(changes, frames: 300, codec: codec, container: codec == "h264" ? "mkv" : "mov", sensor: 1280)
    }

    @Test func settingTheSameRatioMakesNoNewClip() throws {
        try recordAndCheck([(10, .landscape16x9), (20, .landscape16x9)], frames: 30)
    }

    @Test func timesInSecondsCutAtTheFirstFrameAtOrAfterThem() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, summary) = try record(["--duration", "2", "--no-realtime", "--codec", "prores:proxy", "--ratio-at", "0.5:9x16",
                                         "--ratio-at", "1.01:1x1", "--name", "t"], out: dir)
        #expect(run.status == 0, "\(run.stderr)")
        let s = try #require(summary)
        #expect(s.clips.map(\.firstFrameIndex) == [0, 15, 31])
        #expect(s.clips.map(\.frames) == [15, 16, 29])
    }

    @Test func unsupportedRatioIsRefusedBeforeRecording() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reel(["record", "--source", "synthetic:4032", "--ratio", "4x3", "--ratio-at", "1:9x16", "--out", dir])
        #expect(run.status == 64)
        #expect(run.stderr.contains("ratio 9x16 is not supported") && run.stderr.contains("4x3, 3x4"), "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }

    @Test func verifyNamesTheFirstViolation() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, summary) = try record(["--frames", "30", "--no-realtime", "--codec", "prores:proxy", "--ratio-at", "#10:9x16",
                                         "--ratio-at", "#20:1x1", "--name", "v"], out: dir)
        #expect(run.status == 0)
        let clips = try #require(summary?.clips)
        // Remove the middle clip: frames 10..19 are missing.
        try FileManager.default.removeItem(atPath: clips[1].path)
        let verify = try reel(["verify", dir])
        #expect(verify.status == 65)
        #expect(verify.stderr.contains("frame index 10 missing (found 20)"), "\(verify.stderr)")
        // The same clip twice: an index repeats.
        let again = try reel(["verify", clips[0].path, clips[0].path])
        #expect(again.status == 65 && again.stderr.contains("repeated"), "\(again.stderr)")
    }
}
