import Foundation
import Testing
import ReelBench

/// Its contention loads (a bulk writer, half the memory touched) would disturb every test
/// beside them: the suite runs in the last pass of `scripts/test`, alone.
@Suite(.serialized) struct DisruptiveJitterTests {
    func loadProcesses() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { pid -> String? in
            guard Int(pid) != nil, let cmd = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8) else { return nil }
            let args = cmd.split(separator: "\0")
            return args.count > 1 && args[1] == "_load" ? cmd : nil
        }
    }

    @Test func contentionLoadsStartStayInTheirTimeAndAreReaped() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let t0 = Date()
        let run = try reel(["jitter", "--dir", dir, "--duration", "1.5", "--rate", "20M", "--contention", "all",
                            "--arms", "buffered", "--no-floor", "--json", "--report", dir + "/report"])
        let took = Date().timeIntervalSince(t0)
        #expect(run.status == 0, "\(run.stderr)")
        let report = try run.decode(JitterReport.self)
        #expect(report.arms.count == 1 && report.arms[0].contention == "bulk+fsync+metadata+memory")
        #expect(report.arms[0].latencyMs.count == 28)   // 20 000 000 B/s × 1.5 s in 1 MiB writes
        #expect(report.arms[0].throughputMBps > 15)
        #expect(took < 20, "the run took \(took) s")
        #expect(loadProcesses().isEmpty, "loads left running: \(loadProcesses())")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix(".reel") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        let svg = try String(contentsOfFile: dir + "/report/jitter.svg", encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("polyline") && svg.contains("buffered / bulk+fsync+metadata+memory"))
        #expect(FileManager.default.fileExists(atPath: dir + "/report/jitter.json"))
    }

    @Test(arguments: ContentionKind.allCases)
    func eachLoadEndsByItselfWithinItsBound(kind: ContentionKind) throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let t0 = Date()
        let run = try reel(["_load", kind.rawValue, "--dir", dir, "--seconds", "1"])
        let took = Date().timeIntervalSince(t0)
        #expect(run.status == 0)
        #expect(took >= 0.9 && took < 4, "\(kind) ran \(took) s")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty, "\(kind) left files")
    }

    @Test func recordWritesItsOwnLatencyReport() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, summary) = try record(["--frames", "60", "--no-realtime", "--codec", "prores:hq", "--name", "r", "--report", dir + "/rep"], out: dir + "/out")
        #expect(run.status == 0, "\(run.stderr)")
        let s = try #require(summary)
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/rep/record.json"))
        let report = try JSONDecoder().decode(JitterReport.self, from: data)
        #expect(report.arms.count == 1 && report.arms[0].latencyMs.count == s.storage.writeLatencyMs.count && report.arms[0].latencyMs.count > 0)
        #expect(abs(report.arms[0].latencyMs.max - s.storage.longestStallMs) < 0.01)
        let svg = try String(contentsOfFile: dir + "/rep/record.svg", encoding: .utf8)
        #expect(svg.contains("polyline") && svg.contains("Storage write latency of the recording"))
        _ = FileManager.default.createFile(atPath: dir + "/file", contents: Data())
        let bad = try reel(["record", "--frames", "5", "--report", dir + "/file/x", "--out", dir + "/out2"])
        #expect(bad.status == 64 && bad.stderr.contains("--report: cannot write"), "\(bad.stderr)")
    }

    @Test func badArgumentsAreClearErrors() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let zero = try reel(["jitter", "--dir", dir, "--rate", "0"])
        #expect(zero.status == 64 && zero.stderr.contains("--rate"), "\(zero.stderr)")
        let arm = try reel(["jitter", "--dir", dir, "--arms", "pool,teleport"])
        #expect(arm.status == 64 && arm.stderr.contains("unknown arm 'teleport'"), "\(arm.stderr)")
        let load = try reel(["jitter", "--dir", dir, "--contention", "earthquake"])
        #expect(load.status == 64 && load.stderr.contains("unknown contention 'earthquake'"))
        _ = FileManager.default.createFile(atPath: dir + "/file", contents: Data())
        let report = try reel(["jitter", "--dir", dir, "--duration", "1", "--report", dir + "/file/sub"])
        #expect(report.status == 74 && report.stderr.contains("cannot write the report"), "\(report.stderr)")
    }
}
