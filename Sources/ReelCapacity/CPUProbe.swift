import Foundation
import ReelCore

/// A quick measure of how fast this machine's cores do pixel work (about 15 ms in all): a fixed
/// filter over a 1 MiB buffer of samples, the kind of integer work every encoder does, timed
/// on the calling thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`, so other load hardly moves
/// it), the least of four runs. `CostTable.estimate` scales Reel's shipped cost table by it
/// on a machine that was never calibrated. The figure means something only in a release build.
public enum CPUProbe {
    /// Milliseconds of CPU time one run of the kernel takes on this machine: the least of `runs`.
    public static func milliseconds(runs: Int = 4) -> Double {
        var samples = [UInt8](repeating: 0, count: 1 << 20)
        var seed: UInt32 = 0x2545F491
        for i in samples.indices {
            seed ^= seed << 13; seed ^= seed >> 17; seed ^= seed << 5
            samples[i] = UInt8(truncatingIfNeeded: seed)
        }
        var out = [Int16](repeating: 0, count: samples.count)
        var best = Double.infinity
        var sink = 0
        for _ in 0..<max(runs, 1) {
            let start = threadCPUSeconds()
            sink &+= kernel(samples, &out)
            best = min(best, threadCPUSeconds() - start)
        }
        // The checksum is used, so the kernel is never optimised away.
        if sink == Int.min { print("") }
        return best * 1000
    }

    /// Four passes of a six-tap filter with rounding and clipping over `samples`; a checksum.
    private static func kernel(_ samples: [UInt8], _ out: inout [Int16]) -> Int {
        var sum = 0
        samples.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                let n = s.count
                for pass in 0..<4 {
                    let bias = Int32(pass)
                    for i in 3..<(n - 3) {
                        let a = Int32(s[i - 2]) + Int32(s[i + 3]), b = Int32(s[i - 1]) + Int32(s[i + 2]), c = Int32(s[i]) + Int32(s[i + 1])
                        let v = (a - 5 * b + 20 * c + 16 + bias) >> 5
                        o[i] = Int16(min(max(v, 0), 255))
                    }
                    sum &+= Int(o[n / 2 + pass])
                }
            }
        }
        return sum
    }
}
