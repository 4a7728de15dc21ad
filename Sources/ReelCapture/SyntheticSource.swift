import CLinux
import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// A square sensor that draws its own picture (a `SyntheticScene`: the realistic scene or the
/// test pattern), as fast as asked or in real time.
///
/// Real time: frame `i` is due at `start + i / fps`; a frame the pipeline will not take
/// is dropped as `late`, a frame with no free buffer as `outOfBuffers`. A capture thread held
/// off the CPU catches up on the frames a camera's driver queue would have kept for it
/// (`driverQueue`); frames older than that are dropped as `late`. Not real time: the source
/// waits for the pipeline (for benchmarks).
public final class SyntheticSource: VideoSource {
    /// The sensor sides it takes (even only), in pixels.
    public static let sizeRange = 1280...4032
    /// The sensor side when none is given.
    public static let defaultSize = 1920
    /// Above this side the sensor is in its still-photo mode, which keeps only 4x3 and 3x4
    /// (as the largest still size of Apple's square sensor does).
    public static let videoSizeLimit = 2880
    /// Frames a camera's driver fills while the capture thread is away (a V4L2 driver's queue
    /// of 4 buffers): a thread that wakes up to 4 frame intervals late still gets those frames,
    /// each with the time it was due, and hands them on back to back; one later than that has
    /// lost the frames before the last 4 (`late`). A short stall of the machine (a virtual CPU
    /// held off for 100 ms) costs no frame, as it costs none with a camera.
    public static let driverQueue = 4

    /// The format; its rate changes with `setFrameRate` between runs (a change while capturing
    /// is a live change: the format keeps the configured rate, the frames carry theirs).
    public var format: SourceFormat { formatState.withLock { $0 } }
    private let formatState: Mutex<SourceFormat>
    /// Rates the sensor may be switched to while capturing: its clock's timescale is a common
    /// multiple of theirs and the configured rate's, so every frame falls on a tick exactly.
    public let liveRates: [FrameRate]
    /// A live rate asked for, taken at the next frame.
    private let pendingRate = Mutex<FrameRate?>(nil)
    private let capturing = Atomic<Bool>(false)
    /// Paced at the frame rate on CLOCK_MONOTONIC; false: as fast as the pipeline takes frames.
    public let isRealtime: Bool
    private let pool: PixelBufferPool
    private let pattern: TestPattern
    /// What the sensor shows.
    public let scene: SyntheticScene
    /// The people scene's ground truth (where every face is in each frame), nil for the other scenes.
    public var people: PeopleScene? { realistic?.people }
    /// Whether the realistic scene carries its temporal noise (the pattern has none).
    public let temporalNoise: Bool
    /// The known camera shake the realistic scenes are drawn with (`--shake`; none by default).
    public let shake: SceneShake
    /// The realistic scene, drawn whole every frame; nil for the pattern.
    private let realistic: RealisticScene?
    /// The pattern's background, copied into each buffer at its first use (`backgrounded`:
    /// those done); nil for the realistic scene, which has no background to keep.
    private let model: PixelBuffer?
    private let backgrounded = Mutex([ObjectIdentifier: Bool]())
    private let buffers: [PixelBuffer]
    private let warming = Mutex(false)
    private let stopping = Atomic<Bool>(false)
    /// Thread CPU time spent drawing frames, in ns (`drawingCPUSeconds`).
    private let drawingCPUNs = Atomic<UInt64>(0)

    /// CPU seconds the sensor's capture thread has spent drawing frames (the scene, the
    /// barcode) since it was made: the emulated camera's own work, which a real camera does in
    /// hardware. The rest of the capture thread's time (cropping, handing frames on) is the
    /// recorder's.
    public var drawingCPUSeconds: Double { Double(drawingCPUNs.load(ordering: .relaxed)) / 1e9 }
    /// CLOCK_MONOTONIC ns of the session clock's 0 (0: not capturing yet).
    private let zero = Atomic<UInt64>(0)
    /// CLOCK_MONOTONIC time (ns) of the session clock's 0 once capture has begun.
    public var sessionZeroNs: UInt64? { let z = zero.load(ordering: .acquiring); return z == 0 ? nil : z }
    /// How the sensor is mounted: its read-out is the scene turned (`SensorOrientation`).
    public let mounting: SensorOrientation
    /// Mounted sensors only: the scene drawn upright (the pattern: background and the frame's
    /// parts, whose centre square is turned into each buffer; the realistic scene: the
    /// frame's parts, whose rectangles are turned into it), capture thread only.
    private let upright: PixelBuffer?

