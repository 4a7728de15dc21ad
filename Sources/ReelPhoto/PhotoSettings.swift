import Foundation
import ReelCapture
import ReelCore
import ReelMedia

/// When a `PhotoOutput` runs `initialise()`.
public enum PhotoInitialisation: Sendable, Hashable {
    /// In the session's `prepare`, before the source starts (eager): the output's
    /// `deferredStartEnabled` starts false.
    case inPrepare
    /// By the session's Deferred Start, once the first frame has gone to the outputs that are
    /// not deferred (`runDeferredStart`, on the session's deferred-start thread): the output's
    /// `deferredStartEnabled` starts true. The default.
    case afterFirstFrame
    /// When its owner calls `initialise()` (a session that schedules deferred outputs itself).
    case byCaller
}

/// What a photo output allocates ahead of the first press (Apple's
/// `setPreparedPhotoSettingsArray`): the worst case of the photos it will take, so that the
/// first capture pays no allocation.
public struct PreparedPhotoSettings: Sendable, Hashable {
    /// The largest photo to prepare the encoders for (nil: the output's photo size). The
    /// TurboJPEG output buffer is allocated and touched for it (`tjAlloc(tjBufSize)`).
    public var maxSize: Size?
    /// The formats whose encoders are started ahead (nil: the output's format). HEIC: libheif's
    /// x265 plugin is loaded and run once on a small picture (libheif makes a new x265
    /// encoder for each image, so the per-image allocation of x265 cannot be made ahead).
    public var formats: Set<PhotoFileFormat>?
    /// Copies of the photo's size allocated and touched ahead, taken by the first presses and
    /// given back once each photo is saved (default 0: touching them costs tens of ms, which
    /// an output initialised by Deferred Start would take from the frames right after the
    /// first; ask for them when the output initialises before capture).
    public var buffers: Int

    /// Prepared for `maxSize` (nil: the photo size), `formats` (nil: the output's) and
    /// `buffers` copies.
    public init(maxSize: Size? = nil, formats: Set<PhotoFileFormat>? = nil, buffers: Int = 0) {
        self.maxSize = maxSize; self.formats = formats; self.buffers = max(0, buffers)
    }
}

/// How a `PhotoOutput` takes and saves photos.
public struct PhotoSettings: Sendable {
    /// The file format (default HEIC).
    public var format: PhotoFileFormat = .heic
    /// The level asked for (Apple's `maxPhotoQualityPrioritization`).
    public var quality: PhotoQuality = .balanced
    /// Fast-capture prioritisation: a `quality` press that finds the encoder busy gets `balanced`.
    public var fastCapturePrioritization = true
    /// Full-sensor frames kept for zero shutter lag (1–30).
    public var ringSize = 3
    /// Which frame a press takes: the nearest in the ring (default) or the next one delivered.
    public var shutter: ShutterMode = .zeroShutterLag
    /// The photo's ratio; must be one of `photoFormat.supportedRatios`.
    public var ratio: AspectRatio = .landscape4x3
    /// The sensor's photo format: its size and the ratios it supports.
    public var photoFormat: SensorPhotoFormat = .synthetic
    /// Where photos go (must exist and be writable).
    public var directory: String = "photos"
    /// Photos are `PREFIX-0001.heic`, … (an existing file is never replaced: the next free name is taken).
    public var namePrefix: String = "photo"
    /// EXIF `Make`.
    public var make: String = "Reel"
    /// EXIF `Model` (the sensor or the V4L2 card name).
    public var model: String = "Synthetic 4032x4032 sensor"
    /// Bytes of copied frames that may wait for the encoder: beyond it a press is refused
    /// (`PhotoError.overBudget`). Default 1 GiB: 58 photos of 4032×3024 (18.3 MB each).
    public var memoryBudget: Int = 1 << 30
    /// When the output prepares its encoders (`initialise()`); presses before then are
    /// buffered with their frame. Default: Deferred Start.
    public var initialisation: PhotoInitialisation = .afterFirstFrame
    /// The synthetic sensor's read-out noise (nil: none). With noise, `quality` photos get
    /// multi-frame noise reduction over the ring's frames, and each photo reports its PSNR.
    public var sensorNoise: SensorNoise? = nil
    /// How the sensor is mounted. The synthetic sensor draws the scene upright, so its
    /// mounting is applied where a still is read out (the crop is turned by
    /// `readoutQuarterTurns`), as the noise is.
    public var sensorOrientation: SensorOrientation = .landscape
    /// Orientation compensation: processed photos (JPEG, HEIC) are turned back upright and get
    /// EXIF Orientation 1. Off, or for the uncompressed PNG (never compensated), the pixels are
    /// stored as the sensor reads them out, with the EXIF Orientation a viewer needs.
    public var orientationCompensation = true
    /// The session's frames are the mounted sensor's read-out already (a `SyntheticSource`
    /// made with `mounting: sensorOrientation`, as `reel record --sensor-orientation` makes
    /// it): the output does not turn them again, only compensates. False: the frames show the
    /// scene upright and the mounting is applied at read-out (`reel photo`).
    public var framesAreReadOut = false
    /// What `initialise()` allocates ahead (`PhotoOutput.setPreparedPhotoSettings`); nil: nothing
    /// — the encoders and the copy buffer are made at the first press (which then pays for
    /// them: what `reel photo --unprepared` measures). Default: the photo size and format.
    public var prepared: PreparedPhotoSettings? = PreparedPhotoSettings()
    /// Responsive capture: a press is accepted while the output initialises or encodes
    /// (buffered). Off, a press that finds the output not ready or busy is refused
    /// (`PhotoError.busy`, counted in `blockedPresses`), as a shutter button disabled until
    /// the previous photo is done.
    public var responsiveCapture = true
    /// Deferred processing: a `quality` photo that merges frames (noise reduction) is first
    /// delivered as a proxy (its single noisy frame at `balanced`) under its final name; the
    /// merge and the `quality` encoding run on a second thread from a job kept on disk
    /// (`DIR/.reel-pending`), and the final replaces the proxy. Off: the merge is done before
    /// delivery.
    public var deferredProcessing = true

    /// The defaults above.
    public init() {}
}
