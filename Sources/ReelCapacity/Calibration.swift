import Foundation
import ReelCore
import ReelMedia

/// One measured point of one codec: what this machine's whole pipeline (the synthetic sensor
/// drawing a frame, the crop, libswscale's conversion, the libavcodec encoder with every core)
/// spent turning frames of `width`×`height` into packets, and how many bytes they took.
///
/// The cost model uses the CPU time (`CLOCK_PROCESS_CPUTIME_ID` of the measuring process, all
/// its threads), not the wall time: on a machine shared with other work the wall time of a
/// short run grows with everyone else's load, its CPU time hardly at all, so a calibration
/// taken on a busy machine still describes the machine. The wall-time rate is kept for
/// information.
public struct EncoderPoint: Codable, Sendable, Equatable {
    /// The frame width measured, in pixels.
    public var width: Int
    /// The frame height measured, in pixels.
    public var height: Int
    /// CPU seconds (all threads) per frame: the least of the batches measured.
    public var cpuSecondsPerFrame: Double
    /// Frames per second of wall time in the same batch (depends on the machine's other load).
    public var framesPerSecond: Double
    /// Mean bytes of one encoded frame.
    public var bytesPerFrame: Double

    /// A point of the measurement.
    public init(width: Int, height: Int, cpuSecondsPerFrame: Double, framesPerSecond: Double, bytesPerFrame: Double) {
        self.width = width; self.height = height; self.cpuSecondsPerFrame = cpuSecondsPerFrame
        self.framesPerSecond = framesPerSecond; self.bytesPerFrame = bytesPerFrame
    }

    /// `width × height`.
    public var pixels: Double { Double(width * height) }
}

/// What `reel calibrate` measured on this machine: per codec (ProRes per profile), three frame
/// sizes; sizes in between (and beyond) are interpolated linearly in the pixel count (time per
/// frame = a + b × pixels through the measured points), and the preview's JPEG work.
public struct Calibration: Codable, Sendable, Equatable {
    /// Bumped when what is measured changes: a cache of another version is measured again.
    public static let version = 4
    /// A cache older than this is measured again (a machine's load and kernel change).
    public static let maximumAge: Double = 30 * 86_400

    /// `Calibration.version` when it was measured.
    public var version: Int
    /// `Calibration.machineKey` when it was measured.
    public var machine: String
    /// `Calibration.toolchainKey` when it was measured.
    public var toolchain: String
    /// Seconds since 1970.
    public var measuredAt: Double
    /// Wall time the measurement took, in seconds.
    public var secondsTaken: Double
    /// `/proc/loadavg`'s 1-minute load when it started: how busy the machine was.
    public var loadAverage: Double
    /// Codec (`VideoCodec.description`: `prores:hq`, `h264`, …) → measured points, smallest
    /// first, on the realistic scene (a picture as hard to encode as a camera's).
    public var encoders: [String: [EncoderPoint]]
    /// Codec → one point at 1920×1080 on the flat test pattern (`--scene pattern`): a
    /// pattern's cost at any size is the realistic curve scaled by the pattern's share of it
    /// at that point. Nil: the pattern is costed as the realistic scene (never cheaper).
    public var patternEncoders: [String: [EncoderPoint]]?
    /// Where the figures come from: `measured` (`reel calibrate`) or `estimated` (the shipped
    /// table scaled by this machine's CPU probe, `CostTable.estimate`). Nil reads as measured.
    public var origin: String?
    /// `CPUProbe.milliseconds()` when the figures were measured: what the shipped table is
    /// scaled against on another machine.
    public var cpuProbeMilliseconds: Double?
    /// CPU milliseconds the preview took per picture to copy a 1920×1080 crop out, decimate it
    /// and encode it as JPEG (`PreviewOutput`, one thread).
    public var previewMillisecondsPerPicture: Double
    /// Cores the encoders could use: the machine's capacity is `cores` CPU seconds a second.
    public var cores: Int

    /// CPU seconds a second this machine has.
    public var capacity: Double { Double(max(cores, 1)) }
    /// This machine's CPU against the shipped table's reference (its CPU probe's time ÷ the
    /// reference's, 0.8–8×; 1 when either probe is unknown): scales figures measured only
    /// on the reference machine (face detection's).
    public var cpuScale: Double {
        guard let mine = cpuProbeMilliseconds, let reference = CostTable.reference?.cpuProbeMilliseconds, mine > 0, reference > 0 else { return 1 }
        return min(max(mine / reference, CostTable.fastestScale), 8)
    }

