import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// A picture effect, as a custom index picker offers it.
public enum PictureEffect: Sendable, Hashable {
    /// The picture as the sensor gives it.
    case none
    /// Chroma made neutral (U = V = 128): a black-and-white picture.
    case grayscale
    /// A colour LUT (``ColorLUT``): built in (`sepia`, `cool`, `warm`) or a `.cube` file's.
    case lut(ColorLUT)

    /// The picker's title: `none`, `grayscale`, or the LUT's title.
    public var title: String {
        switch self {
        case .none: return "none"
        case .grayscale: return "grayscale"
        case .lut(let l): return l.title
        }
    }

    /// `none`, `grayscale` and the built-in LUTs, in the picker's order (`.cube` files follow).
    public static let builtIn: [PictureEffect] = [.none, .grayscale] + ColorLUT.builtIn.map { .lut($0) }
}

/// What the session does to each frame before its outputs see it.
public struct PictureSettings: Sendable, Hashable {
    /// Digital zoom, 1…4: 1/zoom of the sensor picture, around `centre`, scaled back to the sensor size.
    public var zoom: Double = 1
    /// Where the zoomed part is centred, in shares of the sensor's width and height (0.5, 0.5:
    /// the middle; Center Stage pans it); kept so that the part stays inside the sensor.
    public var centre = PicturePoint(x: 0.5, y: 0.5)
    /// A further move of the zoomed part, in sensor pixels and fractions of one (stabilisation's
    /// correction; 0, 0 by default): sampled from where the part lies moved, kept inside the
    /// sensor. Only a zoom above 1 leaves room to move.
    public var shift = PicturePoint(x: 0, y: 0)
    /// A further zoom that leaves room for `shift` (stabilisation's 1.1; 1 by default): the
    /// picture is `zoom` × `marginZoom` (at most 4) of the sensor, so that the user's zoom, smart
    /// framing's and Center Stage's stay what they set.
    public var marginZoom: Double = 1
    /// Where the ratio's crop lies in the zoomed picture, in shares of the room it leaves each
    /// way (0.5, 0.5 by default: the middle). Center Stage moves it, so that a 16:9 picture
    /// still pans up and down the square sensor at a low zoom; every output takes the crop
    /// from here (`CapturedFrame.crop`).
    public var pan = PicturePoint(x: 0.5, y: 0.5)
    /// Brightness in stops of exposure bias (−2…+2): luma moves by `ImageAdjustments.lumaPerStop` per stop.
    public var exposureBias: Double = 0
    /// The effect applied last.
    public var effect: PictureEffect = .none

    /// The settings of an untouched picture: zoom 1, no bias, no effect.
    public init() {}

    /// Whether the picture goes out as the sensor drew it.
    public var isIdentity: Bool { zoom == 1 && marginZoom == 1 && exposureBias == 0 && effect == .none }

    /// The zoom the picture is cropped at: `zoom` × `marginZoom`, at most 4.
    public var croppingZoom: Double { min(4, zoom * marginZoom) }
}

/// A point of a picture in shares of its width and height (0…1).
public struct PicturePoint: Sendable, Hashable {
    /// From the left edge.
    public var x: Double
    /// From the top edge.
    public var y: Double
    /// The point (`x`, `y`).
    public init(x: Double, y: Double) { self.x = x; self.y = y }
}

/// Zoom, brightness and an effect applied to frames where the session receives them, after
/// the sensor drew them and before any output sees them (so the movie, the preview and photos
/// all show the same picture).
///
/// Changes are asked for from any thread (`change`) and take effect at the next frame the
/// capture thread processes; `change` returns that frame's index, the exact frame from which
/// the picture shows the change. The work is done into buffers of a pool of its own (the
/// sensor's buffers keep their drawn background): digital zoom crops the centre of the
/// picture and scales it back to the full size by nearest neighbour (no seam: the track size
/// stays), brightness adds to luma within video range (16…235), grayscale sets chroma to 128,
/// and a colour LUT maps each pixel through its YUV table (``ColorLUT``) — in that order: zoom,
/// then exposure, then the effect. Formats: planar 4:2:0 (`yuv420p`), NV12 and YUYV.
public final class ImageAdjustments: Sendable {
    /// Luma steps per stop of exposure bias on a source without its own exposure (the
    /// synthetic sensor): ±2 stops move luma by ±48, which keeps the frame barcode readable.
    public static let lumaPerStop = 24

    /// Told the index of the first frame processed with the settings it waited for.
    private final class Waiter: Sendable {
        let done = DispatchSemaphore(value: 0)
        let frame = Atomic<Int>(-1)
    }

    private struct State {
        var wanted = PictureSettings()
        var waiters: [Waiter] = []
    }
    private let state = Mutex(State())

    /// What the capture thread keeps between frames: the pool and the sampling maps.
    private struct Work {
        var pool: PixelBufferPool?
        var poolSize = Size(width: 0, height: 0)
        var poolFormat = PixelFormat.yuv420p
        var mapsFor: (zoom: Double, centre: PicturePoint, shift: PicturePoint, subpixel: Bool, size: Size)? = nil
        var columns: [Int] = []
        var rows: [Int] = []
        var chromaColumns: [Int] = []
        var chromaRows: [Int] = []
    }
    private let work = Mutex(Work())
    private let buffers: Atomic<Int>

