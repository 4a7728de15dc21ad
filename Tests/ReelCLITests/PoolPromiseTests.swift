import Foundation
import Testing
import ReelStorage
import ReelWriter

/// A fresh machine's directories (no default pool, no cached measurement) under `dir`, with
/// the default pool's size capped by `REEL_DEFAULT_POOL_CAPACITY` (`cap`).
func freshMachine(_ dir: String, cap: String?) -> [String: String] {
    var env = ["REEL_POOL": "", "XDG_DATA_HOME": dir + "/data", "XDG_CACHE_HOME": dir + "/cache", "HOME": dir + "/home"]
    if let cap { env["REEL_DEFAULT_POOL_CAPACITY"] = cap }
    return env
}

/// The lines of `stderr` that start `reel: warning: `.
func warningLines(_ stderr: String) -> [Substring] {
    stderr.split(separator: "\n").filter { $0.hasPrefix("reel: warning: ") }
}

/// Issue 23 item 1 and 7: the first recording on a fresh machine, while the default pool is
/// made. Real time (the serial pass): frames are dropped if anything holds the recording up.
@Suite(.serialized) struct RealtimeFirstRecordingTests {
    /// No default pool yet: the recording starts at once in plain files while the pool is
    /// prepared in a detached process, drops nothing, and the pool is ready afterwards.
    @Test func theFirstRecordingLosesNothingWhileThePoolIsPrepared() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let env = freshMachine(dir, cap: "64M")
        let pool = dir + "/data/reel/pool"
        let run = try #require(try reel(["record", "--json", "--duration", "3", "--ratio-at", "1.5:9x16", "--out", dir + "/out", "--name", "first"],
                                        within: 120, environment: env), "reel record did not end within 120 s")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.framesDropped == 0, "\(s.dropReasons); the writer held at most \(s.writerQueueHighWater) of \(s.writerQueueCapacity); \(run.stderr)")
        #expect(s.framesWritten == 90 && s.clips.count == 2, "\(s.clips.map(\.frames)) at \(s.fps) fps")
        #expect(s.storage.pool == pool && s.storage.poolCreated)
        // The first clip cannot wait for a slot: it is a plain file.
        #expect(s.clips.first?.storage == "plain", "\(s.clips.map(\.storage))")
        #expect(s.clips.allSatisfy { ["plain", "pool"].contains($0.storage) })
        let announced = warningLines(run.stderr)
        #expect(announced.count == 1 && announced[0].contains("creating the default storage pool at \(pool): 64.0 MiB in 16.0 MiB slots"),
                "\(run.stderr)")
        let verified = try reel(["verify", dir + "/out"])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        for clip in s.clips { #expect(try risingIndices(clip.path, count: clip.frames), "\(clip.path)") }
        // The detached preparation finishes: every slot free.
        let ready = try #require(try reel(["pool", "wait", pool, "--timeout", "60", "--json"], within: 90, environment: env))
        #expect(ready.status == 0, "\(ready.stderr)")
        let status = try ready.decode(PoolStatus.self)
        #expect(status.slotsFree == 4 && status.remainingCapacity == 64 << 20 && status.operations.isEmpty, "\(status)")
        // The next recording goes into the pool.
        let second = try #require(try reel(["record", "--json", "--duration", "1", "--out", dir + "/out2", "--name", "second"],
                                           within: 120, environment: env))
        #expect(second.status == 0 && warningLines(second.stderr).isEmpty, "\(second.stderr)")
        let s2 = try second.decode(RecordingSummary.self)
        #expect(!s2.storage.poolCreated && s2.clips.map(\.storage) == ["pool"] && s2.framesDropped == 0)
    }

    /// A recording that dropped frames says so in one warning line — the count, the reasons
    /// and what would help — and exits 0; with `--fail-on-drop` it exits 75 with one error line.
    @Test(.enabled(if: faultsLibrary != nil, "the fault library is not built: scripts/faults --build"))
    func droppedFramesEndWithOneWarningLine() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        #expect(try createPool(dir + "/pool", "256M", slot: "64M").status == 0)
        // Deferred Start slowed to 2 s (the slot claim's syncs): the hold ring overflows.
        let env = faultEnvironment("fdatasync:SLOW1000:1+,fsync:SLOW1000:1+", under: dir + "/pool", log: dir + "/faults.log")
        let base = ["record", "--json", "--pool", dir + "/pool", "--source", "synthetic:1280", "--codec", "prores:proxy", "--duration", "4"]
        let run = try #require(try reel(base + ["--out", dir + "/out", "--name", "d"], within: 120, environment: env))
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        let dropped = try #require(s.dropReasons["outOfBuffers"], "\(s.dropReasons)")
        try #require(dropped > 0)
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(run.stderr)")
        let line = String(lines.first ?? "")
        #expect(line.hasPrefix("reel: warning: \(s.framesDropped) of \(s.framesCaptured) frames dropped (reasons: outOfBuffers \(dropped)"), "\(line)")
        #expect(line.contains("); outOfBuffers: "), "what would help: \(line)")

        let strict = try #require(try reel(base + ["--out", dir + "/strict", "--name", "d", "--fail-on-drop"], within: 120, environment: env))
        #expect(strict.status == 75, "\(strict.stderr)")
        let strictLines = strict.stderr.split(separator: "\n")
        #expect(strictLines.count == 1 && strictLines[0].hasPrefix("reel: ") && !strictLines[0].hasPrefix("reel: warning:")
                && strictLines[0].contains("frames dropped"), "\(strict.stderr)")
        // The clips are kept all the same.
        let kept = try strict.decode(RecordingSummary.self)
        #expect(try risingIndices(try #require(kept.clips.first).path, count: kept.clips.first?.frames))
    }
}

