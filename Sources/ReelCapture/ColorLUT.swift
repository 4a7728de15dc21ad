import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// A colour look-up table: a 3D lattice of N×N×N RGB output colours over the RGB cube, looked
/// up by trilinear interpolation (what Resolve, Premiere and OCIO do with a `.cube` file).
///
/// Frames are YUV, so the LUT is applied through a YUV→YUV table made once per LUT (the first
/// time it is used, off the capture thread): for every luma value 0…255 and every chroma
/// lattice point (U and V in steps of 8, 33×33 points) the output Y′, U′, V′ of
/// YUV (BT.709, video range) → RGB (clamped to the LUT's domain) → trilinear LUT → YUV. Each
/// pixel is then one bilinear lookup in U, V at its exact luma (exact for a LUT that is
/// linear in RGB, such as the identity or a channel swap). Chroma shared by 2 (4:2:2) or 4
/// (4:2:0) pixels is looked up at their mean luma.
public final class ColorLUT: Sendable, Hashable, CustomStringConvertible {
    /// The picker's title: `sepia`, or a `.cube` file's name without `.cube`.
    public let title: String
    /// Lattice points per axis (2…256).
    public let size: Int
    /// N³ RGB triples, red fastest (the `.cube` order), each 0…1 after the domain.
    private let lattice: [Float]
    /// The input range mapped onto the lattice (`.cube` DOMAIN_MIN / DOMAIN_MAX).
    private let domainMin: (Float, Float, Float)
    private let domainMax: (Float, Float, Float)
    private let table = Mutex<YUVTable?>(nil)

    /// A LUT of `size`³ points whose point (r, g, b) (each 0…1) holds `formula(r, g, b)`.
    public init(title: String, size: Int = 17, formula: (Double, Double, Double) -> (Double, Double, Double)) {
        self.title = title
        self.size = size
        var l = [Float]()
        l.reserveCapacity(size * size * size * 3)
        let step = 1 / Double(size - 1)
        for b in 0..<size { for g in 0..<size { for r in 0..<size {
            let o = formula(Double(r) * step, Double(g) * step, Double(b) * step)
            l += [Float(o.0), Float(o.1), Float(o.2)]
        } } }
        lattice = l
        domainMin = (0, 0, 0)
        domainMax = (1, 1, 1)
    }

    private init(title: String, size: Int, lattice: [Float], domainMin: (Float, Float, Float), domainMax: (Float, Float, Float)) {
        self.title = title; self.size = size; self.lattice = lattice; self.domainMin = domainMin; self.domainMax = domainMax
    }

    /// `title`.
    public var description: String { title }
    /// LUTs are the same when they are the same object.
    public static func == (a: ColorLUT, b: ColorLUT) -> Bool { a === b }
    /// By identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    // MARK: Built-in LUTs

    /// Sepia: the W3C Filter Effects `sepia(1)` matrix, each output clamped to 0…1:
    /// R′ = .393R + .769G + .189B, G′ = .349R + .686G + .168B, B′ = .272R + .534G + .131B.
    /// Black stays black and white becomes (1, 1, .937): the frame barcode keeps its contrast.
    public static let sepia = ColorLUT(title: "sepia") { r, g, b in
        (min(1, 0.393 * r + 0.769 * g + 0.189 * b), min(1, 0.349 * r + 0.686 * g + 0.168 * b), min(1, 0.272 * r + 0.534 * g + 0.131 * b))
    }
    /// Cool: R′ = R^1.15, G′ = G, B′ = B^0.87 (blues lifted, reds lowered; black and white kept).
    public static let cool = ColorLUT(title: "cool") { r, g, b in (pow(r, 1.15), g, pow(b, 0.87)) }
    /// Warm: R′ = R^0.87, G′ = G, B′ = B^1.15 (reds lifted, blues lowered; black and white kept).
    public static let warm = ColorLUT(title: "warm") { r, g, b in (pow(r, 0.87), g, pow(b, 1.15)) }
    /// The built-in LUTs, in the picker's order.
    public static let builtIn: [ColorLUT] = [sepia, cool, warm]

    // MARK: .cube files

