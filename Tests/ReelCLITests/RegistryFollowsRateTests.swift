import Foundation
import ReelCapacity
import ReelWriter
import Testing

/// The session registry's share of a recording follows its frame rate: a pressure step down
/// lowers it (under the registry's lock), so `reel cost` and `reel record` started meanwhile
/// count the lower share; the step back up restores it.
@Suite(.serialized) struct RealtimeRegistryFollowsRateTests {
    /// PSI files with `cpuSome` as the cpu `some` avg10 (60: serious; 1: nominal).
    private func writePSI(_ dir: String, cpuSome: Double) throws {
        func line(_ kind: String, _ avg10: Double) -> String {
            "\(kind) avg10=\(String(format: "%.2f", avg10)) avg60=0.00 avg300=0.00 total=0\n"
        }
        try (line("some", cpuSome) + line("full", 0)).write(toFile: dir + "/cpu", atomically: true, encoding: .utf8)
        for name in ["io", "memory"] { try (line("some", 0) + line("full", 0)).write(toFile: dir + "/" + name, atomically: true, encoding: .utf8) }
    }

    /// `reel cost --json` of another configuration: the other recordings it counts.
    private func others(_ env: [String: String]) throws -> [RegisteredSession] {
        let run = try reel(["cost", "--fps", "2", "--source", "synthetic:1280", "--plain", "--json"], environment: env)
        return try run.decode(HardwareCost.self).others
    }

    /// Polls `reel cost --json` until the one other recording's encoder share is `share`.
    private func waitForShare(_ share: Double, _ env: [String: String]) -> RegisteredSession? {
        var found: RegisteredSession? = nil
        let seen = waitUntil(90) {
            let o = (try? others(env)) ?? []
            if o.count == 1, abs(o[0].shares.encoder - share) < 1e-6 { found = o[0]; return true }
            usleep(100_000)
            return false
        }
        return seen ? found : nil
    }

    @Test func aStepDownLowersTheShareOthersCountAndNominalRestoresIt() throws {
        // prores:hq 1280×720 (synthetic:1280 at 16x9): 0.6 of the encoder at 30 fps, 0.48 at 24;
        // a second recording of 1280×720 at 9 fps takes 0.18: over the 0.75 a real-time
        // recording may take beside 0.60 (refused under --strict), within it beside 0.48.
        let (baseEnv, root) = try capacityEnvironment(cpuSecondsPerMegapixel: 0.6 * 2 / 30 / 0.9216)
        defer { removeTree(root) }
        let psi = root + "/psi"
        try FileManager.default.createDirectory(atPath: psi, withIntermediateDirectories: true)
        try writePSI(psi, cpuSome: 1)
        var env = baseEnv
        env["REEL_PRESSURE_DIR"] = psi
        // The control socket tells the newest frame: the restored rate is waited for in the
        // recording's own frames, not only in the registry (which the handler updates first).
        let socket = root + "/control.sock"
        let rec = try launch(["record", "--source", "synthetic:1280", "--fps", "30", "--plain", "--json", "--out", root + "/a",
                              "--control-socket", socket] + untilSIGINT,
                             environment: env)
        defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
        let pid = rec.process.processIdentifier

        let before = try #require(waitForShare(0.6, env), "the recording never registered 0.60")
        #expect(before.pid == pid && before.shares.description.hasSuffix("at 30 fps"), "\(before.shares.description)")
        let second = ["record", "--source", "synthetic:1280", "--fps", "9", "--frames", "2", "--plain", "--json", "--strict"]
        let refused = try reel(second + ["--out", root + "/b"], environment: env)
        #expect(refused.status == 69, "\(refused.stderr)")

        // Serious: the recording steps to 24 fps and its entry says so.
        try writePSI(psi, cpuSome: 60)
        let lowered = try #require(waitForShare(0.48, env), "the registry never counted the share at 24 fps")
        #expect(lowered.pid == pid && lowered.shares.description.hasSuffix("at 24 fps"), "\(lowered.shares.description)")
        let cost = try reel(["cost", "--source", "synthetic:1280", "--fps", "9", "--plain", "--json"], environment: env)
        let c = try cost.decode(HardwareCost.self)
        #expect(cost.status == 0 && abs(c.cost - 0.66) < 1e-6, "\(cost.stdout)")
        #expect(abs((c.resources.first { $0.name == "encoder" }?.othersShare ?? 0) - 0.48) < 1e-6)
        let admitted = try reel(second + ["--out", root + "/c"], environment: env)
        #expect(admitted.status == 0, "\(admitted.stderr)")

        // Nominal again (after the hold-down): back to 30 fps and 0.60.
        try writePSI(psi, cpuSome: 1)
        let restored = try #require(waitForShare(0.6, env), "the registry never counted the share at 30 fps again")
        #expect(restored.shares.description.hasSuffix("at 30 fps"))
        // Frames captured after the restore: the change is noted at the first of them.
        #expect(waitForFramesAfterNow(socket, 3) != nil, "no frame after the restore")

        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(RecordingSummary.self)
        #expect(s.frameRateChanges.map(\.to) == [24, 30], "\(s.frameRateChanges)")
        #expect(registryEntries(root).isEmpty)
    }
}