    /// `CLOCK_PROCESS_CPUTIME_ID` in seconds: CPU time of every thread of this process.
    public static func processCPUSeconds() -> Double {
        var ts = timespec()
        guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 else { return 0 }
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// A calibration of these figures (`reel calibrate` measures them; tests give their own).
    public init(version: Int = Calibration.version, machine: String = Calibration.machineKey, toolchain: String = Calibration.toolchainKey,
                measuredAt: Double, secondsTaken: Double, loadAverage: Double, encoders: [String: [EncoderPoint]],
                previewMillisecondsPerPicture: Double, cores: Int, patternEncoders: [String: [EncoderPoint]]? = nil,
                origin: String? = "measured", cpuProbeMilliseconds: Double? = nil) {
        self.version = version; self.machine = machine; self.toolchain = toolchain; self.measuredAt = measuredAt
        self.secondsTaken = secondsTaken; self.loadAverage = loadAverage; self.encoders = encoders
        self.previewMillisecondsPerPicture = previewMillisecondsPerPicture; self.cores = cores
        self.patternEncoders = patternEncoders; self.origin = origin; self.cpuProbeMilliseconds = cpuProbeMilliseconds
    }

    /// True when the figures are the shipped table's, scaled by the CPU probe, not measured here.
    public var isEstimate: Bool { origin == "estimated" }

    /// The codecs `reel calibrate` measures.
    public static let codecs: [VideoCodec] = ProResProfile.allCases.map { VideoCodec.prores($0) } + [.h264, .hevc, .ffv1]
    /// The sensor side and ratio of each measured point: 1280×720, 1920×1080 (the default
    /// recording's size, so the commonest cost is measured, not interpolated) and 1920×1920.
    public static let samplePoints: [(sensor: Int, ratio: AspectRatio)] = [(1280, .landscape16x9), (1920, .landscape16x9), (1920, .square)]

    /// CPU seconds one frame of `codec` at `size` takes on the realistic scene (or the flat
    /// `pattern`), interpolated (or extrapolated) linearly in the pixel count through the
    /// measured points; nil if the codec was not measured.
    public func cpuSecondsPerFrame(_ codec: VideoCodec, _ size: Size, pattern: Bool = false) -> Double? {
        guard let v = interpolate(codec, size, { $0.cpuSecondsPerFrame }) else { return nil }
        return v * (pattern ? patternShare(codec) { $0.cpuSecondsPerFrame } : 1)
    }

    /// Bytes one frame of `codec` at `size` takes, interpolated like `cpuSecondsPerFrame`.
    public func bytesPerFrame(_ codec: VideoCodec, _ size: Size, pattern: Bool = false) -> Double? {
        guard let v = interpolate(codec, size, { $0.bytesPerFrame }) else { return nil }
        return v * (pattern ? patternShare(codec) { $0.bytesPerFrame } : 1)
    }

    /// The pattern's figure over the realistic scene's at the pattern's measured point, at
    /// most 1; 1 when the pattern was not measured.
    private func patternShare(_ codec: VideoCodec, _ value: (EncoderPoint) -> Double) -> Double {
        guard let p = patternEncoders?[codec.description]?.first,
              let r = interpolate(codec, Size(width: p.width, height: p.height), value), r > 0 else { return 1 }
        return min(1, value(p) / r)
    }

    private func interpolate(_ codec: VideoCodec, _ size: Size, _ value: (EncoderPoint) -> Double) -> Double? {
        guard let points = encoders[codec.description]?.sorted(by: { $0.pixels < $1.pixels }), let first = points.first else { return nil }
        let p = Double(size.width * size.height)
        guard points.count > 1 else { return value(first) * p / first.pixels }
        // The segment holding p, or the nearest end segment to extrapolate along.
        var i = 0
        while i < points.count - 2 && p > points[i + 1].pixels { i += 1 }
        let a = points[i], b = points[i + 1]
        let slope = (value(b) - value(a)) / (b.pixels - a.pixels)
        let v = value(a) + slope * (p - a.pixels)
        // Never below what proportion to the smaller point gives with a flat slope (a noisy
        // measurement can make the line fall).
        return max(v, value(first) * min(1, p / first.pixels))
    }

    // MARK: Keys of the cache

    /// This machine: `/etc/machine-id`, the CPU model, the online cores and the memory size.
    public static var machineKey: String {
        let id = (try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "no-machine-id"
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" } ?? "unknown cpu"
        let memory = ((try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? "").split(separator: "\n").first?
            .split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? "?"
        return "\(id); \(model); \(ProcessInfo.processInfo.activeProcessorCount) cores; \(memory) kB"
    }

    /// The code that encodes: the libav* versions and the Swift compiler Reel was built with.
    public static var toolchainKey: String {
        #if compiler(>=6.3)
        let swift = "swift 6.3+"
        #elseif compiler(>=6.2)
        let swift = "swift 6.2"
        #elseif compiler(>=6.1)
        let swift = "swift 6.1"
        #else
        let swift = "swift 6.0"
        #endif
        return "\(MediaLibraries.versions); \(swift); calibration v\(version)"
    }

    /// `$XDG_CACHE_HOME/reel/capacity.json`, else `~/.cache/reel/capacity.json` (beside the
    /// pool's `write-modes.json`).
    public static var cachePath: String {
        let env = ProcessInfo.processInfo.environment
        let base = env["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? ((env["HOME"] ?? "/tmp") + "/.cache")
        return base + "/reel/capacity.json"
    }

    /// Why a cached calibration cannot be used, or nil when it can.
    public func staleness(now: Double = Date().timeIntervalSince1970) -> String? {
        if version != Calibration.version { return "it is of calibration version \(version), this is \(Calibration.version)" }
        if machine != Calibration.machineKey { return "it was measured on another machine (\(machine))" }
        if toolchain != Calibration.toolchainKey { return "it was measured with another toolchain (\(toolchain))" }
        if now - measuredAt > Calibration.maximumAge { return "it is older than 30 days" }
        if now < measuredAt - 86_400 { return "it is dated in the future" }
        let valid = !encoders.isEmpty && encoders.values.allSatisfy { points in
            !points.isEmpty && points.allSatisfy { $0.cpuSecondsPerFrame.isFinite && $0.cpuSecondsPerFrame > 0 && $0.framesPerSecond.isFinite && $0.framesPerSecond > 0 && $0.bytesPerFrame.isFinite && $0.bytesPerFrame > 0 && $0.width > 0 && $0.height > 0 }
        }
        let patternValid = (patternEncoders ?? [:]).values.allSatisfy { points in
            points.allSatisfy { $0.cpuSecondsPerFrame.isFinite && $0.cpuSecondsPerFrame > 0 && $0.bytesPerFrame.isFinite && $0.bytesPerFrame > 0 && $0.width > 0 && $0.height > 0 }
        }
        if !valid || !patternValid || !previewMillisecondsPerPicture.isFinite || previewMillisecondsPerPicture < 0 || cores < 1 {
            return "it holds figures that are not measurements"
        }
        return nil
    }

    /// The cached calibration when it is usable; otherwise nil and why (`missing`, `corrupt`, …).
    public static func cached(at path: String = Calibration.cachePath) -> (Calibration?, reason: String) {
        guard let data = FileManager.default.contents(atPath: path) else { return (nil, "no calibration at \(path)") }
        guard let c = try? JSONDecoder().decode(Calibration.self, from: data) else { return (nil, "the calibration at \(path) is damaged") }
        if let why = c.staleness() { return (nil, "the calibration at \(path) is stale: \(why)") }
        return (c, "cached")
    }

    /// Writes the calibration to `path` (a temporary file renamed over it, so a reader never
    /// sees half of one). Throws `SystemError` when the file cannot be written.
    public func save(to path: String = Calibration.cachePath) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        let dir = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let tmp = path + ".\(getpid()).tmp"
        let fd = try FileDescriptor.open(tmp, O_WRONLY | O_CREAT | O_TRUNC, permissions: 0o644)
        do {
            try data.withUnsafeBytes { try fd.writeAll($0, toAbsoluteOffset: 0) }
            try fd.sync()
            try fd.close()
        } catch {
            fd.closeQuietly()
            // The temporary file is ours; one left behind is overwritten by the next save.
            if unlink(tmp) != 0 { }
            throw error
        }
        guard rename(tmp, path) == 0 else {
            let e = errno
            if unlink(tmp) != 0 { }   // as above: ours, harmless if left
            throw SystemError("rename", path: path, errno: e)
        }
    }

    /// The usable cached calibration, or a new one from `measure` (saved) when there is none,
    /// it is stale or damaged, or `refresh` asks for one. `note` hears why a measurement runs.
    /// Throws what `measure` or `save` throws.
    public static func load(refresh: Bool = false, at path: String = Calibration.cachePath,
                            note: (String) -> Void = { _ in },
                            measure: () throws -> Calibration) throws -> (Calibration, measured: Bool) {
        if !refresh {
            let (c, reason) = cached(at: path)
            if let c { return (c, false) }
            note(reason + "; measuring")
        }
        let c = try measure()
        try c.save(to: path)
        return (c, true)
    }
}

