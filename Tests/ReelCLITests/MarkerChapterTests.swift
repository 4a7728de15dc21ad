import Foundation
import ReelWriter
import Testing

/// ffprobe's chapters of a file: start in seconds and title, in order.
private func ffprobeChapters(_ path: String) throws -> [(start: Double, end: Double, title: String?)] {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try #require(installedTool("ffprobe")))
    p.arguments = ["-v", "error", "-show_chapters", "-of", "json", path]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    try #require(p.terminationStatus == 0)
    let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    let list = json["chapters"] as? [[String: Any]] ?? []
    return list.map { c in
        (Double(c["start_time"] as? String ?? "") ?? -1, Double(c["end_time"] as? String ?? "") ?? -1,
         (c["tags"] as? [String: Any])?["title"] as? String)
    }
}

/// Records from the synthetic sensor with a control socket and a preview until SIGINT; `steps`
/// run while it records, each after 10 more frames were captured.
private func recordWithSteps(_ extra: [String], dir: String, steps: [[String]]) throws -> (Run, PictureSummaryJSON) {
    let socket = dir + "/control.sock"
    let port = try freeTCPPort()
    let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--codec", "h264", "--source", "synthetic:1280",
                          "--control-socket", socket, "--preview", "127.0.0.1:\(port)"] + extra)
    var stopped = false
    defer { if !stopped { rec.signal(SIGINT); _ = rec.wait() } }
    #expect(try waitUntilListening(socket))
    var seen = try #require(waitForFrames(port, atLeast: 10), "the recording never captured 10 frames")
    for step in steps {
        let r = try reel(["control", "--socket", socket] + step)
        #expect(r.status == 0, "\(step): \(r.stdout) \(r.stderr)")
        seen = try #require(waitForFrames(port, atLeast: seen + 10), "the recording stalled after \(step)")
    }
    rec.signal(SIGINT)
    let run = rec.wait()
    stopped = true
    #expect(run.status == 0, "\(run.stderr)")
    return (run, try run.decode(PictureSummaryJSON.self))
}

/// A TCP port on the loopback that was free a moment ago.
private func freeTCPPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0)
    defer { close(fd) }
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &a) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    try #require(ok)
    return UInt16(bigEndian: a.sin_port)
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
