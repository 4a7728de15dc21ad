import Foundation
import Testing
import ReelStorage
import ReelWriter

/// The index is crash-safe (docs/cli.md "The index of what was recorded"): a real `reel
/// record` killed with SIGKILL mid-recording leaves an index that parses, matches the files it
/// lists as published, and lists every other clip file the run made as `open`; `reel verify
/// DIR` passes on it (open clips are not read); a restart adopts the open clips (the one being
/// written, cut back to its last complete fragment, as a salvaged clip; those without a frame
/// deleted) and goes on in the index; verify then exits 65 naming a listed file truncated or
/// removed.
@Suite struct SegmentIndexKillTests {

    /// Whether one of the active slots of recorder `pid` in `pool` (the clip being written,
    /// or one opened ahead) holds `count` complete fragments, the one being written counted
    /// once its next has begun (as `waitForFragments` counts).
    func slotWithFragments(_ count: Int, of pid: Int32, in pool: String) -> Bool {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: pool + "/manifest.json")),
              let m = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let slots = m["slots"] as? [[String: Any]] else { return false }
        return slots.contains { slot in
            guard (slot["owner"] as? Int).map({ Int32($0) }) == pid, slot["state"] as? String == "active",
                  let id = slot["id"] as? Int else { return false }
            let path = pool + "/slots/" + String(format: "slot-%06d.bin", id)
            return (FragmentScanner.completeFragments(of: path)?.count ?? 0) >= count + 1
        }
    }

    func movFiles(_ dir: String) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".mov") })
    }

    @Test func killNineMidRecordingLeavesAnIndexThatMatchesTheFiles() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let index = dir + "/cam.index.json"
        // Not in real time: the writer holds the sensor back rather than drop a frame, so every
        // clip's frames are consecutive and verify can pass whatever the machine's load.
        // 0.1 s fragments: the clip being written reaches the disk a fragment at a time.
        let recorder = try launch(["record", "--name", "cam", "--out", dir, "--plain", "--codec", "h264", "--no-realtime",
                                   "--source", "synthetic:1280", "--segment-duration", "2", "--fragment", "0.1",
                                   "--keep", "1h"] + untilSIGINT)
        // Ready: the index lists two published clips, and the clip being written (listed open)
        // holds two complete fragments. (The index always parses: it is replaced whole.)
        let ready = waitUntil(60) {
            guard let i = (try? SegmentIndex.load(path: index)) ?? nil, i.segments.count >= 2,
                  let open = i.runs.first?.open.first else { return false }
            return (FragmentScanner.completeFragments(of: dir + "/" + open)?.count ?? 0) >= 2
        }
        #expect(ready, "not ready: \(recorder.stderrSoFar)")
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
            #expect(e.firstFrameIndex == next && !e.deleted && !e.salvaged)
            next = e.firstFrameIndex + e.frames
            let bytes = (try FileManager.default.attributesOfItem(atPath: dir + "/" + e.file)[.size] as? NSNumber)?.int64Value
            #expect(bytes == e.bytes, "\(e.file)")
            if let f = ffprobe(dir + "/" + e.file) { #expect(f.frames == e.frames, "\(e.file)") }
        }
        // Every clip file the run made is listed: published, or open (being written, opened ahead).
        let open = try #require(listed.runs.first?.open)
        #expect(try movFiles(dir) == Set(listed.segments.map(\.file) + open))
        let withFrames = open.filter { (FragmentScanner.completeFragments(of: dir + "/" + $0)?.count ?? 0) > 0 }
        #expect(!withFrames.isEmpty, "\(open)")
        let ok = try reel(["verify", dir])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("clips as \(index) lists them"), "\(ok.stdout)")
        // A restart adopts the open clips and goes on in the index, numbered after all of them.
        let again = try reel(["record", "--json", "--name", "cam", "--out", dir, "--plain", "--codec", "h264", "--no-realtime",
                              "--source", "synthetic:1280", "--segment-duration", "2", "--keep", "1h", "--frames", "20"])
        #expect(again.status == 0, "\(again.stderr)")
        let summary = try again.decode(RecordingSummary.self)
        #expect(summary.index?.adopted == withFrames)
        #expect(Set((summary.index?.adopted ?? []) + (summary.index?.discarded ?? [])) == Set(open))
        let after = try #require(try SegmentIndex.load(path: index))
        let highest = open.map { Int($0.split(separator: "-")[1]) ?? 0 }.max() ?? 0
        #expect(after.runs.map(\.run) == [1, 2] && after.runs.last?.firstSegment == highest + 1)
        #expect(after.runs.allSatisfy { $0.open.isEmpty })
        #expect(Array(after.segments.prefix(listed.segments.count)) == listed.segments)
        let adopted = after.segments.filter { $0.run == 1 && $0.salvaged }
        #expect(adopted.map(\.file) == withFrames)
        for e in adopted {
            let probe = try probeFrames(dir + "/" + e.file)
            #expect(e.firstFrameIndex == next && e.frames > 0, "\(e.file)")
            #expect(probe.frameIndices == Array(e.firstFrameIndex..<(e.firstFrameIndex + e.frames)) && !probe.truncated, "\(e.file)")
            next += e.frames
        }
        #expect(after.segments.filter { $0.run == 2 }.map(\.frames) == [20])
        // Nothing of the prefix is left unlisted.
        #expect(try movFiles(dir) == Set(after.segments.map(\.file)))
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

    /// Through a pool, the clip being written is in a slot when the recorder dies; pool
    /// recovery publishes it into the directory when a later recording opens the pool (after
    /// its first frame, Deferred Start: after that recording read the index), and the
    /// recording after that adopts it. docs/storage.md.
    @Test func aPoolClipOfAKilledRunIsAdoptedOnceRecoveryPublishesIt() throws {
        let dir = temporaryDirectory()
        let pool = temporaryDirectory() + "/pool"
        defer { removeTree(dir); removeTree((pool as NSString).deletingLastPathComponent) }
        let made = try reel(["pool", "create", pool, "--capacity", "256M", "--slot", "32M", "--write-mode", "buffered"])
        #expect(made.status == 0, "\(made.stderr)")
        let index = dir + "/cam.index.json"
        let args = ["record", "--json", "--pool", pool, "--name", "cam", "--out", dir, "--codec", "h264", "--no-realtime",
                    "--source", "synthetic:1280", "--segment-duration", "2", "--fragment", "0.1", "--keep", "1h"]
        let recorder = try launch(args + untilSIGINT)
        let ready = waitUntil(60) { ((try? SegmentIndex.load(path: index))??.segments.count ?? 0) >= 2 }
            && waitUntil(60) { slotWithFragments(2, of: recorder.process.processIdentifier, in: pool) }
        #expect(ready, "not ready: \(recorder.stderrSoFar)")
        recorder.signal(SIGKILL)
        _ = recorder.wait()
        let listed = try #require(try SegmentIndex.load(path: index))
        let open = try #require(listed.runs.first?.open)
        #expect(!open.isEmpty)
        // Run 2 reads the index before the pool is opened: nothing to adopt yet; recovery then
        // publishes the clip under its listed name.
        let second = try reel(args + ["--frames", "20"])
        #expect(second.status == 0, "\(second.stderr)")
        let s2 = try second.decode(RecordingSummary.self)
        #expect(s2.index?.adopted == [] && s2.index?.discarded == [])
        let published = open.filter { FileManager.default.fileExists(atPath: dir + "/" + $0) }
        #expect(published.count == 1, "\(open)")
        // Run 3 adopts it: a salvaged clip of run 1, right after run 1's published clips.
        let third = try reel(args + ["--frames", "20"])
        #expect(third.status == 0, "\(third.stderr)")
        let s3 = try third.decode(RecordingSummary.self)
        #expect(s3.index?.adopted == published)
        let after = try #require(try SegmentIndex.load(path: index))
        let adopted = try #require(after.segments.first { $0.file == published.first })
        let last = try #require(listed.segments.last)
        #expect(adopted.run == 1 && adopted.salvaged && adopted.firstFrameIndex == last.firstFrameIndex + last.frames)
        let probe = try probeFrames(dir + "/" + adopted.file)
        #expect(probe.frameIndices == Array(adopted.firstFrameIndex..<(adopted.firstFrameIndex + adopted.frames)))
        let verified = try reel(["verify", dir])
        #expect(verified.status == 0, "\(verified.stderr)")
    }
}
