import CTurboJPEG
import Foundation
import ReelCapture
import ReelCore
import ReelMedia

/// One encoded preview picture: a JPEG of the crop of one captured frame.
public final class PreviewFrame: Sendable {
    public let jpeg: [UInt8]
    public let index: Int
    /// The frame's capture timestamp on the session clock, in microseconds.
    public let timestampMicroseconds: Int64
    /// Counts encoded frames from 1: a client has seen every frame up to the one it sent.
    public let sequence: Int

    init(jpeg: [UInt8], index: Int, timestampMicroseconds: Int64, sequence: Int) {
        self.jpeg = jpeg; self.index = index
        self.timestampMicroseconds = timestampMicroseconds; self.sequence = sequence
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

    public var description: String {
        switch self {
        case .encoderUnavailable(let why): return "preview: the JPEG encoder did not start: \(why)"
        case .badAddress(let a): return "preview: '\(a)' is not an IP address of this machine"
        case .listen(let a, let e):
            if e == EADDRINUSE { return "preview: \(a) is in use (choose another port with --preview)" }
            if e == EACCES { return "preview: no permission to listen on \(a) (use a port above 1023)" }
            return "preview: cannot listen on \(a): \(String(cString: strerror(e)))"
        case .serverUnavailable(let a): return "preview: the HTTP server did not start on \(a)"
        }
    }
}

/// The capture session's preview output: keeps only the newest offered frame, and on its own
/// thread copies that frame's crop out of the sensor buffer (giving the buffer back at once),
/// then encodes it as JPEG with TurboJPEG (`tjCompressFromYUVPlanes`).
///
/// `offer` never blocks and never refuses: a frame that arrives while the previous one is
/// still waiting replaces it (the preview skips frames, capture never waits for it).
/// Frames wider than `maxWidth` are decimated by a whole factor (nearest neighbour).
/// Planar 8-bit sensors (yuv420p, yuvj420p, yuv422p) are previewed; other formats are counted
/// in `framesUnsupported` and not shown.
public final class PreviewOutput: FrameOutput, @unchecked Sendable {
    // Everything below `condition` is guarded by it.
    private let condition = NSCondition()
    private var pending: CapturedFrame?
    private var newest: PreviewFrame?
    private var stopped = false
    private var encodedCount = 0
    private var unsupportedCount = 0
    private var encodeNanoseconds: UInt64 = 0
    private var thread: Thread?

    public let quality: Int32
    public let maxWidth: Int

    /// - Parameter quality: JPEG quality 1–100.
    public init(quality: Int = 80, maxWidth: Int = 1280) {
        self.quality = Int32(min(max(quality, 1), 100))
        self.maxWidth = max(maxWidth, 16)
    }

    /// Starts the encoding thread. - Throws: `PreviewError.encoderUnavailable`.
    public func start() throws {
        guard let handle = tjInitCompress() else {
            throw PreviewError.encoderUnavailable(String(cString: tjGetErrorStr2(nil)))
        }
        let box = HandleBox(handle)
        let t = Thread { [self] in self.encodeLoop(box) }
        t.name = "reel-preview-jpeg"
        condition.lock(); thread = t; condition.unlock()
        t.start()
    }

    /// Stops the encoding thread and wakes every waiting client.
    public func stop() {
        condition.lock()
        stopped = true
        pending = nil
        condition.broadcast()
        condition.unlock()
    }

    public var isStopped: Bool { condition.lock(); defer { condition.unlock() }; return stopped }

    /// Frames encoded so far, frames not shown for their pixel format, mean encode time (ms).
    public var counters: (encoded: Int, unsupported: Int, meanEncodeMilliseconds: Double) {
        condition.lock(); defer { condition.unlock() }
        let mean = encodedCount == 0 ? 0 : Double(encodeNanoseconds) / Double(encodedCount) / 1e6
        return (encodedCount, unsupportedCount, mean)
    }

    public func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        condition.lock()
        let replaced = pending
        if !stopped { pending = frame }
        condition.signal()
        condition.unlock()
        _ = replaced // the replaced frame's lease ends here, outside the lock
        return .taken
    }

