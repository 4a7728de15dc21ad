import Foundation
import ReelCore
import Testing

/// The preview's `/status` as JSON (nil while it does not answer).
private func pageStatus(_ port: UInt16) -> [String: Any]? { previewStatus(previewBase(port), seconds: 5) }

/// An RGB colour, each channel 0…1.
private typealias RGB = (r: Double, g: Double, b: Double)

/// BT.709 video range, written out here (independent of Reel's `BT709`): the colour of 8-bit Y, U, V.
private func rgb(y: Double, u: Double, v: Double) -> RGB {
    let l = (y - 16) / 219, cb = (u - 128) / 224, cr = (v - 128) / 224
    return (l + 1.5748 * cr, l - 0.1873 * cb - 0.4681 * cr, l + 1.8556 * cb)
}

private func clamp(_ v: Double) -> Double { min(1, max(0, v)) }

/// Each effect's formula as the documentation (docs/controls.md) states it.
private let formulas: [String: @Sendable (RGB) -> RGB] = [
    "none": { $0 },
    "sepia": { c in (clamp(0.393 * c.r + 0.769 * c.g + 0.189 * c.b), clamp(0.349 * c.r + 0.686 * c.g + 0.168 * c.b),
                     clamp(0.272 * c.r + 0.534 * c.g + 0.131 * c.b)) },
    "cool": { c in (pow(clamp(c.r), 1.15), clamp(c.g), pow(clamp(c.b), 0.87)) },
    "warm": { c in (pow(clamp(c.r), 0.87), clamp(c.g), pow(clamp(c.b), 1.15)) },
    "identity": { c in (clamp(c.r), clamp(c.g), clamp(c.b)) },
    "swaprb": { c in (clamp(c.b), clamp(c.g), clamp(c.r)) },
]

/// A `.cube` file of size 2 whose corner (r, g, b) holds `map(r, g, b)`, red fastest.
private func writeCube(_ path: String, title: String, _ map: (Int, Int, Int) -> (Int, Int, Int)) throws {
    var text = "# written by ColorLUTTests\nTITLE \"\(title)\"\nLUT_3D_SIZE 2\nDOMAIN_MIN 0.0 0.0 0.0\nDOMAIN_MAX 1.0 1.0 1.0\n\n"
    for b in 0...1 { for g in 0...1 { for r in 0...1 {
        let o = map(r, g, b)
        text += "\(Double(o.0)) \(Double(o.1)) \(Double(o.2))\n"
    } } }
    try text.write(toFile: path, atomically: true, encoding: .utf8)
}

extension DecodedYUV {
    /// The mean colour of the rectangle (x, y even; w, h even), and the spread of its luma.
    func meanRGB(x: Int, y top: Int, width w: Int, height h: Int) -> (rgb: (r: Double, g: Double, b: Double), lumaSpread: Int) {
        var sy = 0, su = 0, sv = 0, lo = 255, hi = 0
        for r in top..<(top + h) { for c in x..<(x + w) {
            let l = Int(y[r * width + c]); sy += l; lo = min(lo, l); hi = max(hi, l)
        } }
        let cw = width / 2
        for r in (top / 2)..<((top + h) / 2) { for c in (x / 2)..<((x + w) / 2) {
            su += Int(u[r * cw + c]); sv += Int(v[r * cw + c])
        } }
        let n = Double(w * h), cn = Double(w * h / 4)
        let c = rgb(y: Double(sy) / n, u: Double(su) / cn, v: Double(sv) / cn)
        return ((c.r, c.g, c.b), hi - lo)
    }
}

