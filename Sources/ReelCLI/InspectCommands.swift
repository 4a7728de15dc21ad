import Foundation
import ReelCore
import ReelWriter

enum ProbeCommand {
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        let scanned = try ScannedArguments(argv, spec: CommandTable.probe)
        let names = Set(scanned.options.map(\.name))
        guard !scanned.operands.isEmpty else { throw UsageError("probe needs at least one FILE") }
        return .probe(files: scanned.operands, frames: names.contains("--frames"), json: names.contains("--json"))
    }

    static func run(files: [String], frames: Bool, json: Bool) throws -> Int32 {
        var results: [ProbeResult] = []
        for f in files { results.append(try Inspector.probe(f, frames: frames)) }
        if json {
            if results.count == 1 { printJSON(results[0]) } else { printJSON(["files": results]) }
            return 0
        }
        for r in results {
            print("\(r.path): \(r.container) \(r.codec) \(r.width)x\(r.height) \(r.pixelFormat), \(r.frames) frames, \(fixed(r.durationSeconds, 3)) s, pts \(r.firstPTS.map { fixed($0, 3) } ?? "-")…\(r.lastPTS.map { fixed($0, 3) } ?? "-")\(rotationText(r.rotation))\(r.truncated ? " (truncated)" : "")")
            if let idx = r.frameIndices { print("  frames: " + ranges(idx)) }
            if let a = r.audio {
                print("  sound: \(a.codec) \(a.sampleRate) Hz \(a.channels) ch" + (a.durationSeconds.map { ", \(fixed($0, 3)) s" } ?? ""))
            }
            for c in r.chapters { print("  chapter \(fixed(c.start, 3))…\(fixed(c.end, 3)) s \(c.title ?? "")") }
        }
        return 0
    }

    /// `, rotation -90 (shown turned 90° clockwise)`, or nothing without a display matrix.
    static func rotationText(_ rotation: Int) -> String {
        guard rotation != 0 else { return "" }
        let clockwise = ((-rotation % 360) + 360) % 360
        return ", rotation \(rotation) (shown turned \(clockwise)° clockwise)"
    }

    /// `0-59, 61, 63-70` (unreadable frames as `?`).
    static func ranges(_ values: [Int]) -> String {
        var parts: [String] = []
        var i = 0
        while i < values.count {
            var j = i
            while j + 1 < values.count, values[i] >= 0, values[j + 1] == values[j] + 1 { j += 1 }
            let a = values[i] < 0 ? "?" : String(values[i])
            parts.append(j > i ? "\(a)-\(values[j])" : a)
            i = j + 1
        }
        return parts.joined(separator: ", ")
    }
}

enum VerifyCommand {
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        let scanned = try ScannedArguments(argv, spec: CommandTable.verify)
        guard !scanned.operands.isEmpty else { throw UsageError("verify needs clip files or a directory") }
        return .verify(paths: scanned.operands, json: scanned.options.contains { $0.name == "--json" })
    }

    static func run(paths: [String], json: Bool) throws -> Int32 {
        let report = try Inspector.verify(paths)
        if json { printJSON(report) } else {
            for c in report.clips {
                print("\(c.path): \(c.width)x\(c.height) \(c.ratio ?? "?"), \(c.frames) frames, #\(c.firstFrameIndex.map(String.init) ?? "?")-\(c.lastFrameIndex.map(String.init) ?? "?")\(ProbeCommand.rotationText(c.rotation))")
            }
            for c in report.cadenceChanges { print("  cadence from frame \(c.frameIndex): \(fixed(c.framesPerSecond, 3)) fps\(c.keepsOneFrameIn.map { " (one camera frame in \($0) kept)" } ?? "")") }
            if report.ok && !report.indexes.isEmpty {
                print("ok: \(report.framesChecked) frames in \(report.clips.count) clips as \(report.indexes.joined(separator: ", ")) lists them"
                      + " (\(report.deletedClips) deleted clip\(report.deletedClips == 1 ? "" : "s") not read), each run's indices once each, in order")
            } else if report.ok {
                print("ok: \(report.framesChecked) frames in \(report.clips.count) clips, indices 0-\(report.framesChecked - 1) once each, in order")
            }
            if report.ok, let a = report.audio {
                let offset = a.largestOffsetMs.map { ", A/V offset at most " + fixed($0, 2) + " ms" } ?? " (on the device's clock: no A/V offset)"
                print("ok: sound: \(a.samples) samples in \(a.clips.count) clip\(a.clips.count == 1 ? "" : "s"), \(a.clicks) clicks in order, none missing or repeated\(offset)")
            }
        }
        if let v = report.violation {
            printError("verify: " + v)
            return ExitStatus.dataError
        }
        return 0
    }
}
