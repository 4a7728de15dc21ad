import Foundation
import Testing
import ReelWriter

/// The index is crash-safe (docs/cli.md "The index"): a real `reel record` killed with SIGKILL
/// mid-recording leaves an index that parses and matches the files it lists; `reel verify DIR`
/// passes on it (the clip being written when it died is not listed, so not read), and exits 65
/// naming a listed file truncated or removed; a restart goes on in the same index.
@Suite struct SegmentIndexKillTests {

    @Test func killNineMidRecordingLeavesAnIndexThatMatchesTheFiles() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let index = dir + "/cam.index.json"
        // Not in real time: the writer holds the sensor back rather than drop a frame, so every
        // clip's frames are consecutive and verify can pass whatever the machine's load.
        let recorder = try launch(["record", "--name", "cam", "--out", dir, "--plain", "--codec", "h264", "--no-realtime",
                                   "--source", "synthetic:1280", "--segment-duration", "0.5", "--keep", "1h"] + untilSIGINT)
        // Ready: the index lists two published clips (read as the recorder writes it: it
        // always parses, being replaced whole by rename).
        let ready = waitUntil(60) { ((try? SegmentIndex.load(path: index))??.segments.count ?? 0) >= 2 }
        #expect(ready, "no index with 2 clips: \(recorder.stderrSoFar)")
        recorder.signal(SIGKILL)
        let run = recorder.wait()
        #expect(recorder.process.terminationReason == .uncaughtSignal && run.status == SIGKILL)
        let listed = try #require(try SegmentIndex.load(path: index))
        #expect(listed.segments.count >= 2 && listed.runs.count == 1)
        #expect(listed.segments.map(\.segment) == Array(1...listed.segments.count))
        var next = 0
        for e in listed.segments {
            let probe = try probeFrames(dir + "/" + e.file)
            #expect(probe.frameIndices == Array(e.firstFrameIndex..<(e.firstFrameIndex + e.frames)), "\(e.file)")
            #expect(e.firstFrameIndex == next && !e.deleted)
            next = e.firstFrameIndex + e.frames
            let bytes = (try FileManager.default.attributesOfItem(atPath: dir + "/" + e.file)[.size] as? NSNumber)?.int64Value
            #expect(bytes == e.bytes, "\(e.file)")
            if let f = ffprobe(dir + "/" + e.file) { #expect(f.frames == e.frames, "\(e.file)") }
        }
        // The clips it was writing (and opening ahead) are there, not listed, numbered after the listed ones.
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        let unlisted = names.filter { $0.hasSuffix(".mov") && !listed.segments.map(\.file).contains($0) }
        let lastListed = listed.segments.last?.segment ?? 0
        #expect(unlisted.allSatisfy { (Int($0.split(separator: "-")[1]) ?? 0) > lastListed }, "\(names)")
        let ok = try reel(["verify", dir])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("clips as \(index) lists them"), "\(ok.stdout)")
        // A restart goes on in the index, after every file of the prefix, the partial one's too.
        let again = try reel(["record", "--name", "cam", "--out", dir, "--plain", "--codec", "h264", "--no-realtime",
                              "--segment-duration", "0.5", "--keep", "1h", "--frames", "20"])
        #expect(again.status == 0, "\(again.stderr)")
        let after = try #require(try SegmentIndex.load(path: index))
        let highest = (listed.segments.map(\.segment) + unlisted.compactMap { Int($0.split(separator: "-")[1]) }).max() ?? 0
        #expect(after.runs.map(\.run) == [1, 2] && after.runs.last?.firstSegment == highest + 1)
        #expect(Array(after.segments.prefix(listed.segments.count)) == listed.segments)
        #expect(after.segments.filter { $0.run == 2 }.map(\.frames) == [15, 5])
        let both = try reel(["verify", dir])
        #expect(both.status == 0, "\(both.stderr)")
        // A listed file truncated, then removed: exit 65 and one line naming it.
        let victim = dir + "/" + listed.segments[1].file
        let saved = try Data(contentsOf: URL(fileURLWithPath: victim))
        try saved.prefix(saved.count / 2).write(to: URL(fileURLWithPath: victim))
        let truncated = try reel(["verify", dir])
        #expect(truncated.status == 65 && truncated.stderr.hasPrefix("reel: verify: \(listed.segments[1].file): "), "\(truncated.stderr)")
        #expect(truncated.stderr.split(separator: "\n").count == 1)
        try FileManager.default.removeItem(atPath: victim)
        let removed = try reel(["verify", dir])
        #expect(removed.status == 65 && removed.stderr == "reel: verify: \(listed.segments[1].file): listed in cam.index.json but no such file or directory\n", "\(removed.stderr)")
    }
}
