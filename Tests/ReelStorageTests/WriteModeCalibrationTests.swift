import Foundation
import ReelStorage
import Testing

/// Whether O_DIRECT works in /tmp: the write modes differ only where it does.
let tmpHasDirectIO: Bool = {
    let dir = NSTemporaryDirectory() + "reel-dio-\(getpid())"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    return directIOAlignment(inDirectory: dir, probeName: ".probe") != nil
}()

/// The library's `create(writeMode: nil)` measures the write modes itself (a competing bulk
/// writer beside each, so it loads the machine), once per filesystem.
@Suite(.serialized) struct DisruptiveWriteModeCalibrationTests {
    @Test(.enabled(if: tmpHasDirectIO, "the filesystem of /tmp has no direct I/O: nothing to measure"))
    func createWithoutAWriteModeMeasuresOncePerFilesystem() throws {
        let dir = NSTemporaryDirectory() + "reel-calibration-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The measurement cache of this test alone (no other test of this process measures).
        let cacheBefore = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"]
        setenv("XDG_CACHE_HOME", dir + "/cache", 1)
        defer { if let cacheBefore { setenv("XDG_CACHE_HOME", cacheBefore, 1) } else { unsetenv("XDG_CACHE_HOME") } }

        let a = try StoragePool.create(at: dir + "/a", capacity: 8 << 20, slotSize: 4 << 20).status()
        #expect(a.writeModeSource == "measured", "\(a.writeModeSource)")
        let m = try #require(a.writeModeMeasurement)
        #expect(m.modes.map(\.name).sorted() == ["buffered", "direct"] && m.load.contains("bulk buffered writer"), "\(m)")
        #expect(a.writeMode.rawValue == m.chosen && m.secondsPerMode == WriteModeCalibration.defaultSeconds)
        for mode in m.modes {
            #expect(mode.p50Ms > 0 && mode.p50Ms <= mode.p99Ms && mode.p99Ms <= mode.p999Ms && mode.p999Ms <= mode.maxMs * 1.02, "\(mode)")
        }
        #expect(WriteModeMeasurement.cached(for: dir) == m)
        // Nothing of the measurement is left in the pool.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/a").sorted() == ["lock", "manifest.json", "slots"])
        // The next pool on the filesystem takes the cached measurement.
        let b = try StoragePool.create(at: dir + "/b", capacity: 8 << 20, slotSize: 4 << 20).status()
        #expect(b.writeModeMeasurement == m && b.writeModeSource == "measured")
    }
}
