import Foundation
import Testing
import ReelWriter

/// The JSON and the verdicts say what happened: documented keys are always there, the write
/// mode is the one the writes used, and verify looks at every frame.
@Suite(.serialized) struct ReportTests {
    /// The top-level object of a JSON document.
    func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
    }

    @Test func documentedNullsAreInTheJSON() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reel(["record", "--plain", "--frames", "10", "--no-realtime", "--codec", "prores:proxy",
                            "--out", dir, "--name", "n", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try object(run.stdout)
        #expect(summary["error"] is NSNull, "\(run.stdout)")
        #expect(summary["schemaVersion"] as? Int == 1, "\(run.stdout)")
        let storage = try #require(summary["storage"] as? [String: Any])
        #expect(storage["mode"] as? String == "plain")
        for key in ["pool", "remainingCapacityBefore", "remainingCapacityAfter"] {
            #expect(storage[key] is NSNull, "storage.\(key): \(run.stdout)")
        }
        let verify = try reel(["verify", dir, "--json"])
        #expect(verify.status == 0, "\(verify.stderr)")
        let report = try object(verify.stdout)
        #expect(report["ok"] as? Bool == true && report["violation"] is NSNull, "\(verify.stdout)")
        // And the documented keys of probe, null when the file does not have them.
        let bare = dir + "/bare.mkv"
        try #require(sh("ffmpeg -v error -f lavfi -i testsrc2=s=320x240:d=0.5 -c:v ffv1 \(bare)") == 0)
        let probe = try reel(["probe", bare, "--json"])
        #expect(probe.status == 0, "\(probe.stderr)")
        let p = try object(probe.stdout)
        for key in ["sessionStart", "ratio"] { #expect(p[key] is NSNull, "\(key): \(probe.stdout)") }
        for key in ["firstPTS", "lastPTS", "frameRate"] { #expect(p[key] is NSNumber, "\(key): \(probe.stdout)") }
    }

    /// A pool made for direct I/O, moved to a filesystem without it (ramfs): the slots cannot
    /// be opened with O_DIRECT there, the writes go buffered, and the summary says buffered.
    @Test(.enabled(if: canMountTmpfs && canMountRamfs, "cannot mount a tmpfs and a ramfs here (needs root and a container that allows mount)"))
    func theWriteModeIsTheOneTheWritesUsed() throws {
        let direct = try #require(mountTmpfs(sizeKiB: 128 * 1024))
        defer { unmount(direct) }
        let none = try #require(mountTmpfs(sizeKiB: 128 * 1024, type: "ramfs"))
        defer { unmount(none) }
        let made = try reel(["pool", "create", direct + "/pool", "--capacity", "64M", "--slot", "32M", "--write-mode", "direct", "--json"])
        try #require(made.status == 0, "tmpfs has O_DIRECT since Linux 6.6: \(made.stderr)")
        // Where O_DIRECT works, direct it is.
        let (run1, s1) = try record(["--pool", direct + "/pool", "--frames", "30", "--no-realtime", "--codec", "prores:proxy", "--name", "d"], out: direct + "/out")
        #expect(run1.status == 0, "\(run1.stderr)")
        #expect(s1?.storage.writeMode == "direct")
        // Moved (copied) to ramfs: the manifest still asks for direct I/O.
        try #require(sh("cp -a \(direct)/pool \(none)/pool") == 0)
        let (run2, s2) = try record(["--pool", none + "/pool", "--frames", "30", "--no-realtime", "--codec", "prores:proxy", "--name", "b"], out: none + "/out")
        #expect(run2.status == 0, "\(run2.stderr)")
        let s = try #require(s2)
        #expect(s.storage.writeMode == "buffered", "O_DIRECT cannot be opened on ramfs, so nothing was written direct")
        #expect(try probeFrames(try #require(s.clips.first).path).frameIndices == Array(0..<30))
    }

    /// Two clips of Reel's (16x9 then 9x16) joined without re-encoding into one file, whose
    /// header says 1280x720 throughout: the frames from 30 on are 720x1280.
    @Test(.enabled(if: installedTool("ffmpeg") != nil, "no ffmpeg (which scripts/setup installs) to join clips with"),
          arguments: ["mkv", "mov"])
    func verifyChecksEveryFramesSizeNotOnlyTheHeader(container: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, summary) = try record(["--plain", "--frames", "60", "--no-realtime", "--codec", "prores:proxy", "--source", "synthetic:1280",
                                         "--ratio-at", "#30:9x16", "--name", "j"], out: dir + "/rec")
        #expect(run.status == 0, "\(run.stderr)")
        let clips = try #require(summary?.clips)
        try #require(clips.count == 2)
        let list = clips.map { "file '\($0.path)'\n" }.joined()
        try list.write(toFile: dir + "/list.txt", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: dir + "/joined", withIntermediateDirectories: true)
        let joined = dir + "/joined/joined-16x9.\(container)"
        try #require(sh("ffmpeg -v error -f concat -safe 0 -i \(dir)/list.txt -c copy \(joined)") == 0)
        let probe = try probeFrames(joined)
        #expect(probe.width == 1280 && probe.height == 720 && probe.frameIndices == Array(0..<60), "the header says 1280x720, the barcodes are all there")
        let verify = try reel(["verify", dir + "/joined"])
        #expect(verify.status == 65, "\(verify.stdout) \(verify.stderr)")
        #expect(verify.stderr == "reel: verify: joined-16x9.\(container): frame 30 of the clip is 720x1280, the clip's header says 1280x720\n", "\(verify.stderr)")
        let json = try reel(["verify", dir + "/joined", "--json"])
        let violation = try object(json.stdout)["violation"] as? String
        #expect(json.status == 65 && violation == "joined-16x9.\(container): frame 30 of the clip is 720x1280, the clip's header says 1280x720")
        // The clips as recorded verify.
        let fine = try reel(["verify", dir + "/rec"])
        #expect(fine.status == 0, "\(fine.stderr)")
    }
}
