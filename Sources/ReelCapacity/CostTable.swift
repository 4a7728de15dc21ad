import Foundation
import ReelCore

/// Reel's shipped cost table: what `reel calibrate` measured on the 2-core reference machine
/// (`CostTable.measured`: per codec, on the realistic scene and the flat pattern, with the
/// CPU probe there), so that a machine that was never calibrated still knows what a
/// configuration costs before its first recording — without measuring for seconds in front of
/// the first frame. `estimate()` scales the CPU times by this machine's `CPUProbe` against the
/// reference's and counts this machine's cores. `reel calibrate` measures the real figures
/// and caches them; the cache, when usable, is preferred.
public enum CostTable {
    /// The reference machine's calibration, as `reel calibrate --json` printed it (the
    /// `calibration` object's figures). Remade with `scripts/make-cost-table`.
    static let measured = #"""
    {
     "cores": 2,
     "cpuProbeMilliseconds": 5.1,
     "encoders": {
      "ffv1": [
       {
        "bytesPerFrame": 169592.33333333334,
        "cpuSecondsPerFrame": 0.02611552174999998,
        "framesPerSecond": 69.63709296357507,
        "height": 720,
        "width": 1280
       },
       {
        "bytesPerFrame": 402917,
        "cpuSecondsPerFrame": 0.06531643616666678,
        "framesPerSecond": 29.428180726030693,
        "height": 1080,
        "width": 1920
       },
       {
        "bytesPerFrame": 724931.75,
        "cpuSecondsPerFrame": 0.10649733899999998,
        "framesPerSecond": 16.913315138703023,
        "height": 1920,
        "width": 1920
       }
      ],
      "h264": [
       {
        "bytesPerFrame": 3155.35,
        "cpuSecondsPerFrame": 0.017273709049999985,
        "framesPerSecond": 90.96464260285282,
        "height": 720,
        "width": 1280
       },
       {
        "bytesPerFrame": 5732.35,
        "cpuSecondsPerFrame": 0.036085387299999994,
        "framesPerSecond": 42.97009946254546,
        "height": 1080,
        "width": 1920
       },
       {
        "bytesPerFrame": 9062.9,
        "cpuSecondsPerFrame": 0.061225030599999994,
        "framesPerSecond": 25.250252410991944,
        "height": 1920,
        "width": 1920
       }
      ],
      "hevc": [
       {
        "bytesPerFrame": 1932.6,
        "cpuSecondsPerFrame": 0.028688164300000006,
        "framesPerSecond": 65.62009009979595,
        "height": 720,
        "width": 1280
       },
       {
        "bytesPerFrame": 3477.1,
        "cpuSecondsPerFrame": 0.06489046195000006,
        "framesPerSecond": 29.364732983583213,
        "height": 1080,
        "width": 1920
       },
       {
        "bytesPerFrame": 5243,
        "cpuSecondsPerFrame": 0.11114673815000006,
        "framesPerSecond": 17.49895805954026,
        "height": 1920,
        "width": 1920
       }
      ],
      "prores:4444": [
       {
        "bytesPerFrame": 588458.5,
        "cpuSecondsPerFrame": 0.03663107121428572,
        "framesPerSecond": 53.414145781923246,
        "height": 720,
        "width": 1280
       },
       {
        "bytesPerFrame": 1400785.2142857143,
        "cpuSecondsPerFrame": 0.1007790392142857,
        "framesPerSecond": 18.51825901794175,
        "height": 1080,
        "width": 1920
       },
       {
        "bytesPerFrame": 2494160.5714285714,
        "cpuSecondsPerFrame": 0.19180167685714267,
        "framesPerSecond": 9.833676759509508,
        "height": 1920,
        "width": 1920
       }
      ],
      "prores:hq": [
       {
        "bytesPerFrame": 488977.64285714284,
        "cpuSecondsPerFrame": 0.033746944214285736,
        "framesPerSecond": 58.36134507676428,
        "height": 720,
        "width": 1280
       },
       {
        "bytesPerFrame": 1154404.4285714286,
        "cpuSecondsPerFrame": 0.07501248057142863,
        "framesPerSecond": 24.90088062177755,
        "height": 1080,
        "width": 1920
       },
       {
        "bytesPerFrame": 2062256.357142857,
        "cpuSecondsPerFrame": 0.16845211792857132,
        "framesPerSecond": 11.458202349200095,
        "height": 1920,
        "width": 1920
       }
      ],
      "prores:lt": [
       {
        "bytesPerFrame": 131262.7857142857,
        "cpuSecondsPerFrame": 0.01565520735714285,
        "framesPerSecond": 129.1466010132086,
        "height": 720,
        "width": 1280
       },
       {
        "bytesPerFrame": 303082.14285714284,
        "cpuSecondsPerFrame": 0.037211603,
        "framesPerSecond": 49.64452692512229,
        "height": 1080,
        "width": 1920
       },
       {
        "bytesPerFrame": 532721.5,
        "cpuSecondsPerFrame": 0.07145135435714296,
        "framesPerSecond": 26.31493725553764,
        "height": 1920,
        "width": 1920
       }
      ],
      "prores:proxy": [
       {
        "bytesPerFrame": 58833.92857142857,
        "cpuSecondsPerFrame": 0.012953973499999997,
        "framesPerSecond": 147.43901485294316,
        "height": 720,
        "width": 1280
       },
       {
        "bytesPerFrame": 133936.2142857143,
        "cpuSecondsPerFrame": 0.025750797571428587,
        "framesPerSecond": 74.0867209517358,
        "height": 1080,
        "width": 1920
       },
       {
        "bytesPerFrame": 232225.85714285713,
        "cpuSecondsPerFrame": 0.04936107485714279,
        "framesPerSecond": 38.97885186243822,
        "height": 1920,
        "width": 1920
       }
      ],
      "prores:standard": [
       {
        "bytesPerFrame": 213246.2142857143,
        "cpuSecondsPerFrame": 0.017772653500000006,
        "framesPerSecond": 107.72101948711713,
        "height": 720,
        "width": 1280
       },
       {
        "bytesPerFrame": 497578.85714285716,
        "cpuSecondsPerFrame": 0.041477452642857085,
        "framesPerSecond": 47.46681669435609,
        "height": 1080,
        "width": 1920
       },
       {
        "bytesPerFrame": 879643,
        "cpuSecondsPerFrame": 0.07579508200000008,
        "framesPerSecond": 24.57635287306053,
        "height": 1920,
        "width": 1920
       }
      ]
     },
     "loadAverage": 0.79,
     "machine": "reference",
     "measuredAt": 1796592265.6247065,
     "origin": "measured",
     "patternEncoders": {
      "ffv1": [
       {
        "bytesPerFrame": 33660.166666666664,
        "cpuSecondsPerFrame": 0.032150470416666486,
        "framesPerSecond": 59.88672844521687,
        "height": 1080,
        "width": 1920
       }
      ],
      "h264": [
       {
        "bytesPerFrame": 750.8,
        "cpuSecondsPerFrame": 0.016662728200000032,
        "framesPerSecond": 99.48149053356022,
        "height": 1080,
        "width": 1920
       }
      ],
      "hevc": [
       {
        "bytesPerFrame": 705.05,
        "cpuSecondsPerFrame": 0.048193017600000235,
        "framesPerSecond": 40.16455006483151,
        "height": 1080,
        "width": 1920
       }
      ],
      "prores:4444": [
       {
        "bytesPerFrame": 191131.35714285713,
        "cpuSecondsPerFrame": 0.03132519514285751,
        "framesPerSecond": 61.68307350506192,
        "height": 1080,
        "width": 1920
       }
      ],
      "prores:hq": [
       {
        "bytesPerFrame": 179370.07142857142,
        "cpuSecondsPerFrame": 0.02753584064285722,
        "framesPerSecond": 71.60087088752982,
        "height": 1080,
        "width": 1920
       }
      ],
      "prores:lt": [
       {
        "bytesPerFrame": 80969.42857142857,
        "cpuSecondsPerFrame": 0.021302271928571464,
        "framesPerSecond": 86.82540028463102,
        "height": 1080,
        "width": 1920
       }
      ],
      "prores:proxy": [
       {
        "bytesPerFrame": 51513.142857142855,
        "cpuSecondsPerFrame": 0.020374006142856973,
        "framesPerSecond": 96.08730041878414,
        "height": 1080,
        "width": 1920
       }
      ],
      "prores:standard": [
       {
        "bytesPerFrame": 105822.78571428571,
        "cpuSecondsPerFrame": 0.02206595492857133,
        "framesPerSecond": 87.75272180580109,
        "height": 1080,
        "width": 1920
       }
      ]
     },
     "previewMillisecondsPerPicture": 3.1787091250001787,
     "secondsTaken": 20.256871018,
     "toolchain": "reference",
     "version": 4
    }
    """#

    /// The least the table's CPU times are scaled by.
    public static let fastestScale = 0.8

    /// The reference machine's probe is the median of 10 runs of today's `CPUProbe` (4 passes,
    /// least of 4) on it, at the commit that changed the probe (3.16–5.32 ms, median 5.1); the
    /// figures are its `reel calibrate` of the realistic scene.
    /// The reference calibration (nil only if the table above were damaged: a test reads it).
    public static let reference: Calibration? = {
        try? JSONDecoder().decode(Calibration.self, from: Data(measured.utf8))
    }()

    /// The table scaled to this machine: CPU times × (this machine's probe ÷ the reference's),
    /// bounded to 0.8–8× (a probe is short: a machine that looks faster for 15 ms is not
    /// trusted to be much faster — the reference's own probe read 0.62–1.04× its median over
    /// 10 runs); bytes as measured; this machine's cores. Nil if the table is unreadable.
    public static func estimate(probeMilliseconds: Double = CPUProbe.milliseconds(),
                                cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> Calibration? {
        guard var c = reference, let referenceProbe = c.cpuProbeMilliseconds, referenceProbe > 0,
              probeMilliseconds.isFinite, probeMilliseconds > 0 else { return nil }
        let scale = min(max(probeMilliseconds / referenceProbe, CostTable.fastestScale), 8)
        func scaled(_ table: [String: [EncoderPoint]]) -> [String: [EncoderPoint]] {
            table.mapValues { $0.map { p in var p = p; p.cpuSecondsPerFrame *= scale; p.framesPerSecond /= scale; return p } }
        }
        c.encoders = scaled(c.encoders)
        c.patternEncoders = c.patternEncoders.map(scaled)
        c.previewMillisecondsPerPicture *= scale
        c.cores = max(cores, 1)
        c.machine = Calibration.machineKey
        c.toolchain = Calibration.toolchainKey
        c.measuredAt = Date().timeIntervalSince1970
        c.origin = "estimated"
        c.cpuProbeMilliseconds = probeMilliseconds
        return c
    }
}
