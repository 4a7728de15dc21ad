import Foundation
import Testing
import ReelStorage
import ReelWriter

/// The preloadable storage-fault library (`scripts/faults --build`; `scripts/test` builds it
/// and exports `FAULTS_LIB`).
let faultsLibrary: String? = {
    if let p = ProcessInfo.processInfo.environment["FAULTS_LIB"], FileManager.default.fileExists(atPath: p) { return p }
    let guess = ((reelBinary as NSString).deletingLastPathComponent as NSString).appendingPathComponent("../../faults/libreelfaults.so")
    let path = (guess as NSString).standardizingPath
    return FileManager.default.fileExists(atPath: path) ? path : nil
}()

/// The environment that makes a `reel` process fail storage calls as `rule` says
/// (`fdatasync:EIO:2`, `pwrite:ENOSPC:4+`, …), counting only files under `under`, and log
/// each injected failure to `log`.
func faultEnvironment(_ rule: String, under: String, log: String) -> [String: String] {
    ["LD_PRELOAD": faultsLibrary ?? "", "REEL_FAULT": rule, "REEL_FAULT_PATH": under, "REEL_FAULT_LOG": log]
}

/// Whether this machine lets the tests mount a small tmpfs (root in a container usually can).
/// `reel args…`, killed (and nil returned) when it takes longer than `seconds`.
func reel(_ args: [String], within seconds: Double, environment: [String: String] = [:]) throws -> Run? {
    try launch(args, environment: environment).wait(within: seconds)
}

extension Launched {
    /// Waits for the process; kills it and returns nil after `seconds` (a hang is a failure,
    /// never a test that does not end).
    func wait(within seconds: Double) -> Run? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            signal(SIGKILL)
            _ = wait()
            return nil
        }
        return wait()
    }
}

/// The pool's manifest as JSON objects, for tests that look at or forge slot records.
func readManifestJSON(_ pool: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: pool + "/manifest.json"))
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

func writeManifestJSON(_ pool: String, _ object: [String: Any]) throws {
    let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
    try data.write(to: URL(fileURLWithPath: pool + "/manifest.json"))
}

func slots(_ manifest: [String: Any]) -> [[String: Any]] { manifest["slots"] as? [[String: Any]] ?? [] }

struct RecoverReport: Decodable {
    struct Clip: Decodable { let path: String; let bytes: Int64; let fragments: Int }
    struct Dropped: Decodable { let destination: String; let bytes: Int64; let reason: String }
    let recovered: [Clip]
    let dropped: [Dropped]
}

/// Frame indices as a clip recorded in real time holds them: rising, from the clip's first
/// frame, as many as the summary says (a loaded machine drops some frames `late`, and those
/// are counted, not written).
func risingIndices(_ path: String, count: Int? = nil) throws -> Bool {
    let idx = try probeFrames(path).frameIndices ?? []
    guard !idx.isEmpty, zip(idx, idx.dropFirst()).allSatisfy({ $0 < $1 }) else { return false }
    return count.map { $0 == idx.count } ?? true
}

/// Waits until a recorder has claimed a slot of `pool` and written its first bytes (the file
/// header), and returns that slot's path; nil after `timeout` seconds (60: a loaded machine
/// starts `reel` slowly).
func firstBytesWritten(_ pool: String, timeout: Double = 60) throws -> String? {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let active = slots(try readManifestJSON(pool)).first(where: { $0["state"] as? String == "active" }),
           let id = active["id"] as? Int {
            let path = pool + "/slots/" + String(format: "slot-%06d.bin", id)
            if let h = FileHandle(forReadingAtPath: path) {
                let head = h.readData(ofLength: 8)
                try h.close()
                if head.contains(where: { $0 != 0 }) { return path }
            }
        }
        usleep(2_000)
    }
    return nil
}

/// `/proc/PID/stat` field 22 (start time in clock ticks since boot).
func processStartTime(_ pid: Int32) -> UInt64? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    return fields.count > 19 ? UInt64(fields[19]) : nil
}

