import Foundation
import Testing

/// Runs `python3 scripts/bench.d/results.py args…` from the repository root with `environment`
/// added and `input` on stdin; its exit status and stderr.
private func resultsHelper(_ args: [String], environment: [String: String], input: String = "") throws -> (status: Int32, stderr: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", repositoryRoot + "/scripts/bench.d/results.py"] + args
    p.currentDirectoryURL = URL(fileURLWithPath: repositoryRoot)
    var env = ProcessInfo.processInfo.environment
    for (k, v) in environment { env[k] = v }
    p.environment = env
    let stdin = Pipe(), stderr = Pipe()
    p.standardInput = stdin
    p.standardOutput = FileHandle.nullDevice
    p.standardError = stderr
    try p.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: err, as: UTF8.self))
}

/// An SVG file parsed as XML (by Python's xml.dom.minidom): the names of its elements in
/// document order, or nil when it is not well-formed.
private func svgElements(_ path: String) -> [String]? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = ["python3", "-c", "import sys, xml.dom.minidom as m; print(' '.join(e.tagName for e in m.parse(sys.argv[1]).getElementsByTagName('*')))", path]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return nil }
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
}

@Suite struct BenchmarkScriptsTests {
    /// Every benchmark in scripts/bench.d is a `scripts/bench` subcommand, listed in its usage
    /// and described in the Benchmarks section, docs/benchmarks.md (as `all` is).
    @Test func everyBenchmarkIsACommandAndInTheReadme() throws {
        let bench = try String(contentsOfFile: repositoryRoot + "/scripts/bench", encoding: .utf8)
        let section = readmeSection("## Benchmarks", in: try readme()).joined(separator: "\n")
        let scripts = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot + "/scripts/bench.d")
            .filter { $0.hasSuffix(".sh") }.map { String($0.dropLast(3)) }
        #expect(scripts.contains("capacity"))
        let usage = try #require(bench.components(separatedBy: "\n").first { $0.contains("usage: scripts/bench") })
        for name in scripts + ["all"] {
            #expect(bench.contains("    \(name))"), "scripts/bench has no case for \(name)")
            #expect(usage.contains(name), "the usage of scripts/bench does not list \(name)")
            #expect(section.contains("`scripts/bench \(name)"), "docs/benchmarks.md's Benchmarks section does not describe scripts/bench \(name)")
        }
    }

    /// The results writer: NAME.json carries the rows, the command, the machine (CPU, cores,
    /// kernel), the load before and after and the versions; NAME.svg is a bar chart (one bar a
    /// figure, with its range); a benchmark without structured results keeps its printed
    /// output; index.md collects every benchmark. Nothing is written without RESULTS_DIR.
    @Test func resultsWriterDescribesTheMachineAndPlotsTheFigures() throws {
        let dir = temporaryDirectory("reel-bench-results")
        defer { removeTree(dir) }
        let spec = """
        {"title": "demo", "columns": ["tool", "ratio"], "rows": [{"tool": "reel", "ratio": 1.1}, {"tool": "ffmpeg", "ratio": 1.0}],
         "plot": {"unit": "x", "reference": 1.0, "bars": [{"label": "reel", "value": 1.1, "low": 1.0, "high": 1.2},
                                                         {"label": "ffmpeg", "value": 1.0}]},
         "load_before": "0.50 0.40 0.30 1/100 42"}
        """
        let none = try resultsHelper(["json", "demo"], environment: ["RESULTS_DIR": ""], input: spec)
        #expect(none.status == 0, "\(none.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)

        let run = try resultsHelper(["json", "demo"], environment: ["RESULTS_DIR": dir, "BENCH_COMMAND": "RUNS=1 scripts/bench demo"], input: spec)
        #expect(run.status == 0, "\(run.stderr)")
        let data = try #require(FileManager.default.contents(atPath: dir + "/demo.json"))
        let doc = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(doc["benchmark"] as? String == "demo" && doc["command"] as? String == "RUNS=1 scripts/bench demo")
        let machine = try #require(doc["machine"] as? [String: Any])
        #expect(machine["cores"] as? Int == ProcessInfo.processInfo.activeProcessorCount)
        #expect((machine["cpu"] as? String)?.isEmpty == false && (machine["kernel"] as? String)?.isEmpty == false)
        #expect(doc["loadBefore"] as? String == "0.50 0.40 0.30 1/100 42")
        #expect((doc["loadAfter"] as? String)?.split(separator: " ").count == 5)
        let versions = try #require(doc["versions"] as? [String: String])
        #expect(versions["reel"]?.isEmpty == false && versions["ffmpeg"]?.first?.isNumber == true && versions["libavcodec"]?.split(separator: ".").count == 3)
        #expect((doc["rows"] as? [[String: Any]])?.count == 2)
        let svg = try #require(svgElements(dir + "/demo.svg"), "demo.svg is not well-formed XML")
        // A white background, then one bar per figure; the range of the first is a whisker.
        #expect(svg.first == "svg" && svg.filter { $0 == "rect" }.count == 1 + 2 && svg.filter { $0 == "line" }.count >= 3)

        let log = dir + "/other.txt"
        try "load: 1.00 1.00 1.00 1/1 1\nfigure 42\nload: 2.00 2.00 2.00 1/1 1\n".write(toFile: log, atomically: true, encoding: .utf8)
        let text = try resultsHelper(["text", "other", log], environment: ["RESULTS_DIR": dir])
        #expect(text.status == 0, "\(text.stderr)")
        let otherData = try #require(FileManager.default.contents(atPath: dir + "/other.json"))
        let other = try #require(try JSONSerialization.jsonObject(with: otherData) as? [String: Any])
        #expect((other["output"] as? [String])?.contains("figure 42") == true && other["loadBefore"] as? String == "1.00 1.00 1.00 1/1 1"
                && other["loadAfter"] as? String == "2.00 2.00 2.00 1/1 1")
        #expect(svgElements(dir + "/other.svg")?.contains("text") == true)

        let index = try resultsHelper(["index", dir], environment: [:])
        #expect(index.status == 0, "\(index.stderr)")
        let md = try String(contentsOfFile: dir + "/index.md", encoding: .utf8)
        #expect(md.contains("## demo") && md.contains("## other") && md.contains("`RUNS=1 scripts/bench demo`") && md.contains("| reel | 1.1 |"), "\(md)")
    }
}