    /// The ratios a square sensor of side `size` supports.
    public static func supportedRatios(size: Int) -> [AspectRatio] {
        size > videoSizeLimit ? [.landscape4x3, .portrait3x4] : [.landscape16x9, .portrait9x16, .square, .landscape4x3, .portrait3x4]
    }

    /// - Parameters:
    ///   - size: side of the square sensor, even, 1280…4032.
    ///   - buffers: frames the sensor can have in flight before it drops `outOfBuffers`.
    ///   - mounting: how the sensor is mounted (`--sensor-orientation`): `portrait` reads the
    ///     scene out turned a quarter turn counter-clockwise, `landscapeLeft` turned 180°; a
    ///     video of it carries the display matrix that turns it back (`displayQuarterTurns`).
    ///   - liveRates: rates `setFrameRate` may switch to while capturing (a variable frame
    ///     rate: each frame stamped at its capture time); the clock's timescale is chosen so
    ///     that they all fall on whole ticks. Empty: the timescale is the rate's own.
    ///   - scene: what the sensor shows. The realistic scene's texture is built off this
    ///     thread (the warm-up thread), once per process; a capture that starts before it is
    ///     ready waits for it at its first frame.
    ///   - temporalNoise: the realistic scene's per-frame sensor noise (false: texture and
    ///     motion alone); the pattern ignores it.
    ///   - shake: a known camera shake that moves the realistic scenes' world (the ground
    ///     truth of stabilisation); the pattern cannot shake.
    /// - Throws: `CaptureError.invalidSensorSize` for a size out of range or odd; `MediaError` when
    ///   the buffers cannot be allocated.
    public init(size: Int = SyntheticSource.defaultSize, rate: FrameRate, realtime: Bool, buffers: Int = 12,
                mounting: SensorOrientation = .landscape, liveRates: [FrameRate] = [],
                scene: SyntheticScene = .pattern, temporalNoise: Bool = true,
                shake: SceneShake = SceneShake(amplitude: 0)) throws {
        guard Self.sizeRange.contains(size) else {
            throw CaptureError.invalidSensorSize("sensor size \(size) is out of range: use an even size from \(Self.sizeRange.lowerBound) to \(Self.sizeRange.upperBound)")
        }
        guard size % 2 == 0 else {
            throw CaptureError.invalidSensorSize("sensor size \(size) is odd: use an even size from \(Self.sizeRange.lowerBound) to \(Self.sizeRange.upperBound)")
        }
        let sensor = Size(width: size, height: size)
        self.liveRates = liveRates
        formatState = Mutex(SourceFormat(size: sensor, pixelFormat: .yuv420p, rate: rate,
                                         timescale: Self.timescale(for: rate, liveRates: liveRates),
                                         supportedRatios: Self.supportedRatios(size: size)))
        isRealtime = realtime
        let pattern = TestPattern(sensor: sensor)
        self.pattern = pattern
        self.scene = scene
        self.temporalNoise = temporalNoise
        self.mounting = mounting
        if shake.amplitude > 0 && !scene.isRealistic {
            throw CaptureError.notConfigurable("the pattern cannot shake: a shake needs --scene realistic or --scene people")
        }
        self.shake = shake
        if scene == .people && mounting != .landscape {
            throw CaptureError.notConfigurable("the people scene needs an upright sensor (--sensor-orientation landscape)")
        }
        if scene.isRealistic {
            // Drawn whole every frame: no background; its texture is built by `warmUp`.
            realistic = RealisticScene(sensor: sensor, temporalNoise: temporalNoise, people: scene == .people, shake: shake)
            model = nil
            upright = mounting == .landscape ? nil : try PixelBuffer(size: sensor, format: .yuv420p)
        } else {
            realistic = nil
            // The background is drawn once (~10 ms at 1920) into a model and copied into each
            // sensor buffer — not on this thread: the sensor opens at once (40 copies of 5.5 MB
            // before the first frame would delay the preview by 0.1–1 s). A warm-up thread copies
            // it into every buffer from now on; a buffer capture needs before that gets it there.
            let model = try PixelBuffer(size: sensor, format: .yuv420p)
            if mounting == .landscape {
                pattern.drawBackground(model)
                upright = nil
            } else {
                // The scene upright, read out turned: the whole background once, per frame the
                // centre square that holds every per-frame part (`capture`).
                let drawn = try PixelBuffer(size: sensor, format: .yuv420p)
                pattern.drawBackground(drawn)
                rotateSquare(from: drawn, into: model, x: 0, y: 0, side: size, turns: mounting.readoutQuarterTurns)
                upright = drawn
            }
            self.model = model
        }
        var all: [PixelBuffer] = []
        pool = try PixelBufferPool(count: buffers, size: sensor, format: .yuv420p) { all.append($0) }
        self.buffers = all
        warmUp()
    }

