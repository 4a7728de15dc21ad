import Foundation
import Synchronization
import ReelCapture
import ReelControl
import ReelCore
import ReelPhoto
import ReelWriter

/// One photo of the summary: the keys `reel photo --json` lists, and `burst` (the burst it
/// belongs to, `null` for a single press).
public struct CameraPhoto: Encodable, Sendable {
    /// The photo as saved.
    public let photo: Photo
    /// The burst it belongs to (nil: a single press).
    public let burst: Int?
    /// The photo's keys and `burst` (null for a single press).
    /// - Throws: the encoder's errors.
    public func encode(to encoder: any Encoder) throws {
        try photo.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(burst, forKey: .burst)
    }
    enum CodingKeys: String, CodingKey { case burst }
}

/// The key the camera's summary adds: the photos taken during the recording, each as
/// `reel photo --json` lists them with its `burst` (none without a photo output).
public struct CameraPhotosSummary: Encodable, Sendable {
    /// In press order.
    public var photos: [CameraPhoto]
}

/// The camera's photo output: a `PhotoOutput` on the recording's session (a deferred output
/// under Deferred Start, eager without), pressed by `Camera.takePhoto`, by
/// the preview page's shutter (`POST /shutter`) and by primary capture events: a primary
/// `ended` takes the photo with the time of its `began` (zero shutter lag picks the frame
/// nearest it), a `cancelled` takes none. A primary press held past `holdThreshold` is a
/// burst: photos at `burstRate` per second, each at its own time, until its `ended` or
/// `cancelled`.
public final class CameraPhotos: @unchecked Sendable {
    /// The output on the session.
    public let output: PhotoOutput
    /// Photos per second of a burst (0: none).
    public let burstRate: Int
    /// Where events are logged (bursts are marked on them).
    private let dispatcher: CaptureEventDispatcher
    /// Where refused presses are said.
    private let notice: @Sendable (String) -> Void
    /// How long a primary press is held before it becomes a burst, in seconds.
    public static let holdThreshold = 0.5

    /// A primary press still open: its `began` (CLOCK_MONOTONIC, s), the burst timer, the
    /// shots taken and the burst's number once it has started.
    private struct Press {
        var began: Double
        var timer: (any DispatchSourceTimer)?
        var shots = 0
        var burst: Int? = nil
    }
    // The state below belongs to `queue`: presses, bursts and their shots, one at a time.
    private let queue = DispatchQueue(label: "reel.photo-presses")
    private var presses: [String: Press] = [:]
    private var bursts = 0
    /// Burst number of each burst photo, by its press time (session clock).
    private let burstOfPress = Mutex<[Double: Int]>([:])

    /// How many sensor buffers the output's ring keeps (`RecordOptions.extraSensorBuffers`).
    public static let ringSize = PhotoSettings().ringSize

    private init(output: PhotoOutput, burstRate: Int, dispatcher: CaptureEventDispatcher, notice: @escaping @Sendable (String) -> Void) {
        self.output = output
        self.burstRate = burstRate
        self.dispatcher = dispatcher
        self.notice = notice
    }

    /// Checks the request before anything is made: the directory created and writable (73).
    static func check(_ request: CameraPhotoRequest) throws {
        guard canWriteInDirectory(request.directory) else {
            throw CameraError(status: ExitStatus.cantCreate, "--photos: cannot create or write the photo directory '\(printable(request.directory))'")
        }
    }

    /// Adds a photo output for the session's sensor (its full frame, photos cropped to 4x3) to
    /// `recording`'s session, after its movie output (Deferred Start initialises them in that
    /// order), and in photo mode makes primary capture events of `controls` take photos. From a V4L2 camera
    /// the photos' EXIF `Make` is the driver's name and `Model` the card's (`VIDIOC_QUERYCAP`).
    static func attach(_ request: CameraPhotoRequest, to recording: Recording, controls: CameraControls,
                       notice: @escaping @Sendable (String) -> Void) throws -> CameraPhotos {
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
        let photos = CameraPhotos(output: try PhotoOutput(settings: s), burstRate: request.burstRate,
                                  dispatcher: controls.dispatcher, notice: notice)
        try recording.session.addOutput(photos.output)
        if request.takesPresses { controls.dispatcher.setHandler { [photos] event, _ in photos.handle(event) } }
        return photos
    }

