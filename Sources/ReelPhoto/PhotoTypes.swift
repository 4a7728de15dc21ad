#if canImport(Glibc)
import Glibc
#endif
import ReelCore

/// The file format of a photo.
public enum PhotoFileFormat: String, Sendable, Codable, CaseIterable {
    /// JPEG (libjpeg-turbo's TurboJPEG), 4:2:0, EXIF in an APP1 segment.
    case jpeg
    /// HEIC (libheif with its x265 HEVC encoder), 4:2:0, EXIF item.
    case heic
    /// 16-bit RGB PNG (libpng, zlib level 1; no lossy step), EXIF in an eXIf chunk. The
    /// sensor-native still: never rotated by orientation compensation.
    case png

    /// The file name extension: `jpg`, `heic` or `png`.
    public var fileExtension: String {
        switch self {
        case .jpeg: return "jpg"
        case .heic: return "heic"
        case .png: return "png"
        }
    }
}

/// How much processing a photo gets (Apple's `AVCapturePhotoOutput.QualityPrioritization`).
/// Ordered: `speed` < `balanced` < `quality`.
public enum PhotoQuality: String, Sendable, Codable, CaseIterable, Comparable {
    /// The cheapest encoding (JPEG q75 with the fast DCT, HEIC q60 x265 ultrafast).
    case speed
    /// JPEG q90, HEIC q75 x265 ultrafast.
    case balanced
    /// JPEG q95 (accurate DCT), HEIC q90 x265 superfast: the slowest to encode.
    case quality

    private var rank: Int { switch self { case .speed: 0; case .balanced: 1; case .quality: 2 } }
    /// Orders the levels: `speed` < `balanced` < `quality`.
    public static func < (a: PhotoQuality, b: PhotoQuality) -> Bool { a.rank < b.rank }

    /// TurboJPEG quality.
    var jpegQuality: Int32 { switch self { case .speed: 75; case .balanced: 90; case .quality: 95 } }
    /// libheif lossy quality.
    var heicQuality: Int32 { switch self { case .speed: 60; case .balanced: 75; case .quality: 90 } }
    /// x265 preset.
    var heicPreset: String { self == .quality ? "superfast" : "ultrafast" }
}

/// Which frame a press takes.
public enum ShutterMode: String, Sendable, Codable {
    /// Zero shutter lag: the ring frame whose timestamp is nearest the press time.
    case zeroShutterLag = "zsl"
    /// The naive path (for comparison): the next frame delivered after the press reached the output.
    case nextFrame = "next-frame"
}

/// One delivered photo, as `reel photo --json` prints it.
public struct Photo: Sendable, Encodable, Hashable {
    /// Where the photo was saved (its final name).
    public var path: String
    /// Its file format.
    public var format: PhotoFileFormat
    /// The stored picture's width, in pixels.
    public var width: Int
    /// The stored picture's height, in pixels.
    public var height: Int
    /// The file's size, in bytes.
    public var bytes: Int
    /// The frame the photo shows.
    public var frameIndex: Int
    /// The frame whose timestamp is nearest the press time (what the user pressed on).
    public var pressedFrameIndex: Int
    /// The press on the session clock, in seconds.
    public var pressTime: Double
    /// The photo's frame on the session clock, in seconds.
    public var frameTime: Double
    /// `frameIndex - pressedFrameIndex`: 0 with zero shutter lag.
    public var lagFrames: Int
    /// `frameTime - pressTime` in milliseconds.
    public var lagMs: Double
    /// The level the photo got (`balanced` where prioritisation lowered `quality`).
    public var quality: PhotoQuality
    /// The level asked for.
    public var requestedQuality: PhotoQuality
    /// The press came before the output had finished initialising and was buffered.
    public var buffered: Bool
    /// From the press to the file under its final name, in milliseconds.
    public var pressToFileMs: Double
    /// Encoding alone, in milliseconds.
    public var encodeMs: Double
    /// Noise and noise reduction before encoding, in milliseconds.
    public var processMs: Double
    /// The EXIF Orientation written (1: upright).
    public var exifOrientation: Int
    /// `--sensor-noise`: the sensor's noise (nil: a clean sensor).
    public var noiseSigma: Double?
    /// Frames merged by noise reduction (1: none).
    public var mergedFrames: Int
    /// Luma PSNR (dB) against the clean pattern of the single noisy frame (the proxy) and of
    /// the noise-reduced photo (nil without noise, or without reduction).
    public var psnrProxy: Double?
    /// Luma PSNR (dB) of the noise-reduced photo (see `psnrProxy`).
    public var psnrFinal: Double?
    /// Deferred processing: the file first held the proxy, and the final replaced it
    /// `finalMs` after the press (nil until then, or when the process ended first: the job
    /// waits on disk for `reel photo --finish-pending` or the next start).
    public var deferred: Bool
    /// Milliseconds from the press until the final replaced the proxy (see `deferred`).
    public var finalMs: Double?
    /// The press on CLOCK_MONOTONIC (ns); not in the JSON.
    public var pressMonotonic: UInt64

