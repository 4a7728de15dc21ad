import CLinux
import Foundation
import ReelCapture
import ReelCore

/// A `quality` photo's deferred processing, kept on disk until it is done: the clean
/// read-outs of its ring frames (the sensor's noise is a function of the frame index, so the
/// noisy frames are these plus their noise), where the final goes, and its EXIF fields.
struct PendingJob: Codable {
    var target: String
    var format: PhotoFileFormat
    var width: Int
    var height: Int
    /// The photo's frame first, then the other ring frames merged with it.
    var frameIndices: [Int]
    var sigma: Double
    var sensorOrientation: SensorOrientation
    var compensation: Bool
    var exif: ExifFields
    var pressMonotonic: UInt64
}

/// A deferred photo finished: its final replaced the proxy under `path`.
public struct FinishedPhoto: Codable, Sendable, Hashable {
    /// The photo's file, now holding the final.
    public var path: String
    /// The frame the photo shows.
    public var frameIndex: Int
    /// Frames merged by noise reduction (the photo's frame included).
    public var mergedFrames: Int
    /// Luma PSNR (dB) of the single noisy frame (the proxy) against the clean pattern.
    public var psnrProxy: Double
    /// Luma PSNR (dB) of the noise-reduced final against the clean pattern.
    public var psnrFinal: Double
    /// The final file's size, in bytes.
    public var bytes: Int
    /// Noise and noise reduction, in milliseconds.
    public var processMs: Double
    /// Settings for `codec` at `size` and `rate`; `timescale` nil: the rate's own; `threads` 0:
    /// every core; `keyframeInterval` 0: one a second.
    public var encodeMs: Double
}

/// The on-disk queue of deferred photos: `DIR/.reel-pending/NAME.job/` holding `frames.raw`
/// (the 4:2:0 planes of each frame, reference first) and `job.json`, made under a temporary
/// name, synced and renamed, so a job directory is always complete.
enum PendingWork {
    static func directory(in photos: String) -> String { photos + "/.reel-pending" }

    private static func saveError(_ e: any Error, _ what: String) -> PhotoError {
        if let s = e as? SystemError { return PhotoError.save(s, kept: what) }
        return PhotoError.encoder("\(e)")
    }

    /// Writes the job; returns its directory.
    static func store(_ job: PendingJob, frames: [PhotoImage], photos: String) throws(PhotoError) -> String {
        let queue = directory(in: photos)
        let name = (job.target as NSString).lastPathComponent
        let final = "\(queue)/\(name).job"
        let temp = "\(queue)/.\(name).job.partial-\(getpid())"
        do {
            if mkdir(queue, 0o755) != 0 && errno != EEXIST { throw SystemError.last("mkdir", path: queue) }
            if mkdir(temp, 0o755) != 0 { throw SystemError.last("mkdir", path: temp) }
            let raw = try FileDescriptor.open(temp + "/frames.raw", O_WRONLY | O_CREAT | O_EXCL)
            do {
                var offset: Int64 = 0
                for f in frames {
                    for plane in [f.y, f.u, f.v] {
                        try raw.writeAll(UnsafeRawBufferPointer(plane), toAbsoluteOffset: offset)
                        offset += Int64(plane.count)
                    }
                }
                try raw.sync()
                try raw.close()
            } catch { raw.closeQuietly(); throw error }
            let data = try JSONEncoder().encode(job)
            let meta = try FileDescriptor.open(temp + "/job.json", O_WRONLY | O_CREAT | O_EXCL)
            do {
                try data.withUnsafeBytes { try meta.writeAll($0, toAbsoluteOffset: 0) }
                try meta.sync()
                try meta.close()
            } catch { meta.closeQuietly(); throw error }
            try PhotoFile.syncDirectory(temp)
            if CLinux_renameat2(AT_FDCWD, temp, AT_FDCWD, final, CLinux_RENAME_NOREPLACE) != 0 {
                throw SystemError.last("renameat2", path: final)
            }
            try PhotoFile.syncDirectory(queue)
        } catch let e as PhotoError {
            removeJob(temp)
            throw e
        } catch {
            removeJob(temp)
            throw saveError(error, "the proxy \(job.target) is kept; its final was not queued")
        }
        return final
    }