    /// `buffers`: frames that may be in flight after processing (the writer's hold ring, the
    /// preview, a photo ring): as many as the source's own pool. Allocated at the first change.
    public init(buffers: Int = 16) { self.buffers = Atomic(max(2, buffers)) }

    /// Buffers of the pool the first change allocates (at least 2): set it before, to as many
    /// as the source's own pool has, so that processing never runs out where the sensor would not.
    public var bufferCount: Int {
        get { buffers.load(ordering: .relaxed) }
        set { buffers.store(max(2, newValue), ordering: .relaxed) }
    }

    /// Whether frames in `format` can be processed.
    public static func supports(_ format: PixelFormat) -> Bool {
        [.yuv420p, .nv12, .yuyv422].contains(format)
    }

    /// The settings asked for last (what the next frame will show).
    public var settings: PictureSettings { state.withLock { $0.wanted } }

    /// Changes the settings from the next frame on and waits (at most `timeout` seconds) until
    /// that frame was processed; returns its index, or nil when no frame came in time (the
    /// session is not running: the change applies to its next frame). The buffers are
    /// allocated here, off the capture thread, the first time the picture is changed.
    /// - Throws: ``MediaError`` when the buffers cannot be allocated; the settings are unchanged.
    @discardableResult
    public func change(format: SourceFormat, timeout: Double = 2, _ edit: (inout PictureSettings) -> Void) throws -> Int? {
        try work.withLock { w in
            if w.pool == nil || w.poolSize != format.size || w.poolFormat != format.pixelFormat {
                w.pool = try PixelBufferPool(count: bufferCount, size: format.size, format: format.pixelFormat)
                w.poolSize = format.size
                w.poolFormat = format.pixelFormat
            }
        }
        // A LUT's YUV table is made here, off the capture thread, before the frame that uses it.
        var next = settings
        edit(&next)
        if case .lut(let lut) = next.effect { _ = lut.yuvTable }
        let waiter = Waiter()
        state.withLock { s in
            edit(&s.wanted)
            s.waiters.append(waiter)
        }
        guard waiter.done.wait(timeout: .now() + timeout) == .success else { return nil }
        let f = waiter.frame.load(ordering: .acquiring)
        return f >= 0 ? f : nil
    }

    /// Processes `frame` (of `format`) with the current settings, on the capture thread.
    /// Returns the frame itself when there is nothing to do, a new frame in a buffer of its
    /// own pool otherwise, or nil when that pool has no free buffer (the caller drops the
    /// frame as `outOfBuffers`).
    public func process(_ frame: SourceFrame, format: SourceFormat) -> SourceFrame? {
        let (settings, waiters) = state.withLock { s -> (PictureSettings, [Waiter]) in
            let w = s.waiters
            s.waiters = []
            return (s.wanted, w)
        }
        for w in waiters {
            w.frame.store(frame.index, ordering: .releasing)
            w.done.signal()
        }
        guard !settings.isIdentity, Self.supports(format.pixelFormat), frame.lease.buffer.size == format.size else { return frame }
        return work.withLock { w -> SourceFrame? in
            guard let pool = w.pool, w.poolSize == format.size, w.poolFormat == format.pixelFormat else { return frame }
            guard let out = pool.lease() else { return nil }
            prepareMaps(&w, zoom: settings.croppingZoom, centre: settings.centre, shift: settings.shift,
                        subpixel: settings.marginZoom != 1, size: format.size)
            render(frame.lease.buffer, into: out.buffer, settings: settings, work: w)
            if case .lut(let lut) = settings.effect { lut.yuvTable.apply(to: out.buffer) }
            return SourceFrame(lease: out, index: frame.index, pts: frame.pts, rate: frame.rate)
        }
    }

    /// The crop digital zoom `zoom` keeps of a picture of `size`: around `centre` (the middle
    /// by default), moved inside the picture where it would leave it, even-aligned.
    public static func zoomCrop(_ zoom: Double, centre: PicturePoint = PicturePoint(x: 0.5, y: 0.5), in size: Size) -> CropRect {
        let z = min(max(zoom, 1), 4)
        let w = max(2, Int((Double(size.width) / z).rounded()) & ~1)
        let h = max(2, Int((Double(size.height) / z).rounded()) & ~1)
        let x = Int((centre.x * Double(size.width) - Double(w) / 2).rounded()), y = Int((centre.y * Double(size.height) - Double(h) / 2).rounded())
        return CropRect(x: min(max(0, x), size.width - w) & ~1, y: min(max(0, y), size.height - h) & ~1, width: w, height: h)
    }

    /// Changes the settings from the next frame on without waiting (Center Stage, on the
    /// capture thread, before the frame it steers). The adjustments' buffers must exist: a
    /// `change` made them (the first change allocates them off the capture thread).
    public func set(_ edit: (inout PictureSettings) -> Void) {
        state.withLock { edit(&$0.wanted) }
    }

