import ReelCore
import ReelMedia
import Synchronization

/// A frame as the session hands it to its outputs: the sensor picture, the crop of the
/// ratio in force when it was captured, and its place on the session clock.
public struct CapturedFrame: Sendable {
    public let lease: PixelBufferLease
    public let index: Int
    public let pts: Timestamp
    /// Nominal frame duration on `pts.timescale`.
    public let duration: Int64
    public let ratio: AspectRatio
    /// The ratio's rectangle inside the sensor buffer (zero-copy: the encoder reads it in place).
    public let crop: CropRect

    public var buffer: PixelBuffer { lease.buffer }

    public init(lease: PixelBufferLease, index: Int, pts: Timestamp, duration: Int64, ratio: AspectRatio, crop: CropRect) {
        self.lease = lease; self.index = index; self.pts = pts
        self.duration = duration; self.ratio = ratio; self.crop = crop
    }
}

/// What an output did with an offered frame.
public enum OfferResult: Sendable {
    case taken
    /// No room (real time): the frame is dropped as `late`.
    case full
    /// The output has finished or failed and takes no more frames: the session stops.
    case closed
}

/// Where a session sends frames: an asset writer, a preview, a still-capture ring.
public protocol FrameOutput: AnyObject, Sendable {
    /// Takes the frame or refuses it. `waiting`: block until there is room (not real time).
    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult
    /// Called before the source starts, with the ratio, crop size and clock of the first
    /// frames: the output gets ready now (opens its first clip), so that no frame waits for it.
    func prepare(ratio: AspectRatio, size: Size, timescale: Int32)
    /// A ratio the session will switch to, after those announced before (scheduled changes
    /// when a run starts, live requests when they are made): the output may get ready ahead.
    func expect(ratio: AspectRatio, size: Size, timescale: Int32)
}

extension FrameOutput {
    public func prepare(ratio: AspectRatio, size: Size, timescale: Int32) {}
    public func expect(ratio: AspectRatio, size: Size, timescale: Int32) {}
}

/// A change of ratio, as the session applied it: the seam between two clips.
public struct Seam: Sendable, Hashable, Codable {
    public let frameIndex: Int
    /// Session-clock time of the first frame at the new ratio, in seconds.
    public let pts: Double
    public let from: AspectRatio
    public let to: AspectRatio
}

/// When a scheduled ratio change takes effect.
public enum RatioTrigger: Sendable, Hashable {
    /// The first frame at or after this many seconds of media time.
    case seconds(Double)
    /// This frame index (or the first captured frame after it, if it was dropped).
    case frame(Int)
}

/// Counters of one run of a session.
public struct CaptureStats: Sendable {
    /// Every frame the sensor produced: delivered to the outputs or dropped.
    public var framesCaptured = 0
    /// Frames every output took.
    public var framesDelivered = 0
    public var drops = DropCounts()
    public var seams: [Seam] = []
    public var startPTS: Timestamp?
    public var lastPTS: Timestamp?
}

/// The capture graph: one source, its current dynamic aspect ratio, and outputs.
///
/// `setDynamicAspectRatio` returns the timestamp of the first frame produced at the new
/// ratio; calls complete in the order they were made, one frame apart at most one change per
/// frame, so every requested ratio owns at least one frame.
public final class CaptureSession: SourceDelegate, Sendable {
    public let source: any VideoSource
    private struct State {
        var ratio: AspectRatio
        var outputs: [any FrameOutput] = []
        var pending: [(AspectRatio, CheckedContinuation<Timestamp, Never>)] = []
        var schedule: [(RatioTrigger, AspectRatio)] = []
        var stats = CaptureStats()
        var running = false
        /// `stopRunning()` came while this run was getting its outputs ready.
        var stopRequested = false
    }
    private let state: Mutex<State>

    /// - Throws: `CaptureError.unsupportedRatio` when the source's format lacks `ratio`.
    public init(source: any VideoSource, ratio: AspectRatio? = nil) throws {
        self.source = source
        let supported = source.format.supportedRatios
        let chosen = ratio ?? (supported.contains(.landscape16x9) ? .landscape16x9 : supported[0])
        try CaptureSession.check(chosen, in: source.format)
        state = Mutex(State(ratio: chosen))
    }

    private static func check(_ ratio: AspectRatio, in format: SourceFormat) throws {
        guard format.supportedRatios.contains(ratio) else {
            throw CaptureError.unsupportedRatio(ratio, supported: format.supportedRatios,
                                                format: "the \(format.size) sensor format")
        }
    }

    public var ratio: AspectRatio { state.withLock { $0.ratio } }
    public var stats: CaptureStats { state.withLock { $0.stats } }

    public func addOutput(_ output: any FrameOutput) {
        state.withLock { $0.outputs.append(output) }
    }

    /// Crops the sensor to `ratio` from the next frame on and returns that frame's
    /// timestamp (the seam, where a writer cuts). Setting the current ratio again returns
    /// the next frame's timestamp and changes nothing.
    /// - Throws: `CaptureError.unsupportedRatio`; the session goes on unchanged.
    ///
    /// When the session is not running, the ratio applies from the first frame of the next
    /// run, and the call returns at once with the time the next frame would have had.
    public func setDynamicAspectRatio(_ ratio: AspectRatio) async throws -> Timestamp {
        try CaptureSession.check(ratio, in: source.format)
        let format = source.format
        return await withCheckedContinuation { continuation in
            let idle: Timestamp? = state.withLock { s in
                if s.running {
                    // Announced unless it repeats the ratio in force once the requests before it apply.
                    let before = s.pending.last?.0 ?? s.ratio
                    s.pending.append((ratio, continuation))
                    if ratio != before {
                        for o in s.outputs { o.expect(ratio: ratio, size: ratio.crop(in: format.size).size, timescale: format.timescale) }
                    }
                    return nil
                }
                s.ratio = ratio
                guard let last = s.stats.lastPTS else { return Timestamp.zero(timescale: format.timescale) }
                return Timestamp(value: last.value + format.frameDuration, timescale: last.timescale)
            }
            if let idle { continuation.resume(returning: idle) }
        }
    }

