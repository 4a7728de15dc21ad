import CLinux
import CTurboJPEG
import Foundation
import ReelCapture
import ReelCore
import ReelMedia

/// One encoded preview picture: a JPEG of the crop of one captured frame, stored once as the
/// whole multipart part every stream client sends (headers, JPEG, next boundary). Clients
/// share this one immutable copy; none copies the JPEG.
public final class PreviewFrame: Sendable {
    /// The multipart part: its headers, the JPEG, then `\r\n--reelframe\r\n`.
    public let part: [UInt8]
    /// Where the JPEG lies in `part`.
    public let jpegRange: Range<Int>
    /// The captured frame's index (the one in its barcode).
    public let index: Int
    /// The frame's capture timestamp on the session clock, in microseconds.
    public let timestampMicroseconds: Int64
    /// When the frame reached the preview output, on `CLOCK_MONOTONIC` (ns): the session hands
    /// each frame to its outputs right after capture.
    public let captureMonotonicNanoseconds: UInt64
    /// Counts encoded frames from 1: a client has seen every frame up to the one it sent.
    public let sequence: Int

    /// The multipart boundary between parts of `/stream.mjpg`.
    public static let boundary = "reelframe"

    /// The part's headers (also sent with `/snapshot.jpg`).
    public var headers: [(String, String)] {
        [("X-Frame-Index", String(index)), ("X-Timestamp-Us", String(timestampMicroseconds)),
         ("X-Capture-Monotonic-Ns", String(captureMonotonicNanoseconds))]
    }

    /// The JPEG bytes (a view into `part`, no copy).
    public var jpeg: ArraySlice<UInt8> { part[jpegRange] }

    init(jpeg: UnsafeBufferPointer<UInt8>, index: Int, timestampMicroseconds: Int64,
         captureMonotonicNanoseconds: UInt64, sequence: Int) {
        self.index = index
        self.timestampMicroseconds = timestampMicroseconds
        self.captureMonotonicNanoseconds = captureMonotonicNanoseconds
        self.sequence = sequence
        var head = "Content-Type: image/jpeg\r\nContent-Length: \(jpeg.count)\r\n"
        head += "X-Frame-Index: \(index)\r\nX-Timestamp-Us: \(timestampMicroseconds)\r\n"
        head += "X-Capture-Monotonic-Ns: \(captureMonotonicNanoseconds)\r\n\r\n"
        let tail = "\r\n--\(PreviewFrame.boundary)\r\n"
        var bytes: [UInt8] = []
        bytes.reserveCapacity(head.utf8.count + jpeg.count + tail.utf8.count)
        bytes.append(contentsOf: head.utf8)
        let begin = bytes.count
        bytes.append(contentsOf: jpeg)
        jpegRange = begin..<bytes.count
        bytes.append(contentsOf: tail.utf8)
        part = bytes
    }
}

/// Errors of the preview: its JPEG encoder and its HTTP server.
public enum PreviewError: Error, CustomStringConvertible, Sendable {
    /// `tjInitCompress` failed (out of memory).
    case encoderUnavailable(String)
    /// The address is not an IPv4 or IPv6 literal, or not one of this machine's.
    case badAddress(String)
    /// `bind` or `listen` failed with this errno (EADDRINUSE: the port is in use).
    case listen(address: String, errno: Int32)
    /// `MHD_start_daemon` failed.
    case serverUnavailable(String)
    /// `PreviewOutput.start()` on an output that was already started (an output runs once).
    case alreadyStarted

    /// One line for stderr, starting `preview:`.
    public var description: String {
        switch self {
        case .encoderUnavailable(let why): return "preview: the JPEG encoder did not start: \(why)"
        case .badAddress(let a): return "preview: '\(a)' is not an IP address of this machine"
        case .listen(let a, let e):
            if e == EADDRINUSE { return "preview: \(a) is in use (choose another port with --preview)" }
            if e == EACCES { return "preview: no permission to listen on \(a) (use a port above 1023)" }
            return "preview: cannot listen on \(a): \(String(cString: strerror(e)))"
        case .serverUnavailable(let a): return "preview: the HTTP server did not start on \(a)"
        case .alreadyStarted: return "preview: this preview output has already run (an output runs once)"
        }
    }
}

