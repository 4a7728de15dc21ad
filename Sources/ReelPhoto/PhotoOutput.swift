import Foundation
import ReelCapture
import ReelCore
import ReelMedia

/// The still-photo output of a capture session: keeps a ring of the most recent full-sensor
/// frames; a press (`capture(pressTime:)`) takes the ring frame nearest its press time (zero
/// shutter lag), copies its crop out, and one worker thread encodes and saves it.
///
/// Responsive capture: a press that comes before `initialise()` has finished is accepted,
/// with its frame, and delivered once the output is ready. A press is refused only when the
/// copied frames waiting for the encoder would exceed `memoryBudget`.
public final class PhotoOutput: FrameOutput, @unchecked Sendable {
    /// The settings it was made with.
    public let settings: PhotoSettings
    private let crop: CropRect

    // Everything below `condition` is guarded by it.
    private let condition = NSCondition()
    private var ring: [CapturedFrame] = []
    private var arrivals = 0
    /// Smallest (arrival on CLOCK_MONOTONIC − frame time) seen, in ns: the session clock's origin.
    private var clockOrigin: Int64?
    private var frameDuration: Double = 1.0 / 30
    private var initialising = false
    private var ready = false
    private var initialisationError: PhotoError?
    private var encoder: PhotoEncoder?
    /// What `initialise()` prepares (`setPreparedPhotoSettings`).
    private var prepared: PreparedPhotoSettings?
    /// Prepared copies of the photo's size, free for the next presses.
    private var spares: [PhotoImage] = []
    private var jobs: [Job] = []
    private var working = false
    private var queuedBytes = 0
    private var delivered: [Photo] = []
    private var failures: [PhotoError] = []
    private var refused = 0
    private var blocked = 0
    private var sequence = 0
    private var stopping = false
    private var worker: Thread?
    private var deferredJobs: [String] = []
    private var deferredWorking = false
    private var finishedDeferred: [FinishedPhoto] = []
    /// What became of each accepted press, by `PhotoRequest.sequence` (for `photo(for:)`).
    private var outcomes: [Int: Result<Photo, PhotoError>] = [:]
    private var deferredStart: Bool
    private let sessionID = UInt32.random(in: 0...UInt32.max)
    private let startedAt = Date()
    private let startedMonotonic = MonotonicClock.now()
    /// How long `initialise()` took (encoders and buffers for the largest photo), in ms.
    public private(set) var initialisationMilliseconds: Double = 0

    private struct Job {
        let request: PhotoRequest
        let image: PhotoImage
        /// The other ring frames (clean copies, with their indices) for noise reduction.
        let extras: [(PhotoImage, Int)]
        let frameTime: Double
        let pressMonotonic: UInt64
    }

    /// - Throws: `CaptureError.unsupportedRatio` (exit 64) when the photo format lacks the ratio.
    public init(settings: PhotoSettings) throws {
        self.settings = settings
        crop = try settings.photoFormat.crop(for: settings.ratio)
        deferredStart = settings.initialisation != .inPrepare
        prepared = settings.prepared
    }

    /// Sets what `initialise()` allocates ahead (Apple's `setPreparedPhotoSettingsArray`):
    /// encoders for the largest photo and formats, and copy buffers, so the first capture pays
    /// no allocation; nil prepares nothing (each is made when first needed). Takes effect when
    /// the output initialises: returns false, changing nothing, once it has begun to.
    @discardableResult
    public func setPreparedPhotoSettings(_ settings: PreparedPhotoSettings?) -> Bool {
        condition.lock(); defer { condition.unlock() }
        guard !initialising && !ready else { return false }
        prepared = settings
        return true
    }

    /// What the output prepares, or prepared, ahead of the first press (nil: nothing).
    public var preparedPhotoSettings: PreparedPhotoSettings? { condition.lock(); defer { condition.unlock() }; return prepared }

    /// The photo's size.
    public var photoSize: Size { crop.size }

    /// Prepares the encoders for the largest photo (TurboJPEG handle and worst-case buffer,
    /// libheif's x265 plugin) and starts the worker thread; buffered presses then go out.
    /// Idempotent. - Throws: `PhotoError.encoder`.
    public func initialise() throws(PhotoError) {
        condition.lock()
        // Another thread (the deferred start) may be at it: wait for its outcome.
        while initialising && !ready && initialisationError == nil { condition.wait() }
        if ready { condition.unlock(); return }
        if let e = initialisationError { condition.unlock(); throw e }
        initialising = true
        condition.unlock()
        try performInitialisation()
    }

