import Foundation
import Testing
import ReelCapacity
import ReelCore

/// A cache directory (`XDG_CACHE_HOME`) holding a calibration of this machine whose codecs all
/// take `cpuSecondsPerMegapixel` CPU seconds per million pixels of a frame (2 cores), so that
/// costs are exact; and an empty runtime directory (`XDG_RUNTIME_DIR`) for the registry.
func capacityEnvironment(cpuSecondsPerMegapixel: Double) throws -> (env: [String: String], root: String) {
    let root = temporaryDirectory("reel-capacity")
    var encoders: [String: [EncoderPoint]] = [:]
    for codec in Calibration.codecs {
        encoders[codec.description] = [(1280, 720), (1920, 1920)].map { w, h in
            let spf = cpuSecondsPerMegapixel * Double(w * h) / 1e6
            return EncoderPoint(width: w, height: h, cpuSecondsPerFrame: spf, framesPerSecond: 2 / spf, bytesPerFrame: Double(w * h) / 2)
        }
    }
    let c = Calibration(measuredAt: Date().timeIntervalSince1970, secondsTaken: 1, loadAverage: 0, encoders: encoders,
                        previewMillisecondsPerPicture: 2, cores: 2)
    try c.save(to: root + "/cache/reel/capacity.json")
    try FileManager.default.createDirectory(atPath: root + "/run", withIntermediateDirectories: true)
    return (["XDG_CACHE_HOME": root + "/cache", "XDG_RUNTIME_DIR": root + "/run"], root)
}

/// The registry's entries (`RUNTIME/reel/sessions/PID.json`).
func registryEntries(_ root: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: root + "/run/reel/sessions")) ?? []).filter { $0.hasSuffix(".json") }.sorted()
}

@Suite struct HardwareCostCommandTests {
    /// The example, with a calibration in which ffv1 1920×1920 at 30 fps takes 1.25.
    @Test func costPrintsTheFigureAndBreakdownAndExits69AboveOne() throws {
        let (env, root) = try capacityEnvironment(cpuSecondsPerMegapixel: 1.25 * 2 / 30 / 3.6864)
        defer { removeTree(root) }
        let args = ["cost", "--codec", "ffv1", "--source", "synthetic:1920", "--ratio", "1x1", "--fps", "30"]
        let text = try reel(args, environment: env)
        #expect(text.status == 69)
        #expect(text.stdout.hasPrefix("hardware cost 1.25 (encoder): ffv1 1920×1920 at 30 fps\n"))
        #expect(text.stdout.contains("  encoder  this 1.25  others 0.00  total 1.25"))
        #expect(text.stderr == "reel: ffv1 1920×1920 at 30 fps needs 1.25 of this machine's encoder capacity; 24 fps fits\n")

        let json = try reel(args + ["--json"], environment: env)
        #expect(json.status == 69)
        let cost = try json.decode(HardwareCost.self)
        #expect(abs(cost.cost - 1.25) < 1e-9 && cost.bottleneck == "encoder" && cost.fittingFramesPerSecond == 24)
        #expect(cost.resources.map(\.name) == ["encoder", "disk"])

        // At the rate that fits: exit 0, nothing on stderr.
        let fits = try reel(["cost", "--codec", "ffv1", "--source", "synthetic:1920", "--ratio", "1x1", "--fps", "24", "--json"], environment: env)
        #expect(fits.status == 0 && fits.stderr.isEmpty)
        #expect(abs(try fits.decode(HardwareCost.self).cost - 1.0) < 1e-9)
    }