let bootID: String = ((try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? "")
    .trimmingCharacters(in: .whitespacesAndNewlines)

/// Storage faults injected into real `reel record` processes (LD_PRELOAD of scripts/faults).
@Suite(.serialized, .enabled(if: faultsLibrary != nil, "the fault library is not built: scripts/faults --build"))
struct PoolFaultTests {
    /// A writeback error (fdatasync or sync_file_range failing once, as the kernel reports it
    /// once per open file) or a failed write in the middle of a pooled recording: the
    /// recording fails (exit 74, JSON error), and any clip kept is marked salvaged and decodes.
    @Test(arguments: ["fdatasync:EIO:2", "sync_file_range:EIO:2", "pwrite:EIO:6", "pwrite:ENOSPC:6+"])
    func anIOErrorMidRecordingIsNeverPublishedAsComplete(rule: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        let log = dir + "/faults.log"
        let run = try #require(try reel(["record", "--json", "--pool", pool, "--duration", "4", "--source", "synthetic:1280",
                                         "--codec", "prores:proxy", "--out", dir + "/out", "--name", "e"],
                                        within: 60, environment: faultEnvironment(rule, under: pool + "/slots", log: log)),
                               "\(rule): reel record did not end within 60 s")
        let injected = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let call = String(rule.split(separator: ":")[0])
        try #require(injected.contains(call + " #"), "the fault never fired: \(rule)")
        #expect(run.status == 74, "\(rule): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.hasPrefix("reel: ") == true, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.stopReason == "failed" && s.error != nil, "\(rule): \(s.stopReason) \(s.error ?? "")")
        for clip in s.clips {
            #expect(clip.salvaged, "\(rule): \(clip.path) published as complete")
            #expect(try risingIndices(clip.path, count: clip.frames), "\(clip.path)")
        }
        #expect(try poolStatus(pool).slotsActive == 0)
        // Without the faults, the pool makes good what they cost it.
        let ready = try reel(["pool", "wait", pool, "--json"])
        #expect(ready.status == 0, "\(ready.stderr)")
        #expect(try ready.decode(PoolStatus.self).slotsFree == 4)
    }

    /// An EIO while the default pool is first made (in the background, issue 23): the
    /// recording is not touched (its clip is a plain file), the half-made slots are given up
    /// and the pool says why; the next recording makes them again, in the background.
    @Test func aDefaultPoolWhoseCreationFailedIsMadeAgain() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/default-pool"
        let log = dir + "/faults.log"
        // The 3rd 1 MiB write of a slot is in the first slot: the pool would be left with no slot
        // at all. (The recorder writes no slot: its clip is plain; the detached preparation,
        // which inherits the faults, does.)
        var env = faultEnvironment("pwrite:EIO:3", under: pool + "/slots", log: log)
        env["REEL_POOL"] = pool
        env["REEL_DEFAULT_POOL_CAPACITY"] = "16M"
        let first = try reel(["record", "--frames", "10", "--no-realtime", "--codec", "prores:proxy", "--out", dir + "/o", "--name", "a", "--json"],
                             environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        let plain = try #require(try first.decode(RecordingSummary.self).clips.first)
        #expect(plain.storage == "plain")
        #expect(try probeFrames(plain.path).frameIndices == Array(0..<10))
        // The detached preparation meets the fault, gives its slots up and says why.
        let failed = waitUntil(60) { (try? poolStatus(pool))?.lastError?.contains("Input/output error") == true }
        #expect(failed, "the preparation never failed: \(String(describing: try? poolStatus(pool)))")
        try #require(((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("pwrite #3 EIO"))
        #expect(try poolStatus(pool).slotsFree == 0)
        let second = try reel(["record", "--frames", "10", "--no-realtime", "--codec", "prores:proxy", "--out", dir + "/o", "--name", "b", "--json"],
                              environment: ["REEL_POOL": pool])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(!second.stderr.contains("creating the default storage pool"))
        let clip = try #require(try second.decode(RecordingSummary.self).clips.first)
        #expect(try probeFrames(clip.path).frameIndices == Array(0..<10))
        // The recording started making the slots again; they are all there once it is done.
        let after = try poolStatus(pool)
        #expect(after.slotsFree + after.slotsPreparing == 4 && (after.slotsPreparing == 0 || !after.operations.isEmpty), "\(after)")
        #expect(try reel(["pool", "wait", pool]).status == 0)
        #expect(try poolStatus(pool).slotsFree == 4)
    }

    /// Another program takes a clip's final name while it records: Reel publishes under the
    /// next free name and never reads, reports or deletes that file — when the recording
    /// completes, and when it fails and is salvaged.
    @Test(arguments: ["", "fdatasync:EIO:3"])
    func aFileAtTheClipsNameThatReelDidNotMakeIsNeverTouched(rule: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        // The intruder is a valid video (so reading it "as ours" would find frames in it).
        let (made, other) = try record(["--plain", "--frames", "7", "--no-realtime", "--codec", "prores:proxy", "--name", "other"], out: dir + "/elsewhere")
        #expect(made.status == 0)
        let intruder = try Data(contentsOf: URL(fileURLWithPath: try #require(other?.clips.first).path))
        let out = dir + "/out"
        let dest = out + "/t-0001-16x9.mov"
        let env = rule.isEmpty ? [:] : faultEnvironment(rule, under: pool + "/slots", log: dir + "/faults.log")
        // Without a fault it runs until SIGINT (below), so it cannot publish before the intruder
        // comes; with one, the injected error ends it.
        let p = try launch(["record", "--json", "--pool", pool, "--source", "synthetic:1280", "--codec", "prores:proxy",
                            "--out", out, "--name", "t"] + (rule.isEmpty ? untilSIGINT : ["--duration", "4"]), environment: env)
        // Once the recording has begun (its slot is claimed and written to).
        try #require(try firstBytesWritten(pool) != nil)
        try intruder.write(to: URL(fileURLWithPath: dest), options: .withoutOverwriting)
        if rule.isEmpty { p.signal(SIGINT) }
        let run = try #require(p.wait(within: 60), "reel record did not end within 60 s")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dest)) == intruder, "the other program's file is unchanged")
        let s = try run.decode(RecordingSummary.self)
        #expect(!s.clips.contains { $0.path == dest }, "\(s.clips.map(\.path))")
        if rule.isEmpty {
            #expect(run.status == 0, "\(run.stderr)")
            let clip = try #require(s.clips.first)
            #expect(clip.path == out + "/t-0001-16x9-2.mov" && !clip.salvaged)
            #expect(try risingIndices(clip.path, count: clip.frames))
        } else {
            #expect(run.status == 74, "\(run.stderr)")
            for clip in s.clips {
                #expect(clip.salvaged && clip.path == out + "/t-0001-16x9-2.mov")
                #expect(try risingIndices(clip.path, count: clip.frames))
            }
        }
    }
}

/// Free space, process identity, concurrent recovery, and what recovery publishes.
@Suite(.serialized) struct PoolSafetyTests {
    /// Creating or growing a pool checks the filesystem's free space first and says how much
    /// is free and how much it needs (exit 73); nothing is left behind.
    @Test(.enabled(if: canMountTmpfs, "this machine does not allow mounting a tmpfs"))
    func creatingOrGrowingChecksFreeSpaceFirst() throws {
        let mnt = try #require(mountTmpfs(sizeKiB: 64 * 1024))
        defer { unmount(mnt) }
        let big = try createPool(mnt + "/pool", "128M")
        #expect(big.status == 73, "\(big.stderr)")
        #expect(big.stderr.hasPrefix("reel: not enough free space") && big.stderr.contains("needs 128.0 MiB")
                && big.stderr.contains("has 64.0 MiB free") && big.stderr.split(separator: "\n").count == 1, "\(big.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mnt).isEmpty, "nothing left behind")
        #expect(try createPool(mnt + "/pool", "32M").status == 0)
        let grow = try reel(["pool", "resize", mnt + "/pool", "--capacity", "96M"])
        #expect(grow.status == 73 && grow.stderr.contains("needs 64.0 MiB") && grow.stderr.contains("32.0 MiB free"), "\(grow.stderr)")
        #expect(try poolStatus(mnt + "/pool").capacity == 32 << 20)
    }

    /// A capacity far beyond the disk is refused at once (it used to try to reserve ~10¹⁰
    /// manifest slots), before any write-mode measurement: outside the option's range (64T)
    /// as a usage error, within it but beyond the free space with what is free.
    @Test func aHugeCapacityIsRefusedAtOnce() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let outside = try #require(try reel(["pool", "create", dir + "/huge", "--capacity", "8000000T"], within: 30),
                                   "pool create with 8000000T did not end within 30 s")
        #expect(outside.status == 64 && outside.stderr.hasPrefix("reel: ") && outside.stderr.contains("--capacity"), "\(outside.stderr)")
        let run = try #require(try reel(["pool", "create", dir + "/huge", "--capacity", "64T", "--slot", "1G"], within: 30),
                               "pool create with 64T did not end within 30 s")
        #expect(run.status == 73 && run.stderr.contains("64.0 TiB") && run.stderr.contains("free"), "\(run.stderr)")
        #expect(!run.stderr.contains("measuring"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/huge"))
    }

    /// A slot whose recorded owner pid is alive but is another process (its start time or boot
    /// differs: PID reuse, a reboot) is a dead recorder's slot: recovered, and `pool delete`
    /// goes ahead. A manifest without those fields (older Reel) is judged by pid alone.
    @Test func aLiveButUnrelatedProcessDoesNotOwnASlot() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "64M").status == 0)
        let sleeper = Process()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["60"]
        try sleeper.run()
        defer { kill(sleeper.processIdentifier, SIGKILL); sleeper.waitUntilExit() }
        let pid = sleeper.processIdentifier
        let start = try #require(processStartTime(pid))
        func forge(_ fields: [String: Any]) throws {
            var m = try readManifestJSON(pool)
            var s = slots(m)
            s[0]["state"] = "active"
            s[0]["destination"] = dir + "/out/x.mov"
            s[0]["container"] = "mov"
            for (k, v) in fields { s[0][k] = v }
            m["slots"] = s
            try writeManifestJSON(pool, m)
        }
        // The pid of a live `sleep`, but another start time: the recorder that took the slot is gone.
        try forge(["owner": Int(pid), "ownerStart": Int(start) + 7, "ownerBoot": bootID])
        #expect(try poolStatus(pool).slotsActive == 0, "recovered")
        // PID 1 is always alive, but of another boot.
        try forge(["owner": 1, "ownerStart": 1, "ownerBoot": "00000000-0000-4000-8000-000000000000"])
        #expect(try poolStatus(pool).slotsActive == 0, "recovered")
        // The very process: still active, and delete refuses.
        try forge(["owner": Int(pid), "ownerStart": Int(start), "ownerBoot": bootID])
        #expect(try poolStatus(pool).slotsActive == 1)
        let refused = try reel(["pool", "delete", pool])
        #expect(refused.status == 75 && refused.stderr.contains("pid \(pid)"), "\(refused.stderr)")
        // Another boot again: delete recovers it and goes ahead.
        try forge(["owner": Int(pid), "ownerStart": Int(start), "ownerBoot": "00000000-0000-4000-8000-000000000000"])
        let deleted = try reel(["pool", "delete", pool])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(!FileManager.default.fileExists(atPath: pool))
    }

    @Test func anOldManifestWithoutStartTimesIsJudgedByPidAlone() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "64M").status == 0)
        var m = try readManifestJSON(pool)
        var s = slots(m)
        s[0]["state"] = "active"
        s[0]["owner"] = 1
        s[0]["destination"] = dir + "/out/x.mov"
        s[0].removeValue(forKey: "ownerStart")
        s[0].removeValue(forKey: "ownerBoot")
        m["slots"] = s
        try writeManifestJSON(pool, m)
        #expect(try poolStatus(pool).slotsActive == 1, "PID 1 is alive: its slot stays active")
        #expect(try reel(["pool", "delete", pool]).status == 75)
    }

    /// Recorders killed with SIGKILL leave orphaned slots; several `reel pool recover` started
    /// at the same moment publish each clip exactly once (claimed under the pool's lock), and
    /// no clip is lost. 20 rounds.
    @Test func concurrentRecoveriesPublishEachOrphanExactlyOnce() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "512M", slot: "32M").status == 0)
        for round in 0..<20 {
            let out = dir + "/out\(round)"
            let recorders = try (0..<3).map { k in
                try launch(["record", "--pool", pool, "--duration", "30", "--source", "synthetic:1280", "--fps", "15",
                            "--codec", "prores:proxy", "--out", out, "--name", "r\(k)"])
            }
            // Killed once each holds a slot with something written: in even rounds once it has
            // a complete fragment, in odd ones once its first fragment has begun (the kill may
            // find it complete or not: recovery publishes or drops the clip). Every round makes
            // three orphans, so no round passes for want of one.
            for r in recorders {
                #expect(waitForFragments(round % 2 == 0 ? 1 : 0, of: r.process.processIdentifier, in: pool), "round \(round): no fragment written within 60 s")
            }
            for r in recorders { r.signal(SIGKILL) }
            for r in recorders { _ = r.wait() }
            let orphans = slots(try readManifestJSON(pool)).filter { $0["state"] as? String == "active" }.count
            #expect(orphans == 3, "round \(round): \(orphans) orphaned slots of 3 killed recorders")
            let recoverers = try (0..<4).map { _ in try launch(["pool", "recover", pool, "--json"]) }
            let runs = recoverers.compactMap { $0.wait(within: 60) }
            #expect(runs.count == recoverers.count, "round \(round): a recovery did not end within 60 s")
            var published: [String] = [], dropped: [String] = []
            for run in runs {
                #expect(run.status == 0, "round \(round): \(run.stderr)")
                let report = try run.decode(RecoverReport.self)
                published += report.recovered.map(\.path)
                dropped += report.dropped.map(\.destination)
            }
            #expect(Set(published).count == published.count, "round \(round): published twice: \(published)")
            #expect(published.count + dropped.count == orphans, "round \(round): \(orphans) orphans, \(published) published, \(dropped) dropped")
            #expect(Set(dropped).count == dropped.count && Set(dropped).isDisjoint(with: Set(published.map { $0 })))
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).map { out + "/" + $0 }
            #expect(Set(files) == Set(published), "round \(round): files \(files), reported \(published)")
            #expect(!files.contains { $0.contains("recovered") }, "round \(round): \(files)")
            for f in files { #expect(try risingIndices(f), "round \(round): \(f)") }
            let m = try readManifestJSON(pool)
            #expect(!slots(m).contains { ["active", "recovering"].contains($0["state"] as? String ?? "") }, "round \(round)")
        }
        #expect(try reel(["pool", "wait", pool]).status == 0)
        #expect(try poolStatus(pool).remainingCapacity == 512 << 20)
    }
}