/// Issue 23 item 2: a pool never ends a recording while the filesystem has room.
@Suite(.serialized) struct PoolContinuationTests {
    /// A clip that outgrows a tiny pool (8 MiB in 4 MiB slots, about 1 s of ProRes HQ) goes on
    /// beyond it on the filesystem: every frame is kept, the summary says from when and how
    /// much, and one warning line says so.
    @Test func aClipThatOutgrowsThePoolGoesOnBeyondIt() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "8M", slot: "4M").status == 0)
        let (run, summary) = try record(["--pool", pool, "--frames", "300", "--no-realtime", "--codec", "prores:hq", "--name", "f"], out: dir + "/out")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try #require(summary)
        let clip = try #require(s.clips.first)
        #expect(s.clips.count == 1 && clip.frames == 300 && !clip.salvaged && clip.storage == "pool")
        #expect(try probeFrames(clip.path).frameIndices == Array(0..<300))
        #expect(clip.bytesBeyondPool > 0 && clip.bytes - clip.bytesBeyondPool == 8 << 20, "\(clip.bytes) bytes, \(clip.bytesBeyondPool) beyond")
        let left = try #require(s.storage.leftPool)
        #expect(left.bytes == clip.bytesBeyondPool && left.clips == 1)
        #expect(left.atSeconds > 0 && left.atSeconds < clip.durationSeconds && clip.leftPoolSeconds == left.atSeconds)
        let warnings = warningLines(run.stderr)
        #expect(warnings.count == 1 && warnings[0].contains("storage pool at \(pool) had no free slot"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        let verified = try reel(["verify", dir + "/out"])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
        // The pool is whole again.
        let ready = try reel(["pool", "wait", pool, "--json"])
        #expect(try ready.decode(PoolStatus.self).remainingCapacity == 8 << 20)
    }

    /// Done-when of issue 23: a 60 s default recording through a 256 MiB pool (about 48 s of
    /// the flat pattern) completes with its 1,800 frames, which `reel verify` accepts.
    @Test func aMinuteThroughA256MiBPoolKeepsEveryFrame() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        let (run, summary) = try record(["--pool", pool, "--no-realtime", "--duration", "60", "--name", "m"], out: dir + "/out")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try #require(summary)
        #expect(s.framesWritten == 1800 && s.clips.count == 1 && s.storage.leftPool != nil)
        let verified = try reel(["verify", dir + "/out"])
        #expect(verified.status == 0, "\(verified.stdout) \(verified.stderr)")
    }

    /// A filesystem that is really full (a 24 MiB tmpfs holding an 8 MiB pool) ends the
    /// recording cleanly: exit 74, one error line saying the filesystem is full, the clip
    /// salvaged and playable — with more than the pool held.
    @Test(.enabled(if: canMountTmpfs, "cannot mount a tmpfs here to fill (needs root and a container that allows mount)"))
    func onlyAFullFilesystemEndsTheRecording() throws {
        let mnt = try #require(mountTmpfs(sizeKiB: 24 * 1024))
        defer { unmount(mnt) }
        #expect(try createPool(mnt + "/pool", "8M", slot: "4M").status == 0)
        let (run, summary) = try record(["--pool", mnt + "/pool", "--frames", "600", "--no-realtime", "--codec", "prores:hq", "--name", "full"],
                                        out: mnt + "/out")
        #expect(run.status == 74, "\(run.stderr)")
        let errors = run.stderr.split(separator: "\n").filter { !$0.hasPrefix("reel: warning: ") }
        #expect(errors.count == 1 && errors[0].hasPrefix("reel: ") && errors[0].contains("filesystem is full"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").last.map { !$0.hasPrefix("reel: warning:") } == true, "the error line comes last")
        let s = try #require(summary)
        let clip = try #require(s.clips.first)
        #expect(s.stopReason == "failed" && clip.salvaged && clip.bytes > 8 << 20, "\(clip.bytes) bytes")
        #expect(try probeFrames(clip.path).frameIndices == Array(0..<clip.frames))
    }
}

