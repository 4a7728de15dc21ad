import CFFmpeg
import ReelCore
import Synchronization

/// One picture in memory, owned by an `AVFrame` with reference-counted planes.
///
/// The pixels are written only by whoever holds the buffer's `PixelBufferLease`, before the
/// lease is handed on; encoders that keep a reference (frame threads) hold an `AVBufferRef`,
/// and the pool will not lease the buffer again until they let go. That is what makes the
/// type safe to send between threads.
public final class PixelBuffer: @unchecked Sendable {
    let frame: UnsafeMutablePointer<AVFrame>
    /// Width and height in pixels.
    public let size: Size
    /// The pixel format of the planes.
    public let format: PixelFormat

    /// Allocates the planes (`av_frame_alloc`, `av_frame_get_buffer`, 64-byte aligned).
    /// - Throws: ``MediaError`` when allocation fails.
    public init(size: Size, format: PixelFormat) throws(MediaError) {
        guard let f = av_frame_alloc() else { throw MediaError("av_frame_alloc", code: reel_averror(ENOMEM)) }
        f.pointee.width = Int32(size.width)
        f.pointee.height = Int32(size.height)
        f.pointee.format = format.av.rawValue
        let r = av_frame_get_buffer(f, 64)
        if r < 0 {
            var p: UnsafeMutablePointer<AVFrame>? = f
            av_frame_free(&p)
            throw MediaError("av_frame_get_buffer", code: r)
        }
        frame = f
        self.size = size
        self.format = format
    }

    deinit {
        var p: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&p)
    }

    /// Plane `index`: its first byte and its stride in bytes.
    public func plane(_ index: Int) -> (base: UnsafeMutablePointer<UInt8>, stride: Int) {
        (reel_frame_data(frame, Int32(index))!, Int(reel_frame_linesize(frame, Int32(index))))
    }

    /// An encoder or muxer still holds a reference to the pixels.
    var isReferencedElsewhere: Bool { reel_frame_max_refcount(frame) > 1 }
}

/// A fixed set of buffers, leased one at a time and reused; no allocation after `init`.
///
/// When every buffer is leased or still referenced by an encoder, `lease()` returns nil:
/// the caller drops the frame with reason `outOfBuffers`, as a camera does.
public final class PixelBufferPool: Sendable {
    private let buffers: [PixelBuffer]
    private let leased: Mutex<[Bool]>

    /// Allocates `count` buffers and runs `prepare` once on each (a test pattern's static
    /// background, say).
    /// - Throws: ``MediaError`` when a buffer cannot be allocated.
    public init(count: Int, size: Size, format: PixelFormat, prepare: (PixelBuffer) -> Void = { _ in }) throws(MediaError) {
        var made: [PixelBuffer] = []
        for _ in 0..<count {
            let b = try PixelBuffer(size: size, format: format)
            prepare(b)
            made.append(b)
        }
        buffers = made
        leased = Mutex([Bool](repeating: false, count: count))
    }

    /// Buffers in the pool, leased or not.
    public var count: Int { buffers.count }

    /// A free buffer, or nil when all are in use.
    public func lease() -> PixelBufferLease? {
        let slot: Int? = leased.withLock { flags in
            for i in flags.indices where !flags[i] && !buffers[i].isReferencedElsewhere {
                flags[i] = true
                return i
            }
            return nil
        }
        guard let slot else { return nil }
        return PixelBufferLease(pool: self, slot: slot, buffer: buffers[slot])
    }

    /// Buffers neither leased nor referenced by an encoder.
    public var available: Int {
        leased.withLock { flags in flags.indices.filter { !flags[$0] && !buffers[$0].isReferencedElsewhere }.count }
    }

    /// Lends `body` each buffer not in use, one at a time (leased meanwhile, so capture takes
    /// another), while at least `keepingIdle` others stay idle for capture: work on idle
    /// buffers beside capture, such as faulting their pages in.
    public func withEachIdleBuffer(keepingIdle: Int = 2, _ body: (PixelBuffer) -> Void) {
        for i in buffers.indices {
            let lent = leased.withLock { flags -> Bool in
                guard !flags[i], !buffers[i].isReferencedElsewhere else { return false }
                let idle = flags.indices.filter { $0 != i && !flags[$0] && !buffers[$0].isReferencedElsewhere }.count
                guard idle >= keepingIdle else { return false }
                flags[i] = true
                return true
            }
            guard lent else { continue }
            body(buffers[i])
            giveBack(i)
        }
    }

    fileprivate func giveBack(_ slot: Int) {
        leased.withLock { $0[slot] = false }
    }
}

/// The right to use one pool buffer; the buffer goes back to the pool when the lease ends.
public final class PixelBufferLease: Sendable {
    private let pool: PixelBufferPool
    private let slot: Int
    /// The leased buffer: write its pixels only while holding the lease, before handing it on.
    public let buffer: PixelBuffer

    fileprivate init(pool: PixelBufferPool, slot: Int, buffer: PixelBuffer) {
        self.pool = pool; self.slot = slot; self.buffer = buffer
    }

    deinit { pool.giveBack(slot) }
}