    /// A capture event: primary `began` opens a press (and arms its burst), `ended` takes its
    /// photo (press time: the `began`, else the `ended`) — or, when the press was a burst,
    /// takes the burst's shots due before the `ended` that were not taken yet and no other —,
    /// `cancelled` forgets it (a burst's shots taken stay). Secondary events do nothing here.
    public func handle(_ event: CaptureEvent) {
        guard event.action == .primary else { return }
        queue.sync {
            switch event.phase {
            case .began:
                if let old = presses[event.source] { old.timer?.cancel() }
                var press = Press(began: event.time)
                if burstRate > 0 { press.timer = armBurst(source: event.source, began: event.time) }
                presses[event.source] = press
            case .cancelled:
                guard let press = presses.removeValue(forKey: event.source) else { return }
                press.timer?.cancel()
                if let b = press.burst { dispatcher.annotate(source: event.source, time: event.time, phase: .cancelled, burst: b) }
            case .ended:
                guard var press = presses.removeValue(forKey: event.source) else {
                    return take(at: event.time, burst: nil)
                }
                press.timer?.cancel()
                // Shots due before the release that a late timer had not taken yet.
                while burstRate > 0, shotTime(press, press.shots) < event.time {
                    shoot(&press, source: event.source)
                }
                if let b = press.burst {
                    dispatcher.annotate(source: event.source, time: event.time, phase: .ended, burst: b)
                } else {
                    take(at: press.began, burst: nil)
                }
            }
        }
    }

    /// The time (CLOCK_MONOTONIC, s) of shot `k` of the burst of `press`.
    private func shotTime(_ press: Press, _ k: Int) -> Double {
        press.began + Self.holdThreshold + Double(k) / Double(burstRate)
    }

    /// On `queue`: takes the next shot of `press`'s burst (starting the burst at its first).
    private func shoot(_ press: inout Press, source: String) {
        let t = shotTime(press, press.shots)
        if press.burst == nil {
            bursts += 1
            press.burst = bursts
            dispatcher.annotate(source: source, time: press.began, phase: .began, burst: bursts)
        }
        press.shots += 1
        take(at: t, burst: press.burst)
    }

    /// A timer on `queue` that takes the burst's shots at their times while the press of
    /// `source` that began at `began` is held.
    private func armBurst(source: String, began: Double) -> any DispatchSourceTimer {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let now = Double(MonotonicClock.now()) / 1e9
        let first = max(0, began + Self.holdThreshold - now)
        timer.schedule(deadline: .now() + first, repeating: 1 / Double(burstRate), leeway: .milliseconds(2))
        timer.setEventHandler { [weak self] in
            guard let self, var press = self.presses[source], press.began == began else { return }
            // Every shot due by now (a timer firing late on a loaded machine catches up).
            let now = Double(MonotonicClock.now()) / 1e9
            while self.shotTime(press, press.shots) <= now + 0.002 {
                self.shoot(&press, source: source)
            }
            self.presses[source] = press
        }
        timer.resume()
        return timer
    }

    /// A capture at `time` (CLOCK_MONOTONIC, s): zero shutter lag picks the frame nearest it.
    /// A refused press is said on stderr at once; the recording goes on.
    private func take(at time: Double, burst: Int?) {
        // nil before the first frame: the capture then waits for it and takes it.
        let pressTime = output.sessionTime(monotonic: UInt64(max(0, time) * 1e9))
        do {
            let request = try output.capture(pressTime: pressTime)
            if let burst { burstOfPress.withLock { $0[request.pressTime] = burst } }
        } catch { notice(error.description) }
    }

    /// A press now: waits until the photo is saved and returns it. Throws what the output throws.
    public func takePhoto() throws -> Photo {
        let request = try output.capture(pressTime: nil)
        return try output.photo(for: request)
    }

    /// The page's shutter (`POST /shutter`): `takePhoto` as JSON (the object `reel photo
    /// --json` lists).
    func pageShutter() throws -> Data {
        let photo = try takePhoto()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(photo)
    }

    /// Waits for the photos still being encoded (the recording has ended) and lets the ring's
    /// frames go (a burst still running stops); returns the photos in press order, each with
    /// its burst, and the errors of those not saved.
    func finish() -> (photos: [CameraPhoto], errors: [PhotoError]) {
        queue.sync {
            for (_, p) in presses { p.timer?.cancel() }
            presses = [:]
        }
        output.finish()
        let bursts = burstOfPress.withLock { $0 }
        return (output.photos.sorted { $0.pressTime < $1.pressTime }.map { CameraPhoto(photo: $0, burst: bursts[$0.pressTime]) }, output.errors)
    }
}
