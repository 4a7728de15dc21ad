import Foundation
import Testing
import ReelWriter

/// Real-time recordings at 1080p30. `scripts/test` runs this suite on its own, after the
/// others, so that it competes with nothing but the machine's own load. Whether 1080p30
/// ProRes HQ and H.264 record with no drops across seams in real time is a benchmark's claim
/// (`scripts/bench seams`, with its spread), not a test's; `SeamTests` checks the cuts frame
/// for frame without the clock.
@Suite(.serialized) struct RealtimeTests {
    @Test func defaultsRecordFiveSecondsIntoRecordings() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reel(["record"], in: dir)
        #expect(run.status == 0, "\(run.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir + "/recordings")
        #expect(files.count == 1)
        let name = try #require(files.first)
        #expect(name.hasPrefix("reel-") && name.hasSuffix("-0001-16x9.mov"))
        let probe = try probeFrames(dir + "/recordings/" + name)
        #expect(probe.codec == "prores" && probe.width == 1920 && probe.height == 1080)
        // Real time (the default), so it runs in the real-time pass: drops are possible on a
        // loaded machine, but few, and every frame is accounted for.
        let written = probe.frameIndices ?? []
        #expect(written == written.sorted() && Set(written).count == written.count)
        #expect(written.count >= 140 && written.allSatisfy { (0..<150).contains($0) })
        #expect(run.stdout.contains("recorded 1 clip"))
    }
}

/// Real-time FFV1 in Matroska: its encoder is the slowest to open here (its first frame
/// allocates and zeroes a 300–580 MB packet buffer), so it shows whether any frame waits for
/// an output that is still opening. Each recording must drop nothing: no retries.
@Suite(.serialized) struct RealtimeOpeningTests {
    /// The summary's figures these tests read; the keys added with opening ahead are optional
    /// here, so that a build without them fails on the figures, not on decoding.
    struct Figures: Decodable {
        struct Clip: Decodable { var frames: Int }
        struct SeamAt: Decodable { var frameIndex: Int }
        struct Storage: Decodable { var mode: String }
        var clips: [Clip]
        var seams: [SeamAt]
        var framesCaptured: Int
        var framesWritten: Int
        var framesDropped: Int
        var dropReasons: [String: Int]
        var longestClipOpenMs: Double
        var writerQueueHighWater: Int
        var storage: Storage
        var firstFrameLatencyMs: Double?
        var clipsOpenedAhead: Int?
    }

    /// With `--eager-start`: these tests are about clips opened before their first frame
    /// arrives (the first one before capture); Deferred Start is tested in `RealtimeDeferredStartTests`.
    func recordFFV1(_ args: [String], pooled: Bool, seconds: Int) throws -> (Figures, String) {
        let dir = temporaryDirectory()
        let run = try reel(["record", "--json", "--eager-start", "--out", dir, "--duration", "\(seconds)", "--codec", "ffv1", "--container", "mkv",
                            "--name", "o"] + args + (pooled ? [] : ["--plain"]))
        #expect(run.status == 0, "\(run.stderr)")
        return (try run.decode(Figures.self), dir)
    }

    @Test(arguments: [false, true])
    func noFrameIsLostWhileTheFirstClipOpens(pooled: Bool) throws {
        for attempt in 1...3 {
            let (s, dir) = try recordFFV1([], pooled: pooled, seconds: 2)
            defer { removeTree(dir) }
            #expect(s.storage.mode == (pooled ? "pool" : "plain"))
            #expect(s.framesCaptured == 60 && s.framesWritten == 60, "recording \(attempt): \(s.framesDropped) dropped \(s.dropReasons)")
            // The first clip was opened before capture started, so its first frame waited only
            // for its own encoding (opening FFV1 on the first frame took 170–600 ms here).
            #expect(s.clipsOpenedAhead == 1)
            let latency = try #require(s.firstFrameLatencyMs)
            #expect(latency > 0 && latency < 150, "\(latency) ms")
            let verify = try reel(["verify", dir])
            #expect(verify.status == 0, "\(verify.stderr)")
        }
    }

    @Test(arguments: [false, true])
    func noFrameIsLostAtSeams(pooled: Bool) throws {
        let (s, dir) = try recordFFV1(["--ratio-at", "1:9x16", "--ratio-at", "2:1x1", "--ratio-at", "3:16x9"], pooled: pooled, seconds: 4)
        defer { removeTree(dir) }
        #expect(s.framesCaptured == 120 && s.framesDropped == 0,
                "\(s.dropReasons), longest clip open \(s.longestClipOpenMs) ms, queue high water \(s.writerQueueHighWater)")
        #expect(s.seams.map(\.frameIndex) == [30, 60, 90])
        #expect(s.clips.map(\.frames) == [30, 30, 30, 30])
        // Every clip was opened ahead: the first before capture, the others while the one
        // before them recorded.
        #expect(s.clipsOpenedAhead == 4)
        let verify = try reel(["verify", dir])
        #expect(verify.status == 0, "\(verify.stderr)")
    }
}
