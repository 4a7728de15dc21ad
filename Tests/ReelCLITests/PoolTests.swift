import Foundation
import Testing
import ReelStorage
import ReelWriter

func poolStatus(_ path: String) throws -> PoolStatus {
    let run = try reel(["pool", "status", path, "--json"])
    guard run.status == 0 else { throw ProbeFailed(message: run.stderr) }
    return try run.decode(PoolStatus.self)
}

/// `reel pool create`, buffered unless `extra` names a write mode (auto measures the
/// filesystem first; the calibration tests do that on purpose).
func createPool(_ path: String, _ capacity: String, slot: String = "16M", extra: [String] = [],
                environment: [String: String] = [:]) throws -> Run {
    let mode = extra.contains("--write-mode") ? [] : ["--write-mode", "buffered"]
    return try reel(["pool", "create", path, "--capacity", capacity, "--slot", slot, "--json"] + mode + extra, environment: environment)
}

@Suite(.serialized) struct PoolTests {
    @Test func createRecordPublishAndReplenish() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        let created = try createPool(pool, "256M", slot: "32M")
        #expect(created.status == 0, "\(created.stderr)")
        let s0 = try created.decode(PoolStatus.self)
        #expect(s0.capacity == 256 << 20 && s0.remainingCapacity == 256 << 20 && s0.slotsFree == 8 && s0.busyReasons.isEmpty)
        #expect(s0.filesystem != "unknown" && s0.writeMode == .buffered && s0.prefill == .zero)
        // Slots are written through (zero-filled), not sparse.
        let slots = try FileManager.default.contentsOfDirectory(atPath: pool + "/slots")
        #expect(slots.count == 8)
        var st = stat()
        stat(pool + "/slots/" + slots[0], &st)
        #expect(Int64(st.st_blocks) * 512 >= 32 << 20)

        let (run, summary) = try record(["--pool", pool, "--frames", "90", "--no-realtime", "--codec", "prores:hq", "--name", "p"], out: dir + "/out")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try #require(summary)
        let clip = try #require(s.clips.first)
        #expect(clip.path == dir + "/out/p-0001-16x9.mov")
        #expect(try probeFrames(clip.path).frameIndices == Array(0..<90))
        #expect(s.storage.mode == "pool" && s.storage.pool == pool && s.storage.writeMode == "buffered")
        #expect(s.storage.remainingCapacityBefore == 256 << 20 && s.storage.remainingCapacityAfter == 256 << 20)
        #expect(s.storage.writeLatencyMs.count > 0 && s.storage.ringHighWaterBytes > 0)
        let after = try poolStatus(pool)
        #expect(after.remainingCapacity == 256 << 20 && after.slotsFree == 8 && after.slotsActive == 0)
        // The published clip left the pool: no slot file is the clip.
        #expect(try FileManager.default.contentsOfDirectory(atPath: pool + "/slots").count == 8)