    /// Reads an Adobe/Resolve `.cube` file: `LUT_3D_SIZE N` (2…256), optional `TITLE "…"`,
    /// `DOMAIN_MIN r g b`, `DOMAIN_MAX r g b`, `#` comments and blank lines, then N³ lines of
    /// three numbers (R G B), red changing fastest. `title`: the picker's title (default: the
    /// file's name without `.cube`).
    /// - Throws: ``LUTFileError``: the file missing or unreadable (exit 66); malformed (65),
    ///   naming the file and the line.
    public static func load(cubeFile file: String, title: String? = nil) throws -> ColorLUT {
        let path = oneLine(file)   // as the messages show it
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
            throw LUTFileError("--lut: no file \(path)", exitStatus: ExitStatus.noInput)
        }
        // A regular file only: a device such as /dev/zero would be read forever.
        let attributes = try? FileManager.default.attributesOfItem(atPath: file)
        guard !isDirectory.boolValue, attributes?[.type] as? FileAttributeType == .typeRegular else {
            throw LUTFileError("--lut: \(path) is not a regular file", exitStatus: ExitStatus.noInput)
        }
        guard ((attributes?[.size] as? NSNumber)?.int64Value ?? 0) <= 64 << 20 else {
            throw LUTFileError("--lut: \(path) is over 64 MB: not a .cube LUT", exitStatus: ExitStatus.dataError)
        }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw LUTFileError("--lut: cannot read \(path)", exitStatus: ExitStatus.noInput)
        }
        guard data.count <= 64 << 20 else { throw LUTFileError("--lut: \(path) is over 64 MB: not a .cube LUT", exitStatus: ExitStatus.dataError) }
        guard let text = String(data: data, encoding: .utf8) else {
            throw LUTFileError("--lut: \(path) is not text (a .cube file is UTF-8)", exitStatus: ExitStatus.dataError)
        }
        func bad(_ line: Int, _ why: String) -> LUTFileError {
            LUTFileError("--lut: \(path):\(line): \(why)", exitStatus: ExitStatus.dataError)
        }
        func numbers(_ words: ArraySlice<Substring>, _ line: Int, _ what: String) throws -> (Float, Float, Float) {
            let v = words.compactMap { Float($0) }
            guard words.count == 3, v.count == 3, v.allSatisfy(\.isFinite) else { throw bad(line, "\(what) needs three numbers") }
            return (v[0], v[1], v[2])
        }
        var size: Int? = nil
        var lmin: (Float, Float, Float) = (0, 0, 0), lmax: (Float, Float, Float) = (1, 1, 1)
        var lattice: [Float] = []
        var lastLine = 0
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = i + 1
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let first = words.first else { continue }
            lastLine = line
            switch first {
            case "TITLE": continue
            case "LUT_3D_SIZE":
                guard size == nil else { throw bad(line, "a second LUT_3D_SIZE") }
                guard words.count == 2, let n = Int(words[1]), (2...256).contains(n) else { throw bad(line, "LUT_3D_SIZE needs a size from 2 to 256") }
                size = n
                lattice.reserveCapacity(n * n * n * 3)
            case "LUT_1D_SIZE": throw bad(line, "a 1D LUT (LUT_1D_SIZE); only 3D LUTs are taken")
            case "DOMAIN_MIN": lmin = try numbers(words.dropFirst(), line, "DOMAIN_MIN")
            case "DOMAIN_MAX": lmax = try numbers(words.dropFirst(), line, "DOMAIN_MAX")
            case "LUT_3D_INPUT_RANGE", "LUT_1D_INPUT_RANGE":
                guard words.count == 3, let a = Float(words[1]), let b = Float(words[2]), a.isFinite, b.isFinite else {
                    throw bad(line, "\(first) needs two numbers")
                }
                lmin = (a, a, a); lmax = (b, b, b)
            default:
                guard Float(first) != nil else { throw bad(line, "unknown keyword '\(oneLine(String(first.prefix(40))))'") }
                guard let n = size else { throw bad(line, "colour values before LUT_3D_SIZE") }
                let rgb = try numbers(words[...], line, "a colour line")
                guard lattice.count < n * n * n * 3 else { throw bad(line, "more than \(n * n * n) colour lines (LUT_3D_SIZE \(n))") }
                lattice += [rgb.0, rgb.1, rgb.2]
            }
        }
        guard let n = size else { throw bad(lastLine, "no LUT_3D_SIZE") }
        guard lattice.count == n * n * n * 3 else {
            throw bad(lastLine, "\(lattice.count / 3) colour lines, LUT_3D_SIZE \(n) needs \(n * n * n)")
        }
        guard lmax.0 > lmin.0, lmax.1 > lmin.1, lmax.2 > lmin.2 else { throw bad(lastLine, "DOMAIN_MAX must be above DOMAIN_MIN") }
        let name = title ?? {
            let base = (file as NSString).lastPathComponent
            return oneLine(base.lowercased().hasSuffix(".cube") ? String(base.dropLast(5)) : base)
        }()
        return ColorLUT(title: name, size: n, lattice: lattice, domainMin: lmin, domainMax: lmax)
    }

    /// `text` with control characters (newlines above all) escaped, for a one-line message.
    static func oneLine(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || (0x7f..<0xa0).contains(scalar.value) || scalar == "\u{2028}" || scalar == "\u{2029}" {
                out += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    // MARK: Lookup

    /// The LUT's output for `rgb` (each clamped to the domain first), by trilinear interpolation.
    public func lookup(_ r: Double, _ g: Double, _ b: Double) -> (Double, Double, Double) {
        let n = size - 1
        func coordinate(_ v: Double, _ lo: Float, _ hi: Float) -> (Int, Double) {
            let t = min(max((v - Double(lo)) / Double(hi - lo), 0), 1) * Double(n)
            let i = min(Int(t), n - 1)
            return (i, t - Double(i))
        }
        let (ri, rf) = coordinate(r, domainMin.0, domainMax.0)
        let (gi, gf) = coordinate(g, domainMin.1, domainMax.1)
        let (bi, bf) = coordinate(b, domainMin.2, domainMax.2)
        var out = (0.0, 0.0, 0.0)
        for db in 0...1 { for dg in 0...1 { for dr in 0...1 {
            let w = (dr == 1 ? rf : 1 - rf) * (dg == 1 ? gf : 1 - gf) * (db == 1 ? bf : 1 - bf)
            if w == 0 { continue }
            let k = (((bi + db) * size + gi + dg) * size + ri + dr) * 3
            out.0 += w * Double(lattice[k]); out.1 += w * Double(lattice[k + 1]); out.2 += w * Double(lattice[k + 2])
        } } }
        return out
    }

    /// The YUV→YUV table (made at the first call; later calls return it at once).
    public var yuvTable: YUVTable {
        table.withLock { t in
            if let t { return t }
            let made = YUVTable(self)
            t = made
            return made
        }
    }
}

/// Why a `--lut` file cannot be used: missing (exit 66) or malformed (65, with the line).
public struct LUTFileError: UserFacingError, Equatable {
    /// One line: the file, the line and what is wrong.
    public let description: String
    /// 66 or 65.
    public let exitStatus: Int32
    /// An error saying `description` with `exitStatus`.
    public init(_ description: String, exitStatus: Int32) { self.description = description; self.exitStatus = exitStatus }
}

/// BT.709 video-range YUV ↔ RGB (0…1), the conversions the LUT is applied between.
public enum BT709 {
    /// RGB (not clamped) of 8-bit video-range Y, U, V.
    public static func rgb(y: Double, u: Double, v: Double) -> (Double, Double, Double) {
        let l = (y - 16) / 219, cb = (u - 128) / 224, cr = (v - 128) / 224
        return (l + 1.5748 * cr, l - 0.187324 * cb - 0.468124 * cr, l + 1.8556 * cb)
    }
    /// 8-bit video-range Y, U, V (not rounded or clamped) of RGB.
    public static func yuv(r: Double, g: Double, b: Double) -> (Double, Double, Double) {
        let l = 0.2126 * r + 0.7152 * g + 0.0722 * b
        return (16 + 219 * l, 128 + 224 * (b - l) / 1.8556, 128 + 224 * (r - l) / 1.5748)
    }
}

/// A LUT as a YUV→YUV table: for each of 33×33 chroma lattice points (U, V = 0, 8, …, 256)
/// and each luma 0…255, the output luma and the output chroma pair (luma fastest, so the
/// pixels of one chroma cell read four runs of 256 bytes).
public struct YUVTable: Sendable {
    /// Chroma lattice points per axis.
    static let points = 33
    /// Output luma, indexed [u point][v point][y].
    let luma: [UInt8]
    /// Output U (low byte) and V (high byte), indexed as `luma`.
    let chroma: [UInt16]

    init(_ lut: ColorLUT) {
        let p = Self.points
        var luma = [UInt8](repeating: 0, count: 256 * p * p)
        var chroma = [UInt16](repeating: 0, count: 256 * p * p)
        func byte(_ v: Double) -> UInt8 { UInt8(min(255, max(0, v.rounded()))) }
        for ui in 0..<p { for vi in 0..<p { for y in 0..<256 {
            let (r, g, b) = BT709.rgb(y: Double(y), u: Double(ui * 8), v: Double(vi * 8))
            let o = lut.lookup(r, g, b)
            let (yy, uu, vv) = BT709.yuv(r: o.0, g: o.1, b: o.2)
            let k = (ui * p + vi) * 256 + y
            luma[k] = byte(yy)
            chroma[k] = UInt16(byte(uu)) | UInt16(byte(vv)) << 8
        } } }
        self.luma = luma
        self.chroma = chroma
    }

    /// Applies the table in place to `buffer` (yuv420p, NV12 or YUYV; others untouched).
    public func apply(to buffer: PixelBuffer) {
        let p = Self.points
        let width = buffer.size.width, height = buffer.size.height
        // Row offsets of the four lattice corners around (u, v): (u, v), (u, v+8), (u+8, v), (u+8, v+8).
        let ob = 256, oc = p * 256, od = (p + 1) * 256
        luma.withUnsafeBufferPointer { ltBuffer in
        chroma.withUnsafeBufferPointer { ctBuffer in
            let lt = ltBuffer.baseAddress!, ct = ctBuffer.baseAddress!
            switch buffer.format {
            case .yuyv422:
                let (s, stride) = buffer.plane(0)
                for row in 0..<height {
                    let r = s + row * stride
                    var x = 0
                    while x + 1 < width {
                        let o = 2 * x
                        let u = Int(r[o + 1]), v = Int(r[o + 3])
                        let fu = u & 7, fv = v & 7
                        let wa = (8 - fu) * (8 - fv), wb = (8 - fu) * fv, wc = fu * (8 - fv), wd = fu * fv
                        let cell = ((u >> 3) * p + (v >> 3)) * 256
                        let l = lt + cell, c = ct + cell
                        let y0 = Int(r[o]), y1 = Int(r[o + 2])
                        r[o] = UInt8(truncatingIfNeeded: (Int(l[y0]) * wa + Int(l[y0 + ob]) * wb + Int(l[y0 + oc]) * wc + Int(l[y0 + od]) * wd + 32) >> 6)
                        r[o + 2] = UInt8(truncatingIfNeeded: (Int(l[y1]) * wa + Int(l[y1 + ob]) * wb + Int(l[y1 + oc]) * wc + Int(l[y1 + od]) * wd + 32) >> 6)
                        let m = (y0 + y1 + 1) >> 1
                        let a = Int(c[m]), b = Int(c[m + ob]), cc = Int(c[m + oc]), d = Int(c[m + od])
                        r[o + 1] = UInt8(truncatingIfNeeded: ((a & 255) * wa + (b & 255) * wb + (cc & 255) * wc + (d & 255) * wd + 32) >> 6)
                        r[o + 3] = UInt8(truncatingIfNeeded: ((a >> 8) * wa + (b >> 8) * wb + (cc >> 8) * wc + (d >> 8) * wd + 32) >> 6)
                        x += 2
                    }
                }
            case .yuv420p, .nv12:
                let (ys, yStride) = buffer.plane(0)
                let nv12 = buffer.format == .nv12
                let (us, uStride) = buffer.plane(1)
                let (vs, vStride) = nv12 ? buffer.plane(1) : buffer.plane(2)
                let step = nv12 ? 2 : 1, vOffset = nv12 ? 1 : 0
                for crow in 0..<(height / 2) {
                    let r0 = ys + 2 * crow * yStride, r1 = r0 + yStride
                    let ur = us + crow * uStride, vr = vs + crow * vStride + vOffset
                    for cx in 0..<(width / 2) {
                        let ci = cx * step
                        let u = Int(ur[ci]), v = Int(vr[ci])
                        let fu = u & 7, fv = v & 7
                        let wa = (8 - fu) * (8 - fv), wb = (8 - fu) * fv, wc = fu * (8 - fv), wd = fu * fv
                        let cell = ((u >> 3) * p + (v >> 3)) * 256
                        let l = lt + cell, c = ct + cell
                        let x = 2 * cx
                        let y0 = Int(r0[x]), y1 = Int(r0[x + 1]), y2 = Int(r1[x]), y3 = Int(r1[x + 1])
                        r0[x] = UInt8(truncatingIfNeeded: (Int(l[y0]) * wa + Int(l[y0 + ob]) * wb + Int(l[y0 + oc]) * wc + Int(l[y0 + od]) * wd + 32) >> 6)
                        r0[x + 1] = UInt8(truncatingIfNeeded: (Int(l[y1]) * wa + Int(l[y1 + ob]) * wb + Int(l[y1 + oc]) * wc + Int(l[y1 + od]) * wd + 32) >> 6)
                        r1[x] = UInt8(truncatingIfNeeded: (Int(l[y2]) * wa + Int(l[y2 + ob]) * wb + Int(l[y2 + oc]) * wc + Int(l[y2 + od]) * wd + 32) >> 6)
                        r1[x + 1] = UInt8(truncatingIfNeeded: (Int(l[y3]) * wa + Int(l[y3 + ob]) * wb + Int(l[y3 + oc]) * wc + Int(l[y3 + od]) * wd + 32) >> 6)
                        let m = (y0 + y1 + y2 + y3 + 2) >> 2
                        let a = Int(c[m]), b = Int(c[m + ob]), cc = Int(c[m + oc]), d = Int(c[m + od])
                        ur[ci] = UInt8(truncatingIfNeeded: ((a & 255) * wa + (b & 255) * wb + (cc & 255) * wc + (d & 255) * wd + 32) >> 6)
                        vr[ci] = UInt8(truncatingIfNeeded: ((a >> 8) * wa + (b >> 8) * wb + (cc >> 8) * wc + (d >> 8) * wd + 32) >> 6)
                    }
                }
            default: break
            }
        }
        }
    }
}
