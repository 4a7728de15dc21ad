import CLinux
import Foundation
import ReelCore
import ReelMetrics
import ReelStorage

extension Jitter {
    /// A report of a recording's own writes (service time of each), for `reel record --report`.
    public static func recordingReport(samples: [(start: UInt64, took: UInt64)], label: String, directory: String,
                                       fps: Double, ringBytes: Int64, bytesWritten: Int64) -> JitterReport {
        let sorted = samples.sorted { $0.start < $1.start }
        let due = sorted.map(\.start), done = sorted.map { $0.start + $0.took }
        var o = JitterOptions(directory: directory, executable: "")
        o.fps = fps
        o.ringBytes = max(ringBytes, 1)
        let span = Double((done.last ?? 0) - (due.first ?? 0)) / 1e9
        o.seconds = max(span, 0.001)
        o.bytesPerSecond = Int64(saturating: Double(bytesWritten) / max(span, 0.001))
        var r = summarize(arm: label, contention: "recording", due: due, done: done, options: o, psi: (0, 0, 0, 0), peaks: (0, 0))
        r.framesDroppedByRing = 0   // the recording counted its own drops; no simulation here
        let mount = mountInfo(for: directory)
        return JitterReport(directory: directory, filesystem: mount.filesystem, device: mount.device, mountOptions: mount.options,
                            rateMBps: Double(o.bytesPerSecond) / 1e6, blockBytes: StoragePool.blockSize, secondsPerArm: span,
                            fps: fps, floor: nil, arms: [r], rounds: nil, verdicts: nil)
    }

    /// Latency of each write from when it was due; the ring simulation; throughput.
    public static func summarize(arm: String, contention: String, due: [UInt64], done: [UInt64], options o: JitterOptions,
                          psi: (Int64, Int64, Int64, Int64), peaks: (Int64, Int64)) -> ArmResult {
        var h = LatencyHistogram()
        let n = min(due.count, done.count)
        var lat = [Double](repeating: 0, count: n)
        for i in 0..<n {
            let l = done[i] > due[i] ? done[i] - due[i] : 0
            h.record(nanos: l)
            lat[i] = Double(l) / 1e6
        }
        let budgetNs = UInt64(saturating: 1e9 / o.fps)
        // A capture ring of ringBytes in front of this writer: the frames it would have dropped.
        let dropped = WriteModeCalibration.ringDrops(due: due, done: done, writeSize: o.blockSize, bytesPerSecond: o.bytesPerSecond,
                                                     seconds: o.seconds, fps: o.fps, ringBytes: o.ringBytes)
        let start = due.first ?? 0
        let span = Double((done.last ?? 0) - (due.first ?? 0)) / 1e9
        // Plot data: a thinned timeline (max of each bucket) and a log-spaced CDF.
        var timeline: [[Double]] = []
        let step = max(1, n / 600)
        var i = 0
        while i < n {
            let slice = lat[i..<min(n, i + step)]
            timeline.append([Double(due[i] - start) / 1e9, slice.max() ?? 0])
            i += step
        }
        let sorted = lat.sorted()
        var cdf: [[Double]] = []
        if let lo = sorted.first, let hi = sorted.last {
            var x = max(lo, 0.001)
            var k = 0
            while x <= hi * 1.0001 {
                while k < sorted.count && sorted[k] <= x { k += 1 }
                cdf.append([x, Double(k) / Double(sorted.count)])
                x *= 1.15
            }
            cdf.append([max(hi, 0.001), 1])
        }
        return ArmResult(arm: arm, contention: contention, latencyMs: h.summary, longestStallMs: Double(h.maxNanos) / 1e6,
                         writesOverFrameBudget: Int(h.count(above: budgetNs)), framesDroppedByRing: dropped, ringBytes: o.ringBytes,
                         throughputMBps: span > 0 ? Double(n) * Double(o.blockSize) / span / 1e6 : 0,
                         psiIoSomeMs: Double(psi.0) / 1000, psiIoFullMs: Double(psi.1) / 1000,
                         psiMemorySomeMs: Double(psi.2) / 1000, psiMemoryFullMs: Double(psi.3) / 1000,
                         peakDirtyMiB: Double(peaks.0) / 1024, peakWritebackMiB: Double(peaks.1) / 1024,
                         p999VsFloor: nil, timeline: timeline, cdf: cdf)
    }
}