    /// `reel record --strict` refuses the same configuration before it starts, naming what
    /// fits: no clip is made, nothing registered.
    @Test func recordStrictRefusesACostAboveTheTargetBeforeStarting() throws {
        let (env, root) = try capacityEnvironment(cpuSecondsPerMegapixel: 1.25 * 2 / 30 / 3.6864)
        defer { removeTree(root) }
        let out = root + "/out"
        let run = try reel(["record", "--codec", "ffv1", "--container", "mkv", "--source", "synthetic:1920", "--ratio", "1x1",
                            "--fps", "30", "--frames", "3", "--plain", "--strict", "--out", out], environment: env)
        #expect(run.status == 69)
        // Every codec costs the same in this calibration: H.264 at 30 fps does not fit either;
        // 15 fps is the first rate at or under 0.75 (1.25 × 15 / 30).
        #expect(run.stderr.hasPrefix("reel: ffv1 1920×1920 at 30 fps needs 1.25 of this machine (encoder), more than the 0.75 a real-time recording may take (measured figures); h264 1920×1920 at 15 fps fits (0.6"), "\(run.stderr)")
        #expect(run.stderr.hasSuffix("): --codec h264 --fps 15\n"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).isEmpty)
        #expect(registryEntries(root).isEmpty)
        // A later ratio change counts at its size: 16x9 alone is 1920×1080 (0.70), 1x1 later makes it 1.25.
        let later = try reel(["cost", "--codec", "ffv1", "--source", "synthetic:1920", "--ratio", "16x9", "--ratio-at", "1:1x1", "--fps", "30"], environment: env)
        #expect(later.status == 69 && later.stdout.hasPrefix("hardware cost 1.25"))
        #expect(later.stdout.contains("  reel record would record h264 1920×1920 at 15 fps instead (0.6"), "\(later.stdout)")

        // The alternative, run as printed, records: every frame, as asked.
        let alternative = try reel(["record", "--codec", "h264", "--fps", "15", "--container", "mkv", "--source", "synthetic:1920", "--ratio", "1x1",
                                    "--frames", "15", "--plain", "--strict", "--json", "--out", out], environment: env)
        #expect(alternative.status == 0, "\(alternative.stderr)")
        #expect(alternative.stderr.isEmpty)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(alternative.stdout.utf8)) as? [String: Any])
        #expect(summary["adjusted"] is NSNull)
        #expect(summary["framesWritten"] as? Int == 15 && summary["framesDropped"] as? Int == 0)
    }

    /// Without `--strict` the same request is validated down the ladder: it records the first
    /// rung that fits, says so in one warning line and in the summary's `adjusted`, and the
    /// file is what was chosen.
    @Test func recordAdjustsACostAboveTheTargetDownTheLadder() throws {
        let (env, root) = try capacityEnvironment(cpuSecondsPerMegapixel: 1.25 * 2 / 30 / 3.6864)
        defer { removeTree(root) }
        let out = root + "/out"
        let run = try reel(["record", "--codec", "ffv1", "--container", "mkv", "--source", "synthetic:1920", "--ratio", "1x1",
                            "--fps", "30", "--frames", "6", "--plain", "--json", "--out", out], environment: env, asAsked: false)
        #expect(run.status == 0, "\(run.stderr)")
        let warnings = run.stderr.split(separator: "\n").filter { $0.hasPrefix("reel: warning: ffv1 1920×1920 at 30 fps needs 1.25") }
        #expect(warnings.count == 1, "\(run.stderr)")
        #expect(warnings.first?.contains("recording h264 1920×1920 at 15 fps instead") == true, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let adjusted = try #require(summary["adjusted"] as? [String: Any])
        let requested = try #require(adjusted["requested"] as? [String: Any]), chosen = try #require(adjusted["chosen"] as? [String: Any])
        #expect(requested["codec"] as? String == "ffv1" && requested["framesPerSecond"] as? Double == 30)
        #expect(abs((requested["cost"] as? Double ?? 0) - 1.25) < 1e-9)
        #expect(chosen["codec"] as? String == "h264" && chosen["framesPerSecond"] as? Double == 15)
        #expect((chosen["cost"] as? Double ?? 1) <= 0.75)
        #expect(adjusted["target"] as? Double == 0.75 && adjusted["figures"] as? String == "measured")
        // The clip is what was chosen: H.264 at 15 fps.
        let clips = try #require(summary["clips"] as? [[String: Any]])
        let path = try #require(clips.first?["path"] as? String)
        let probe = try probeFrames(path)
        #expect(probe.codec == "h264")
        #expect(probe.frameIndices == Array(0..<6))
        #expect(abs(probe.durationSeconds - 6.0 / 15) < 0.01, "\(probe.durationSeconds) s")   // 6 frames at 15 fps
    }