    /// Schedules a change at a frame or media time (deterministic, for `--ratio-at`).
    public func scheduleAspectRatio(_ ratio: AspectRatio, at trigger: RatioTrigger) throws {
        try CaptureSession.check(ratio, in: source.format)
        state.withLock { $0.schedule.append((trigger, ratio)) }
    }

    /// Runs the source on the calling thread until `frameLimit` frames or `stopRunning()`.
    public func run(frameLimit: Int?) throws -> CaptureStats {
        // The outputs get ready for the first frames before the source starts, and learn the
        // ratio changes scheduled so far (in the order they will come, repeats left out).
        let format = source.format
        let (first, outputs, coming) = state.withLock { s -> (AspectRatio, [any FrameOutput], [AspectRatio]) in
            s.running = true
            s.stopRequested = false
            func order(_ t: RatioTrigger) -> Double {
                switch t {
                case .frame(let n): return Double(n)
                case .seconds(let x): return x * format.rate.perSecond
                }
            }
            var coming: [AspectRatio] = []
            var last = s.ratio
            for (_, r) in s.schedule.enumerated().sorted(by: { (order($0.element.0), $0.offset) < (order($1.element.0), $1.offset) }).map(\.element) where r != last {
                coming.append(r)
                last = r
            }
            return (s.ratio, s.outputs, coming)
        }
        for o in outputs {
            o.prepare(ratio: first, size: first.crop(in: format.size).size, timescale: format.timescale)
            for r in coming { o.expect(ratio: r, size: r.crop(in: format.size).size, timescale: format.timescale) }
        }
        // Requests still pending when the run ends are answered with the time the next
        // frame would have had: their ratio applies from the next run.
        defer {
            let leftovers = state.withLock { s -> [(AspectRatio, CheckedContinuation<Timestamp, Never>)] in
                s.running = false
                s.stopRequested = false
                let p = s.pending
                s.pending = []
                return p
            }
            let format = source.format
            let next = stats.lastPTS.map { Timestamp(value: $0.value + format.frameDuration, timescale: $0.timescale) }
                ?? Timestamp.zero(timescale: format.timescale)
            if let last = leftovers.last { state.withLock { $0.ratio = last.0 } }
            for (_, c) in leftovers { c.resume(returning: next) }
        }
        // A stop asked while the outputs got ready ends the run before the source starts.
        if state.withLock({ $0.stopRequested }) { return stats }
        try source.capture(frameLimit: frameLimit, delegate: self)
        return stats
    }

    public func stopRunning() {
        state.withLock { if $0.running { $0.stopRequested = true } }
        source.stop()
    }

    // MARK: SourceDelegate

    public func source(didCapture frame: SourceFrame) -> Bool {
        let format = source.format
        let (ratio, outputs, resumed) = state.withLock { s -> (AspectRatio, [any FrameOutput], CheckedContinuation<Timestamp, Never>?) in
            var next = s.ratio
            var resume: CheckedContinuation<Timestamp, Never>? = nil
            // Scheduled changes first (all that are due), then at most one live request.
            var remaining: [(RatioTrigger, AspectRatio)] = []
            for (trigger, r) in s.schedule {
                let due: Bool
                switch trigger {
                case .frame(let n): due = frame.index >= n
                case .seconds(let t): due = frame.pts.seconds + 1e-9 >= t
                }
                if due { next = r } else { remaining.append((trigger, r)) }
            }
            s.schedule = remaining
            if !s.pending.isEmpty {
                let (r, c) = s.pending.removeFirst()
                next = r
                resume = c
            }
            if next != s.ratio {
                // Before the first frame a change is just the starting ratio, not a seam.
                if s.stats.startPTS != nil {
                    s.stats.seams.append(Seam(frameIndex: frame.index, pts: frame.pts.seconds, from: s.ratio, to: next))
                }
                s.ratio = next
            }
            s.stats.framesCaptured += 1
            if s.stats.startPTS == nil { s.stats.startPTS = frame.pts }
            s.stats.lastPTS = frame.pts
            return (next, s.outputs, resume)
        }
        resumed?.resume(returning: frame.pts)
        let captured = CapturedFrame(lease: frame.lease, index: frame.index, pts: frame.pts,
                                     duration: format.frameDuration, ratio: ratio,
                                     crop: ratio.crop(in: format.size))
        var taken = true, closed = false
        for output in outputs {
            switch output.offer(captured, waiting: !source.isRealtime) {
            case .taken: break
            case .full: taken = false
            case .closed: closed = true
            }
        }
        if closed {
            // An output failed or finished: capture ends here, and this frame never existed.
            state.withLock { $0.stats.framesCaptured -= 1 }
            source.stop()
            return false
        }
        state.withLock { s in
            if taken { s.stats.framesDelivered += 1 } else { s.stats.drops.add(.late) }
        }
        return taken
    }

    public func source(didDrop count: Int, reason: DropReason, at index: Int) {
        state.withLock {
            $0.stats.drops.add(reason, count: count)
            $0.stats.framesCaptured += count
        }
    }
}