    /// The work of `initialise()`, by the one thread that set `initialising`.
    private func performInitialisation() throws(PhotoError) {
        let start = MonotonicClock.now()
        condition.lock()
        let plan = prepared
        condition.unlock()
        var made: PhotoEncoder? = nil
        var copies: [PhotoImage] = []
        do {
            if let plan {
                let largest = plan.maxSize.map { Size(width: max($0.width, crop.width), height: max($0.height, crop.height)) } ?? crop.size
                made = try PhotoEncoder(maxSize: largest, warmUp: plan.formats ?? [settings.format])
                for _ in 0..<plan.buffers { copies.append(PhotoImage(width: crop.width, height: crop.height).touched()) }
            }
        } catch {
            condition.lock(); initialisationError = error; failures.append(error); condition.broadcast(); condition.unlock()
            throw error
        }
        let t = Thread { [self] in workLoop() }
        t.name = "reel-photo"
        let d = Thread { [self] in deferredLoop() }
        d.name = "reel-photo-deferred"
        condition.lock()
        encoder = made
        spares = copies
        worker = t
        ready = true
        initialisationMilliseconds = Double(MonotonicClock.now() - start) / 1e6
        condition.broadcast()
        condition.unlock()
        t.start()
        d.start()
    }

    /// The output has finished initialising.
    public var isReady: Bool { condition.lock(); defer { condition.unlock() }; return ready }

    // MARK: FrameOutput

    /// Whether the session initialises this output after the first frame went to the outputs
    /// that are not deferred (`runDeferredStart`) rather than before the source starts
    /// (`prepare`). Starts true unless `settings.initialisation` is `.inPrepare`.
    public var deferredStartEnabled: Bool {
        get { condition.lock(); defer { condition.unlock() }; return deferredStart }
        set { condition.lock(); deferredStart = newValue; condition.unlock() }
    }

    /// Eager start (the session calls it before the source starts when `deferredStartEnabled`
    /// is false): `initialise()`, unless `settings.initialisation` is `.byCaller`. An
    /// initialisation error is kept; presses report it.
    public func prepare(ratio: AspectRatio, size: Size, timescale: Int32) {
        guard settings.initialisation != .byCaller else { return }
        do { try initialise() } catch { /* kept in initialisationError; presses report it */ }
    }

    /// Deferred Start (the session calls it on its deferred-start thread after the first
    /// frame): `initialise()`, unless `settings.initialisation` is `.byCaller`; presses made
    /// meanwhile were buffered and go out now. An initialisation error is kept; presses report it.
    public func runDeferredStart(ratio: AspectRatio, size: Size, timescale: Int32) {
        guard settings.initialisation != .byCaller else { return }
        do { try initialise() } catch { /* kept in initialisationError; presses report it */ }
    }

