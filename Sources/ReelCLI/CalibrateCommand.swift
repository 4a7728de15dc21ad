import Foundation
import ReelCamera
import ReelCapacity
import ReelCapture
import ReelCore
import ReelMedia
import ReelPreview

/// `reel calibrate [--json] [--refresh]`: this machine's encoder throughput per codec and frame
/// size and the preview's JPEG work, measured with short real encodes and cached per machine
/// and toolchain (`Calibration.cachePath`); a damaged or stale cache is measured again.
enum CalibrateCommand {
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        let names = try ScannedArguments(argv, spec: CommandTable.calibrate).options.map(\.name)
        return .calibrate(json: names.contains("--json"), refresh: names.contains("--refresh"))
    }

    /// What `--json` prints.
    struct Report: Encodable {
        var path: String
        /// Measured now (false: taken from the cache).
        var measured: Bool
        /// Why it was measured (`refresh`, `no calibration at …`, `… is damaged`, `… is stale: …`) or `cached`.
        var reason: String
        var calibration: Calibration
    }

    static func run(json: Bool, refresh: Bool) throws -> Int32 {
        var reason = refresh ? "refresh" : "cached"
        let (c, measured) = try Calibration.load(refresh: refresh, note: { reason = $0 }, measure: { try Calibrator().measure() })
        if json {
            printJSON(Report(path: Calibration.cachePath, measured: measured, reason: reason, calibration: c))
            return 0
        }
        print(measured ? "measured in \(fixed(c.secondsTaken)) s (load \(fixed(c.loadAverage, 2)); \(reason)), kept in \(Calibration.cachePath)"
                       : "cached in \(Calibration.cachePath) (reel calibrate --refresh measures again)")
        print("  \(c.cores) cores; \(c.machine)")
        print("  \(c.toolchain)")
        for codec in Calibration.codecs {
            guard let points = c.encoders[codec.description] else { continue }
            let text = points.map { p in
                "\(p.width)×\(p.height) \(fixed(p.cpuSecondsPerFrame * 1000)) ms CPU (\(fixed(p.framesPerSecond)) fps), \(fixed(p.bytesPerFrame / 1000)) kB"
            }
            var line = "  " + codec.description.padding(toLength: 16, withPad: " ", startingAt: 0) + text.joined(separator: "; ")
            if let p = c.patternEncoders?[codec.description]?.first {
                line += "; pattern \(p.width)×\(p.height) \(fixed(p.cpuSecondsPerFrame * 1000)) ms CPU, \(fixed(p.bytesPerFrame / 1000)) kB"
            }
            print(line)
        }
        if let probe = c.cpuProbeMilliseconds { print("  CPU probe: \(fixed(probe, 2)) ms") }
        print("  scene: realistic (the pattern at one size)")
        print("  preview JPEG: \(fixed(c.previewMillisecondsPerPicture, 2)) ms CPU a picture (1920×1080 crop, 1280 wide)")
        return 0
    }
}