    /// The newest picture whose sequence is above `after`, waiting up to `timeout` seconds;
    /// nil on timeout or once stopped.
    public func frame(after: Int, timeout: Double) -> PreviewFrame? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock(); defer { condition.unlock() }
        while !stopped {
            if let n = newest, n.sequence > after { return n }
            if !condition.wait(until: deadline) { break }
        }
        if let n = newest, n.sequence > after, !stopped { return n }
        return nil
    }

    /// Wakes clients waiting in `frame(after:timeout:)` (used when the server stops).
    func wakeAll() { condition.lock(); condition.broadcast(); condition.unlock() }

    private final class HandleBox: @unchecked Sendable { // used by the encoding thread only
        let handle: tjhandle
        init(_ h: tjhandle) { handle = h }
        deinit { if tjDestroy(handle) != 0 { /* nothing left to release it with */ } }
    }

    private func encodeLoop(_ box: HandleBox) {
        var planes = PlaneCopy()
        while true {
            condition.lock()
            while pending == nil && !stopped { condition.wait() }
            if stopped { condition.unlock(); return }
            let frame = pending!
            pending = nil
            condition.unlock()

            let start = DispatchTime.now().uptimeNanoseconds
            // Copy the crop out, then the sensor buffer goes back to the source at once.
            let copied = planes.copy(frame, maxWidth: maxWidth)
            let index = frame.index
            let micros = frame.pts.value * 1_000_000 / Int64(frame.pts.timescale)
            withExtendedLifetime(frame) {}
            guard copied, let jpeg = planes.encode(box.handle, quality: quality) else {
                condition.lock(); unsupportedCount += 1; condition.unlock()
                continue
            }
            let took = DispatchTime.now().uptimeNanoseconds - start
            condition.lock()
            encodedCount += 1
            encodeNanoseconds += took
            newest = PreviewFrame(jpeg: jpeg, index: index, timestampMicroseconds: micros, sequence: encodedCount)
            condition.broadcast()
            condition.unlock()
        }
    }
}

/// The preview's own copy of a crop: three 8-bit planes, tightly packed.
private struct PlaneCopy {
    var y: [UInt8] = [], u: [UInt8] = [], v: [UInt8] = []
    var width = 0, height = 0, chromaWidth = 0, chromaHeight = 0
    var subsampling = TJSAMP_420

    /// Copies `frame`'s crop, decimated by a whole factor to at most `maxWidth`; false for a
    /// pixel format TurboJPEG cannot take as planes.
    mutating func copy(_ frame: CapturedFrame, maxWidth: Int) -> Bool {
        let buffer = frame.buffer
        let verticalChroma: Int
        switch buffer.format {
        case .yuv420p, .yuvj420p: subsampling = TJSAMP_420; verticalChroma = 2
        case .yuv422p: subsampling = TJSAMP_422; verticalChroma = 1
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
        let (uBase, uStride) = buffer.plane(1)
        let (vBase, vStride) = buffer.plane(2)
        Self.copyPlane(yBase, stride: yStride, x: crop.x, y: crop.y, step: step, into: &y, width: width, height: height)
        Self.copyPlane(uBase, stride: uStride, x: crop.x / 2, y: crop.y / verticalChroma, step: step, into: &u, width: chromaWidth, height: chromaHeight)
        Self.copyPlane(vBase, stride: vStride, x: crop.x / 2, y: crop.y / verticalChroma, step: step, into: &v, width: chromaWidth, height: chromaHeight)
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

    /// `tjCompressFromYUVPlanes` into a buffer of `tjBufSize`; nil if TurboJPEG fails.
    func encode(_ handle: tjhandle, quality: Int32) -> [UInt8]? {
        let capacity = tjBufSize(Int32(width), Int32(height), Int32(subsampling.rawValue))
        guard capacity > 0, let out = tjAlloc(Int32(capacity)) else { return nil }
        defer { tjFree(out) }
        var jpegPointer: UnsafeMutablePointer<UInt8>? = out
        var jpegSize: UInt = capacity
        var strides: [Int32] = [Int32(width), Int32(chromaWidth), Int32(chromaWidth)]
        let status: Int32 = y.withUnsafeBufferPointer { yp in
            u.withUnsafeBufferPointer { up in
                v.withUnsafeBufferPointer { vp in
                    var srcPlanes: [UnsafePointer<UInt8>?] = [yp.baseAddress, up.baseAddress, vp.baseAddress]
                    return tjCompressFromYUVPlanes(handle, &srcPlanes, Int32(width), &strides, Int32(height),
                                                   Int32(subsampling.rawValue), &jpegPointer, &jpegSize, quality,
                                                   TJFLAG_NOREALLOC | TJFLAG_FASTDCT)
                }
            }
        }
        guard status == 0, let result = jpegPointer else { return nil }
        return Array(UnsafeBufferPointer(start: result, count: Int(jpegSize)))
    }
}