    enum CodingKeys: String, CodingKey {
        case path, format, width, height, bytes, frameIndex, pressedFrameIndex, pressTime, frameTime, lagFrames, lagMs
        case quality, requestedQuality, buffered, pressToFileMs, encodeMs, processMs, exifOrientation, noiseSigma
        case mergedFrames, psnrProxy, psnrFinal, deferred, finalMs
    }
}

/// A press the output accepted: the frame it took and the level it will get.
public struct PhotoRequest: Sendable, Hashable {
    /// Counts accepted presses from 1.
    public let sequence: Int
    /// The frame the photo will show.
    public let frameIndex: Int
    /// The frame whose timestamp is nearest the press time.
    public let pressedFrameIndex: Int
    /// The press on the session clock, in seconds.
    public let pressTime: Double
    /// `frameIndex - pressedFrameIndex`: 0 with zero shutter lag.
    public let lagFrames: Int
    /// The level the photo will get (after fast-capture prioritisation).
    public let quality: PhotoQuality
    /// Accepted before the output was ready: delivered once it is.
    public let buffered: Bool
}

/// Errors of the photo output.
public enum PhotoError: UserFacingError, Sendable {
    /// An encoder could not start or failed (exit 70).
    case encoder(String)
    /// Saving a photo failed (exit 74; 73 when the file cannot be created).
    case save(SystemError, kept: String)
    /// The press was refused: the photos waiting to be encoded hold `bytes` of the budget (exit 75).
    case overBudget(bytes: Int, budget: Int)
    /// Responsive capture is off and the output was not ready or still busy with a photo (exit 75).
    case busy
    /// No frame came within the wait (the session is not running; exit 70).
    case noFrame
    /// The sensor's pixel format cannot be taken as a photo (exit 69).
    case unsupportedPixelFormat(String)
    /// A press was accepted but its photo was not saved within `seconds` (exit 75: try later).
    case notSavedInTime(seconds: Double)

    /// The exit status of `reel photo` for this error: 70, 74, 73, 75 or 69 (see each case).
    public var exitStatus: Int32 {
        switch self {
        case .encoder, .noFrame: return ExitStatus.software
        case .save(let e, _):
            return e.isOutOfSpace || e.errno == EIO ? ExitStatus.ioError : ExitStatus.cantCreate
        case .overBudget, .busy, .notSavedInTime: return ExitStatus.busy
        case .unsupportedPixelFormat: return ExitStatus.unavailable
        }
    }

    /// The one-line message shown after `reel: `.
    public var description: String {
        switch self {
        case .encoder(let why): return "photo: \(why)"
        case .save(let e, let kept): return "photo: saving failed: \(e) (\(kept))"
        case .overBudget(let bytes, let budget):
            return "photo: press refused: \(bytes / 1_048_576) MiB of photos wait to be encoded (budget \(budget / 1_048_576) MiB)"
        case .busy: return "photo: press refused: the output is not ready or still busy (responsive capture is off)"
        case .noFrame: return "photo: no frame arrived for the press (is the session running?)"
        case .unsupportedPixelFormat(let f): return "photo: the sensor's pixel format \(f) cannot be taken as a photo"
        case .notSavedInTime(let s): return "photo: the press was taken but its photo was not saved within \(Int(s)) s (it is still being encoded)"
        }
    }
}
