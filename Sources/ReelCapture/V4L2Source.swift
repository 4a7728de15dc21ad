import CLinux
import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// The exact rate of a whole number of frames per second, else the parsed decimal.
private func exactRate(_ fps: Double) -> FrameRate? {
    fps == fps.rounded() && fps >= 1 && fps <= 1000 ? FrameRate(frames: Int32(fps)) : FrameRate(parsing: String(fps))
}

/// `30`, `7.5`: frames per second as the notes say them.
private func rateText(_ fps: Double) -> String {
    fps == fps.rounded() ? String(Int(fps)) : String(format: "%.3g", fps)
}

/// `frames/seconds` in lowest terms.
private func reduced(frames: Int64, seconds: Int64) -> FrameRate? {
    func gcd(_ a: Int64, _ b: Int64) -> Int64 { b == 0 ? a : gcd(b, a % b) }
    let g = max(1, gcd(frames, seconds))
    guard frames / g <= Int64(Int32.max), seconds / g <= Int64(Int32.max) else { return nil }
    return FrameRate(frames: Int32(frames / g), seconds: Int32(seconds / g))
}

/// A camera through V4L2: mmap streaming with several buffers, waiting with poll.
///
/// YUYV and NV12 frames are copied into pooled buffers (the encoder converts them with
/// libswscale); MJPEG frames are decoded with libavcodec. Buffer timestamps (CLOCK_MONOTONIC)
/// become the session clock in microseconds from the first frame; a jump in `sequence`
/// counts the missing frames as dropped with reason `discontinuity`; a frame that does not
/// decode (or that the driver flags V4L2_BUF_FLAG_ERROR) is dropped with reason `corrupt`.
public final class V4L2Source: VideoSource, @unchecked Sendable {
    // `device`, `buffers` and `decoder` are used by the capture thread only; `stopping` is atomic.
    /// Size, pixel format and rate the driver settled on; timestamps in microseconds.
    public let format: SourceFormat
    /// Always true: the camera sends frames at its own pace.
    public let isRealtime = true
    /// What the device said about itself when it was opened.
    public let info: V4L2DeviceInfo
    /// The FourCC the driver chose (`YUYV`, `NV12` or `MJPG`).
    public let fourcc: String
    let device: V4L2Device   // internal: V4L2Exposure.swift sets controls on it
    private let buffers: [(UnsafeMutableRawPointer, Int)]
    private let pool: PixelBufferPool
    private let decoder: JPEGDecoder?
    private let bytesPerLine: Int
    private let stopping = Atomic<Bool>(false)
    /// CLOCK_MONOTONIC ns of the session clock's 0 (0: not capturing yet).
    private let zero = Atomic<UInt64>(0)
    /// CLOCK_MONOTONIC time (ns) of the session clock's 0 once capture has begun.
    public var sessionZeroNs: UInt64? { let z = zero.load(ordering: .acquiring); return z == 0 ? nil : z }
    /// Between `capture`'s STREAMON and its end: `setFrameRate` is then a live step.
    private let capturing = Atomic<Bool>(false)
    /// The rates the driver offers at the chosen size (`VIDIOC_ENUM_FRAMEINTERVALS`).
    private let offeredRates: [Double]

    /// The live rate: the driver's (after S_PARM), the decimation, and the step the capture
    /// thread has not applied yet (`generation` counts steps).
    private struct LiveRate {
        var cameraRate: FrameRate
        var keepEvery = 1
        var method: String? = nil
        var generation = 0
        /// The step applies from the first frame stamped at or after this time (µs on
        /// CLOCK_MONOTONIC): the frame the driver exposed at the new rate (S_PARM).
        var applyFromMicros: Int64 = 0
        var step: V4L2RateStep? = nil
    }
    private let live: Mutex<LiveRate>