        let deleted = try reel(["pool", "delete", pool])
        #expect(deleted.status == 0 && !FileManager.default.fileExists(atPath: pool))
    }

    // A full pool no longer ends a clip (issue 23): PoolContinuationTests.

    @Test func twoRecordersEachGetTheirOwnSlot() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        let a = try launch(["record", "--pool", pool, "--frames", "300", "--no-realtime", "--codec", "prores:hq", "--out", dir + "/a", "--name", "a", "--json"])
        let b = try launch(["record", "--pool", pool, "--frames", "300", "--no-realtime", "--codec", "prores:hq", "--out", dir + "/b", "--name", "b", "--json"])
        // Both hold a slot at once (each records 300 frames: seconds, even on a fast machine).
        var during: PoolStatus? = nil
        let both = try waitUntil(60) {
            during = try poolStatus(pool)
            return during?.slotsActive == 2 || !(a.process.isRunning && b.process.isRunning)
        }
        #expect(both && during?.slotsActive == 2 && during?.busyReasons.contains("capturing") == true, "\(String(describing: during))")
        let ra = a.wait(), rb = b.wait()
        #expect(ra.status == 0 && rb.status == 0, "\(ra.stderr) \(rb.stderr)")
        for (run, name) in [(ra, "a"), (rb, "b")] {
            let clip = try #require(try run.decode(RecordingSummary.self).clips.first)
            #expect(clip.path == dir + "/\(name)/\(name)-0001-16x9.mov")
            let idx = try #require(try probeFrames(clip.path).frameIndices)
            #expect(idx == Array(0..<300) && clip.frames == 300)
        }
        #expect(try poolStatus(pool).slotsFree == 4)
    }

    @Test func badPoolsAndSizesAreClearErrors() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let small = try createPool(dir + "/small", "8M", slot: "16M")
        #expect(small.status == 64 && small.stderr.contains("below one slot"), "\(small.stderr)")
        let nonsense = try reel(["pool", "create", dir + "/x", "--capacity", "lots"])
        #expect(nonsense.status == 64 && nonsense.stderr.contains("'lots' is not a size"))
        try FileManager.default.createDirectory(atPath: dir + "/empty", withIntermediateDirectories: true)
        let notPool = try reel(["pool", "status", dir + "/empty"])
        #expect(notPool.status == 66 && notPool.stderr.contains("is not a storage pool"), "\(notPool.stderr)")
        let rec = try reel(["record", "--pool", dir + "/empty", "--frames", "5", "--out", dir + "/o"])
        #expect(rec.status == 66 && rec.stderr.contains("is not a storage pool"))

        // A damaged manifest: a clear error, and nothing is deleted.
        let pool = dir + "/pool"
        #expect(try createPool(pool, "32M").status == 0)
        let before = try FileManager.default.contentsOfDirectory(atPath: pool + "/slots").sorted()
        try Data("{ \"format\": \"reel-pool\", \"version\": 1, \"capac".utf8).write(to: URL(fileURLWithPath: pool + "/manifest.json"))
        for args in [["pool", "status", pool], ["pool", "recover", pool], ["pool", "delete", pool],
                     ["record", "--pool", pool, "--frames", "5", "--out", dir + "/o"]] {
            let r = try reel(args)
            #expect(r.status == 65 && r.stderr.contains("damaged") && r.stderr.contains("nothing was changed"), "\(args): \(r.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: pool + "/slots").sorted() == before)
        // A foreign one.
        try Data("{\"format\": \"something-else\", \"version\": 3}".utf8).write(to: URL(fileURLWithPath: pool + "/manifest.json"))
        let foreign = try reel(["pool", "status", pool])
        #expect(foreign.status == 65 && foreign.stderr.contains("not a Reel pool manifest"), "\(foreign.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: pool + "/slots").sorted() == before)
    }

    @Test func theDefaultPoolIsCreatedOnFirstUseAndSaysSo() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let env = ["REEL_POOL": dir + "/default-pool", "REEL_DEFAULT_POOL_CAPACITY": "16M"]
        let first = try reel(["record", "--frames", "10", "--no-realtime", "--codec", "prores:proxy", "--out", dir + "/o", "--name", "d1"], environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.hasPrefix("reel: warning: creating the default storage pool at \(dir)/default-pool: 16.0 MiB in 4.0 MiB slots (capped by REEL_DEFAULT_POOL_CAPACITY)"),
                "\(first.stderr)")
        #expect(try reel(["pool", "wait", dir + "/default-pool"]).status == 0)
        let second = try reel(["record", "--frames", "10", "--no-realtime", "--codec", "prores:proxy", "--out", dir + "/o", "--name", "d2", "--json"], environment: env)
        #expect(second.status == 0 && !second.stderr.contains("creating"))
        #expect(try second.decode(RecordingSummary.self).storage.pool == dir + "/default-pool")
        #expect(try poolStatus(dir + "/default-pool").capacity == 16 << 20)
        let bad = try reel(["record", "--frames", "10", "--out", dir + "/o", "--name", "d4"],
                           environment: ["REEL_POOL": dir + "/other-pool", "REEL_DEFAULT_POOL_CAPACITY": "lots"])
        #expect(bad.status == 64 && bad.stderr.contains("REEL_DEFAULT_POOL_CAPACITY: 'lots' is not a size"), "\(bad.stderr)")
        let plain = try reel(["record", "--plain", "--frames", "10", "--no-realtime", "--codec", "prores:proxy", "--out", dir + "/o", "--name", "d3", "--json"], environment: env)
        #expect(try plain.decode(RecordingSummary.self).storage.mode == "plain")
    }

    @Test(.enabled(if: canMountRamfs, "cannot mount a ramfs here (needs root and a container that allows mount)"))
    func aPoolWithoutDirectIOFallsBackAndSaysSo() throws {
        // ramfs has neither O_DIRECT nor fallocate (tmpfs has O_DIRECT since Linux 6.6).
        let mnt = try #require(mountTmpfs(sizeKiB: 96 * 1024, type: "ramfs"))
        defer { unmount(mnt) }
        let direct = try createPool(mnt + "/d", "32M", extra: ["--write-mode", "direct"])
        #expect(direct.status == 69 && direct.stderr.contains("has no direct I/O"), "\(direct.stderr)")
        let made = try createPool(mnt + "/pool", "32M", extra: ["--write-mode", "auto"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(!made.stderr.contains("measuring"), "nothing to choose between, nothing to measure")
        let s = try made.decode(PoolStatus.self)
        #expect(s.directIOAlignment == nil && s.writeMode == .buffered && s.writeModeSource == "only")
        let text = try reel(["pool", "status", mnt + "/pool"])
        #expect(text.stdout.contains("direct I/O not available"), "\(text.stdout)")
        let (run, summary) = try record(["--pool", mnt + "/pool", "--frames", "30", "--no-realtime", "--codec", "prores:proxy", "--name", "t"], out: mnt + "/out")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try probeFrames(try #require(summary?.clips.first).path).frameIndices == Array(0..<30))
    }

    @Test(.enabled(if: canLoopMountExt4, "cannot make (e2fsprogs) and loop-mount an ext4 image here"))
    func onALoopMountedExt4ImageAndAcrossFilesystems() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let image = dir + "/fs.img"
        let mnt = dir + "/mnt"
        try FileManager.default.createDirectory(atPath: mnt, withIntermediateDirectories: true)
        try #require(sh("truncate -s 160M \(image) && mkfs.ext4 -q \(image) && mount -o loop \(image) \(mnt)") == 0)
        defer { #expect(sh("umount \(mnt)") == 0) }
        let made = try createPool(mnt + "/pool", "64M", extra: ["--write-mode", "direct"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try made.decode(PoolStatus.self).writeMode == .direct)
        // Direct writes on the image's ext4, then a copy to another filesystem (/tmp) at finish.
        let (run, summary) = try record(["--pool", mnt + "/pool", "--frames", "60", "--no-realtime", "--codec", "prores:hq", "--name", "l"], out: dir + "/out")
        #expect(run.status == 0, "\(run.stderr)")
        let clip = try #require(summary?.clips.first)
        #expect(summary?.storage.writeMode == "direct")
        #expect(try probeFrames(clip.path).frameIndices == Array(0..<60))
        #expect(try poolStatus(mnt + "/pool").remainingCapacity == 64 << 20)
    }
}

/// A real-time recording killed with SIGKILL; runs in the real-time pass of `scripts/test`.
/// `reel pool status` once a loop recording's deleted clip came back as one free slot larger
/// than the slot size (`StoragePool.reclaim`): the text says the slots are 4 MiB each and the
/// free ones up to 12 MiB; `--json` has `largestFreeSlot`. A pool of equal slots says only
/// `4.0 MiB each`.
@Suite struct PoolStatusSlotSizeTests {
    @Test func aReclaimedSlotIsNamedInTheStatus() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/pool"
        let pool = try StoragePool.create(at: path, capacity: 32 << 20, slotSize: 4 << 20, writeMode: .buffered, prefill: .zero)
        let plain = try reel(["pool", "status", path])
        #expect(plain.status == 0 && plain.stdout.contains("slots 8 free / 0 active / 0 preparing (4.0 MiB each)\n"), "\(plain.stdout)")
        #expect(try poolStatus(path).largestFreeSlot == 4 << 20)
        // Three slots taken out (as published clips take them), then a 9 MiB clip deleted back in.
        try takeSlotsOut(3, of: path)
        try Data(repeating: 0xAB, count: 9 << 20).write(to: URL(fileURLWithPath: dir + "/seg-0001.mov"))
        #expect(pool.reclaim(dir + "/seg-0001.mov") == .reclaimed(12 << 20))
        let run = try reel(["pool", "status", path])
        #expect(run.status == 0 && run.stdout.contains("slots 6 free / 0 active / 0 preparing (4.0 MiB each, free ones up to 12.0 MiB)\n"), "\(run.stdout)")
        let s = try poolStatus(path)
        #expect(s.largestFreeSlot == 12 << 20 && s.slotSize == 4 << 20 && s.remainingCapacity == 32 << 20)
    }
}

@Suite(.serialized) struct RealtimePoolTests {
    @Test func killNineThenRecoverGivesAPlayablePrefix() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        // --no-realtime: no frame is dropped `late` on a loaded machine. Killed once its first
        // fragment is complete in the slot.
        let p = try launch(["record", "--pool", pool, "--no-realtime", "--codec", "prores:hq", "--out", dir + "/out", "--name", "k"] + untilSIGINT)
        #expect(waitForFragments(1, of: p.process.processIdentifier, in: pool), "no complete fragment within 60 s")
        p.signal(SIGKILL)
        _ = p.wait()
        #expect(try poolStatus(pool).slotsActive == 0, "opening the pool recovers the dead recorder's slot")
        let out = try FileManager.default.contentsOfDirectory(atPath: dir + "/out")
        #expect(out == ["k-0001-16x9.mov"])
        let indices = try #require(try probeFrames(dir + "/out/k-0001-16x9.mov").frameIndices)
        // At least one fragment was complete, and the clip ends at the end of one: its frames
        // are all those of its complete fragments (none cut off inside a fragment).
        #expect(indices.count >= 1, "\(indices.count) frames")
        let fragments = try #require(FragmentScanner.completeFragments(of: dir + "/out/k-0001-16x9.mov"))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: dir + "/out/k-0001-16x9.mov")[.size] as? Int)
        #expect(fragments.count >= 1 && Int(fragments.length) == size, "\(fragments) of \(size) bytes")
        #expect(indices == Array(0..<indices.count))
        #expect(try poolStatus(pool).remainingCapacity == 256 << 20)
    }

}

/// Creating and growing in the background, and choosing the write mode by measurement.
@Suite(.serialized) struct PoolPreparationTests {
    @Test func backgroundCreationIsBusyWithProgressAndRecordingWaitsForIt() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        let made = try createPool(pool, "2G", slot: "64M", extra: ["--background"])
        #expect(made.status == 0, "\(made.stderr)")
        let s0 = try made.decode(PoolStatus.self)
        #expect(s0.capacity == 2 << 30 && s0.slotsFree + s0.slotsPreparing == 32)
        let worker = try #require(s0.operations.first, "a live process prepares the slots: \(s0)")
        #expect(worker.reason == "adjustingCapacity" && worker.pid != 0)
        // Hold the worker still, so the pool is busy for as long as the test looks at it.
        kill(worker.pid, SIGSTOP)
        let held = try poolStatus(pool)
        #expect(held.busyReasons.contains("adjustingCapacity") && held.slotsPreparing > 0)
        #expect((held.progress["adjustingCapacity"] ?? 1) < 1)
        let text = try reel(["pool", "status", pool])
        #expect(text.stdout.contains("busy: adjustingCapacity"), "\(text.stdout)")
        let (refused, _) = try record(["--pool", pool, "--frames", "5", "--no-realtime", "--name", "r"], out: dir + "/out")
        #expect(refused.status == 75 && refused.stderr.contains("adjusting capacity"), "\(refused.stderr)")
        let delete = try reel(["pool", "delete", pool])
        #expect(delete.status == 75 && delete.stderr.contains("adjustingCapacity (pid \(worker.pid))"), "\(delete.stderr)")
        let impatient = try reel(["pool", "wait", pool, "--timeout", "0.5"])
        #expect(impatient.status == 75 && impatient.stderr.contains("still adjustingCapacity"), "\(impatient.stderr)")
        kill(worker.pid, SIGCONT)
        let ready = try reel(["pool", "wait", pool, "--json"])
        #expect(ready.status == 0, "\(ready.stderr)")
        let s1 = try ready.decode(PoolStatus.self)
        #expect(s1.slotsFree == 32 && s1.remainingCapacity == 2 << 30 && s1.busyReasons.isEmpty && s1.operations.isEmpty)
        let (run, summary) = try record(["--pool", pool, "--frames", "30", "--no-realtime", "--name", "w"], out: dir + "/out")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try probeFrames(try #require(summary?.clips.first).path).frameIndices == Array(0..<30))
    }

    /// The default pool's first use hands its slots to a detached worker: an hours-long
    /// recording keeps no child, descriptor or thread for it (its counts stay constant).
    @Test func theBackgroundWorkerIsDetachedFromTheProcessThatStartedIt() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = try StoragePool.create(at: dir + "/pool", capacity: 128 << 20, slotSize: 32 << 20, preallocate: false)
        // At the idle pace (as a recording starts it), held still while the test looks at it.
        let worker = try #require(try pool.prepareInBackground(command: [reelBinary, "pool", "_prepare", "--idle", pool.path, "--from", String(getpid())]))
        #expect(kill(worker, SIGSTOP) == 0, "the worker ended before it was looked at")
        // Not a child of this process: nothing to reap, no zombie left when it ends.
        #expect(waitpid(worker, nil, WNOHANG) == -1 && errno == ECHILD, "the worker \(worker) is a child of this process")
        let stat = try String(contentsOfFile: "/proc/\(worker)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: try #require(stat.lastIndex(of: ")")))...].split(separator: " ")
        #expect(Int32(fields[1]) != getpid(), "re-parented: \(stat)")
        #expect(getsid(worker) != getsid(0), "a session of its own, so a terminal's ^C does not stop it")
        let streams = try (0...2).map { try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(worker)/fd/\($0)") }
        #expect(streams == ["/dev/null", "/dev/null", "/dev/null"], "\(streams)")
        kill(worker, SIGCONT)
        let ready = try reel(["pool", "wait", pool.path, "--json"])
        #expect(ready.status == 0, "\(ready.stderr)")
        let s = try ready.decode(PoolStatus.self)
        #expect(s.slotsFree == 4 && s.slotsPreparing == 0 && s.operations.isEmpty, "\(s)")
    }

    /// Replenishing handed over (`handReplenishingOver`, as a recording through the default
    /// pool sets it): the missing slots are reserved and adopted by a detached worker before
    /// `replenishInBackground` returns — this process prepares none of them (no slot file
    /// open, no thread for it) — and the worker makes them all.
    @Test func replenishingIsHandedToADetachedWorker() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/pool"
        let pool = try StoragePool.create(at: path, capacity: 128 << 20, slotSize: 32 << 20, writeMode: .buffered, prefill: .zero)
        try takeSlotsOut(2, of: path)   // as published clips take them
        #expect(pool.needsReplenishing)
        pool.handReplenishingOver(to: [reelBinary, "pool", "_prepare", "--idle"])
        pool.replenishInBackground()
        #expect(!pool.holdsPreparation(getpid()), "this process still holds the slots to prepare")
        let ready = try reel(["pool", "wait", pool.path, "--json"])
        #expect(ready.status == 0, "\(ready.stderr)")
        let s = try ready.decode(PoolStatus.self)
        #expect(s.slotsFree == 4 && s.slotsPreparing == 0 && s.operations.isEmpty, "\(s)")
    }

    @Test func aBackgroundWorkerThatDiesIsFinishedByWait() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "128M", slot: "32M").status == 0)
        let grown = try reel(["pool", "resize", pool, "--capacity", "1G", "--background", "--json"])
        #expect(grown.status == 0, "\(grown.stderr)")
        let worker = try #require(try grown.decode(PoolStatus.self).operations.first)
        kill(worker.pid, SIGKILL)
        #expect(waitUntil(60) { processHasEnded(worker.pid) }, "the worker outlived SIGKILL")
        let orphaned = try poolStatus(pool)
        #expect(!orphaned.busyReasons.contains("adjustingCapacity"), "a dead worker is not busy")
        let ready = try reel(["pool", "wait", pool, "--json"])
        #expect(ready.status == 0, "\(ready.stderr)")
        let s = try ready.decode(PoolStatus.self)
        #expect(s.slotsFree == 32 && s.slotsPreparing == 0 && s.remainingCapacity == 1 << 30)
        #expect(try FileManager.default.contentsOfDirectory(atPath: pool + "/slots").count == 32)
    }

    @Test(.enabled(if: installedTool("flock") != nil, "no flock (util-linux) to hold the pool's lock with"))
    func aLockHeldTooLongIsAClearErrorAndStatusStillAnswers() throws {
        let flock = try #require(installedTool("flock"))
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "64M").status == 0)
        // Another process holds the lock and does not let go (as a stopped one would).
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/bin/sh")
        holder.arguments = ["-c", "exec 9>>'\(pool)/lock' && \(flock) 9 && exec sleep 600"]
        try holder.run()
        defer { holder.terminate(); holder.waitUntilExit() }
        // Once it holds the lock (flock -n fails while another holds it).
        #expect(waitUntil(60) { sh("\(flock) -n '\(pool)/lock' true") != 0 }, "the holder never took the lock")
        let status = try reel(["pool", "status", pool, "--json"])
        #expect(status.status == 0, "reading the pool needs no lock: \(status.stderr)")
        let t0 = Date()
        let resize = try reel(["pool", "resize", pool, "--capacity", "32M"])
        #expect(resize.status == 75 && resize.stderr.contains("held the pool's lock"), "\(resize.stderr)")
        #expect(Date().timeIntervalSince(t0) < 25)
    }
}

