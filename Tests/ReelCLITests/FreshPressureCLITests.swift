import Foundation
import Testing

/// `reel record`'s first pressure level comes from a fresh reading of the stall counters, not
/// from `avg10` (which still holds an I/O burst that ended just before the recording).
@Suite struct RealtimeFreshPressureCLITests {
    /// PSI files as an I/O burst that has just ended leaves them: avg10 high (io some 70 %,
    /// full 45 %: critical; cpu some 55 %: serious), but counters that no longer move. The
    /// recording sees nominal throughout, and its handler never steps the rate down: all 60
    /// frames at 30 fps.
    @Test func aBurstThatEndedBeforeTheRecordingIsNotPressure() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let psi = dir + "/psi"
        try FileManager.default.createDirectory(atPath: psi, withIntermediateDirectories: true)
        func line(_ kind: String, _ avg10: Double, _ total: UInt64) -> String {
            "\(kind) avg10=\(String(format: "%.2f", avg10)) avg60=\(String(format: "%.2f", avg10 / 2)) avg300=3.00 total=\(total)\n"
        }
        try (line("some", 55, 81_000_000_000) + line("full", 0, 0)).write(toFile: psi + "/cpu", atomically: true, encoding: .utf8)
        try (line("some", 70, 42_000_000_000) + line("full", 45, 30_000_000_000)).write(toFile: psi + "/io", atomically: true, encoding: .utf8)
        try (line("some", 0, 1_000_000) + line("full", 0, 500_000)).write(toFile: psi + "/memory", atomically: true, encoding: .utf8)
        let run = try reel(["record", "--plain", "--json", "--frames", "60", "--source", "synthetic:1280", "--codec", "prores:proxy",
                            "--out", dir + "/out"], environment: ["REEL_PRESSURE_DIR": psi])
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let pressure = try #require(summary["pressure"] as? [String: Any])
        let timeline = try #require(pressure["timeline"] as? [[String: Any]])
        #expect(timeline.map { $0["level"] as? String } == ["nominal"], "\(timeline)")
        #expect(pressure["level"] as? String == "nominal")
        #expect((summary["frameRateChanges"] as? [Any])?.isEmpty == true, "\(summary["frameRateChanges"] ?? "")")
        #expect(summary["framesWritten"] as? Int == 60)
    }
}
