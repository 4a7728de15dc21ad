import Foundation
import Synchronization
import ReelCapture
import ReelControl
import ReelCore
import ReelPhoto
import ReelWriter

/// `reel record --photos DIR [--photo-format jpeg|heic|png]`, as parsed.
public struct RecordPhotoRequest: Sendable, Hashable {
    /// Where the photos go (created if needed).
    public var directory: String
    /// `--photo-format` (default HEIC).
    public var format: PhotoFileFormat = .heic
    /// Photos into `directory`, as HEIC.
    public init(directory: String) { self.directory = directory }
}

/// The key `reel record --json` adds to the summary: the photos taken during the recording,
/// each as `reel photo --json` lists them (none without `--photos`).
struct RecordPhotosSummary: Encodable {
    var photos: [Photo]
}

/// The photo output of one `reel record --photos`: a `PhotoOutput` on the recording's
/// session (a deferred output under Deferred Start, eager with `--eager-start`), pressed by
/// the preview page's shutter (`POST /shutter`) and by primary capture events: a primary
/// `ended` takes the photo with the time of its `began` (zero shutter lag picks the frame
/// nearest it), a `cancelled` takes none.
final class RecordPhotos: Sendable {
    let output: PhotoOutput
    /// The time (CLOCK_MONOTONIC, s) of the primary `began` still open, by event source.
    private let began = Mutex<[String: Double]>([:])

    /// How many sensor buffers the output's ring keeps (`RecordOptions.extraSensorBuffers`).
    static let ringSize = PhotoSettings().ringSize

    private init(output: PhotoOutput) { self.output = output }

    /// Checks `--photos` against the options before anything is made: the directory created
    /// and writable (73).
    static func check(_ request: RecordPhotoRequest, options: RecordOptions) throws {
        guard canWriteInDirectory(request.directory) else {
            throw CommandError(status: ExitStatus.cantCreate, "--photos: cannot create or write the photo directory '\(printable(request.directory))'")
        }
    }

    /// Adds a photo output for the session's sensor (its full frame, photos cropped to 4x3) to
    /// `recording`'s session, after its movie output (Deferred Start initialises them in that
    /// order), and makes primary capture events of `controls` take photos. From a V4L2 camera
    /// the photos' EXIF `Make` is the driver's name and `Model` the card's (`VIDIOC_QUERYCAP`).
    static func attach(_ request: RecordPhotoRequest, to recording: Recording, controls: ControlHooks) throws -> RecordPhotos {
        let sensor = recording.session.source.format.size
        var s = PhotoSettings()
        s.format = request.format
        s.directory = request.directory
        s.namePrefix = recording.options.namePrefix ?? Recording.defaultPrefix()
        s.photoFormat = SensorPhotoFormat(size: sensor, supportedRatios: [.landscape4x3, .portrait3x4])
        s.ratio = .landscape4x3
        if let camera = recording.session.source as? V4L2Source {
            s.make = camera.info.driver
            s.model = camera.info.card
        } else {
            s.model = "Synthetic \(sensor.width)x\(sensor.height) sensor"
            // A mounted sensor's frames are its read-out: photos are compensated from them.
            s.sensorOrientation = recording.options.sensorOrientation
            s.framesAreReadOut = true
            // Prepared for the sensor's largest photo, its 4032x4032 still format (what issue 11
            // counts as the photo output's initialisation), so no photo pays an allocation.
            // With --eager-start also two touched copy buffers (under Deferred Start they would
            // be touched right after the first frame, competing with it).
            s.prepared = PreparedPhotoSettings(maxSize: SensorPhotoFormat.synthetic.size,
                                               buffers: recording.options.deferredStart ? 0 : 2)
        }
        s.ringSize = ringSize
        s.initialisation = recording.options.deferredStart ? .afterFirstFrame : .inPrepare
        let photos = RecordPhotos(output: try PhotoOutput(settings: s))
        recording.session.addOutput(photos.output)
        controls.dispatcher.setHandler { [photos] event, _ in photos.handle(event) }
        return photos
    }

    /// A capture event: primary `began` opens a press, `ended` takes its photo (press time:
    /// the `began`, else the `ended`), `cancelled` forgets it. Secondary events do nothing here.
    func handle(_ event: CaptureEvent) {
        guard event.action == .primary else { return }
        switch event.phase {
        case .began: began.withLock { $0[event.source] = event.time }
        case .cancelled: began.withLock { $0[event.source] = nil }
        case .ended:
            let pressed = began.withLock { $0.removeValue(forKey: event.source) } ?? event.time
            let pressTime = output.sessionTime(monotonic: UInt64(max(0, pressed) * 1e9))
            // A refused press is said on stderr at once; the recording goes on.
            do { _ = try output.capture(pressTime: pressTime) } catch { printError(error.description) }
        }
    }

    /// The page's shutter (`POST /shutter`): a press now; waits until the photo is saved and
    /// returns it as JSON (the object `reel photo --json` lists). Throws what the output throws.
    func pageShutter() throws -> Data {
        let request = try output.capture(pressTime: nil)
        let photo = try output.photo(for: request)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(photo)
    }

    /// Waits for the photos still being encoded (the recording has ended) and lets the ring's
    /// frames go; returns the photos in press order and the errors of those not saved.
    func finish() -> (photos: [Photo], errors: [PhotoError]) {
        output.finish()
        return (output.photos.sorted { $0.pressTime < $1.pressTime }, output.errors)
    }
}