/// The capture session's preview output: keeps only the newest offered frame, and on its own
/// thread copies that frame's crop out of the sensor buffer (giving the buffer back at once),
/// then encodes it as JPEG with TurboJPEG (`tjCompressFromYUVPlanes`) into one reused buffer.
///
/// `offer` never blocks and never refuses: a frame that arrives while the previous one is
/// still waiting replaces it (the preview skips frames, capture never waits for it).
/// Frames wider than `maxWidth` are decimated by a whole factor (nearest neighbour).
/// Planar 8-bit sensors (yuv420p, yuvj420p, yuv422p) and the packed camera formats YUYV
/// (yuyv422) and NV12 are previewed; other formats (10-bit) are counted in `framesUnsupported`
/// and `unavailableReason` says why no picture comes.
public final class PreviewOutput: FrameOutput, @unchecked Sendable {
    // Everything below `condition` is guarded by it.
    private let condition = NSCondition()
    private var pending: CapturedFrame?
    private var pendingArrival: UInt64 = 0
    private var newest: PreviewFrame?
    private var started = false
    private var stopped = false
    private var encodedCount = 0
    private var unsupportedCount = 0
    private var lastUnsupported: PixelFormat?
    private var lastOfferNanoseconds: UInt64 = 0
    private var encodeNanoseconds: UInt64 = 0
    private var thread: pthread_t?

    /// JPEG quality, 1–100.
    public let quality: Int32
    /// Pictures wider than this are decimated by a whole factor.
    public let maxWidth: Int

    /// - Parameter quality: JPEG quality 1–100.
    public init(quality: Int = 80, maxWidth: Int = 1280) {
        self.quality = Int32(min(max(quality, 1), 100))
        self.maxWidth = max(maxWidth, 16)
    }

    /// Starts the encoding thread (once per output).
    /// - Throws: `PreviewError.alreadyStarted` on a second call (or after `stop()`),
    ///   `.encoderUnavailable` when `tjInitCompress` fails.
    public func start() throws {
        condition.lock()
        guard !started, !stopped else { condition.unlock(); throw PreviewError.alreadyStarted }
        started = true
        condition.unlock()
        guard let handle = tjInitCompress() else {
            condition.lock(); stopped = true; condition.unlock()
            throw PreviewError.encoderUnavailable(String(cString: tjGetErrorStr2(nil)))
        }
        let box = HandleBox(handle)
        let body = ThreadBody { [self] in
            // The name `top -H` and /proc/PID/task/*/comm show (15 bytes at most).
            if CLinux_name_this_thread("reel-preview-jp") != 0 { /* a name is only cosmetic */ }
            self.encodeLoop(box)
        }
        let context = Unmanaged.passRetained(body).toOpaque()
        var t = pthread_t()
        let created = pthread_create(&t, nil, { raw in
            let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
            body.run()
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(context).release()
            condition.lock(); stopped = true; condition.unlock()
            throw PreviewError.encoderUnavailable("pthread_create: \(String(cString: strerror(created)))")
        }
        condition.lock(); thread = t; condition.unlock()
    }

    /// Stops the encoding thread, joins it (`pthread_join`: its TurboJPEG handle is released
    /// when this returns), and wakes every waiting client. Safe to call more than once, from
    /// any thread but the encoding thread, or without `start()`.
    public func stop() {
        condition.lock()
        stopped = true
        pending = nil
        condition.broadcast()
        let t = thread
        thread = nil
        condition.unlock()
        if let t {
            if pthread_join(t, nil) != 0 { /* EDEADLK: called on the encoding thread itself, which now ends on its own */ }
        }
    }

    /// True once `stop()` was called (or `start()` failed).
    public var isStopped: Bool { condition.lock(); defer { condition.unlock() }; return stopped }

    /// Frames encoded so far, frames not shown for their pixel format, mean encode time (ms).
    public var counters: (encoded: Int, unsupported: Int, meanEncodeMilliseconds: Double) {
        condition.lock(); defer { condition.unlock() }
        let mean = encodedCount == 0 ? 0 : Double(encodeNanoseconds) / Double(encodedCount) / 1e6
        return (encodedCount, unsupportedCount, mean)
    }

    /// Why no new picture can come, or nil while pictures can come: the output has stopped
    /// (capture ended), or the newest frame's pixel format cannot be previewed.
    public var unavailableReason: String? {
        condition.lock(); defer { condition.unlock() }
        if stopped { return "the capture has ended" }
        if let f = lastUnsupported { return "the camera's pixel format \(f.rawValue) cannot be previewed (8-bit YUV only)" }
        return nil
    }

    /// Keeps `frame` as the newest (replacing one still waiting) and wakes the encoder; never blocks, always `.taken`.
    public func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        let now = MonotonicClock.now()
        condition.lock()
        let replaced = pending
        if !stopped { pending = frame; pendingArrival = now; lastOfferNanoseconds = now }
        condition.signal()
        condition.unlock()
        withExtendedLifetime(replaced) {} // the replaced frame's lease ends here, outside the lock
        return .taken
    }

