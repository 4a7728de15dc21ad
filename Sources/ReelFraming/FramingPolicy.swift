import ReelCore

/// How the smart-framing monitor turns the faces of one detection into the framing it would
/// recommend (pure: the monitor adds the settling and the dead band).
///
/// - **The subjects** are the people looking at the camera (frontal faces); when nobody
///   does, the people in profile. Each face stands for its head and shoulders: 0.6 of its
///   width on either side, half its height above, twice its height below.
/// - **Auto Rotate** picks the orientation of the subjects' box: wider than tall (people side
///   by side) is landscape, taller than wide (one person) portrait.
/// - **Auto Zoom** picks the largest zoom whose window (the ratio's crop, then the centre
///   1/zoom of it) holds the subjects' box with `margin` to spare on every side.
/// Only enabled framings are chosen; without faces nothing is.
public struct FramingPolicy: Sendable {
    /// The sensor (square).
    public let sensor: Size
    /// Share of the window kept free around the subjects.
    public var margin = 0.04

    /// A policy for a sensor of `sensor`.
    public init(sensor: Size) { self.sensor = sensor }

    /// The head-and-shoulders box of the subjects among `faces` (sensor pixels), clipped to
    /// the sensor; nil without faces.
    public func subjects(_ faces: [DetectedFace]) -> CropRect? {
        let frontal = faces.filter { !$0.profile }
        let chosen = frontal.isEmpty ? faces : frontal
        guard !chosen.isEmpty else { return nil }
        var x0 = Int.max, y0 = Int.max, x1 = Int.min, y1 = Int.min
        for f in chosen {
            let b = f.box
            x0 = min(x0, b.x - b.width * 6 / 10); x1 = max(x1, b.x + b.width + b.width * 6 / 10)
            y0 = min(y0, b.y - b.height / 2); y1 = max(y1, b.y + b.height + b.height * 2)
        }
        x0 = max(0, x0); y0 = max(0, y0); x1 = min(sensor.width, x1); y1 = min(sensor.height, y1)
        return CropRect(x: x0, y: y0, width: max(0, x1 - x0), height: max(0, y1 - y0))
    }

    /// Whether `framing`'s window holds `box` with `extra` (a share of the window) more
    /// margin than `margin`.
    public func holds(_ framing: Framing, _ box: CropRect, extra: Double = 0) -> Bool {
        let w = framing.window(in: sensor)
        let m = margin + extra
        let mx = Int(Double(w.width) * m), my = Int(Double(w.height) * m)
        return w.x + mx <= box.x && w.y + my <= box.y && box.x + box.width <= w.x + w.width - mx && box.y + box.height <= w.y + w.height - my
    }

    /// The framing for `faces` among `enabled`, or nil (no faces, or nothing enabled).
    /// `current` is kept where a choice is free: its ratio when rotation is not enabled (no
    /// enabled framing of the other orientation), and a zoom-in must clear `zoomInMargin`
    /// more margin than staying (a dead band against breathing).
    public func choose(faces: [DetectedFace], enabled: [Framing], current: Framing, zoomInMargin: Double = 0.06) -> Framing? {
        guard !enabled.isEmpty, let box = subjects(faces) else { return nil }
        let wantPortrait = box.height > box.width
        let ratios = Set(enabled.map(\.ratio))
        let fitting = ratios.filter { isPortrait($0) == wantPortrait }
        let ratio: AspectRatio
        if ratios.contains(current.ratio) && (fitting.isEmpty || fitting.contains(current.ratio)) {
            ratio = current.ratio
        } else if let r = fitting.sorted(by: { $0.rawValue < $1.rawValue }).first {
            ratio = r
        } else if let r = ratios.sorted(by: { $0.rawValue < $1.rawValue }).first {
            ratio = r
        } else { return nil }
        let zooms = enabled.filter { $0.ratio == ratio }.map(\.zoom).sorted()
        var best = zooms.first ?? 1
        for z in zooms {
            let f = Framing(ratio: ratio, zoom: z)
            // Zooming in past where the current framing stands needs the dead band's margin.
            let extra = (ratio == current.ratio && z > current.zoom) ? zoomInMargin : 0
            if holds(f, box, extra: extra) { best = z }
        }
        return Framing(ratio: ratio, zoom: best)
    }

    private func isPortrait(_ r: AspectRatio) -> Bool { r.components.height > r.components.width }
}
