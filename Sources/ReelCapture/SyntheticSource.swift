import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// A square sensor that draws its own test pattern, as fast as asked or in real time.
///
/// Real time: frame `i` is due at `start + i / fps`; a frame the pipeline will not take
/// is dropped as `late`, a frame with no free buffer as `outOfBuffers`. Not real time: the
/// source waits for the pipeline (for benchmarks).
public final class SyntheticSource: VideoSource {
    /// The sensor sides it takes (even only), in pixels.
    public static let sizeRange = 1280...4032
    /// The sensor side when none is given.
    public static let defaultSize = 1920
    /// Above this side the sensor is in its still-photo mode, which keeps only 4x3 and 3x4
    /// (as the largest still size of Apple's square sensor does).
    public static let videoSizeLimit = 2880

    /// The format; its rate changes with `setFrameRate` between runs.
    public var format: SourceFormat { formatState.withLock { $0 } }
    private let formatState: Mutex<SourceFormat>
    private let capturing = Atomic<Bool>(false)
    /// Paced at the frame rate on CLOCK_MONOTONIC; false: as fast as the pipeline takes frames.
    public let isRealtime: Bool
    private let pool: PixelBufferPool
    private let pattern: TestPattern
    /// The background, copied into each buffer at its first use (`backgrounded`: those done).
    private let model: PixelBuffer
    private let backgrounded = Mutex([ObjectIdentifier: Bool]())
    private let buffers: [PixelBuffer]
    private let warming = Mutex(false)
    private let stopping = Atomic<Bool>(false)
    /// How the sensor is mounted: its read-out is the scene turned (`SensorOrientation`).
    public let mounting: SensorOrientation
    /// Mounted sensors only: the scene drawn upright (background and the frame's parts),
    /// whose centre square is turned into each buffer (capture thread only).
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
    /// - Throws: `CaptureError.invalidSensorSize` for a size out of range or odd; `MediaError` when
    ///   the buffers cannot be allocated.
    public init(size: Int = SyntheticSource.defaultSize, rate: FrameRate, realtime: Bool, buffers: Int = 12,
                mounting: SensorOrientation = .landscape) throws {
        guard Self.sizeRange.contains(size) else {
            throw CaptureError.invalidSensorSize("sensor size \(size) is out of range: use an even size from \(Self.sizeRange.lowerBound) to \(Self.sizeRange.upperBound)")
        }
        guard size % 2 == 0 else {
            throw CaptureError.invalidSensorSize("sensor size \(size) is odd: use an even size from \(Self.sizeRange.lowerBound) to \(Self.sizeRange.upperBound)")
        }
        let sensor = Size(width: size, height: size)
        formatState = Mutex(SourceFormat(size: sensor, pixelFormat: .yuv420p, rate: rate, timescale: rate.timescale,
                                         supportedRatios: Self.supportedRatios(size: size)))
        isRealtime = realtime
        let pattern = TestPattern(sensor: sensor)
        self.pattern = pattern
        // The background is drawn once (~10 ms at 1920) into a model and copied into each
        // sensor buffer — not on this thread: the sensor opens at once (40 copies of 5.5 MB
        // before the first frame would delay the preview by 0.1–1 s). A warm-up thread copies
        // it into every buffer from now on; a buffer capture needs before that gets it there.
        let model = try PixelBuffer(size: sensor, format: .yuv420p)
        self.mounting = mounting
        if mounting == .landscape {
            pattern.drawBackground(model)
            upright = nil
        } else {
            // The scene upright, read out turned: the whole background once, per frame the
            // centre square that holds every per-frame part (`capture`).
            let scene = try PixelBuffer(size: sensor, format: .yuv420p)
            pattern.drawBackground(scene)
            rotateSquare(from: scene, into: model, x: 0, y: 0, side: size, turns: mounting.readoutQuarterTurns)
            upright = scene
        }
        self.model = model
        var all: [PixelBuffer] = []
        pool = try PixelBufferPool(count: buffers, size: sensor, format: .yuv420p) { all.append($0) }
        self.buffers = all
        warmUp()
    }

    /// Copies the background into every buffer not given it yet, off the capture thread.
    private func warmUp() {
        let started = warming.withLock { w -> Bool in
            if w { return false }
            w = true
            return true
        }
        guard started else { return }
        let t = Thread { [self] in for b in buffers { ensureBackground(b) } }
        t.name = "reel.sensor-warmup"
        t.start()
    }

    /// Gives `buffer` the background if it has not got it yet (the capture thread and the
    /// warm-up thread both call it: whoever comes first copies, the other waits for that copy).
    private func ensureBackground(_ buffer: PixelBuffer) {
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

    /// Ends `capture` after the frame in progress. Safe from any thread.
    public func stop() { stopping.store(true, ordering: .releasing) }

    /// A new frame rate (and clock: the timescale follows the rate) from the next `capture` on.
    /// - Throws: `CaptureError.notConfigurable` while capturing.
    public func setFrameRate(_ rate: FrameRate) throws {
        guard !capturing.load(ordering: .acquiring) else {
            throw CaptureError.notConfigurable("the frame rate cannot change while the sensor captures")
        }
        formatState.withLock { $0.rate = rate; $0.timescale = rate.timescale }
    }

    /// Renders frames with their barcodes into the pool's buffers and hands them to `delegate`
    /// until `frameLimit` frames or `stop()`.
    /// - Throws: nothing in practice (the protocol's requirement throws for cameras).
    public func capture(frameLimit: Int?, delegate: any SourceDelegate) throws {
        capturing.store(true, ordering: .releasing)
        defer { capturing.store(false, ordering: .releasing) }
        stopping.store(false, ordering: .releasing)
        warmUp()
        let format = self.format
        let intervalNs = UInt64(format.rate.seconds) * 1_000_000_000 / UInt64(format.rate.frames)
        let start = MonotonicClock.now()
        var index = 0
        while frameLimit.map({ index < $0 }) ?? true {
            if stopping.load(ordering: .acquiring) { break }
            if isRealtime {
                let due = start + UInt64(index) * intervalNs
                let now = MonotonicClock.now()
                if now < due {
                    MonotonicClock.sleep(until: due)
                } else if now - due > intervalNs {
                    // The capture thread itself fell a whole frame behind: that frame is gone.
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
            ensureBackground(lease.buffer)
            if let upright {
                pattern.drawFrame(upright, index: index)
                let side = pattern.keep & ~1, x = (pattern.cx - side / 2) & ~1, y = (pattern.cy - side / 2) & ~1
                rotateSquare(from: upright, into: lease.buffer, x: x, y: y, side: side, turns: mounting.readoutQuarterTurns)
            } else {
                pattern.drawFrame(lease.buffer, index: index)
            }
            let pts = Timestamp(value: Int64(index) * format.frameDuration, timescale: format.timescale)
            delegate.source(didCapture: SourceFrame(lease: lease, index: index, pts: pts))
            index += 1
        }
    }
}