/// Recovery never publishes a clip without a complete, decodable frame. Real-time recorders
/// killed at a chosen moment: the real-time pass of `scripts/test`.
@Suite(.serialized) struct RealtimeRecoveryTests {
    /// MOV writes its header with the first fragment (delay_moov). Fragments end at
    /// `Muxer.fragmentByteLimit` bytes or at one frame larger than that: a frame of ProRes HQ
    /// of the realistic scene at 4032×3024 (several MiB) is a fragment of several blocks,
    /// and a slow disk (each slot write 40 ms late, injected) stretches its writing over
    /// ~0.2 s; the kill comes once its first block (header and the fragment's start) is on disk.
    /// Matroska writes its header at once and each cluster whole when it closes.
    @Test(.enabled(if: faultsLibrary != nil, "the fault library is not built: scripts/faults --build"),
          arguments: [("prores:hq", "mov"), ("ffv1", "mkv")])
    func aRecorderKilledBeforeItsFirstFragmentLeavesNothingAndSaysSo(codec: String, container: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        let slow = container == "mov" ? faultEnvironment("pwrite:SLOW40:1+", under: pool + "/slots", log: dir + "/faults.log") : [:]
        let picture = container == "mov" ? ["--source", "synthetic:4032", "--scene", "realistic", "--no-adjust"] : []
        let p = try launch(["record", "--pool", pool, "--duration", "30", "--codec", codec,
                            "--container", container, "--out", dir + "/out", "--name", "k"] + picture, environment: slow)
        let slot = try firstBytesWritten(pool)
        p.signal(SIGKILL)
        _ = p.wait()
        try #require(slot != nil, "the recorder never wrote its header")
        let dest = dir + "/out/k-0001-\(container == "mov" ? "4x3" : "16x9").\(container)"
        if container == "mkv" {
            // The text report.
            let run = try reel(["pool", "recover", pool])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.contains("dropped \(dest): no complete cluster, so no decodable frame") && !run.stdout.contains("recovered"), "\(run.stdout)")
        } else {
            let run = try reel(["pool", "recover", pool, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let report = try run.decode(RecoverReport.self)
            #expect(report.recovered.isEmpty, "\(report.recovered.map(\.path))")
            let d = try #require(report.dropped.first)
            #expect(d.destination == dest && d.bytes > 0 && d.reason.contains("no decodable frame"), "\(d)")
        }
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: dir + "/out")) ?? []).isEmpty)
        let text = try reel(["pool", "recover", pool])
        #expect(text.stdout.contains("nothing to recover"))
        #expect(try poolStatus(pool).slotsActive == 0)
    }

    @Test(arguments: [("prores:proxy", "mov"), ("ffv1", "mkv")])
    func aRecorderKilledLaterIsRecoveredDecodable(codec: String, container: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "256M", slot: "64M").status == 0)
        let p = try launch(["record", "--pool", pool, "--source", "synthetic:1280", "--codec", codec,
                            "--container", container, "--out", dir + "/out", "--name", "k"] + untilSIGINT)
        // Killed once its first fragment (cluster) is complete in the slot.
        #expect(waitForFragments(1, of: p.process.processIdentifier, in: pool, container: container), "no complete fragment within 60 s")
        p.signal(SIGKILL)
        _ = p.wait()
        let path = dir + "/out/k-0001-16x9.\(container)"
        if container == "mkv" {
            let run = try reel(["pool", "recover", pool])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stdout.hasPrefix("recovered \(path) (") && run.stdout.contains(" fragment") && !run.stdout.contains("dropped"), "\(run.stdout)")
        } else {
            let run = try reel(["pool", "recover", pool, "--json"])
            #expect(run.status == 0, "\(run.stderr)")
            let report = try run.decode(RecoverReport.self)
            let clip = try #require(report.recovered.first, "\(run.stdout)")
            #expect(clip.path == path && clip.fragments >= 1 && report.dropped.isEmpty)
        }
        let idx = try #require(try probeFrames(path).frameIndices)
        #expect(idx.first == 0 && zip(idx, idx.dropFirst()).allSatisfy { $0 < $1 }, "\(idx)")
        let f = try #require(ffprobe(path), "ffprobe cannot read \(path)")
        #expect(f.frames == idx.count && f.frames > 0, "ffprobe reads \(f.frames), reel \(idx.count)")
    }
}
