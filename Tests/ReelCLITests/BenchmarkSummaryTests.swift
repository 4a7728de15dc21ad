import Foundation
import Testing

/// Runs `executable args…` from the repository root with `environment` added and `input` on
/// stdin: its exit status, stdout and stderr.
private func runScript(_ args: [String], environment: [String: String] = [:], input: String = "") throws -> (status: Int32, stdout: String, stderr: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = args
    p.currentDirectoryURL = URL(fileURLWithPath: repositoryRoot)
    var env = ProcessInfo.processInfo.environment
    for (k, v) in environment { env[k] = v }
    p.environment = env
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    p.standardInput = stdin
    p.standardOutput = stdout
    p.standardError = stderr
    try p.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    // Small outputs: reading one pipe to its end, then the other, cannot fill either.
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}

private func jsonObject(_ path: String) throws -> [String: Any] {
    let data = try #require(FileManager.default.contents(atPath: path), "\(path) is missing")
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

/// Issue 15's results page: every benchmark's headlines (Reel, its peer, the ratio with its
/// spread, the target and whether it is met) in `summary.json` / `summary.md`, and the
/// "Latest results" table of docs/benchmarks.md printed from them by `scripts/bench table`, so
/// that no figure in the documentation is typed by hand. Fast and load-independent: sample
/// results, no benchmark runs.
@Suite struct BenchmarkSummaryTests {
    static let recordSpec = """
    {"title": "record", "rows": [], "load_before": "1.50 0.40 0.30 1/100 42",
     "headlines": [
       {"row": "ProRes HQ CPU time, /dev/shm", "reel": [12.0, 11.8, 12.3], "unit": "s", "reel_name": "reel-tmpfs",
        "peer": [13.4, 13.2, 13.45], "peer_name": "ffmpeg-tmpfs", "ratio": [1.08, 1.07, 1.09], "target": [">=", 1.0]},
       {"row": "ProRes HQ CPU time against the encoder alone, /dev/shm", "reel": [12.0, 11.8, 12.3], "unit": "s", "reel_name": "reel-tmpfs",
        "peer": [10.9, 10.8, 11.0], "peer_name": "encoder-only", "ratio": [0.91, 0.90, 0.92], "target": [">=", 0.95]},
       {"row": "ProRes HQ peak RSS", "reel": [350, 360], "unit": "MiB", "reel_name": "reel-tmpfs",
        "peer": [349, 349], "peer_name": "ffmpeg-tmpfs + rings", "target": [">=", 1.0]},
       {"row": "ProRes HQ wall time, /dev/shm", "reel": [5.0, 5.2, 5.1], "unit": "s", "reel_name": "reel-tmpfs",
        "peer": [5.5, 5.4, 5.6], "peer_name": "ffmpeg-tmpfs", "ratio": [1.1, 1.04, 1.12], "target": [">=", 1.0], "key": false},
       {"row": "H.264 CPU time against the bare encoder", "reel": [7.4, 6.28, 7.62], "unit": "s", "reel_name": "reel-tmpfs",
        "peer": [7.84, 6.95, 8.03], "peer_name": "bare-encoder", "ratio": [1.09, 0.91, 1.25], "target": [">=", 0.95]}]}
    """
    static let launchSpec = """
    {"title": "launch", "rows": [], "load_before": "2.00 0.40 0.30 1/100 42", "parameters": {"scene": "realistic"},
     "headlines": [{"row": "prores:hq: frames lost at start", "reel": [0, 0, 0], "unit": "frames", "reel_name": "deferred",
                    "target": ["==", 0, "reel"]}]}
    """

    /// Writes the sample results (launch first, record second, and one benchmark with printed
    /// output only) into a new directory.
    private func sampleResults() throws -> String {
        let dir = temporaryDirectory("reel-bench-summary")
        for (name, spec, command) in [("launch", Self.launchSpec, "LAUNCHES=10 scripts/bench launch"), ("record", Self.recordSpec, "FRAMES=600 RUNS=3 scripts/bench record")] {
            let r = try runScript(["python3", "scripts/bench.d/results.py", "json", name], environment: ["RESULTS_DIR": dir, "BENCH_COMMAND": command], input: spec)
            #expect(r.status == 0, "\(r.stderr)")
        }
        let log = dir + "/photo.txt"
        try "load: 3.00 1.00 1.00 1/1 1\nfigure 42\n".write(toFile: log, atomically: true, encoding: .utf8)
        let text = try runScript(["python3", "scripts/bench.d/results.py", "text", "photo", log], environment: ["RESULTS_DIR": dir])
        #expect(text.status == 0, "\(text.stderr)")
        return dir
    }

    /// summary.json: the machine once, every benchmark in docs/benchmarks.md's order with its
    /// command, load and headlines; each headline's median, range and run count, the ratio's direction,
    /// and `met` computed against the target (the ratio's median, or Reel's figure).
    @Test func summaryJsonHoldsEveryHeadlineWithItsSpreadAndVerdict() throws {
        let dir = try sampleResults()
        defer { removeTree(dir) }
        let r = try runScript(["python3", "scripts/bench.d/results.py", "summary", dir])
        #expect(r.status == 0, "\(r.stderr)")
        let doc = try jsonObject(dir + "/summary.json")
        #expect((doc["machine"] as? [String: Any])?["cores"] as? Int == ProcessInfo.processInfo.activeProcessorCount)
        let benches = try #require(doc["benchmarks"] as? [[String: Any]])
        #expect(benches.map { $0["benchmark"] as? String } == ["record", "photo", "launch"])
        #expect(benches[0]["command"] as? String == "FRAMES=600 RUNS=3 scripts/bench record" && benches[0]["loadBefore"] as? String == "1.50 0.40 0.30 1/100 42")
        let heads = try #require(benches[0]["headlines"] as? [[String: Any]])
        #expect(heads.map { $0["met"] as? Bool } == [true, false, false, true, false])
        // Met only when the whole spread clears the target: a median that clears it with a
        // spread that crosses it is "within noise", and not met.
        #expect(heads.map { $0["verdict"] as? String } == ["met", "not met", "not met", "met", "within noise"])
        #expect(benches[0]["scene"] as? String == "pattern" && benches[2]["scene"] as? String == "realistic")
        #expect((benches[0]["commit"] as? String).map { !$0.isEmpty } == true)
        #expect(heads.map { $0["key"] as? Bool } == [true, true, true, false, true])
        let reel = try #require(heads[0]["reel"] as? [String: Any])
        #expect(reel["name"] as? String == "reel-tmpfs" && reel["median"] as? Double == 12.0 && reel["min"] as? Double == 11.8
                && reel["max"] as? Double == 12.3 && reel["runs"] as? Int == 3)
        let ratio = try #require(heads[0]["ratio"] as? [String: Any])
        #expect(ratio["median"] as? Double == 1.08 && ratio["min"] as? Double == 1.07 && ratio["of"] as? String == "peer/reel")
        // Without paired ratios the ratio comes from the medians: 349 / 355 < 1, not met.
        let rss = try #require(heads[2]["ratio"] as? [String: Any])
        #expect(abs((rss["median"] as? Double ?? 0) - 349.0 / 355.0) < 1e-9 && rss["runs"] as? Int == 1)
        #expect((heads[1]["target"] as? [String: Any])?["value"] as? Double == 0.95)
        let launch = try #require(benches[2]["headlines"] as? [[String: Any]])
        #expect(launch.first?["met"] as? Bool == true && launch.first?["ratio"] is NSNull)
        // A benchmark that kept only its printed output still has its row.
        let photo = try #require(benches[1]["headlines"] as? [[String: Any]])
        #expect((photo.first?["row"] as? String)?.contains("photo.txt") == true)
    }

    /// summary.md and `scripts/bench table`: one markdown row a headline with Reel's figure,
    /// the peer's, the ratio with its spread, the target and met?; the Latest results table names
    /// each benchmark's command and the machine.
    @Test func benchTablePrintsTheReadmeTableFromSummaryJson() throws {
        let dir = try sampleResults()
        defer { removeTree(dir) }
        #expect(try runScript(["python3", "scripts/bench.d/results.py", "summary", dir]).status == 0)
        let md = try String(contentsOfFile: dir + "/summary.md", encoding: .utf8)
        // The commit each benchmark ran at (here: this checkout's, as the sample results were written now).
        let commit = try #require((try jsonObject(dir + "/summary.json")["benchmarks"] as? [[String: Any]])?.first?["commit"] as? String)
        #expect(md.contains("| bench | row | Reel | peer | ratio (spread) | target | met? | scene | commit |"), "\(md)")
        #expect(md.contains("| record | ProRes HQ CPU time, /dev/shm | 12 (11.8–12.3) s | ffmpeg-tmpfs 13.4 (13.2–13.4) s | 1.08× (1.07–1.09), peer/Reel | ratio ≥ 1 | yes | pattern | \(commit) |"), "\(md)")

        let table = try runScript(["scripts/bench", "table", dir])
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.contains("`scripts/bench all`") == true && lines.first?.contains("\(ProcessInfo.processInfo.activeProcessorCount) cores") == true
                && lines.first?.contains("scripts/bench table") == true && lines.first?.contains("load average") == true, "\(lines.first ?? "")")
        #expect(lines.contains("| benchmark | command | row | Reel | peer | ratio (spread) | target | met? | scene | commit |"))
        #expect(lines.contains("| record | `FRAMES=600 RUNS=3 scripts/bench record` | ProRes HQ CPU time, /dev/shm | 12 (11.8–12.3) s | ffmpeg-tmpfs 13.4 (13.2–13.4) s | 1.08× (1.07–1.09), peer/Reel | ratio ≥ 1 | yes | pattern | \(commit) |"), "\(table.stdout)")
        #expect(lines.contains("|  |  | ProRes HQ CPU time against the encoder alone, /dev/shm | 12 (11.8–12.3) s | encoder-only 10.9 (10.8–11) s | 0.91× (0.90–0.92), peer/Reel | ratio ≥ 0.95 | NO | pattern | \(commit) |"), "\(table.stdout)")
        #expect(lines.contains("|  |  | H.264 CPU time against the bare encoder | 7.4 (6.28–7.62) s | bare-encoder 7.84 (6.95–8.03) s | 1.09× (0.91–1.25), peer/Reel | ratio ≥ 0.95 | within noise | pattern | \(commit) |"), "\(table.stdout)")
        #expect(lines.contains("| launch | `LAUNCHES=10 scripts/bench launch` | prores:hq: frames lost at start | 0 frames | — | — | Reel = 0 frames | yes | realistic | \(commit) |"), "\(table.stdout)")
        // A supporting figure (key: false) is in summary.md and `table --all`, not in the Latest results table.
        let wall = "|  | ProRes HQ wall time, /dev/shm | 5.1 (5–5.2) s | ffmpeg-tmpfs 5.5 (5.4–5.6) s | 1.10× (1.04–1.12), peer/Reel | ratio ≥ 1 | yes | pattern | \(commit) |"
        #expect(md.contains(wall) && !table.stdout.contains("ProRes HQ wall time"), "\(md)")
        let every = try runScript(["scripts/bench", "table", "--all", dir])
        #expect(every.status == 0 && every.stdout.contains("|  |  | ProRes HQ wall time, /dev/shm | 5.1 (5–5.2) s |"), "\(every.stdout)")

        let missing = try runScript(["scripts/bench", "table", dir + "/nothing-here"])
        #expect(missing.status == 66 && missing.stdout.isEmpty && missing.stderr.split(separator: "\n").count == 1, "\(missing)")
    }

    /// Every benchmark writes headlines into its results (none is left to its printed output),
    /// `scripts/bench all` writes the summary, and docs/benchmarks.md tells how its table is made.
    @Test func everyBenchmarkWritesHeadlinesAndTheReadmeSaysHowTheTableIsMade() throws {
        let scripts = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/scripts/bench.d").filter { $0.hasSuffix(".sh") }
        #expect(scripts.count >= 9)
        for script in scripts {
            let text = try String(contentsOfFile: repositoryRoot + "/scripts/bench.d/" + script, encoding: .utf8)
            #expect(text.contains("R.write(") && text.contains("headlines=heads"), "\(script) writes no headlines")
        }
        let bench = try String(contentsOfFile: repositoryRoot + "/scripts/bench", encoding: .utf8)
        #expect(bench.contains("results.py summary") && bench.contains("    table)"))
        let section = readmeSection("## Benchmarks", in: try readme()).joined(separator: "\n")
        #expect(section.contains("`scripts/bench table") && section.contains("summary.json") && section.contains("summary.md"))
    }
}