    /// Complete job directories, oldest name first.
    static func list(photos: String) -> [String] {
        let queue = directory(in: photos)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: queue)) ?? []
        return names.filter { $0.hasSuffix(".job") && !$0.hasPrefix(".") }.sorted().map { "\(queue)/\($0)" }
    }

    /// Removes what killed processes left half-written: `.NAME.partial-PID` photo files and
    /// `.NAME.job.partial-PID` job directories whose process is gone.
    static func sweep(photos: String) {
        for dir in [photos, directory(in: photos)] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where name.hasPrefix(".") {
                guard let dash = name.range(of: ".partial-", options: .backwards),
                      let pid = Int32(name[dash.upperBound...]), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
                if name.contains(".job.partial-") { removeJob("\(dir)/\(name)") } else if unlink("\(dir)/\(name)") != 0 { continue }
            }
        }
    }

    static func removeJob(_ dir: String) {
        for f in ["frames.raw", "job.json"] { if unlink("\(dir)/\(f)") != 0 { /* not written yet */ } }
        if rmdir(dir) != 0 { /* already gone */ }
    }

    /// Loads the job, regenerates its noisy frames, merges them, encodes the final at
    /// `quality` and moves it over the proxy (temporary name, fsync, rename); then removes
    /// the job. - Throws: `PhotoError` (the proxy and the job stay).
    static func finish(_ dir: String, encoder: PhotoEncoder) throws(PhotoError) -> FinishedPhoto {
        let job: PendingJob
        var frames: [PhotoImage] = []
        do {
            job = try JSONDecoder().decode(PendingJob.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/job.json")))
            let raw = try FileDescriptor.open(dir + "/frames.raw", O_RDONLY)
            defer { raw.closeQuietly() }
            var offset: Int64 = 0
            for _ in job.frameIndices {
                let f = PhotoImage(width: job.width, height: job.height)
                for plane in [f.y, f.u, f.v] {
                    var done = 0
                    while done < plane.count {
                        let n = try raw.read(into: UnsafeMutableRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(plane)[done...]),
                                             fromAbsoluteOffset: offset + Int64(done))
                        if n == 0 { throw PhotoError.encoder("pending job \(dir) is truncated") }
                        done += n
                    }
                    offset += Int64(plane.count)
                }
                frames.append(f)
            }
        } catch let e as PhotoError { throw e } catch { throw saveError(error, "pending job \(dir) kept") }
        let start = MonotonicClock.now()
        let noise = SensorNoise(sigma: job.sigma)
        let noisy = zip(frames, job.frameIndices).map { $0.withNoise(noise, frameIndex: $1) }
        let merged = noisy[0].merged(with: Array(noisy.dropFirst()), threshold: Int((3 * job.sigma).rounded(.up)))
        let psnrProxy = noisy[0].lumaPSNR(against: frames[0]), psnrFinal = merged.lumaPSNR(against: frames[0])
        let (image, _) = orient(merged, mount: job.sensorOrientation, compensate: job.compensation)
        let processMs = Double(MonotonicClock.now() - start) / 1e6
        let encodeStart = MonotonicClock.now()
        let bytes = try encoder.encode(image, format: job.format, quality: .quality, exif: try job.exif.block())
        let encodeMs = Double(MonotonicClock.now() - encodeStart) / 1e6
        let directory = (job.target as NSString).deletingLastPathComponent
        _ = try PhotoFile.save(bytes, directory: directory, name: (job.target as NSString).lastPathComponent, replacing: true)
        removeJob(dir)
        try PhotoFile.syncDirectory(PendingWork.directory(in: directory))
        return FinishedPhoto(path: job.target, frameIndex: job.frameIndices[0], mergedFrames: frames.count,
                             psnrProxy: finitePSNR(psnrProxy), psnrFinal: finitePSNR(psnrFinal), bytes: bytes.count,
                             processMs: processMs, encodeMs: encodeMs)
    }
}

/// The sensor's mounting (its read-out turned; `readOut`: the frame is the read-out already,
/// as a mounted `SyntheticSource` gives it), then compensation (turned back upright); returns
/// the picture and the EXIF Orientation it needs.
func orient(_ image: PhotoImage, mount: SensorOrientation, compensate: Bool, readOut: Bool = false) -> (PhotoImage, Int) {
    guard mount != .landscape else { return (image, 1) }
    let readout = readOut ? image : image.rotated(quarterTurns: mount.readoutQuarterTurns)
    if compensate { return (readout.rotated(quarterTurns: 4 - mount.readoutQuarterTurns), 1) }
    return (readout, mount.exifOrientation)
}

/// A PSNR as JSON can carry it (identical pictures: 99 dB), to 0.01 dB.
func finitePSNR(_ x: Double) -> Double { x.isFinite ? (x * 100).rounded() / 100 : 99 }