    /// Opens and configures the device: `open(2)`, `VIDIOC_QUERYCAP`, `VIDIOC_S_FMT`, `VIDIOC_S_PARM`
    /// (`VIDIOC_G_PARM` for the rate chosen), `VIDIOC_REQBUFS` for `bufferCount` buffers,
    /// `VIDIOC_QUERYBUF` and `mmap(2)` for each.
    /// - Parameters: size, fps and fourcc as asked (`nil`: the device's first offer);
    ///   `poolBuffers`: the frames Reel can hold at once (12; more when an output keeps frames
    ///   of its own, as a photo output's zero-shutter-lag ring does); `poolBudget`: when given,
    ///   bytes the pool may take beyond those extra frames: it then holds as many frames of the
    ///   format chosen as fit, 12 to 40 (`poolBuffers - 12` more on top), as the synthetic
    ///   sensor does — about a second of 1080p30 for the writer to hold while it catches up.
    /// - Throws: ``V4L2Error`` (no device, busy, permission, not a capture device, format not
    ///   offered, a failed call); ``MediaError`` when the MJPEG decoder or the buffers cannot be made.
    public init(path: String, size: Size? = nil, fps: Int? = nil, fourcc requested: String? = nil, bufferCount: UInt32 = 6,
                poolBuffers: Int = 12, poolBudget: Int? = nil) throws {
        let device = try V4L2Device(path: path)
        let info = try device.info()
        self.device = device
        self.info = info
        var cap = v4l2_capability()
        try device.ioctl(CLinux_VIDIOC_QUERYCAP, "VIDIOC_QUERYCAP", &cap)
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        guard caps & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 else { throw V4L2Error.notCapture(path, "no video capture capability") }
        guard caps & UInt32(V4L2_CAP_STREAMING) != 0 else { throw V4L2Error.notCapture(path, "no streaming I/O") }

        let offered = info.formats.filter { ["YUYV", "NV12", "MJPG"].contains($0.fourcc) }
        let describe = { () -> String in
            info.formats.map { f in "\(f.fourcc) " + f.sizes.map { "\($0.width)x\($0.height)@\($0.fps.map { String(Int(saturating: $0)) }.joined(separator: "/"))" }.joined(separator: " ") }
                .joined(separator: "; ")
        }
        let chosenFormat: V4L2DeviceInfo.Format
        if let requested {
            guard let f = offered.first(where: { $0.fourcc == requested.uppercased() }) else { throw V4L2Error.formatNotOffered(path, describe()) }
            chosenFormat = f
        } else {
            guard let f = offered.first else { throw V4L2Error.formatNotOffered(path, describe() + " (Reel takes YUYV, NV12 or MJPG)") }
            chosenFormat = f
        }
        let mode: V4L2DeviceInfo.Mode
        if let size {
            guard let m = chosenFormat.sizes.first(where: { $0.width == size.width && $0.height == size.height }) else {
                throw V4L2Error.formatNotOffered(path, describe())
            }
            mode = m
        } else {
            guard let m = chosenFormat.sizes.first else { throw V4L2Error.formatNotOffered(path, describe()) }
            mode = m
        }
        if let fps, !mode.fps.isEmpty, !mode.fps.contains(where: { abs($0 - Double(fps)) < 0.01 }) {
            throw V4L2Error.formatNotOffered(path, describe())
        }

        var fmt = v4l2_format()
        fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        fmt.fmt.pix.width = UInt32(mode.width)
        fmt.fmt.pix.height = UInt32(mode.height)
        fmt.fmt.pix.pixelformat = fourccValue(chosenFormat.fourcc) ?? CLinux_V4L2_PIX_FMT_YUYV
        fmt.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try device.ioctl(CLinux_VIDIOC_S_FMT, "VIDIOC_S_FMT", &fmt)
        // What the driver actually chose.
        let got = Size(width: Int(fmt.fmt.pix.width), height: Int(fmt.fmt.pix.height))
        let fourcc = fourccString(fmt.fmt.pix.pixelformat)
        self.fourcc = fourcc
        guard got.width % 2 == 0, got.height % 2 == 0, ["YUYV", "NV12", "MJPG"].contains(fourcc) else {
            throw V4L2Error.formatNotOffered(path, describe())
        }
        bytesPerLine = Int(fmt.fmt.pix.bytesperline)

        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        if let fps {
            parm.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: UInt32(fps))
            if withUnsafeMutablePointer(to: &parm, { CLinux_ioctl(device.fd, CLinux_VIDIOC_S_PARM, $0) }) < 0 {
                let e = SystemError.last("VIDIOC_S_PARM", path: path)
                // A driver without frame-rate control (ENOTTY) streams at its own rate, found below.
                if e.errno == EBUSY { throw V4L2Error.busy(path) }
                if e.errno != ENOTTY { throw V4L2Error.failed(path, e) }
            }
        }
        // The rate the driver settled on (G_PARM); without G_PARM, the mode's first offered
        // rate; without either, what was asked for.
        let firstOffered = mode.fps.first.flatMap { r in r == r.rounded() ? FrameRate(frames: Int32(r)) : FrameRate(parsing: String(r)) }
        var rate = firstOffered ?? FrameRate(frames: Int32(fps ?? 30))!
        if device.enumerate(CLinux_VIDIOC_G_PARM, &parm), parm.parm.capture.timeperframe.numerator > 0 {
            let t = parm.parm.capture.timeperframe
            rate = FrameRate(frames: Int32(t.denominator), seconds: Int32(t.numerator)) ?? rate
        }

