import Foundation
import Testing
import ReelStorage
import ReelWriter

/// A pid that named a process which has ended (a recorder that died).
func deadPID() throws -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/true")
    try p.run()
    p.waitUntilExit()
    return p.processIdentifier
}

func slotFile(_ pool: String, _ id: Int) -> String { pool + "/slots/" + String(format: "slot-%06d.bin", id) }

/// `reel pool delete` racing other processes, recovery meeting a slot it cannot read, and a
/// slot that could not grow: the pool's manifest says what is on disk throughout.
@Suite(.serialized) struct PoolDeleteAndRecoveryTests {
    /// Delete while another process holds a slot: refused (75) and the recording goes on to a
    /// complete clip; once it has ended, delete removes everything.
    @Test func deleteWhileARecorderHoldsASlotIsRefusedAndTheClipIsKept() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "64M", slot: "16M").status == 0)
        let recorder = try launch(["record", "--pool", pool, "--source", "synthetic:1280",
                                   "--codec", "prores:proxy", "--out", dir + "/out", "--name", "h", "--json"] + untilSIGINT)
        let slot = try #require(try firstBytesWritten(pool), "the recorder never wrote")
        let refused = try reel(["pool", "delete", pool])
        #expect(refused.status == 75 && refused.stderr.contains("is recording (pid \(recorder.process.processIdentifier))"), "\(refused.stderr)")
        let active = try poolStatus(pool).slotsActive
        #expect(FileManager.default.fileExists(atPath: slot) && active == 1)
        recorder.signal(SIGINT)
        let done = recorder.wait()
        #expect(done.status == 0, "\(done.stderr)")
        let clip = try #require(try done.decode(RecordingSummary.self).clips.first)
        #expect(try risingIndices(clip.path, count: clip.frames))
        let deleted = try reel(["pool", "delete", pool])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(!FileManager.default.fileExists(atPath: pool))
        #expect(FileManager.default.fileExists(atPath: clip.path))
    }

    /// A process that opened the pool before another deleted it finds no pool (66, not an
    /// error about a lock file) and leaves nothing behind: it used to make `POOL/lock` again,
    /// so the deleting process's rmdir failed and a new pool could not be made there.
    @Test func aProcessWhosePoolWasDeletedFindsNoPoolAndLeavesNothing() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "8M", slot: "4M").status == 0)
        let handle = try StoragePool.open(at: pool)
        let deleted = try reel(["pool", "delete", pool])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        // The directory is made again meanwhile (say, by a `mkdir -p` of the user).
        try FileManager.default.createDirectory(atPath: pool, withIntermediateDirectories: false)
        do {
            _ = try PoolStorage(pool: handle, directory: dir + "/out").createClip(named: "late.mov")
            Issue.record("a clip was created in a deleted pool")
        } catch let e as PoolError {
            #expect(e.exitStatus == 66 && e.description.contains("is not a storage pool"), "\(e)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: pool) == [])
        let again = try createPool(pool, "8M", slot: "4M")
        #expect(again.status == 0, "\(again.stderr)")
    }

    /// Recorders starting while the pool is deleted: every process ends with a clear status
    /// (a clip, 66 no pool, or 75 busy), and the pool is either wholly there or wholly gone.
    @Test func recordersRacingDeleteEndCleanly() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        for round in 0..<4 {
            let pool = dir + "/pool\(round)"
            #expect(try createPool(pool, "32M", slot: "4M", extra: ["--prefill", "fallocate"]).status == 0)
            let recorders = try (0..<3).map { k in
                try launch(["record", "--pool", pool, "--frames", "3", "--no-realtime", "--source", "synthetic:1280",
                            "--codec", "prores:proxy", "--out", dir + "/out\(round)-\(k)", "--name", "r", "--json"])
            }
            usleep(UInt32(round) * 40_000)
            let delete = try reel(["pool", "delete", pool])
            let runs = recorders.map { $0.wait() }
            #expect(delete.status == 0 || delete.status == 75, "round \(round): \(delete.status) \(delete.stderr)")
            if delete.status == 0 {
                #expect(!FileManager.default.fileExists(atPath: pool), "round \(round): deleted, yet \(pool) is there")
            } else {
                #expect(try poolStatus(pool).slotsActive == 0, "round \(round)")
            }
            for run in runs {
                #expect([0, 66, 75].contains(run.status), "round \(round): \(run.status) \(run.stderr)")
                if run.status == 0 {
                    let clip = try #require(try run.decode(RecordingSummary.self).clips.first)
                    #expect(try risingIndices(clip.path, count: clip.frames))
                } else {
                    let lines = run.stderr.split(separator: "\n").filter { $0.hasPrefix("reel: ") }
                    #expect(lines.count == 1, "round \(round): \(run.stderr)")
                }
            }
        }
    }

    /// One orphaned slot that cannot be read (its file is a directory: read fails with
    /// EISDIR) is reported and left for the next open; the other dead recorder's slot is
    /// recovered all the same (it used to stay `recovering` for ever).
    @Test func aSlotThatCannotBeRecoveredDoesNotStopTheOthers() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "12M", slot: "4M").status == 0)
        var manifest = try readManifestJSON(pool)
        var all = slots(manifest)
        let dead = try deadPID()
        let (bad, good) = (try #require(all[0]["id"] as? Int), try #require(all[1]["id"] as? Int))
        for (i, name) in [(0, "bad.mov"), (1, "good.mov")] {
            all[i]["state"] = "active"
            all[i]["owner"] = dead
            all[i]["destination"] = dir + "/out/" + name
            all[i]["container"] = "mov"
        }
        manifest["slots"] = all
        try writeManifestJSON(pool, manifest)
        try FileManager.default.removeItem(atPath: slotFile(pool, bad))
        try FileManager.default.createDirectory(atPath: slotFile(pool, bad), withIntermediateDirectories: false)

        let run = try reel(["pool", "recover", pool])
        #expect(run.status == 74, "\(run.status) \(run.stderr)")
        #expect(run.stderr.hasPrefix("reel: slot \(bad) (\(dir)/out/bad.mov) could not be recovered: "), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        #expect(run.stdout.contains("dropped \(dir)/out/good.mov: nothing written"), "\(run.stdout)")
        let after = slots(try readManifestJSON(pool))
        #expect(!after.contains { $0["id"] as? Int == good }, "the readable orphan was recovered: \(after)")
        let left = try #require(after.first { $0["id"] as? Int == bad })
        #expect(left["state"] as? String == "active" && left["owner"] == nil, "handed back as an orphan: \(left)")
        #expect(!after.contains { $0["state"] as? String == "recovering" })
        // `--json` lists it under `failed` (and exits 74 again: it is still unreadable).
        let json = try reel(["pool", "recover", pool, "--json"])
        #expect(json.status == 74, "\(json.status) \(json.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect((report["recovered"] as? [Any])?.isEmpty == true && (report["dropped"] as? [Any])?.isEmpty == true, "\(report)")
        let failed = try #require(report["failed"] as? [[String: Any]], "no `failed` key: \(json.stdout)")
        #expect(failed.count == 1, "\(failed)")
        #expect(failed.first?["slot"] as? Int == bad && failed.first?["destination"] as? String == dir + "/out/bad.mov", "\(failed)")
        #expect((failed.first?["reason"] as? String ?? "").isEmpty == false, "\(failed)")
        #expect(json.stderr.hasPrefix("reel: slot \(bad) (\(dir)/out/bad.mov) could not be recovered: "), "\(json.stderr)")
        // Once the slot can be read again, the next open recovers (drops) it.
        try FileManager.default.removeItem(atPath: slotFile(pool, bad))
        let again = try reel(["pool", "recover", pool])
        #expect(again.status == 0 && again.stdout.contains("dropped \(dir)/out/bad.mov"), "\(again.stdout) \(again.stderr)")
        #expect(try poolStatus(pool).slotsActive == 0)
    }
}

