import Foundation
import Testing
import ReelWriter

/// `sensorDrawingCPUSeconds` in the summary (docs/json.md): the synthetic sensor's drawing, the
/// emulated camera's own work, which `scripts/bench record` counts Reel's CPU without.
@Suite struct SensorDrawingCostTests {
    /// 60 frames of each scene: the drawing is counted (more than nothing, less than the whole
    /// process's CPU), and the realistic scene's (texture, noise, moving discs over 1920²)
    /// costs more than the flat pattern's.
    @Test func theSyntheticSensorsDrawingIsCountedPerScene() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        var drawing: [String: Double] = [:]
        for scene in ["pattern", "realistic"] {
            let before = childrenCPUSeconds()
            let run = try reel(["record", "--plain", "--no-realtime", "--scene", scene, "--frames", "60", "--codec", "prores:proxy",
                                "--out", dir, "--name", scene, "--json"])
            let processCPU = childrenCPUSeconds() - before
            #expect(run.status == 0, "\(run.stderr)")
            let s = try run.decode(RecordingSummary.self)
            let d = try #require(s.sensorDrawingCPUSeconds)
            #expect(d > 0 && d < processCPU, "\(scene): drawing \(d) s of \(processCPU) s")
            drawing[scene] = d
        }
        #expect(drawing["realistic"]! > drawing["pattern"]!, "\(drawing)")
    }
}

/// CPU seconds (user + system) of this process's children that have been waited for.
private func childrenCPUSeconds() -> Double {
    var u = rusage()
    guard getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &u) == 0 else { return 0 }
    return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
}
