import Foundation
import Testing
import ReelWriter

/// The valid codec × container pairs.
let validPairs: [(String, String, String)] = [
    ("prores:hq", "mov", "prores"), ("prores:proxy", "mkv", "prores"),
    ("h264", "mov", "h264"), ("h264", "mp4", "h264"), ("h264", "mkv", "h264"),
    ("hevc", "mov", "hevc"), ("hevc", "mp4", "hevc"), ("hevc", "mkv", "hevc"),
    ("ffv1", "mkv", "ffv1"),
]

@Suite(.serialized) struct RecordTests {
    @Test(.enabled(if: installedTool("ffprobe") != nil, "no ffprobe (Debian's ffmpeg, which scripts/setup installs) to cross-check with"),
          arguments: validPairs.indices)
    func everyCodecAndContainerDecodesToTheFramesRecorded(pair: Int) throws {
        let (codec, container, name) = validPairs[pair]
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let frames = 24
        let (run, summary) = try record(["--frames", "\(frames)", "--codec", codec, "--container", container, "--no-realtime", "--name", "t"], out: dir)
        #expect(run.status == 0, "\(run.stderr)")
        let s = try #require(summary)
        #expect(s.clips.count == 1)
        let clip = try #require(s.clips.first)
        #expect(clip.path.hasSuffix("t-0001-16x9.\(container)"))
        #expect(clip.frames == frames && clip.width == 1920 && clip.height == 1080 && clip.codec == name)
        #expect(s.framesCaptured == frames && s.framesWritten == frames && s.framesDropped == 0)

        // Decode it back: frame count, size, codec, barcodes 0..N-1, timestamps one frame apart from 0.
        let probe = try probeFrames(clip.path)
        #expect(probe.codec == name)
        #expect(probe.width == 1920 && probe.height == 1080)
        #expect(probe.frames == frames)
        #expect(probe.frameIndices == Array(0..<frames))
        let pts = try #require(probe.framePTS)
        #expect(pts.count == frames)
        for (k, t) in pts.enumerated() {
            #expect(abs(t - Double(k) / 30) < 0.0011, "frame \(k) at \(t) s")
        }
        #expect(abs(probe.durationSeconds - Double(frames) / 30) < 0.002)
        // And an independent reader agrees.
        let f = try #require(ffprobe(clip.path), "ffprobe could not read \(clip.path)")
        #expect(f.codec == name && f.width == 1920 && f.height == 1080 && f.frames == frames)
    }

    @Test(arguments: [("prores", "mp4"), ("ffv1", "mp4"), ("ffv1", "mov")])
    func pairsThatDoNotMixAreUsageErrors(codec: String, container: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reel(["record", "--codec", codec, "--container", container, "--out", dir])
        #expect(run.status == 64)
        #expect(run.stderr.contains("cannot go in a \(container) file"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }

    @Test func framesAndDurationAgree() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (ra, a) = try record(["--frames", "45", "--fps", "30", "--no-realtime", "--codec", "prores:proxy", "--name", "a", "--source", "synthetic:1280"], out: dir)
        let (rb, b) = try record(["--duration", "1.5", "--fps", "30", "--no-realtime", "--codec", "prores:proxy", "--name", "b", "--source", "synthetic:1280"], out: dir)
        #expect(ra.status == 0 && rb.status == 0, "\(ra.stderr) \(rb.stderr)")
        let ca = try #require(a?.clips.first), cb = try #require(b?.clips.first)
        #expect(ca.frames == 45 && cb.frames == 45)
        #expect(try probeFrames(ca.path).frameIndices == (try probeFrames(cb.path).frameIndices))
        #expect(ca.width == 1280 && ca.height == 720)
    }

    @Test func sigintFinishesTheClipAndKeepsIt() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // In the test pool; interrupted once complete fragments of 60 frames are in its slot.
        let p = try launch(["record", "--codec", "prores:proxy", "--out", dir, "--name", "int", "--json"] + untilSIGINT)
        #expect(waitForCompleteFrames(60, of: p.process.processIdentifier, in: testPool), "no 60 frames in complete fragments within 60 s")
        p.signal(SIGINT)
        let run = p.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(RecordingSummary.self)
        #expect(summary.stopReason == "interrupted")
        let clip = try #require(summary.clips.first)
        let indices = try #require(try probeFrames(clip.path).frameIndices)
        #expect(indices.count == clip.frames)
        #expect(indices.count > 30)
        // A prefix of the frames captured: in order, nothing repeated, drops (if any) counted.
        #expect(indices.first == 0 && indices == indices.sorted() && Set(indices).count == indices.count)
        // Every frame captured is written or counted as dropped (also one dropped after the last
        // one written); the gaps among those written are drops.
        #expect(indices.count + summary.framesDropped == summary.framesCaptured)
        #expect((indices.last ?? 0) + 1 - indices.count <= summary.framesDropped)
    }
}