/// A slot that cannot grow (fallocate fails) leaves the manifest true: the active slot keeps
/// the allocation its file has, and the free slot whose file was given up leaves the
/// manifest (then the pool replenishes it).
@Suite(.serialized, .enabled(if: faultsLibrary != nil, "the fault library is not built: scripts/faults --build"))
struct PoolGrowFaultTests {
    @Test func aFailedGrowKeepsTheManifestTrue() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let pool = dir + "/pool"
        #expect(try createPool(pool, "32M", slot: "16M").status == 0)
        let log = dir + "/faults.log"
        // fdatasync slowed down: the salvage after the failure takes seconds, long enough to
        // read the manifest while the recorder still holds its slot.
        let recorder = try launch(["record", "--pool", pool, "--frames", "600", "--no-realtime", "--codec", "prores:hq",
                                   "--out", dir + "/out", "--name", "g", "--json"],
                                  environment: faultEnvironment("fallocate:ENOSPC:1,fdatasync:SLOW1500:1+", under: pool + "/slots", log: log))
        var claimed: [Int64] = []
        while recorder.process.isRunning {
            if let m = try? readManifestJSON(pool) {
                for s in slots(m) where s["state"] as? String == "active" {
                    if let a = (s["allocated"] as? NSNumber)?.int64Value { claimed.append(a) }
                }
            }
            usleep(5_000)
        }
        let run = recorder.wait()
        let injected = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        try #require(injected.contains("fallocate #1 ENOSPC"), "the fault never fired: \(injected)")
        #expect(run.status == 74 && run.stderr.contains("no space to grow the slot"), "\(run.stderr)")
        #expect(!claimed.isEmpty && claimed.allSatisfy { $0 == 16 << 20 }, "an active slot claimed \(Set(claimed)) bytes; its file had 16 MiB")
        let clip = try #require(try run.decode(RecordingSummary.self).clips.first)
        #expect(clip.salvaged)
        #expect(try risingIndices(clip.path, count: clip.frames))
        let ready = try reel(["pool", "wait", pool, "--json"])
        #expect(ready.status == 0, "\(ready.stderr)")
        #expect(try ready.decode(PoolStatus.self).slotsFree == 2)
        for s in slots(try readManifestJSON(pool)) {
            let id = try #require(s["id"] as? Int)
            let size = try #require((try FileManager.default.attributesOfItem(atPath: slotFile(pool, id))[.size] as? NSNumber)?.int64Value)
            #expect(size == (s["allocated"] as? NSNumber)?.int64Value, "slot \(id)")
        }
    }
}