/// The capacity benchmark's premise: the emulated camera gives 1920×1080 YUYV, and ffmpeg's
/// v4l2 input and GStreamer's v4l2src record several emulated cameras at once (two in one
/// process here), each file carrying its own camera's frame numbers.
@Suite struct RealtimeBenchmarkCameraTests {
    @Test(.enabled(if: installedTool("ffmpeg") != nil, "ffmpeg is not installed"))
    func ffmpegRecordsTwo1080pCamerasAtOnce() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try toolWithCamera("ffmpeg", ["-nostdin", "-v", "error",
            "-f", "v4l2", "-input_format", "yuyv422", "-video_size", "1920x1080", "-framerate", "30", "-i", "/dev/video0",
            "-f", "v4l2", "-input_format", "yuyv422", "-video_size", "1920x1080", "-framerate", "30", "-i", "/dev/video1",
            "-map", "0:v", "-frames:v", "30", "-fps_mode", "passthrough", "-c:v", "ffv1", dir + "/a.mkv",
            "-map", "1:v", "-frames:v", "30", "-fps_mode", "passthrough", "-c:v", "ffv1", dir + "/b.mkv"], faults: "devices=2")
        #expect(run.status == 0, "\(run.stderr)")
        for f in ["a", "b"] {
            let p = try probeFrames(dir + "/\(f).mkv")
            #expect(p.width == 1920 && p.height == 1080)
            // 30 frames numbered from 0 upwards (gaps only if ffmpeg fell behind on a loaded machine).
            let idx = try #require(p.frameIndices)
            #expect(idx.count == 30 && idx.allSatisfy { $0 >= 0 } && zip(idx, idx.dropFirst()).allSatisfy { $0 < $1 }, "\(f): \(idx)")
        }
    }

    @Test(.enabled(if: installedTool("gst-launch-1.0") != nil, "GStreamer is not installed"))
    func gstreamerRecordsTwo1080pCamerasAtOnce() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        var args = ["-q"]
        for (n, f) in ["a", "b"].enumerated() {
            args += ["v4l2src", "device=/dev/video\(n)", "num-buffers=30", "!", "video/x-raw,format=YUY2,width=1920,height=1080,framerate=30/1",
                     "!", "queue", "!", "videoconvert", "!", "video/x-raw,format=I420", "!", "y4menc", "!", "filesink", "location=\(dir)/\(f).y4m"]
        }
        let run = try toolWithCamera("gst-launch-1.0", args, faults: "devices=2")
        #expect(run.status == 0, "\(run.stderr)")
        for f in ["a", "b"] {
            let p = try probeFrames(dir + "/\(f).y4m")
            #expect(p.width == 1920 && p.height == 1080)
            let idx = try #require(p.frameIndices)
            #expect(idx.count == 30 && idx.allSatisfy { $0 >= 0 } && zip(idx, idx.dropFirst()).allSatisfy { $0 < $1 }, "\(f): \(idx)")
        }
    }
}