@Suite(.serialized) struct BadInputTests {
    func expectUsage(_ args: [String], _ fragment: String, status: Int32 = 64) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reel(args + ["--out", dir + "/out"])
        #expect(run.status == status, "\(args): \(run.stderr)")
        #expect(run.stderr.contains(fragment), "\(args): \(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(args): \(run.stderr)")
        #expect(!run.stderr.contains("Fatal") && !run.stderr.contains("crash"))
    }

    @Test func aClipNameThatExistsIsNeverReplaced() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        for storage in [["--plain"], []] {
            let args = ["record", "--frames", "5", "--no-realtime", "--codec", "prores:proxy", "--name", "same", "--out", dir] + storage
            let first = try reel(args)
            #expect(first.status == 0, "\(first.stderr)")
            let bytes = try FileManager.default.attributesOfItem(atPath: dir + "/same-0001-16x9.mov")[.size] as? Int
            let second = try reel(args)
            #expect(second.status == 73 && second.stderr.contains("already exists"), "\(storage): \(second.stderr)")
            #expect(second.stderr.split(separator: "\n").count == 1)
            #expect(try FileManager.default.attributesOfItem(atPath: dir + "/same-0001-16x9.mov")[.size] as? Int == bytes)
            #expect(try probeFrames(dir + "/same-0001-16x9.mov").frameIndices == Array(0..<5))
            removeTree(dir + "/same-0001-16x9.mov")
        }
    }

    @Test func usageErrors() throws {
        try expectUsage(["record", "--codec", "vp9"], "unknown codec 'vp9'")
        try expectUsage(["record", "--codec", "prores:ultra"], "unknown codec 'prores:ultra'")
        try expectUsage(["record", "--container", "avi"], "unknown container 'avi'")
        try expectUsage(["record", "--source", "synthetic:1921"], "sensor size 1921 is odd")
        try expectUsage(["record", "--source", "synthetic:640"], "sensor size 640 is out of range")
        try expectUsage(["record", "--source", "synthetic:5000"], "sensor size 5000 is out of range")
        try expectUsage(["record", "--source", "synthetic:big"], "needs a number")
        try expectUsage(["record", "--source", "webcam"], "unknown source 'webcam'")
        try expectUsage(["record", "--ratio", "2x1"], "unknown ratio '2x1'")
        try expectUsage(["record", "--ratio-at", "2:5x4"], "unknown ratio '5x4'")
        try expectUsage(["record", "--ratio-at", "soon:9x16"], "is not a time")
        try expectUsage(["record", "--duration", "-1"], "not a positive number")
        try expectUsage(["record", "--frames", "0"], "out of range")
        try expectUsage(["record", "--frames", "10", "--duration", "1"], "either --duration or --frames")
        try expectUsage(["record", "--fps", "0"], "not a frame rate")
        try expectUsage(["record", "--bogus"], "unknown option '--bogus'")
        try expectUsage(["record", "--source", "synthetic:4032", "--ratio", "16x9"], "ratio 16x9 is not supported")
        try expectUsage(["frobnicate"], "unknown command 'frobnicate'")
        let probe = try reel(["probe"])
        #expect(probe.status == 64 && probe.stderr.contains("probe needs at least one FILE"))
    }

    @Test func unwritableOutputDirectory() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let file = dir + "/plain-file"
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        let run = try reel(["record", "--frames", "5", "--out", file + "/clips"])
        #expect(run.status == 73, "\(run.stderr)")
        #expect(run.stderr.contains("cannot write to output directory") && run.stderr.contains("Not a directory"), "\(run.stderr)")
    }

    @Test(.enabled(if: canMountTmpfs, "cannot mount a read-only tmpfs here (needs root and a container that allows mount)"))
    func aReadOnlyOutputDirectory() throws {
        // Root ignores permission bits, so use a read-only filesystem.
        let ro = try #require(mountTmpfs(sizeKiB: 1024, readOnly: true))
        defer { unmount(ro) }
        let run = try reel(["record", "--frames", "5", "--out", ro])
        #expect(run.status == 73, "\(run.stderr)")
        #expect(run.stderr.contains("cannot write to output directory"), "\(run.stderr)")
    }

    @Test func probeOfMissingOrForeignFile() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let missing = try reel(["probe", dir + "/nope.mov"])
        #expect(missing.status == 66 && missing.stderr.contains("cannot read"))
        _ = FileManager.default.createFile(atPath: dir + "/junk.mov", contents: Data(repeating: 7, count: 4096))
        let junk = try reel(["probe", dir + "/junk.mov"])
        #expect(junk.status == 66 && junk.stderr.contains("cannot read"), "\(junk.stderr)")
    }

    @Test(.enabled(if: canMountTmpfs, "cannot mount a tmpfs here to fill (needs root and a container that allows mount)"))
    func diskFullKeepsAPlayableClipAndSaysHowMuch() throws {
        let mnt = try #require(mountTmpfs(sizeKiB: 6 * 1024))
        defer { unmount(mnt) }
        let (run, summary) = try record(["--plain", "--frames", "600", "--no-realtime", "--codec", "prores:hq", "--name", "full"], out: mnt)
        #expect(run.status == 74, "\(run.stderr)")
        #expect(run.stderr.contains("disk full") && run.stderr.contains("kept"), "\(run.stderr)")
        let s = try #require(summary)
        #expect(s.stopReason == "failed")
        let clip = try #require(s.clips.first)
        #expect(clip.salvaged && clip.frames > 0)
        #expect(run.stderr.contains("kept \(clip.frames) frames"))
        #expect(s.framesLost > 0)
        // Playable: decodes to exactly the frames the summary says, 0..K-1.
        let probe = try probeFrames(clip.path)
        #expect(probe.frameIndices == Array(0..<clip.frames))
        #expect(!probe.truncated)
    }
}