/// Issue 23 item 2: remaining capacity as time at the current bit rate.
@Suite struct PoolRemainingTimeTests {
    /// The summary's bit rate is the clip's (bytes × 8 / seconds, within 10 %), its
    /// `remainingSeconds` the pool's free bytes at that rate, and `reel pool status` reckons
    /// at the last recording's rate.
    @Test func remainingSecondsIsFreeBytesAtTheRecordingsBitrate() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        let fresh = try poolStatus(pool)
        #expect(abs(fresh.remainingSeconds - Double(256 << 20) * 8 / DefaultPoolSize.defaultBitrate) < 0.5, "\(fresh.remainingSeconds)")
        let (run, summary) = try record(["--pool", pool, "--frames", "240", "--no-realtime", "--name", "r"], out: dir + "/out")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try #require(summary)
        let clip = try #require(s.clips.first)
        let clipRate = Double(clip.bytes) * 8 / clip.durationSeconds
        let bitrate = try #require(s.storage.bitrate)
        #expect(abs(bitrate / clipRate - 1) < 0.10, "bitrate \(bitrate), the clip's \(clipRate)")
        let after = try #require(s.storage.remainingCapacityAfter)
        let seconds = try #require(s.storage.remainingSeconds)
        #expect(abs(seconds / (Double(after) * 8 / clipRate) - 1) < 0.10, "\(seconds) s for \(after) bytes at \(clipRate)")
        let status = try poolStatus(pool)
        #expect(abs(status.bitrate / bitrate - 1) < 0.001)
        #expect(abs(status.remainingSeconds / (Double(status.remainingCapacity) * 8 / clipRate) - 1) < 0.10, "\(status)")
        let text = try reel(["pool", "status", pool])
        #expect(text.stdout.contains(" at \(Int((bitrate / 1e6).rounded())) Mbit/s)"), "\(text.stdout)")
    }
}