    /// `--no-adjust` records the request as asked and says in one warning line that it does
    /// not fit; with `--strict` it is a usage error.
    @Test func noAdjustRecordsAsAskedAndSaysSo() throws {
        let (env, root) = try capacityEnvironment(cpuSecondsPerMegapixel: 1.25 * 2 / 30 / 3.6864)
        defer { removeTree(root) }
        let args = ["record", "--codec", "ffv1", "--container", "mkv", "--source", "synthetic:1920", "--ratio", "1x1",
                    "--fps", "30", "--frames", "3", "--plain", "--json", "--out", root + "/out"]
        let run = try reel(args + ["--no-adjust"], environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        let warnings = run.stderr.split(separator: "\n").filter { $0.contains("--no-adjust") }
        #expect(warnings == ["reel: warning: ffv1 1920×1920 at 30 fps needs 1.25 of this machine (encoder), more than the 0.75 a real-time recording may take (measured figures); recording it as asked (--no-adjust): frames may be dropped"], "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(summary["adjusted"] is NSNull)
        let clips = try #require(summary["clips"] as? [[String: Any]])
        #expect(try probeFrames(try #require(clips.first?["path"] as? String)).codec == "ffv1")
        let both = try reel(args + ["--no-adjust", "--strict"], environment: env)
        #expect(both.status == 64 && both.stderr == "reel: use either --strict or --no-adjust, not both\n")
    }

    /// Two live recordings in the registry take 0.70; a third at 0.35 is refused (nothing down
    /// the ladder fits beside them); once one of them is killed (its entry stale), it records.
    @Test func aThirdRecordingThatWouldExceedTheTargetIsRefusedUntilOneIsKilled() throws {
        // prores:hq 1920×1080 at 2 fps: 0.35 CPU-s a frame × 2 fps ÷ 2 cores = 0.35.
        let (env, root) = try capacityEnvironment(cpuSecondsPerMegapixel: 0.35 / 2.0736)
        defer { removeTree(root) }
        let common = ["record", "--fps", "2", "--plain", "--json"]
        let first = try launch(common + ["--duration", "120", "--out", root + "/a"], environment: env)
        let second = try launch(common + ["--duration", "120", "--out", root + "/b"], environment: env)
        defer { first.signal(SIGKILL); second.signal(SIGKILL) }
        waitUntil(60) { registryEntries(root).count >= 2 }
        #expect(registryEntries(root) == ["\(first.process.processIdentifier).json", "\(second.process.processIdentifier).json"].sorted())

        let third = try reel(common + ["--frames", "2", "--out", root + "/c"], environment: env, asAsked: false)
        #expect(third.status == 69)
        #expect(third.stderr == "reel: prores:hq 1920×1080 at 2 fps needs 0.35 of this machine (encoder), and 2 other Reel recordings take 0.70 (1.05 in all); nothing down the ladder (lighter codecs, then lower rates) fits within the 0.75 a real-time recording may take\n")
        let cost = try reel(["cost", "--fps", "2", "--plain"], environment: env)
        #expect(cost.stdout.contains("  encoder  this 0.35  others 0.70  total 1.05"))
        #expect(cost.stdout.contains("other recording: pid \(first.process.processIdentifier): prores:hq 1920×1080 at 2 fps"))

        // Killed: its entry stays on disk but no longer counts, and the next reader removes it.
        first.signal(SIGKILL)
        #expect(first.wait().status != 0)
        let fourth = try reel(common + ["--frames", "2", "--out", root + "/d"], environment: env, asAsked: false)
        #expect(fourth.status == 0, "\(fourth.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(fourth.stdout.utf8)) as? [String: Any])
        #expect(abs((summary["hardwareCost"] as? Double ?? 0) - 0.7) < 1e-9)
        #expect(!registryEntries(root).contains("\(first.process.processIdentifier).json"))

        // The second ends cleanly (SIGINT) and takes its entry with it.
        second.signal(SIGINT)
        #expect(second.wait().status == 0)
        #expect(registryEntries(root).isEmpty)
    }

    @Test func theSummaryCarriesThePressureTimelineAndTheCost() throws {
        let out = temporaryDirectory()
        defer { removeTree(out) }
        let run = try reel(["record", "--frames", "3", "--plain", "--json", "--out", out])
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        // No calibration in the tests' cache: the shipped table scaled by the CPU probe gives
        // the cost (the pattern's 1920×1080 ProRes HQ: well under the target), recorded as asked.
        let cost = try #require(summary["hardwareCost"] as? Double)
        #expect(cost > 0 && cost < 0.75)
        #expect(summary["adjusted"] is NSNull)
        let pressure = try #require(summary["pressure"] as? [String: Any])
        let levels = PressureLevel.allCases.map(\.rawValue)
        #expect(levels.contains(pressure["level"] as? String ?? "?"))
        let timeline = try #require(pressure["timeline"] as? [[String: Any]])
        let first = try #require(timeline.first)
        #expect(Set(first.keys) == ["atSeconds", "level", "factors", "cost", "sample", "action", "frameIndex", "preview", "note"])
        #expect(pressure["handler"] as? String == "on")
        // This machine has PSI: the first reading has figures.
        if FileManager.default.fileExists(atPath: "/proc/pressure/cpu") {
            #expect((first["sample"] as? [String: Any])?["cpuSome"] is Double)
            #expect(first["level"] as? String != "unknown")
        }
        // The rest of the summary is as before.
        #expect(summary["framesWritten"] as? Int == 3)
    }
}

/// Real calibrations: each runs every codec's encoder for a few frames (seconds of CPU).
@Suite(.serialized) struct DisruptiveCalibrationTests {
    struct Report: Decodable {
        var path: String
        var measured: Bool
        var reason: String
        var calibration: Calibration
    }

