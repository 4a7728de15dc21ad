import Foundation
import Testing
import ReelStorage
import ReelWriter

/// One line of the fault library's log: a call it failed (`errno` set), or — with
/// `REEL_FAULT_TRACE=1` — an fdatasync or fsync that succeeded, with the file's length when it
/// began (`length`).
struct FaultLogLine {
    var call: String
    var number: Int
    var errno: String?
    var length: Int64?
    var path: String

    /// The log's lines, in the order the calls were made.
    static func read(_ log: String) -> [FaultLogLine] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 4, f[1].hasPrefix("#"), let n = Int(f[1].dropFirst()) else { return nil }
            if f[2] == "ok" {
                guard f.count >= 5, let length = Int64(f[3]) else { return nil }
                return FaultLogLine(call: f[0], number: n, errno: nil, length: length, path: f[4...].joined(separator: " "))
            }
            return FaultLogLine(call: f[0], number: n, errno: f[2], length: nil, path: f[3...].joined(separator: " "))
        }
    }
}

/// The ends of the complete fragments (`moof` + `mdat`) of a fragmented MOV/MP4 file.
func fragmentEnds(_ path: String) throws -> [Int64] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    var ends: [Int64] = []
    var offset = 0, sawMoof = false
    while offset + 8 <= data.count {
        let size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
        let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
        guard size >= 8, offset + size <= data.count else { break }
        if type == "moof" { sawMoof = true }
        if type == "mdat" && sawMoof { ends.append(Int64(offset + size)); sawMoof = false }
        offset += size
    }
    return ends
}

/// `reel record --plain` (faults injected) of `frames` frames in 0.2 s fragments into `dir/out`, with `rule`
/// injected into files under it and every successful sync traced into `dir/faults.log`.
func recordPlain(_ dir: String, rule: String, frames: Int, realtime: Bool = true) throws -> (Run, [FaultLogLine]) {
    var env = faultEnvironment(rule, under: dir + "/out", log: dir + "/faults.log")
    env["REEL_FAULT_TRACE"] = "1"
    let run = try #require(try reel(["record", "--plain", "--json", "--frames", String(frames), "--fragment", "0.2",
                                     "--source", "synthetic:1280", "--codec", "prores:proxy", "--out", dir + "/out", "--name", "p"]
                                    + (realtime ? [] : ["--no-realtime"]),
                                    within: 90, environment: env), "\(rule): reel record did not end within 90 s")
    return (run, FaultLogLine.read(dir + "/faults.log"))
}

/// `--plain` recordings under sync faults (LD_PRELOAD of scripts/faults), as `PoolFaultTests`
/// has them for pooled ones: a plain clip is synced as it goes, and after a failed sync what
/// is kept is only what was known to be on disk, decodable, and never deleted by a failed
/// publish. Real time: how many syncs a recording makes depends on the disk keeping up with
/// 0.2 s fragments, so these run in the serial pass.
@Suite(.serialized, .enabled(if: faultsLibrary != nil, "the fault library is not built: scripts/faults --build"))
struct RealtimePlainFaultTests {
    /// A plain recording is fdatasync'ed as each fragment completes — not once at the end —
    /// and its directory is fsynced once its first bytes are on disk and again when it is
    /// published.
    @Test func aPlainRecordingSyncsEachFragmentAndItsDirectory() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, log) = try recordPlain(dir, rule: "", frames: 90)
        #expect(run.status == 0, "\(run.stderr)")
        let clip = try #require(try run.decode(RecordingSummary.self).clips.first)
        #expect(!clip.salvaged && clip.frames == 90)
        #expect(try risingIndices(clip.path, count: 90))
        let ends = try fragmentEnds(clip.path)
        // 90 frames at 30 fps in 0.2 s fragments.
        #expect(ends.count >= 14, "\(ends.count) fragments")
        let syncs = log.filter { $0.call == "fdatasync" && $0.path == clip.path }
        let last = try #require(syncs.last, "no fdatasync of \(clip.path): \(log.map(\.call))")
        #expect(last.length == clip.bytes, "publish syncs the whole clip")
        // While it recorded: syncs at fragment ends (nothing is written between them), one a
        // fragment — at least half of them distinct where the disk was slow enough for two
        // fragments to share one.
        let during = Set(syncs.dropLast().compactMap(\.length))
        #expect(during.isSubset(of: Set(ends)), "synced at \(during.sorted()), fragments end at \(ends)")
        #expect(during.count >= (ends.count - 1) / 2, "\(during.count) syncs during a recording of \(ends.count) fragments")
        let directorySyncs = log.filter { $0.call == "fsync" && $0.path == dir + "/out" }
        let firstDirectorySync = try #require(log.firstIndex { $0.call == "fsync" && $0.path == dir + "/out" }, "the directory was never fsynced")
        #expect(firstDirectorySync < log.count - 2, "the directory is fsynced while recording, not only when publishing")
        #expect(directorySyncs.count >= 2)
    }

    /// A sync that fails at any point — the k-th fdatasync or sync_file_range, the directory's
    /// fsync — ends the recording (exit 74, one error line), and the clip kept holds no byte
    /// past what the last successful fdatasync before the failure covered: salvaged, decodable,
    /// its frames the recording's first. Where even the salvage's own sync keeps failing
    /// (`N+`), the file stays where it is, listed: no failed publish deletes the only copy.
    @Test(arguments: ["fdatasync:EIO:1", "fdatasync:EIO:2", "fdatasync:EIO:3", "fdatasync:EIO:4", "fdatasync:EIO:5",
                      "fdatasync:EIO:6", "fdatasync:EIO:3+", "sync_file_range:EIO:1", "sync_file_range:EIO:4",
                      "fsync:EIO:1", "fsync:EIO:1+"])
    func aFailedSyncKeepsNothingPastTheLastSync(rule: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, log) = try recordPlain(dir, rule: rule, frames: 90)
        let call = String(rule.split(separator: ":")[0])
        let injected = try #require(log.firstIndex { $0.call == call && $0.errno != nil }, "the fault never fired: \(rule)")
        #expect(run.status == 74, "\(rule): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.hasPrefix("reel: ") == true, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.stopReason == "failed" && s.error != nil)
        let clipPath = dir + "/out/p-0001-16x9.mov"
        // What was known to be on disk when the sync failed.
        let synced = log[..<injected].last { $0.call == "fdatasync" && $0.path == clipPath }?.length ?? 0
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/out")) ?? []
        if synced == 0 {
            #expect(s.clips.isEmpty && files.isEmpty, "\(rule): nothing was on disk, yet \(s.clips.map(\.path)) \(files)")
            return
        }
        let clip = try #require(s.clips.first, "\(rule): \(synced) bytes were on disk, and no clip was kept")
        #expect(s.clips.count == 1 && clip.path == clipPath && clip.salvaged)
        #expect(clip.bytes <= synced, "\(rule): \(clip.bytes) bytes kept, only \(synced) were synced")
        let onDisk = try FileManager.default.attributesOfItem(atPath: clip.path)[.size] as? NSNumber
        #expect(onDisk?.int64Value == clip.bytes)
        #expect(clip.frames > 0 && clip.frames < 90)
        #expect(try risingIndices(clip.path, count: clip.frames), "\(rule): \(clip.path) does not decode as the first \(clip.frames) frames")
        #expect(try probeFrames(clip.path).frameIndices?.first == 0)
        #expect(files == ["p-0001-16x9.mov"])
    }

}

