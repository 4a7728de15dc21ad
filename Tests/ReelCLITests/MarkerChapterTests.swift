import Foundation
import ReelWriter
import Testing

/// ffprobe's chapters of a file: start in seconds and title, in order.
private func ffprobeChapters(_ path: String) throws -> [(start: Double, end: Double, title: String?)] {
    let (status, data) = try runTool("ffprobe", ["-v", "error", "-show_chapters", "-of", "json", path])
    try #require(status == 0)
    let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let list = json["chapters"] as? [[String: Any]] ?? []
    return list.map { c in
        (Double(c["start_time"] as? String ?? "") ?? -1, Double(c["end_time"] as? String ?? "") ?? -1,
         (c["tags"] as? [String: Any])?["title"] as? String)
    }
}

/// Records from the synthetic sensor with a control socket until SIGINT; `steps`
/// run while it records, each after 10 more frames were captured.
private func recordWithSteps(_ extra: [String], dir: String, steps: [[String]]) throws -> (Run, PictureSummaryJSON) {
    let socket = dir + "/control.sock"
    let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--duration", "3600", "--codec", "h264", "--source", "synthetic:1280",
                          "--control-socket", socket] + extra)
    var stopped = false
    defer { if !stopped { rec.signal(SIGINT); _ = rec.wait() } }
    #expect(try waitUntilListening(socket))
    try #require(waitForFrame(socket, atLeast: 10) != nil, "the recording never captured 10 frames")
    for step in steps {
        let r = try reel(["control", "--socket", socket] + step)
        if r.status != 0 {
            rec.signal(SIGINT)
            let gone = rec.wait()
            stopped = true
            Issue.record("\(step): \(r.stdout) \(r.stderr); the recording: \(gone.status) \(gone.stderr)")
            throw ProbeFailed(message: "reel control \(step) failed")
        }
        try #require(waitForFramesAfterNow(socket, 10) != nil, "the recording stalled after \(step)")
    }
    rec.signal(SIGINT)
    let run = rec.wait()
    stopped = true
    #expect(run.status == 0, "\(run.stderr)")
    return (run, try run.decode(PictureSummaryJSON.self))
}

/// Markers (secondary `ended`) become chapters inside the clips, checked with `reel probe`
/// and with ffprobe, an independent reader.
@Suite struct MarkerChapterTests {
    /// MKV: a marker, a ratio change (a second clip), another marker. Each clip has one
    /// chapter, `Marker 1` and `Marker 2`, starting at the marked frame's time on that clip's
    /// timeline and ending where the clip ends.
    @Test func markersBecomeChaptersOfTheirClipsInMKV() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (_, summary) = try recordWithSteps(["--container", "mkv"], dir: dir, steps: [["marker"], ["ratio", "9x16"], ["marker"]])
        let marks = summary.markers.compactMap(\.frameIndex)
        try #require(marks.count == 2 && summary.clips.count == 2, "markers \(marks), clips \(summary.clips.map(\.path))")
        for (n, (clip, mark)) in zip(summary.clips, marks).enumerated() {
            let indices = try frameIndices(of: clip)
            #expect(indices.first! <= mark && mark <= indices.last!, "marker \(n + 1) at \(mark) is not in clip \(clip.path)")
            let probe = try probeFrames(clip.path)
            let pts = try #require(probe.framePTS)
            let at = try #require(indices.firstIndex { $0 >= mark })
            try #require(probe.chapters.count == 1, "\(clip.path): \(probe.chapters)")
            let chapter = probe.chapters[0]
            #expect(chapter.title == "Marker \(n + 1)")
            #expect(abs(chapter.start - pts[at]) < 0.002, "chapter at \(chapter.start) s, the marked frame \(mark) at \(pts[at]) s")
            // The clip's end: its last frame's time and duration (one frame's slack: MKV may not store the last duration).
            #expect(abs(chapter.end - probe.durationSeconds) < 0.04, "chapter ends at \(chapter.end) s, the clip at \(probe.durationSeconds) s")
            let other = try ffprobeChapters(clip.path)
            #expect(other.count == 1 && other.first?.title == "Marker \(n + 1)" && abs((other.first?.start ?? -1) - pts[at]) < 0.002,
                    "ffprobe: \(other)")
        }
    }

    /// MOV (and MP4): Reel's clips are fragmented, their `moov` written before the first
    /// fragment, so markers stay in the summary only: `reel probe` and ffprobe find no chapter.
    @Test func movClipsKeepMarkersInTheSummaryOnly() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (_, summary) = try recordWithSteps(["--container", "mov"], dir: dir, steps: [["marker"]])
        #expect(summary.markers.count == 1 && summary.markers.first?.frameIndex != nil)
        let clip = try #require(summary.clips.first)
        #expect(try probeFrames(clip.path).chapters.isEmpty)
        #expect(try ffprobeChapters(clip.path).isEmpty)
    }
}