/// Measuring the write modes runs a bulk buffered writer that would disturb every test
/// beside it: it runs in the last pass of `scripts/test`, alone.
@Suite(.serialized) struct DisruptivePoolTests {
    @Test(.enabled(if: tmpHasDirectIO, "the filesystem of /tmp has no direct I/O: nothing to measure against (the no-direct-I/O case is aPoolWithoutDirectIOFallsBackAndSaysSo)"))
    func theWriteModeIsMeasuredOncePerFilesystem() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let env = ["XDG_CACHE_HOME": dir + "/cache"]
        let first = try createPool(dir + "/a", "64M", extra: ["--write-mode", "auto", "--seconds", "1"], environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        let a = try first.decode(PoolStatus.self)
        #expect(a.directIOAlignment != nil, "\(a.filesystem) at /tmp")
        #expect(first.stderr.contains("measuring the write modes"), "\(first.stderr)")
        let m = try #require(a.writeModeMeasurement)
        #expect(a.writeModeSource == "measured" && a.writeMode.rawValue == m.chosen)
        #expect(m.modes.map(\.name).sorted() == ["buffered", "direct"])
        for mode in m.modes {
            #expect(mode.p50Ms > 0 && mode.p50Ms <= mode.p99Ms && mode.p99Ms <= mode.p999Ms && mode.p999Ms <= mode.maxMs * 1.02, "\(mode)")
        }
        #expect(WriteModeMeasurement.choose(m.modes).0 == m.chosen)
        // The next pool on the same filesystem takes the cached measurement.
        let second = try createPool(dir + "/b", "32M", extra: ["--write-mode", "auto"], environment: env)
        #expect(second.status == 0 && !second.stderr.contains("measuring"), "\(second.stderr)")
        #expect(try second.decode(PoolStatus.self).writeModeMeasurement == m)
        let text = try reel(["pool", "status", dir + "/b"], environment: env)
        #expect(text.stdout.contains("write mode \(m.chosen), measured") && text.stdout.contains("direct p99.9"), "\(text.stdout)")
        // calibrate measures again and the pool takes the new result.
        let again = try reel(["pool", "calibrate", dir + "/b", "--seconds", "1", "--json"], environment: env)
        #expect(again.status == 0, "\(again.stderr)")
        let b = try again.decode(PoolStatus.self)
        #expect((b.writeModeMeasurement?.measuredAt ?? 0) > m.measuredAt && b.writeMode.rawValue == b.writeModeMeasurement?.chosen)
        // Without a cache, and asked for a mode, nothing is measured.
        let asked = try createPool(dir + "/c", "32M", extra: ["--write-mode", "direct"], environment: ["XDG_CACHE_HOME": dir + "/none"])
        #expect(asked.status == 0 && !asked.stderr.contains("measuring"))
        #expect(try asked.decode(PoolStatus.self).writeModeSource == "asked")
    }
}

/// Takes the last `count` slots out of the pool at `path` (its manifest and their files), as
/// published clips take them.
private func takeSlotsOut(_ count: Int, of path: String) throws {
    let url = URL(fileURLWithPath: path + "/manifest.json")
    var object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    var slots = try #require(object["slots"] as? [[String: Any]])
    for _ in 0..<count { unlink(path + "/slots/" + String(format: "slot-%06d.bin", slots.removeLast()["id"] as! Int)) }
    object["slots"] = slots
    try JSONSerialization.data(withJSONObject: object).write(to: url)
}