/// Colour LUTs in the effect picker (issue 14): the built-in `sepia`, `cool`, `warm` and
/// `.cube` files given with `--lut`, applied to the picture from the frame the summary states,
/// checked on clips decoded by ffmpeg.
@Suite struct ColorLUTTests {
    /// Flat patches of the synthetic sensor's 1280×720 (16x9) picture away from the barcode,
    /// digits and LEDs: the background's bluish top-left and reddish-blue top-right, its
    /// bottom-left, and the neutral dark panel below the barcode.
    static let patches: [(name: String, x: Int, y: Int)] = [("top left", 40, 40), ("top right", 1200, 40), ("bottom left", 40, 660), ("panel", 330, 600)]
    /// Per channel, in 0…255 RGB: the 8-bit YUV the LUT's output is stored in (±0.5 in Y, U,
    /// V: up to ±1.5 in R or B) and the 17³ lattice's interpolation (under 0.5).
    static let tolerance = 3.0

    /// One recording (FFV1, lossless, so the decoded pixels are Reel's): `reel control effect`
    /// sets `sepia`, `cool`, `warm`, then the `--lut` files `identity` and `swaprb` (a .cube
    /// that swaps red and blue), each a dozen frames after the last. Every frame's patches have
    /// the colour the formula of the effect in force at its index (by the summary's
    /// `controlChanges` frameIndex) gives for the same patch before any effect, within ±3 per
    /// channel — for the identity LUT within ±2; every frame's barcode reads back its index;
    /// the page's `/status` and `reel control status` show the effect's title.
    @Test func eachEffectChangesTheColoursFromTheStatedFrame() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        try writeCube(dir + "/identity.cube", title: "identity") { r, g, b in (r, g, b) }
        try writeCube(dir + "/swaprb.cube", title: "swap red and blue") { r, g, b in (b, g, r) }
        let socket = dir + "/control.sock"
        let port = try freePort()
        // Until SIGINT (an hour at most): every check below runs while it records, however loaded the machine.
        let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--duration", "3600", "--codec", "ffv1", "--container", "mkv",
                              "--source", "synthetic:1280", "--control-socket", socket, "--preview", "127.0.0.1:\(port)",
                              "--lut", dir + "/identity.cube", "--lut", dir + "/swaprb.cube"])
        var stopped = false
        defer { if !stopped { rec.signal(SIGINT); _ = rec.wait() } }
        #expect(try waitUntilListening(socket))
        let titles = try reel(["control", "--socket", socket, "status"])
        #expect(titles.stdout.contains("\"titles\":[\"none\",\"grayscale\",\"sepia\",\"cool\",\"warm\",\"identity\",\"swaprb\"]"), "\(titles.stdout)")
        try #require(waitForFrame(socket, atLeast: 10) != nil, "the recording never captured 10 frames")
        let order = ["sepia", "cool", "warm", "identity", "swaprb"]
        for effect in order {
            let r = try reel(["control", "--socket", socket, "effect", effect])
            #expect(r.status == 0 && r.stdout.contains("\"title\":\"\(effect)\""), "\(effect): \(r.stdout) \(r.stderr)")
            try #require(waitForFramesAfterNow(socket, 12) != nil, "the recording stalled after \(effect)")
            let page = try #require(pageStatus(port))
            #expect(page["effect"] as? String == effect, "the page's status after \(effect): \(page)")
        }
        let status = try reel(["control", "--socket", socket, "status"])
        #expect(status.stdout.contains("\"title\":\"swaprb\""), "\(status.stdout)")
        rec.signal(SIGINT)
        let run = rec.wait()
        stopped = true
        #expect(run.status == 0, "\(run.stderr)")
        let summary = try run.decode(PictureSummaryJSON.self)
        try #require(summary.controlChanges.map { $0.title ?? "" } == order, "\(summary.controlChanges)")
        let starts = try summary.controlChanges.map { try #require($0.frameIndex) }
        #expect(starts == starts.sorted() && Set(starts).count == starts.count, "\(starts)")
        let clip = try #require(summary.clips.first)
        #expect(summary.clips.count == 1 && clip.width == 1280 && clip.height == 720)
        let indices = try frameIndices(of: clip)
        try #require(indices.count == clip.frames)

        var reference: [RGB]? = nil
        var position = 0
        var checked: [String: Int] = [:]
        try forEachDecodedYUV(clip.path, width: 1280, height: 720) { f in
            guard position < indices.count else { return }
            let index = indices[position]
            position += 1
            #expect(f.barcodeAsIs == index, "frame \(index): the barcode does not read back")
            let phase = Array(zip(order, starts)).last { $0.1 <= index }?.0 ?? "none"
            let means = Self.patches.map { f.meanRGB(x: $0.x, y: $0.y, width: 32, height: 32) }
            if reference == nil {
                try #require(phase == "none", "the first frame \(index) already shows an effect")
                for (p, m) in zip(Self.patches, means) { #expect(m.lumaSpread <= 4, "patch \(p.name) is not flat: luma spread \(m.lumaSpread)") }
                reference = means.map(\.rgb)
            }
            let tolerance = phase == "identity" ? 2.0 : Self.tolerance
            for (k, p) in Self.patches.enumerated() {
                let want = formulas[phase]!(reference![k])
                let got = means[k].rgb
                let diff = [abs(want.r - got.r), abs(want.g - got.g), abs(want.b - got.b)].map { $0 * 255 }
                #expect(diff.allSatisfy { $0 <= tolerance },
                        "frame \(index) (\(phase) from frame \(zip(order, starts).first { $0.0 == phase }?.1 ?? 0)), patch \(p.name): RGB \(rgb255(got)), the formula gives \(rgb255(want))")
            }
            checked[phase, default: 0] += 1
        }
        for phase in ["none"] + order { #expect(checked[phase, default: 0] >= 5, "only \(checked[phase, default: 0]) frames show \(phase)") }
    }

    /// A `.cube` file that is missing (or a device, a directory) ends `reel record` with 66, a malformed one with 65, each
    /// with one `reel: ` line naming the file (and the line), before anything is recorded.
    @Test func missingAndMalformedCubeFilesAreRefused() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let base = ["record", "--plain", "--out", dir + "/out", "--frames", "3", "--codec", "h264", "--source", "synthetic:1280"]
        let missing = try reel(base + ["--lut", dir + "/nothing.cube"])
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(missing.stderr == "reel: --lut: no file \(dir)/nothing.cube\n", "\(missing.stderr)")
        // A device or a directory is no LUT: refused at once (a device is never read from).
        for path in ["/dev/zero", dir] {
            let r = try reel(base + ["--lut", path])
            #expect(r.status == 66 && r.stderr == "reel: --lut: \(path) is not a regular file\n", "\(path): \(r.status) \(r.stderr)")
        }

        let cases: [(name: String, text: String, line: Int, says: String)] = [
            ("short", "LUT_3D_SIZE 2\n0 0 0\n1 0 0\n0 1\n", 4, "a colour line needs three numbers"),
            ("count", "TITLE \"x\"\nLUT_3D_SIZE 2\n0 0 0\n1 0 0\n", 4, "2 colour lines, LUT_3D_SIZE 2 needs 8"),
            ("nosize", "# no size\n0 0 0\n", 2, "colour values before LUT_3D_SIZE"),
            ("keyword", "LUT_3D_SIZE 2\nGAMMA 2.2\n", 2, "unknown keyword 'GAMMA'"),
            ("size", "LUT_3D_SIZE 1\n", 1, "LUT_3D_SIZE needs a size from 2 to 256"),
            ("number", "LUT_3D_SIZE 2\n0 0 nan\n", 2, "a colour line needs three numbers"),
        ]
        for c in cases {
            let path = dir + "/\(c.name).cube"
            try c.text.write(toFile: path, atomically: true, encoding: .utf8)
            let r = try reel(base + ["--lut", path])
            #expect(r.status == 65, "\(c.name): \(r.status) \(r.stderr)")
            #expect(r.stderr == "reel: --lut: \(path):\(c.line): \(c.says)\n", "\(c.name): \(r.stderr)")
        }
        let clips = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/out")) ?? []
        #expect(clips.isEmpty, "nothing is recorded: \(clips)")
    }
}

private func rgb255(_ c: RGB) -> String {
    "(\(Int((c.r * 255).rounded())), \(Int((c.g * 255).rounded())), \(Int((c.b * 255).rounded())))"
}