        let pixel: PixelFormat = fourcc == "YUYV" ? .yuyv422 : fourcc == "NV12" ? .nv12 : .yuv420p
        offeredRates = mode.fps
        live = Mutex(LiveRate(cameraRate: rate))
        format = SourceFormat(size: got, pixelFormat: pixel, rate: rate, timescale: 1_000_000,
                              supportedRatios: [.landscape16x9, .portrait9x16, .square, .landscape4x3, .portrait3x4])
        decoder = fourcc == "MJPG" ? try JPEGDecoder() : nil
        var count = max(1, poolBuffers)
        if let poolBudget {
            let frameBytes = max(1, pixel == .yuyv422 ? got.width * got.height * 2 : got.width * got.height * 3 / 2)
            count = min(40, max(12, poolBudget / frameBytes)) + max(0, poolBuffers - 12)
        }
        pool = try PixelBufferPool(count: count, size: got, format: pixel)
        var mapped: [(UnsafeMutableRawPointer, Int)] = []

        var req = v4l2_requestbuffers()
        req.count = bufferCount
        req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        req.memory = V4L2_MEMORY_MMAP.rawValue
        try device.ioctl(CLinux_VIDIOC_REQBUFS, "VIDIOC_REQBUFS", &req)
        for i in 0..<req.count {
            var b = v4l2_buffer()
            b.index = i
            b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            b.memory = V4L2_MEMORY_MMAP.rawValue
            try device.ioctl(CLinux_VIDIOC_QUERYBUF, "VIDIOC_QUERYBUF", &b)
            guard let p = mmap(nil, Int(b.length), PROT_READ | PROT_WRITE, MAP_SHARED, device.fd, off_t(b.m.offset)), p != MAP_FAILED else {
                throw V4L2Error.failed(path, .last("mmap", path: path))
            }
            mapped.append((p, Int(b.length)))
        }
        buffers = mapped
    }

    deinit {
        for (p, n) in buffers where munmap(p, n) != 0 {
            reportV4L2Cleanup(.last("munmap", path: device.path))
        }
    }

    /// Makes ``capture(frameLimit:delegate:)`` return after the frame it is handling or waiting for. Safe from any thread.
    public func stop() { stopping.store(true, ordering: .releasing) }

    /// Frames Reel can hold at once (the pool's buffers).
    public var poolCount: Int { pool.count }

    /// The last live step taken (`setFrameRate` while capturing), nil before one.
    public var lastRateStep: V4L2RateStep? { live.withLock { $0.step } }

    /// `VIDIOC_S_PARM` with `target`'s frame interval: the rate the driver settled on (what it
    /// writes back), or the call's error.
    private func setParm(_ target: FrameRate) -> Result<FrameRate, SystemError> {
        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        parm.parm.capture.timeperframe = v4l2_fract(numerator: UInt32(target.seconds), denominator: UInt32(target.frames))
        if withUnsafeMutablePointer(to: &parm, { CLinux_ioctl(device.fd, CLinux_VIDIOC_S_PARM, $0) }) < 0 {
            return .failure(.last("VIDIOC_S_PARM", path: device.path))
        }
        let t = parm.parm.capture.timeperframe
        guard t.numerator > 0, t.denominator > 0 else { return .success(target) }
        return .success(reduced(frames: Int64(t.denominator), seconds: Int64(t.numerator)) ?? target)
    }

    /// The camera's frame rate. Before capturing, only the rate it opened at (the rate is chosen
    /// when the device opens). While capturing, a live step (the pressure handler's), taken from
    /// the next frame on: first `VIDIOC_S_PARM` with the highest rate the camera offers at or
    /// below `rate` (uvcvideo refuses it while streaming with EBUSY); if the driver refuses or
    /// has no frame-rate control (ENOTTY), **decimation**: every k-th frame of the camera's is
    /// kept, k the smallest whole number with camera rate ÷ k ≤ `rate` (30 → 24 becomes 30 → 15),
    /// so the cadence stays regular; the other frames are let go (`didDecimate`, not drops).
    /// Frames keep their capture timestamps and carry their rate and method. Asking for the
    /// camera's rate again undoes the step. ``lastRateStep`` says what was done.
    /// - Throws: `CaptureError.notConfigurable` before capturing for another rate than the
    ///   camera's, for a rate above it, and when the camera must go back up (after an S_PARM
    ///   step) but the driver refuses.
    public func setFrameRate(_ rate: FrameRate) throws {
        guard capturing.load(ordering: .acquiring) else {
            guard abs(rate.perSecond - format.rate.perSecond) > 1e-9 else { return }
            throw CaptureError.notConfigurable("the camera's frame rate is chosen when it opens (v4l2:PATH:WxH@FPS); it runs at \(format.rate) fps")
        }
        let nominal = format.rate
        let want = rate.perSecond
        guard want <= nominal.perSecond + 1e-9 else {
            throw CaptureError.notConfigurable("the camera runs at \(nominal) fps at most")
        }
        try live.withLock { l in
            let before = l.cameraRate
            var notes: [String] = []
            var parmChanged = false
            // The driver first: the highest rate it offers at or below the one asked (all of
            // them when it lists none).
            let offered = offeredRates.isEmpty ? [want] : offeredRates.filter { $0 <= want + 1e-6 }
            if let target = offered.max(), abs(target - before.perSecond) > 1e-6,
               let targetRate = exactRate(target) {
                // Frames exposed from now on may be at the new rate (taken before the call: the
                // driver's change comes after it).
                let asked = Int64(MonotonicClock.now() / 1000)
                switch setParm(targetRate) {
                case .success(let got):
                    if abs(got.perSecond - before.perSecond) > 1e-6 {
                        l.cameraRate = got
                        parmChanged = true
                        l.applyFromMicros = asked
                    }
                    if abs(target - want) > 1e-6 {
                        notes.append("\(rateText(want)) fps is not offered by the camera (it offers \(offeredRates.map(rateText).joined(separator: ", ")) fps)")
                    }
                case .failure(let e) where e.errno == ENOTTY:
                    notes.append("the camera has no frame-rate control (VIDIOC_S_PARM: \(e.text))")
                case .failure(let e):
                    notes.append("the driver refused VIDIOC_S_PARM while streaming (\(e.text))")
                }
            }
            let camera = l.cameraRate.perSecond
            if camera < want - 1e-6 && !parmChanged {
                // Back up (after an S_PARM step) is the driver's to do; decimation only lowers.
                // (A camera the driver just lowered below the rate asked runs at the offered rate.)
                throw CaptureError.notConfigurable("the camera stays at \(l.cameraRate) fps: " + (notes.last ?? "it does not go back up"))
            }
            let k = max(1, Int((camera / want - 1e-9).rounded(.up)))
            let applied = reduced(frames: Int64(l.cameraRate.frames), seconds: Int64(l.cameraRate.seconds) * Int64(k)) ?? rate
            if k > 1, abs(applied.perSecond - want) > 1e-6 {
                notes.append("\(rateText(want)) fps is not a whole divisor of the camera's \(rateText(camera)) fps: one frame in \(k) is kept, \(rateText(applied.perSecond)) fps")
            }
            // How the new rate was reached: S_PARM when the driver changed and nothing is let go;
            // decimation when frames are (or were, for a step that undoes it).
            let method = parmChanged && k == 1 ? "S_PARM" : k > 1 || l.keepEvery > 1 ? "decimation" : "S_PARM"
            if !parmChanged { l.applyFromMicros = 0 }
            l.keepEvery = k
            l.method = method
            l.generation += 1
            l.step = V4L2RateStep(requested: rate, rate: applied, method: method, keepEvery: k,
                                  note: notes.isEmpty ? nil : notes.joined(separator: "; "))
        }
    }

    /// Queues every buffer (`VIDIOC_QBUF`), starts streaming (`VIDIOC_STREAMON`), then waits with
    /// `poll(2)` and dequeues frames (`VIDIOC_DQBUF`) until `frameLimit` frames or ``stop()``;
    /// streaming stops (`VIDIOC_STREAMOFF`) on the way out. Frame indices follow the driver's
    /// `sequence`: gaps are reported as `discontinuity` drops.
    /// - Throws: ``CaptureError/sourceFailed(_:)`` when no frame comes for 2 s or the camera is
    ///   lost (ENODEV, EIO, EPIPE); ``V4L2Error`` when another ioctl or `poll` fails.
    public func capture(frameLimit: Int?, delegate: any SourceDelegate) throws {
        stopping.store(false, ordering: .releasing)
        // A run starts at the rate the camera opened at (a live step of an earlier run undone).
        let stepped = live.withLock { l -> FrameRate? in
            defer { l = LiveRate(cameraRate: l.cameraRate) }
            return l.cameraRate != format.rate ? l.cameraRate : nil
        }
        if stepped != nil {
            if case .failure(let e) = setParm(format.rate) { throw V4L2Error.failed(device.path, e) }
            live.withLock { $0.cameraRate = format.rate }
        }
        for i in 0..<buffers.count { try queue(UInt32(i)) }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        try device.ioctl(CLinux_VIDIOC_STREAMON, "VIDIOC_STREAMON", &type)
        capturing.store(true, ordering: .releasing)
        defer {
            capturing.store(false, ordering: .releasing)
            // The frames are all delivered by now: a failing STREAMOFF is said on stderr, once.
            if withUnsafeMutablePointer(to: &type, { CLinux_ioctl(device.fd, CLinux_VIDIOC_STREAMOFF, $0) }) < 0 {
                reportV4L2Cleanup(.last("VIDIOC_STREAMOFF", path: device.path))
            }
        }
        var firstSequence: UInt32? = nil
        var firstTime: Int64 = 0
        var expected = 0
        // Live steps: frames whose index is keepPhase + a multiple of keepEvery are kept; the
        // step not applied yet waits for a frame that is kept under the old one.
        var keepEvery = 1, keepPhase = 0
        var rate = format.rate
        var rateMethod: String? = nil
        var seenGeneration = 0
        var pending: (keepEvery: Int, rate: FrameRate, method: String?, fromMicros: Int64)? = nil
        // An S_PARM step: which frame the driver switched at shows in the timestamps. Each frame
        // is held until the next one comes; the first whose step to the next is nearer the new
        // interval than the old is the first at the new rate (as `reel verify` reads the clip).
        var parmStep: (rate: FrameRate, method: String?)? = nil
        var held: SourceFrame? = nil
        func deliver(_ frame: SourceFrame) {
            guard let step = parmStep else { delegate.source(didCapture: frame); return }
            guard let h = held else { held = frame; return }
            held = nil
            let gap = (frame.pts - h.pts).seconds / Double(max(1, frame.index - h.index))
            if abs(gap - step.rate.interval) < abs(gap - rate.interval) {
                rate = step.rate; rateMethod = step.method; parmStep = nil
                var first = h
                first.rate = rate; first.rateMethod = rateMethod
                delegate.source(didCapture: first)
                var next = frame
                next.rate = rate; next.rateMethod = rateMethod
                delegate.source(didCapture: next)
            } else {
                delegate.source(didCapture: h)
                held = frame
            }
        }
        // A frame still held when capture ends goes out at the rate it was captured at.
        defer { if let h = held { delegate.source(didCapture: h) } }
        func kept(_ i: Int) -> Bool { keepEvery == 1 || (i - keepPhase) % keepEvery == 0 }
        /// How many of the indices a..<b are kept under the current decimation.
        func keptCount(_ a: Int, _ b: Int) -> Int {
            guard keepEvery > 1, b > a else { return max(0, b - a) }
            func floorDiv(_ x: Int, _ y: Int) -> Int { x >= 0 ? x / y : -((-x + y - 1) / y) }
            return floorDiv(b - 1 - keepPhase, keepEvery) - floorDiv(a - 1 - keepPhase, keepEvery)
        }
        while frameLimit.map({ expected < $0 }) ?? true {
            if stopping.load(ordering: .acquiring) { break }
            var pfd = pollfd(fd: device.fd, events: Int16(POLLIN), revents: 0)
            let r = poll(&pfd, 1, 2000)
            if r < 0 { if errno == EINTR { continue }; throw V4L2Error.failed(device.path, .last("poll")) }
            if r == 0 { throw CaptureError.sourceFailed("\(device.path): no frame for 2 s (the camera stopped sending)") }
            var b = v4l2_buffer()
            b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            b.memory = V4L2_MEMORY_MMAP.rawValue
            if CLinux_ioctl(device.fd, CLinux_VIDIOC_DQBUF, &b) < 0 {
                let e = SystemError.last("VIDIOC_DQBUF", path: device.path)
                if e.errno == EAGAIN { continue }
                if e.errno == ENODEV || e.errno == EIO || e.errno == EPIPE {
                    throw CaptureError.sourceFailed("\(device.path): the camera was lost (\(e.text)) after \(expected) frames")
                }
                throw V4L2Error.failed(device.path, e)
            }
            let time = Int64(b.timestamp.tv_sec) * 1_000_000 + Int64(b.timestamp.tv_usec)
            if firstSequence == nil { firstSequence = b.sequence; firstTime = time; zero.store(UInt64(max(1, time)) * 1000, ordering: .releasing) }
            let index = Int(b.sequence &- firstSequence!)
            if index > expected {
                // Lost frames the decimation would have let go anyway are not drops.
                let lost = keptCount(expected, index)
                if lost > 0 { delegate.source(didDrop: lost, reason: .discontinuity, at: expected) }
                if index - expected > lost { delegate.source(didDecimate: index - expected - lost) }
            }
            if let limit = frameLimit, index >= limit { try queue(b.index); break }
            expected = index + 1
            // A live step (setFrameRate): taken from the first frame kept under the step before,
            // and — after S_PARM — exposed at the new rate.
            if let step = live.withLock({ l in l.generation != seenGeneration ? (l.generation, l) : nil }) {
                seenGeneration = step.0
                let l = step.1
                let applied = reduced(frames: Int64(l.cameraRate.frames), seconds: Int64(l.cameraRate.seconds) * Int64(l.keepEvery)) ?? l.cameraRate
                pending = (l.keepEvery, applied, l.method, l.applyFromMicros)
            }
            if let p = pending, kept(index) {
                if p.fromMicros > 0 && p.keepEvery == 1 && keepEvery == 1 {
                    // The driver changed its rate (S_PARM): found from the timestamps (deliver).
                    parmStep = (p.rate, p.method)
                    pending = nil
                } else if time >= p.fromMicros {
                    keepEvery = p.keepEvery; keepPhase = index
                    rate = p.rate; rateMethod = p.method
                    parmStep = nil
                    if let h = held { delegate.source(didCapture: h); held = nil }
                    pending = nil
                }
            }
            if !kept(index) {
                try queue(b.index)
                delegate.source(didDecimate: 1)
                continue
            }
            if b.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 {
                // The driver says the frame is damaged (an incomplete transfer, say).
                try queue(b.index)
                delegate.source(didDrop: 1, reason: .corrupt, at: index)
            } else if let lease = pool.lease() {
                let (p, length) = buffers[Int(b.index)]
                let used = Int(b.bytesused)
                do {
                    if let decoder {
                        try decoder.decode(p, count: used, into: lease.buffer)
                    } else {
                        try lease.buffer.copyCameraImage(from: p, bytesPerLine: bytesPerLine, byteCount: min(used, length))
                    }
                    try queue(b.index)
                    deliver(SourceFrame(lease: lease, index: index, pts: Timestamp(value: time - firstTime, timescale: 1_000_000),
                                        rate: rate, rateMethod: rateMethod))
                } catch {
                    try queue(b.index)
                    delegate.source(didDrop: 1, reason: .corrupt, at: index)   // a frame that would not decode
                }
            } else {
                try queue(b.index)
                delegate.source(didDrop: 1, reason: .outOfBuffers, at: index)
            }
        }
    }

    private func queue(_ index: UInt32) throws {
        var b = v4l2_buffer()
        b.index = index
        b.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        b.memory = V4L2_MEMORY_MMAP.rawValue
        try device.ioctl(CLinux_VIDIOC_QBUF, "VIDIOC_QBUF", &b)
    }
}