    @Test func calibrateMeasuresCachesAndMeasuresACorruptCacheAgain() throws {
        let root = temporaryDirectory("reel-calibrate")
        defer { removeTree(root) }
        let env = ["XDG_CACHE_HOME": root]
        let first = try reel(["calibrate", "--json"], environment: env)
        #expect(first.status == 0, "\(first.stderr)")
        let r = try first.decode(Report.self)
        #expect(r.measured && r.path == root + "/reel/capacity.json" && r.reason.contains("no calibration"))
        #expect(Set(r.calibration.encoders.keys) == Set(Calibration.codecs.map(\.description)))
        for (codec, points) in r.calibration.encoders {
            #expect(points.map { "\($0.width)x\($0.height)" } == ["1280x720", "1920x1080", "1920x1920"], "\(codec)")
            #expect(points.allSatisfy { $0.cpuSecondsPerFrame > 0 && $0.bytesPerFrame > 0 }, "\(codec)")
        }
        #expect(r.calibration.previewMillisecondsPerPicture > 0)
        // Issue 24: the realistic scene at every point, the pattern at 1920×1080, the CPU probe.
        #expect(r.calibration.origin == "measured" && (r.calibration.cpuProbeMilliseconds ?? 0) > 0)
        let pattern = try #require(r.calibration.patternEncoders)
        #expect(Set(pattern.keys) == Set(Calibration.codecs.map(\.description)))
        #expect(pattern.values.allSatisfy { $0.map { "\($0.width)x\($0.height)" } == ["1920x1080"] })
        // The pattern is far easier to encode: fewer bytes than the realistic scene for every codec.
        for (codec, points) in pattern {
            let realistic = try #require(r.calibration.encoders[codec]?.first { $0.width == 1920 && $0.height == 1080 })
            #expect(points[0].bytesPerFrame < realistic.bytesPerFrame, "\(codec)")
        }

        let second = try reel(["calibrate", "--json"], environment: env)
        let cached = try second.decode(Report.self)
        #expect(!cached.measured && cached.calibration == r.calibration)

        try Data("{\"version\": 3, \"machine\": ".utf8).write(to: URL(fileURLWithPath: r.path))
        let third = try reel(["calibrate", "--json"], environment: env)
        let again = try third.decode(Report.self)
        #expect(again.measured && again.reason.contains("damaged"))
        // And the cache is whole again.
        let fourth = try reel(["calibrate"], environment: env)
        #expect(fourth.status == 0 && fourth.stdout.hasPrefix("cached in \(r.path)"))
    }
}

/// The progress line in a terminal shows the system-pressure level (before the ratio).
@Suite(.serialized) struct RealtimePressureProgressTests {
    @Test func theProgressLineShowsThePressureLevel() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let term = try TerminalRun(["record", "--duration", "3", "--source", "synthetic:1280", "--codec", "prores:proxy",
                                    "--plain", "--out", dir])
        defer { term.finish() }
        _ = try #require(term.waitForProgress(30) { frames, _ in frames >= 10 }, "no progress line: \(term.screen)")
        let line = try #require(term.screen.split(whereSeparator: { $0 == "\r" || $0 == "\n" }).last { $0.contains(" frames ") })
        let words = line.split(separator: " ").map(String.init)
        let at = try #require(words.firstIndex(of: "pressure"), "\(line)")
        #expect(PressureLevel.allCases.map(\.rawValue).contains(words[at + 1]), "\(line)")
        #expect(words.last == "16x9")
        let end = term.waitForExit(30)
        #expect(end.status == 0)
    }
}