    /// The newest picture whose sequence is above `after`, waiting up to `timeout` seconds;
    /// nil on timeout, once stopped, or as soon as `unavailableReason` says none can come.
    public func frame(after: Int, timeout: Double) -> PreviewFrame? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock(); defer { condition.unlock() }
        while !stopped {
            if let n = newest, n.sequence > after { return n }
            if lastUnsupported != nil { return nil }
            if !condition.wait(until: deadline) { break }
        }
        if let n = newest, n.sequence > after, !stopped { return n }
        return nil
    }

    /// What the encoding thread runs (handed to `pthread_create` as its argument).
    private final class ThreadBody: @unchecked Sendable { // run once, by the new thread
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    private final class HandleBox: @unchecked Sendable { // used by the encoding thread only
        let handle: tjhandle
        init(_ h: tjhandle) { handle = h }
        deinit { if tjDestroy(handle) != 0 { /* nothing left to release it with */ } }
    }

    private func encodeLoop(_ box: HandleBox) {
        var planes = PlaneCopy()
        defer { planes.release() }
        while true {
            condition.lock()
            while pending == nil && !stopped { condition.wait() }
            if stopped { condition.unlock(); return }
            let frame = pending!
            let arrival = pendingArrival
            pending = nil
            condition.unlock()

            let start = DispatchTime.now().uptimeNanoseconds
            // Copy the crop out, then the sensor buffer goes back to the source at once.
            let copied = planes.copy(frame, maxWidth: maxWidth)
            let index = frame.index
            let format = frame.buffer.format
            let micros = frame.pts.value * 1_000_000 / Int64(frame.pts.timescale)
            withExtendedLifetime(frame) {}
            guard copied else {
                condition.lock(); unsupportedCount += 1; lastUnsupported = format; condition.broadcast(); condition.unlock()
                continue
            }
            let made: PreviewFrame? = planes.encode(box.handle, quality: quality) { jpeg in
                condition.lock(); let sequence = encodedCount + 1; condition.unlock()
                return PreviewFrame(jpeg: jpeg, index: index, timestampMicroseconds: micros,
                                    captureMonotonicNanoseconds: arrival, sequence: sequence)
            }
            let took = DispatchTime.now().uptimeNanoseconds - start
            condition.lock()
            if let made {
                encodedCount += 1
                encodeNanoseconds += took
                newest = made
                lastUnsupported = nil
            } else {
                unsupportedCount += 1
            }
            condition.broadcast()
            condition.unlock()
        }
    }
}

/// The preview's own copy of a crop: three 8-bit planes, tightly packed, and the reused
/// TurboJPEG output buffer.
private struct PlaneCopy {
    var y: [UInt8] = [], u: [UInt8] = [], v: [UInt8] = []
    var width = 0, height = 0, chromaWidth = 0, chromaHeight = 0
    var subsampling = TJSAMP_420
    private var out: UnsafeMutablePointer<UInt8>?
    private var outCapacity: UInt = 0

    /// Frees the JPEG buffer (`tjFree`).
    mutating func release() {
        if let out { tjFree(out) }
        out = nil; outCapacity = 0
    }