    /// `subpixel`: sample at fractional positions even without a shift (stabilisation on: the
    /// picture does not jump by half a pixel when its correction passes through 0).
    private func prepareMaps(_ w: inout Work, zoom: Double, centre: PicturePoint, shift: PicturePoint, subpixel: Bool, size: Size) {
        if let m = w.mapsFor, m.zoom == zoom, m.centre == centre, m.shift == shift, m.subpixel == subpixel, m.size == size { return }
        let c = Self.zoomCrop(zoom, centre: centre, in: size)
        let cw = size.width / 2, ch = size.height / 2
        if shift.x == 0 && shift.y == 0 && !subpixel {
            w.columns = (0..<size.width).map { c.x + $0 * c.width / size.width }
            w.rows = (0..<size.height).map { c.y + $0 * c.height / size.height }
            w.chromaColumns = (0..<cw).map { c.x / 2 + $0 * (c.width / 2) / cw }
            w.chromaRows = (0..<ch).map { c.y / 2 + $0 * (c.height / 2) / ch }
        } else {
            // The part moved by a fraction of a pixel: each output sample takes the nearest
            // source sample to where it falls, so the picture moves by the fraction on average.
            let x0 = min(max(0, Double(c.x) + shift.x), Double(size.width - c.width))
            let y0 = min(max(0, Double(c.y) + shift.y), Double(size.height - c.height))
            // Every frame while stabilising: the maps are refilled in place, not reallocated.
            func fill(_ map: inout [Int], _ count: Int, origin: Double, span: Int, limit: Int) {
                if map.count != count { map = [Int](repeating: 0, count: count) }
                let step = Double(span) / Double(count)
                for i in 0..<count { map[i] = min(limit - 1, Int(origin + (Double(i) + 0.5) * step)) }
            }
            fill(&w.columns, size.width, origin: x0, span: c.width, limit: size.width)
            fill(&w.rows, size.height, origin: y0, span: c.height, limit: size.height)
            fill(&w.chromaColumns, cw, origin: x0 / 2, span: c.width / 2, limit: cw)
            fill(&w.chromaRows, ch, origin: y0 / 2, span: c.height / 2, limit: ch)
        }
        w.mapsFor = (zoom, centre, shift, subpixel, size)
    }

    /// The luma table for a bias of `stops`: video range kept (16…235), identity at 0.
    static func lumaTable(_ stops: Double) -> [UInt8] {
        let offset = Int((stops * Double(lumaPerStop)).rounded())
        return (0..<256).map { v in offset == 0 ? UInt8(v) : UInt8(min(235, max(16, v + offset))) }
    }

    private func render(_ src: PixelBuffer, into dst: PixelBuffer, settings: PictureSettings, work w: Work) {
        let lut = Self.lumaTable(settings.exposureBias)
        let gray = settings.effect == .grayscale
        let width = src.size.width, height = src.size.height
        lut.withUnsafeBufferPointer { lut in
        w.columns.withUnsafeBufferPointer { cols in
        w.chromaColumns.withUnsafeBufferPointer { ccols in
            switch src.format {
            case .yuyv422:
                // Packed Y0 U Y1 V: luma at 2x, each pair's chroma from the source pair of its first pixel.
                let (s, ss) = src.plane(0), (d, ds) = dst.plane(0)
                for row in 0..<height {
                    let sr = s + w.rows[row] * ss, dr = d + row * ds
                    var x = 0
                    while x < width {
                        dr[2 * x] = lut[Int(sr[2 * cols[x]])]
                        dr[2 * x + 2] = lut[Int(sr[2 * cols[x + 1]])]
                        let pair = (cols[x] & ~1) * 2
                        dr[2 * x + 1] = gray ? 128 : sr[pair + 1]
                        dr[2 * x + 3] = gray ? 128 : sr[pair + 3]
                        x += 2
                    }
                }
            default:
                let (s, ss) = src.plane(0), (d, ds) = dst.plane(0)
                for row in 0..<height {
                    let sr = s + w.rows[row] * ss, dr = d + row * ds
                    for x in 0..<width { dr[x] = lut[Int(sr[cols[x]])] }
                }
                let planes = src.format == .nv12 ? [1] : [1, 2]
                let cw = width / 2
                for p in planes {
                    let (s, ss) = src.plane(p), (d, ds) = dst.plane(p)
                    for row in 0..<(height / 2) {
                        let dr = d + row * ds
                        let bytes = src.format == .nv12 ? 2 * cw : cw
                        if gray { dr.update(repeating: 128, count: bytes); continue }
                        let sr = s + w.chromaRows[row] * ss
                        if src.format == .nv12 {
                            for x in 0..<cw { dr[2 * x] = sr[2 * ccols[x]]; dr[2 * x + 1] = sr[2 * ccols[x] + 1] }
                        } else {
                            for x in 0..<cw { dr[x] = sr[ccols[x]] }
                        }
                    }
                }
            }
        }
        }
        }
    }
}