/// Issue 23 item 2: the default pool's size.
@Suite struct DefaultPoolSizeTests {
    /// 30 min at the bit rate, in 256 MiB slots, capped at 10 % of the free space and by the
    /// environment's cap (slots a quarter of a capacity under 1 GiB).
    @Test func thirtyMinutesCappedAtATenthOfTheFreeSpace() {
        let standard = DefaultPoolSize.compute(freeBytes: 1 << 40, cap: nil)
        #expect(standard.capacity == 37 * (256 << 20) && standard.reason == "30 min at 44 Mbit/s", "docs/storage.md: 9.9 GB, 37 slots")
        let roomy = DefaultPoolSize.compute(bitrate: 45e6, freeBytes: 1 << 40, cap: nil)
        #expect(roomy.slotSize == 256 << 20 && roomy.capacity == 38 * (256 << 20) && roomy.reason == "30 min at 45 Mbit/s")
        #expect(Double(roomy.capacity) * 8 / 45e6 >= 1800)
        let real = DefaultPoolSize.compute(bitrate: 220e6, freeBytes: 1 << 40, cap: nil)
        #expect(Double(real.capacity) * 8 / 220e6 >= 1800 && Double(real.capacity) * 8 / 220e6 < 1800 + 10)
        let tight = DefaultPoolSize.compute(bitrate: 45e6, freeBytes: 20 << 30, cap: nil)
        #expect(tight.capacity == 8 * (256 << 20) && tight.capacity <= 2 << 30 && tight.reason.hasPrefix("capped at 10 % of the"))
        let capped = DefaultPoolSize.compute(bitrate: 45e6, freeBytes: 1 << 40, cap: 8 << 20)
        #expect(capped.capacity == 8 << 20 && capped.slotSize == 4 << 20 && capped.reason == "capped by REEL_DEFAULT_POOL_CAPACITY")
        #expect(DefaultPoolSize.compute(bitrate: 45e6, freeBytes: 1 << 40, cap: 64 << 20).slotSize == 16 << 20)
    }
}

/// Issue 23: the progress line shows the time the pool's free slots hold at the current bit
/// rate (`pool M:SS left`), and the drops as they happen.
@Suite(.serialized) struct RealtimePoolProgressTests {
    @Test func theProgressLineShowsThePoolsTimeLeft() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        let term = try TerminalRun(["record", "--duration", "4", "--source", "synthetic:1280", "--codec", "prores:proxy",
                                    "--pool", pool, "--out", dir + "/out", "--name", "p"])
        defer { term.finish() }
        _ = try #require(term.waitForProgress(60) { frames, _ in frames >= 90 }, "no progress line: \(term.screen)")
        let line = try #require(term.screen.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).last { $0.contains(" left ") }, "\(term.screen)")
        let words = line.split(separator: " ").map(String.init)
        let at = try #require(words.firstIndex(of: "pool"), "\(line)")
        let parts = words[at + 1].split(separator: ":").compactMap { Double($0) }
        try #require(parts.count == 2 && words[at + 2] == "left", "\(line)")
        let shown = parts[0] * 60 + parts[1]
        let dropped = try #require(words.firstIndex(of: "dropped").flatMap { Int(words[$0 - 1]) }, "\(line)")
        #expect(term.waitForExit(60).status == 0)
        // The free slots (one is the clip's while it records) at the clip's own bit rate.
        let clip = try #require(try FileManager.default.contentsOfDirectory(atPath: dir + "/out").first)
        let bytes = try #require((try FileManager.default.attributesOfItem(atPath: dir + "/out/" + clip)[.size] as? NSNumber)?.doubleValue)
        let frames = try #require(try probeFrames(dir + "/out/" + clip).frameIndices?.count)
        let clipRate = bytes * 8 / (Double(frames) / 30)
        let expected = Double(192 << 20) * 8 / clipRate
        #expect(abs(shown / expected - 1) < 0.10, "the line says \(shown) s, the free slots hold \(expected) s: \(line)")
        #expect(dropped <= 120 - frames, "\(line)")
    }
}