    /// Keeps the frame in the ring (the oldest goes back to the sensor) and serves the
    /// presses waiting for a frame at or after their time; never blocks capture.
    public func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        let now = Int64(bitPattern: MonotonicClock.now())
        let ptsNs = frame.pts.value * 1_000_000_000 / Int64(frame.pts.timescale)
        var dropped: CapturedFrame? = nil
        condition.lock()
        ring.append(frame)
        if ring.count > settings.ringSize { dropped = ring.removeFirst() }
        arrivals += 1
        frameDuration = Double(frame.duration) / Double(frame.pts.timescale)
        clockOrigin = min(clockOrigin ?? .max, now - ptsNs)
        condition.broadcast()
        condition.unlock()
        _ = dropped // its lease ends here, outside the lock
        return .taken
    }

    // MARK: The shutter

    /// The session clock now, in seconds (nil before the first frame).
    public func sessionTime() -> Double? {
        condition.lock(); defer { condition.unlock() }
        return sessionTimeLocked()
    }

    /// The session-clock time of a `CLOCK_MONOTONIC` reading (ns), nil before the first frame.
    public func sessionTime(monotonic: UInt64) -> Double? {
        condition.lock(); defer { condition.unlock() }
        guard let origin = clockOrigin else { return nil }
        return Double(Int64(bitPattern: monotonic) - origin) / 1e9
    }

    private func sessionTimeLocked() -> Double? {
        guard let origin = clockOrigin else { return nil }
        return Double(Int64(bitPattern: MonotonicClock.now()) - origin) / 1e9
    }

    /// A press of the shutter at `pressTime` (seconds on the session clock; nil: now). With
    /// zero shutter lag it takes the ring frame whose timestamp is nearest the press (waiting
    /// at most half a frame for it when the press is newer than the newest frame); with
    /// `.nextFrame` the next frame delivered. The frame's crop is copied at once and the photo
    /// delivered by the worker (once the output is ready, if the press came before).
    /// Safe from any thread; never blocks for the encoder.
    /// - Throws: `PhotoError.overBudget` (refused), `.noFrame` (no frame within 2 s),
    ///   `.unsupportedPixelFormat`, or the output's initialisation error.
    public func capture(pressTime: Double? = nil) throws(PhotoError) -> PhotoRequest {
        let pressMonotonic = MonotonicClock.now()
        let deadline = Date(timeIntervalSinceNow: 2)
        condition.lock()
        if let e = initialisationError { condition.unlock(); throw e }
        if !settings.responsiveCapture && (!ready || working || !jobs.isEmpty) {
            blocked += 1
            condition.unlock()
            throw PhotoError.busy
        }
        while clockOrigin == nil {
            if !condition.wait(until: deadline) { condition.unlock(); throw PhotoError.noFrame }
        }
        let press = pressTime ?? sessionTimeLocked()!
        let chosen: CapturedFrame
        switch settings.shutter {
        case .zeroShutterLag:
            // Wait until the frame nearest the press is in the ring.
            while let newest = ring.last, newest.pts.seconds < press - frameDuration / 2, !stopping {
                if !condition.wait(until: deadline) { break }
            }
            guard let nearest = ring.min(by: { abs($0.pts.seconds - press) < abs($1.pts.seconds - press) }) else {
                condition.unlock(); throw PhotoError.noFrame
            }
            chosen = nearest
        case .nextFrame:
            let seen = arrivals
            while arrivals == seen, !stopping {
                if !condition.wait(until: deadline) { break }
            }
            guard arrivals > seen, let next = ring.last else { condition.unlock(); throw PhotoError.noFrame }
            chosen = next
        }
        // Fast-capture prioritisation: `quality` only when no `quality` photo waits before it.
        var level = settings.quality
        if settings.fastCapturePrioritization && level == .quality
            && (jobs.contains { $0.request.quality == .quality } || working) {
            level = .balanced
        }
        let others = level == .quality && settings.sensorNoise != nil ? ring.filter { $0.index != chosen.index } : []
        let bytes = PhotoImage.byteCount(width: crop.width, height: crop.height) * (1 + others.count)
        guard queuedBytes + bytes <= settings.memoryBudget else {
            refused += 1
            let held = queuedBytes
            condition.unlock()
            throw PhotoError.overBudget(bytes: held, budget: settings.memoryBudget)
        }
        queuedBytes += bytes
        let spare = spares.popLast()
        sequence += 1
        let pressed = chosen.index + Int(((press - chosen.pts.seconds) / frameDuration).rounded())
        let request = PhotoRequest(sequence: sequence, frameIndex: chosen.index, pressedFrameIndex: pressed,
                                   pressTime: press, lagFrames: chosen.index - pressed, quality: level, buffered: !ready)
        condition.unlock()

        let image: PhotoImage
        var extras: [(PhotoImage, Int)] = []
        do {
            // Where the frame's crop was moved to (Center Stage's pan): its own crop when it is
            // the photo's, else the photo's ratio centred on it.
            let rect = chosen.buffer.size == settings.photoFormat.size && chosen.crop.size == crop.size ? chosen.crop
                : settings.ratio.crop(in: chosen.buffer.size, centredOn: chosen.crop)
            image = try PhotoImage.copy(chosen.buffer, crop: rect, into: spare)
            for f in others where f.buffer.size == chosen.buffer.size { extras.append((try PhotoImage.copy(f.buffer, crop: rect), f.index)) }
        } catch {
            condition.lock(); queuedBytes -= bytes; condition.unlock()
            throw error
        }
        let frameTime = chosen.pts.seconds
        condition.lock()
        jobs.append(Job(request: request, image: image, extras: extras, frameTime: frameTime, pressMonotonic: pressMonotonic))
        condition.broadcast()
        condition.unlock()
        return request
    }

    // MARK: Delivery

    /// Photos delivered so far, in press order of completion.
    public var photos: [Photo] { condition.lock(); defer { condition.unlock() }; return delivered }
    /// Presses refused for the memory budget.
    public var refusedPresses: Int { condition.lock(); defer { condition.unlock() }; return refused }
    /// Presses refused because the output was not ready or busy (responsive capture off).
    public var blockedPresses: Int { condition.lock(); defer { condition.unlock() }; return blocked }
    /// Errors of photos that could not be delivered.
    public var errors: [PhotoError] { condition.lock(); defer { condition.unlock() }; return failures }

    /// Waits (at most `timeout` seconds) until the photo of `request` is saved, and returns it
    /// (with deferred processing, the proxy: its final replaces it under the same path).
    /// - Throws: the error that kept it from being saved (`PhotoError.save`, `.encoder`), the
    ///   output's initialisation error, or `PhotoError.notSavedInTime` when it did not come in time.
    public func photo(for request: PhotoRequest, timeout: Double = 30) throws(PhotoError) -> Photo {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while outcomes[request.sequence] == nil {
            if let e = initialisationError { throw e }
            if !condition.wait(until: deadline) { throw PhotoError.notSavedInTime(seconds: timeout) }
        }
        return try outcomes[request.sequence]!.get()
    }

    /// Waits until every accepted press is delivered or failed (or `timeout` seconds), then
    /// stops the worker and lets the ring's frames go. Returns whether all were done.
    @discardableResult
    public func finish(timeout: Double = 600) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        var done = true
        while (!jobs.isEmpty || working || !deferredJobs.isEmpty || deferredWorking) && initialisationError == nil {
            if !condition.wait(until: deadline) { done = false; break }
        }
        stopping = true
        let frames = ring
        ring = []
        condition.broadcast()
        condition.unlock()
        _ = frames
        return done && (jobs.isEmpty || initialisationError != nil)
    }

    /// Deferred photos whose final has replaced their proxy.
    public var finishedDeferredPhotos: [FinishedPhoto] { condition.lock(); defer { condition.unlock() }; return finishedDeferred }

    /// Finishes the deferred photos a process left in `directory` (killed, or exited before
    /// they were done): removes half-written leftovers of dead processes, then merges, encodes
    /// and moves each final over its proxy. Returns what was finished and what failed.
    public static func finishPending(directory: String) -> (finished: [FinishedPhoto], errors: [PhotoError]) {
        PendingWork.sweep(photos: directory)
        let jobs = PendingWork.list(photos: directory)
        guard !jobs.isEmpty else { return ([], []) }
        let encoder: PhotoEncoder
        do { encoder = try PhotoEncoder(maxSize: SensorPhotoFormat.synthetic.size, warmUp: []) } catch { return ([], [error]) }
        var finished: [FinishedPhoto] = [], errors: [PhotoError] = []
        for j in jobs {
            do { finished.append(try PendingWork.finish(j, encoder: encoder)) } catch { errors.append(error) }
        }
        return (finished, errors)
    }

    private func deferredLoop() {
        var encoder: PhotoEncoder? = nil
        while true {
            condition.lock()
            while deferredJobs.isEmpty && !stopping { condition.wait() }
            if deferredJobs.isEmpty { condition.unlock(); return }
            let dir = deferredJobs.removeFirst()
            deferredWorking = true
            condition.unlock()
            var result: Result<FinishedPhoto, PhotoError>
            do {
                if encoder == nil { encoder = try PhotoEncoder(maxSize: crop.size, warmUp: []) }
                result = .success(try PendingWork.finish(dir, encoder: encoder!))
            } catch {
                result = .failure(error)
            }
            condition.lock()
            deferredWorking = false
            switch result {
            case .success(let f):
                finishedDeferred.append(f)
                if let i = delivered.firstIndex(where: { $0.path == f.path }) {
                    delivered[i].psnrFinal = f.psnrFinal
                    delivered[i].mergedFrames = f.mergedFrames
                    delivered[i].bytes = f.bytes
                    delivered[i].finalMs = Double(MonotonicClock.now() - delivered[i].pressMonotonic) / 1e6
                }
            case .failure(let e): failures.append(e)
            }
            condition.broadcast()
            condition.unlock()
        }
    }

    private func workLoop() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty { condition.unlock(); return }
            let job = jobs.removeFirst()
            working = true
            var encoder = self.encoder
            condition.unlock()

            // Unprepared: the encoders are made by the first photo that needs them.
            let result: Result<(Photo, String?), PhotoError>
            do {
                if encoder == nil { encoder = try PhotoEncoder(maxSize: crop.size, warmUp: []) }
                result = deliver(job, encoder: encoder!)
            } catch {
                result = .failure(error)
            }
            condition.lock()
            if self.encoder == nil { self.encoder = encoder }
            // A prepared copy goes back for the next press once its photo is saved.
            if let plan = prepared, spares.count < plan.buffers, job.image.width == crop.width, job.image.height == crop.height {
                spares.append(job.image)
            }
            working = false
            queuedBytes -= job.image.byteCount * (1 + job.extras.count)
            switch result {
            case .success(let (p, pendingDir)):
                delivered.append(p)
                outcomes[job.request.sequence] = .success(p)
                if let pendingDir { deferredJobs.append(pendingDir) }
            case .failure(let e):
                failures.append(e)
                outcomes[job.request.sequence] = .failure(e)
            }
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Processes, encodes and saves one photo; with deferred processing also the job
    /// directory of its final (queued by the caller once the photo is listed).
    private func deliver(_ job: Job, encoder: PhotoEncoder) -> Result<(Photo, String?), PhotoError> {
        let r = job.request
        let start = MonotonicClock.now()
        // The sensor's read-out noise, then (quality) multi-frame noise reduction — now, or
        // deferred: then this photo is the proxy and a job on disk makes the final.
        var image = job.image
        var psnrProxy: Double? = nil, psnrFinal: Double? = nil
        var deferred = false
        var level = r.quality
        if let noise = settings.sensorNoise {
            let proxy = job.image.withNoise(noise, frameIndex: r.frameIndex)
            psnrProxy = proxy.lumaPSNR(against: job.image)
            image = proxy
            if !job.extras.isEmpty {
                if settings.deferredProcessing {
                    deferred = true
                    level = .balanced
                } else {
                    let others = job.extras.map { $0.0.withNoise(noise, frameIndex: $0.1) }
                    image = proxy.merged(with: others, threshold: Int((3 * noise.sigma).rounded(.up)))
                    psnrFinal = image.lumaPSNR(against: job.image)
                }
            }
        }
        // The sensor's mounting (read-out turned), then compensation (turned back).
        let compensate = settings.orientationCompensation && settings.format != .png
        let (oriented, orientation) = orient(image, mount: settings.sensorOrientation, compensate: compensate,
                                           readOut: settings.framesAreReadOut)
        image = oriented
        let processMs = Double(MonotonicClock.now() - start) / 1e6
        let captured = startedAt.addingTimeInterval(Double(job.pressMonotonic &- startedMonotonic) / 1e9
                                                    + (job.frameTime - r.pressTime))
        let fields = ExifFields(make: settings.make, model: settings.model, orientation: orientation, capturedAt: captured,
                                width: image.width, height: image.height, frameIndex: r.frameIndex,
                                sessionTime: job.frameTime, pressTime: r.pressTime, sessionID: sessionID, quality: r.quality)
        do {
            let encodeStart = MonotonicClock.now()
            let exif = try fields.block()
            var proxyFields = fields
            proxyFields.quality = level
            let bytes = try encoder.encode(image, format: settings.format, quality: level,
                                           exif: deferred ? try proxyFields.block() : exif)
            let encodeMs = Double(MonotonicClock.now() - encodeStart) / 1e6
            let name = "\(settings.namePrefix)-\(String(format: "%04d", r.sequence)).\(settings.format.fileExtension)"
            let path = try PhotoFile.save(bytes, directory: settings.directory, name: name)
            var pendingDir: String? = nil
            if deferred, let noise = settings.sensorNoise {
                let pending = PendingJob(target: path, format: settings.format, width: job.image.width, height: job.image.height,
                                         frameIndices: [r.frameIndex] + job.extras.map(\.1), sigma: noise.sigma,
                                         sensorOrientation: settings.sensorOrientation, compensation: compensate,
                                         exif: fields, pressMonotonic: job.pressMonotonic)
                pendingDir = try PendingWork.store(pending, frames: [job.image] + job.extras.map(\.0), photos: settings.directory)
            }
            return .success((Photo(path: path, format: settings.format, width: image.width, height: image.height,
                                  bytes: bytes.count, frameIndex: r.frameIndex, pressedFrameIndex: r.pressedFrameIndex,
                                  pressTime: r.pressTime, frameTime: job.frameTime, lagFrames: r.lagFrames,
                                  lagMs: (job.frameTime - r.pressTime) * 1000, quality: r.quality,
                                  requestedQuality: settings.quality, buffered: r.buffered,
                                  pressToFileMs: Double(MonotonicClock.now() - job.pressMonotonic) / 1e6,
                                  encodeMs: encodeMs, processMs: processMs, exifOrientation: fields.orientation,
                                  noiseSigma: settings.sensorNoise?.sigma, mergedFrames: 1 + (psnrFinal == nil ? 0 : job.extras.count),
                                  psnrProxy: psnrProxy.map(finitePSNR), psnrFinal: psnrFinal.map(finitePSNR),
                                  deferred: deferred, finalMs: nil, pressMonotonic: job.pressMonotonic), pendingDir))
        } catch {
            return .failure(error)
        }
    }
}