    /// Copies `frame`'s crop, decimated by a whole factor to at most `maxWidth`, into planar
    /// 4:2:0 (from yuv420p, yuvj420p, NV12) or 4:2:2 (from yuv422p, YUYV); false for a pixel
    /// format the preview cannot take (10-bit).
    mutating func copy(_ frame: CapturedFrame, maxWidth: Int) -> Bool {
        let buffer = frame.buffer
        let verticalChroma: Int
        switch buffer.format {
        case .yuv420p, .yuvj420p, .nv12: subsampling = TJSAMP_420; verticalChroma = 2
        case .yuv422p, .yuyv422: subsampling = TJSAMP_422; verticalChroma = 1
        default: return false
        }
        let crop = frame.crop
        var step = 1
        while crop.width / step > maxWidth { step += 1 }
        // Even sizes keep chroma aligned with luma.
        width = (crop.width / step) & ~1
        height = (crop.height / step) & ~1
        guard width >= 2, height >= 2 else { return false }
        chromaWidth = width / 2
        chromaHeight = height / verticalChroma
        if y.count != width * height { y = [UInt8](repeating: 0, count: width * height) }
        if u.count != chromaWidth * chromaHeight {
            u = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
            v = [UInt8](repeating: 0, count: chromaWidth * chromaHeight)
        }
        let (yBase, yStride) = buffer.plane(0)
        let (w, h, cw, ch, cx, cy) = (width, height, chromaWidth, chromaHeight, crop.x, crop.y)
        switch buffer.format {
        case .yuyv422:
            // Y0 U Y1 V: luma at even bytes, U and V of each pixel pair at 1 and 3.
            y.withUnsafeMutableBufferPointer { yd in u.withUnsafeMutableBufferPointer { ud in v.withUnsafeMutableBufferPointer { vd in
                for row in 0..<h {
                    let src = yBase + (cy + row * step) * yStride
                    let yl = yd.baseAddress! + row * w
                    for col in 0..<w { yl[col] = src[2 * (cx + col * step)] }
                    let ul = ud.baseAddress! + row * cw, vl = vd.baseAddress! + row * cw
                    for c in 0..<cw {
                        let pair = (cx + 2 * c * step) & ~1
                        ul[c] = src[2 * pair + 1]; vl[c] = src[2 * pair + 3]
                    }
                }
            } } }
        case .nv12:
            Self.copyPlane(yBase, stride: yStride, x: cx, y: cy, step: step, into: &y, width: w, height: h)
            let (uvBase, uvStride) = buffer.plane(1)
            u.withUnsafeMutableBufferPointer { ud in v.withUnsafeMutableBufferPointer { vd in
                for row in 0..<ch {
                    let src = uvBase + ((cy + 2 * row * step) / 2) * uvStride
                    let ul = ud.baseAddress! + row * cw, vl = vd.baseAddress! + row * cw
                    for c in 0..<cw {
                        let k = (cx + 2 * c * step) / 2
                        ul[c] = src[2 * k]; vl[c] = src[2 * k + 1]
                    }
                }
            } }
        default:
            let (uBase, uStride) = buffer.plane(1)
            let (vBase, vStride) = buffer.plane(2)
            Self.copyPlane(yBase, stride: yStride, x: cx, y: cy, step: step, into: &y, width: w, height: h)
            Self.copyPlane(uBase, stride: uStride, x: cx / 2, y: cy / verticalChroma, step: step, into: &u, width: cw, height: ch)
            Self.copyPlane(vBase, stride: vStride, x: cx / 2, y: cy / verticalChroma, step: step, into: &v, width: cw, height: ch)
        }
        return true
    }

    private static func copyPlane(_ base: UnsafeMutablePointer<UInt8>, stride: Int, x: Int, y: Int, step: Int,
                                  into out: inout [UInt8], width: Int, height: Int) {
        out.withUnsafeMutableBufferPointer { dst in
            guard let d = dst.baseAddress else { return }
            for row in 0..<height {
                let src = base + (y + row * step) * stride + x
                let line = d + row * width
                if step == 1 {
                    line.update(from: src, count: width)
                } else {
                    for col in 0..<width { line[col] = src[col * step] }
                }
            }
        }
    }

    /// `tjCompressFromYUVPlanes` into the reused buffer of `tjBufSize` (grown with `tjAlloc`
    /// only when the picture grows), then `make` reads the JPEG there; nil if TurboJPEG fails.
    mutating func encode<T>(_ handle: tjhandle, quality: Int32, make: (UnsafeBufferPointer<UInt8>) -> T) -> T? {
        let capacity = tjBufSize(Int32(width), Int32(height), Int32(subsampling.rawValue))
        guard capacity > 0 else { return nil }
        if capacity > outCapacity || out == nil {
            release()
            guard let fresh = tjAlloc(Int32(capacity)) else { return nil }
            out = fresh; outCapacity = capacity
        }
        var jpegPointer: UnsafeMutablePointer<UInt8>? = out
        var jpegSize: UInt = outCapacity
        var strides: [Int32] = [Int32(width), Int32(chromaWidth), Int32(chromaWidth)]
        let (w, h, sub) = (Int32(width), Int32(height), Int32(subsampling.rawValue))
        let status: Int32 = y.withUnsafeBufferPointer { yp in
            u.withUnsafeBufferPointer { up in
                v.withUnsafeBufferPointer { vp in
                    var srcPlanes: [UnsafePointer<UInt8>?] = [yp.baseAddress, up.baseAddress, vp.baseAddress]
                    return tjCompressFromYUVPlanes(handle, &srcPlanes, w, &strides, h, sub,
                                                   &jpegPointer, &jpegSize, quality, TJFLAG_NOREALLOC | TJFLAG_FASTDCT)
                }
            }
        }
        guard status == 0, let result = jpegPointer, result == out else { return nil }
        return make(UnsafeBufferPointer(start: result, count: Int(jpegSize)))
    }
}
