import ReelCapture
import ReelWriter
import ReelCore

// `--source` syntax belongs to `reel`: the library takes a typed `SourceSpec`.
extension SourceSpec {
    /// Parses `synthetic`, `synthetic:SIZE` or `v4l2:/dev/videoN[:WxH][@FPS][:FOURCC]` (the
    /// `--source` option); throws a usage error (exit 64) for anything else.
    init(parsing text: String) throws(UsageError) {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        switch parts.first {
        case "synthetic":
            if parts.count == 1 { self = .synthetic(size: SyntheticSource.defaultSize); return }
            guard let n = Int(parts[1]) else { throw UsageError("--source synthetic:SIZE needs a number, not '\(parts[1])'") }
            self = .synthetic(size: n)
        case "v4l2":
            guard parts.count == 2 else { throw UsageError("--source v4l2 needs a device: v4l2:/dev/video0[:WxH][@FPS][:FOURCC]") }
            let fields = parts[1].split(separator: ":").map(String.init)
            guard let path = fields.first, path.hasPrefix("/") else { throw UsageError("--source v4l2:PATH needs a device path like /dev/video0") }
            var size: Size? = nil, fps: Int? = nil, fourcc: String? = nil
            for f in fields.dropFirst() {
                var mode = f
                if let at = f.firstIndex(of: "@") {
                    guard let n = Int(f[f.index(after: at)...]), (1...240).contains(n) else {
                        throw UsageError("--source: '\(f)' needs a frame rate from 1 to 240 after @")
                    }
                    fps = n
                    mode = String(f[..<at])
                }
                if mode.isEmpty { continue }
                let wh = mode.lowercased().split(separator: "x")
                if wh.count == 2, let w = Int(wh[0]), let h = Int(wh[1]) {
                    guard (1...16384).contains(w), (1...16384).contains(h) else { throw UsageError("--source: '\(f)' needs a width and height from 1 to 16384") }
                    size = Size(width: w, height: h)
                } else if mode.count == 4, mode.allSatisfy({ $0.isLetter || $0.isNumber }) {
                    fourcc = mode.uppercased()
                } else {
                    throw UsageError("--source: '\(f)' is not WxH, @FPS or a FOURCC (YUYV, NV12, MJPG)")
                }
            }
            self = .v4l2(path: path, size: size, fps: fps, fourcc: fourcc)
        default:
            throw UsageError("unknown source '\(text)' (use synthetic[:SIZE] or v4l2:/dev/videoN[:WxH][@FPS][:FOURCC])")
        }
    }
}

/// `--scene pattern|realistic|people` (any case).
func parseScene(_ text: String) throws -> SyntheticScene {
    guard let scene = SyntheticScene(rawValue: text.lowercased()) else {
        throw UsageError("--scene: unknown scene '\(printable(text))' (use pattern, realistic or people)")
    }
    return scene
}