/// `--plain` recordings under write faults: every write of a short recording (as fast as it
/// goes: the writes are the same, in the same order, every run).
@Suite(.serialized, .enabled(if: faultsLibrary != nil, "the fault library is not built: scripts/faults --build"))
struct PlainFaultTests {
    /// A failed write — the n-th pwrite failing once with EIO, or the disk full from the n-th
    /// on — at any point of a plain recording: exit 74 with one error line, and any clip kept
    /// is salvaged, decodes as the recording's first frames and is the only file left.
    @Test(arguments: (1...7).map { "pwrite:EIO:\($0)" } + ["pwrite:ENOSPC:3+", "pwrite:ENOSPC:5+"])
    func aFailedWriteLeavesADecodablePrefix(rule: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, log) = try recordPlain(dir, rule: rule, frames: 30, realtime: false)
        try #require(log.contains { $0.call == "pwrite" && $0.errno != nil }, "the fault never fired: \(rule)")
        #expect(run.status == 74, "\(rule): \(run.stderr)")
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.hasPrefix("reel: ") == true, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.stopReason == "failed")
        for clip in s.clips {
            #expect(clip.salvaged)
            #expect(try risingIndices(clip.path, count: clip.frames), "\(rule): \(clip.path)")
            #expect(try probeFrames(clip.path).frameIndices?.first == 0)
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/out")) ?? []
        #expect(files.sorted() == s.clips.map { fileName($0.path) }.sorted(), "\(rule): \(files) left, \(s.clips.map(\.path)) listed")
    }

    /// A write fails and then every fdatasync after it fails too, the salvage's own included: a
    /// clip kept is no longer than what the last successful fdatasync of it covered, decodes,
    /// and is the only file left — the double fault keeps nothing past the last sync.
    @Test(arguments: ["pwrite:EIO:4,fdatasync:EIO:@1+", "pwrite:EIO:6,fdatasync:EIO:@1+", "pwrite:EIO:7,fdatasync:EIO:@1+"])
    func aFailedWriteThenAFailedSyncKeepsOnlyWhatWasSynced(rule: String) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, log) = try recordPlain(dir, rule: rule, frames: 30, realtime: false)
        try #require(log.contains { $0.call == "pwrite" && $0.errno != nil }, "the write fault never fired: \(rule)")
        try #require(log.contains { $0.call == "fdatasync" && $0.errno != nil }, "the sync fault never fired: \(rule)")
        #expect(run.status == 74, "\(rule): \(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        let clipPath = dir + "/out/p-0001-16x9.mov"
        let synced = log.filter { $0.call == "fdatasync" && $0.errno == nil && $0.path == clipPath }.compactMap(\.length).max() ?? 0
        for clip in s.clips {
            #expect(clip.salvaged && clip.path == clipPath)
            #expect(clip.bytes <= synced, "\(rule): \(clip.bytes) bytes kept, only \(synced) were synced")
            let onDisk = try FileManager.default.attributesOfItem(atPath: clip.path)[.size] as? NSNumber
            #expect(onDisk?.int64Value == clip.bytes)
            #expect(try risingIndices(clip.path, count: clip.frames), "\(rule): \(clip.path)")
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/out")) ?? []
        #expect(files.sorted() == s.clips.map { fileName($0.path) }.sorted(), "\(rule): \(files) left, \(s.clips.map(\.path)) listed")
    }

    private func fileName(_ path: String) -> String { (path as NSString).lastPathComponent }
}