    /// Off the capture thread: builds the realistic scene's texture and noise, or copies the
    /// pattern's background into every buffer not given it yet.
    private func warmUp() {
        let started = warming.withLock { w -> Bool in
            if w { return false }
            w = true
            return true
        }
        guard started else { return }
        let t = Thread { [self] in
            realistic?.prepare()
            for b in buffers { ensureBackground(b) }
            if model == nil { faultInIdleBuffers() }
        }
        t.name = "reel.sensor-warmup"
        t.start()
    }

    /// The realistic scene draws each buffer whole at its first use, so a buffer first used
    /// hours in (the writer held more frames than ever before, a disk stall) would raise the
    /// resident memory then, and fault its pages in on the capture thread. As a camera's
    /// buffers are, the sensor's are made resident here instead, beside capture, one idle
    /// buffer at a time (the pattern's background copy does the same for the pattern).
    /// A failure only leaves those pages to be faulted in at first use.
    private func faultInIdleBuffers() {
        let rows = format.size.height
        pool.withEachIdleBuffer { b in
            for plane in 0..<3 {
                let (base, stride) = b.plane(plane)
                if CLinux_populate_write(base, stride * (plane == 0 ? rows : rows / 2)) != 0 { return }
            }
        }
    }

    /// Gives `buffer` the background if it has not got it yet (the capture thread and the
    /// warm-up thread both call it: whoever comes first copies, the other waits for that copy).
    private func ensureBackground(_ buffer: PixelBuffer) {
        guard let model else { return }
        let id = ObjectIdentifier(buffer)
        // nil: nobody has started; false: being copied; true: done.
        let claimed = backgrounded.withLock { d -> Bool? in
            if let done = d[id] { return done ? nil : false }
            d[id] = false
            return true
        }
        guard let claimed else { return }
        guard claimed else {
            while backgrounded.withLock({ $0[id] }) != true { usleep(200) }
            return
        }
        defer { backgrounded.withLock { $0[id] = true } }
        let rows = format.size.height
        for plane in 0..<3 {
            let (to, toStride) = buffer.plane(plane), (from, fromStride) = model.plane(plane)
            let planeRows = plane == 0 ? rows : rows / 2
            if toStride == fromStride {
                to.update(from: from, count: toStride * planeRows)
            } else {
                for r in 0..<planeRows { (to + r * toStride).update(from: from + r * fromStride, count: min(toStride, fromStride)) }
            }
        }
    }

    /// Draws frame `index` into `buffer` (the sensor's size, 4:2:0 planar) as an upright
    /// sensor captures it, without running the sensor: for tests and benchmarks that need a
    /// given frame (the people scene's frames to score detection against its ground truth).
    public func render(frame index: Int, into buffer: PixelBuffer) {
        precondition(buffer.size == format.size && buffer.format == .yuv420p)
        if let realistic {
            realistic.prepare()
            realistic.draw(buffer, index: index)
        } else {
            pattern.drawBackground(buffer)
            pattern.drawFrame(buffer, index: index)
        }
    }

    /// Ends `capture` after the frame in progress. Safe from any thread.
    public func stop() { stopping.store(true, ordering: .releasing) }

    /// The least common multiple of the rates' own timescales (their `frames`), or the rate's
    /// own when that would not fit in 32 bits.
    static func timescale(for rate: FrameRate, liveRates: [FrameRate]) -> Int32 {
        func gcd(_ a: Int64, _ b: Int64) -> Int64 { b == 0 ? a : gcd(b, a % b) }
        var t = Int64(rate.timescale)
        for r in liveRates {
            let n = Int64(r.timescale)
            let l = t / gcd(t, n) * n
            guard l <= Int64(Int32.max) else { return rate.timescale }
            t = l
        }
        return Int32(t)
    }

    /// Whether frames at `rate` fall on whole ticks of `timescale`.
    static func fits(_ rate: FrameRate, on timescale: Int32) -> Bool {
        (Int64(timescale) * Int64(rate.seconds)) % Int64(rate.frames) == 0
    }

