/// The frame-index barcode every Reel test pattern carries: 24 bits of frame index and an
/// 8-bit CRC, as an 8×4 grid of 32-pixel cells (256×128 pixels) centred on the frame.
///
/// The grid sits inside the centre square that every ratio crop keeps, and its cells are
/// large enough to survive lossy codecs at their default settings. The V4L2 emulation
/// (`scripts/fake-v4l2.d/fakev4l2.c`) draws the same layout in C.
public enum FrameBarcode {
    /// Side of one square cell, in pixels.
    public static let cell = 32
    /// Cells per row: 8 bits each.
    public static let columns = 8
    /// Rows of cells: 4, for 32 bits.
    public static let rows = 4
    /// Width of the grid in pixels (256).
    public static let width = cell * columns
    /// Height of the grid in pixels (128).
    public static let height = cell * rows
    /// Luma of a 0 bit (video-range black).
    public static let dark: UInt8 = 16
    /// Luma of a 1 bit (video-range white).
    public static let bright: UInt8 = 235
    /// The largest index the barcode can carry.
    public static let maxIndex = (1 << 24) - 1

    /// CRC-8 (polynomial 0x07, initial value 0xFF, so that an all-dark or all-bright
    /// picture never reads as a valid index) of the three index bytes.
    public static func crc8(_ value: UInt32) -> UInt8 {
        var crc: UInt8 = 0xFF
        for shift in [16, 8, 0] {
            crc ^= UInt8(truncatingIfNeeded: value >> UInt32(shift))
            for _ in 0..<8 { crc = (crc & 0x80) != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        }
        return crc
    }

    /// The 32 bits drawn for `index`, most significant first: index then CRC.
    public static func word(for index: Int) -> UInt32 {
        let v = UInt32(index & maxIndex)
        return (v << 8) | UInt32(crc8(v))
    }

    /// Draws the barcode for `index` into an 8-bit luma plane, centred on (`centerX`, `centerY`).
    public static func draw(index: Int, luma: UnsafeMutablePointer<UInt8>, stride: Int, centerX: Int, centerY: Int) {
        let word = word(for: index)
        let x0 = centerX - width / 2
        let y0 = centerY - height / 2
        for bit in 0..<32 {
            let value = (word >> UInt32(31 - bit)) & 1 == 1 ? bright : dark
            let cx = x0 + (bit % columns) * cell
            let cy = y0 + (bit / columns) * cell
            for y in cy..<(cy + cell) {
                (luma + y * stride + cx).update(repeating: value, count: cell)
            }
        }
    }

    /// Reads the index back from a luma plane whose centre is the sensor's centre, or nil
    /// when the grid is not there (no contrast, or the CRC does not match).
    public static func read(_ plane: LumaPlane) -> Int? {
        read(plane, displayQuarterTurns: 0)
    }

    /// Reads the index back from a picture stored turned: `displayQuarterTurns` × 90°
    /// clockwise is what shows it upright (a video's display matrix, a photo's EXIF
    /// Orientation), so the barcode is looked for in the picture as displayed.
    public static func read(_ plane: LumaPlane, displayQuarterTurns: Int) -> Int? {
        let turns = ((displayQuarterTurns % 4) + 4) % 4
        let w = plane.width, h = plane.height
        // The displayed picture's size, and where its (x, y) lies in the stored one.
        let (dw, dh) = turns % 2 == 1 ? (h, w) : (w, h)
        func sample(_ x: Int, _ y: Int) -> Int {
            switch turns {
            case 1: return plane.sample(x: y, y: h - 1 - x)
            case 2: return plane.sample(x: w - 1 - x, y: h - 1 - y)
            case 3: return plane.sample(x: w - 1 - y, y: x)
            default: return plane.sample(x: x, y: y)
            }
        }
        let x0 = dw / 2 - width / 2
        let y0 = dh / 2 - height / 2
        guard x0 >= 0, y0 >= 0 else { return nil }
        var means = [Int](repeating: 0, count: 32)
        let inset = cell / 4
        let span = cell - 2 * inset
        for bit in 0..<32 {
            let cx = x0 + (bit % columns) * cell + inset
            let cy = y0 + (bit / columns) * cell + inset
            var sum = 0
            for y in cy..<(cy + span) {
                for x in cx..<(cx + span) { sum += sample(x, y) }
            }
            means[bit] = sum / (span * span)
        }
        let threshold = (Int(dark) + Int(bright)) / 2
        var word: UInt32 = 0
        for bit in 0..<32 {
            let m = means[bit]
            // Samples in the middle band are ambiguous: refuse rather than guess.
            guard abs(m - threshold) > 30 else { return nil }
            word = (word << 1) | (m > threshold ? 1 : 0)
        }
        let index = word >> 8
        guard UInt8(word & 0xff) == crc8(index) else { return nil }
        return Int(index)
    }
}

/// A read-only view of a luma plane of 8 or 16 bits per sample.
public struct LumaPlane {
    /// The first sample of the top row.
    public let base: UnsafeRawPointer
    /// Bytes from one row to the next.
    public let stride: Int
    /// Width in samples.
    public let width: Int
    /// Height in rows.
    public let height: Int
    /// Bits of significance per sample (8, 10, 12, 16); samples over 8 bits are 16-bit little-endian.
    public let depth: Int

    /// A view of `height` rows of `width` samples at `base`, rows `stride` bytes apart; the memory must outlive the view.
    public init(base: UnsafeRawPointer, stride: Int, width: Int, height: Int, depth: Int) {
        self.base = base; self.stride = stride; self.width = width; self.height = height; self.depth = depth
    }

    /// The sample at (x, y), scaled to 0…255.
    @inline(__always)
    public func sample(x: Int, y: Int) -> Int {
        if depth <= 8 {
            return Int(base.load(fromByteOffset: y * stride + x, as: UInt8.self))
        }
        let v = Int(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: y * stride + 2 * x, as: UInt16.self)))
        return v >> (depth - 8)
    }
}