    /// A new frame rate. Between runs: the configured rate (and clock: the timescale is the
    /// rate's own, or the common one of `liveRates`) from the next `capture` on. While
    /// capturing: a live change from the next frame on — that frame keeps its place (one frame
    /// of the old rate after the one before it), the frames after it come one frame of the new
    /// rate apart, and every frame carries its `rate`; frame indices go on counting.
    /// - Throws: `CaptureError.notConfigurable` while capturing, for a rate whose frames do not
    ///   fall on whole ticks of the sensor's clock (not one of `liveRates`).
    public func setFrameRate(_ rate: FrameRate) throws {
        if capturing.load(ordering: .acquiring) {
            let timescale = format.timescale
            guard Self.fits(rate, on: timescale) else {
                throw CaptureError.notConfigurable("the sensor cannot switch to \(rate) fps while it captures: its clock (1/\(timescale) s) has no exact tick for it")
            }
            pendingRate.withLock { $0 = rate }
            return
        }
        let liveRates = self.liveRates
        formatState.withLock { $0.rate = rate; $0.timescale = Self.timescale(for: rate, liveRates: liveRates) }
    }

    /// Renders frames with their barcodes (the realistic scene: whole frames) into the pool's
    /// buffers and hands them to `delegate` until `frameLimit` frames or `stop()`.
    /// - Throws: nothing in practice (the protocol's requirement throws for cameras).
    public func capture(frameLimit: Int?, delegate: any SourceDelegate) throws {
        pendingRate.withLock { $0 = nil }
        capturing.store(true, ordering: .releasing)
        defer { capturing.store(false, ordering: .releasing) }
        stopping.store(false, ordering: .releasing)
        warmUp()
        let format = self.format
        // The schedule since the last rate change: frame `baseIndex` at `baseDue` ns (from
        // `start`) and `basePTS` ticks; frames after it one `interval` apart.
        var rate = format.rate
        var intervalNs = UInt64(rate.seconds) * 1_000_000_000 / UInt64(rate.frames)
        var duration = Int64(format.timescale) * Int64(rate.seconds) / Int64(rate.frames)
        var baseIndex = 0, baseDue: UInt64 = 0, basePTS: Int64 = 0
        // The realistic scene's texture and noise are built (by the warm-up thread, or here)
        // before the schedule starts: its first frame waiting for them would put the frames
        // after it a whole interval behind, and one would be dropped as late.
        realistic?.prepare()
        let start = MonotonicClock.now()
        zero.store(start, ordering: .releasing)
        var index = 0
        while frameLimit.map({ index < $0 }) ?? true {
            if stopping.load(ordering: .acquiring) { break }
            if let next = pendingRate.withLock({ r -> FrameRate? in defer { r = nil }; return r }), next != rate {
                // Frame `index` keeps its place on the old schedule; the new spacing starts there.
                baseDue += UInt64(index - baseIndex) * intervalNs
                basePTS += Int64(index - baseIndex) * duration
                baseIndex = index
                rate = next
                intervalNs = UInt64(rate.seconds) * 1_000_000_000 / UInt64(rate.frames)
                duration = Int64(format.timescale) * Int64(rate.seconds) / Int64(rate.frames)
            }
            if isRealtime {
                let due = start + baseDue + UInt64(index - baseIndex) * intervalNs
                let now = MonotonicClock.now()
                if now < due {
                    MonotonicClock.sleep(until: due)
                } else if now - due > UInt64(Self.driverQueue) * intervalNs {
                    // The capture thread itself fell further behind than the driver's queue
                    // holds: that frame is gone.
                    delegate.source(didDrop: 1, reason: .late, at: index)
                    index += 1
                    continue
                }
            }
            guard let lease = pool.lease() else {
                delegate.source(didDrop: 1, reason: .outOfBuffers, at: index)
                index += 1
                continue
            }
            let drawStart = threadCPUSeconds()
            if let realistic {
                if let upright {
                    realistic.draw(lease.buffer, index: index, turns: mounting.readoutQuarterTurns, scratch: upright)
                } else {
                    realistic.draw(lease.buffer, index: index)
                }
            } else if let upright {
                ensureBackground(lease.buffer)
                pattern.drawFrame(upright, index: index)
                let side = pattern.keep & ~1, x = (pattern.cx - side / 2) & ~1, y = (pattern.cy - side / 2) & ~1
                rotateSquare(from: upright, into: lease.buffer, x: x, y: y, side: side, turns: mounting.readoutQuarterTurns)
            } else {
                ensureBackground(lease.buffer)
                pattern.drawFrame(lease.buffer, index: index)
            }
            drawingCPUNs.add(UInt64(max(0, (threadCPUSeconds() - drawStart) * 1e9)), ordering: .relaxed)
            let pts = Timestamp(value: basePTS + Int64(index - baseIndex) * duration, timescale: format.timescale)
            delegate.source(didCapture: SourceFrame(lease: lease, index: index, pts: pts, rate: rate))
            index += 1
        }
    }
}
