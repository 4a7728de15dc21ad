import ReelCapture
import ReelCore
import Synchronization

/// The framing benchmark's baseline arm: the plain follow-the-box loop of the single-face
/// trackers (obs-face-tracker's, without its PID terms): each frame the window moves 1/8 of
/// the way to the largest face found — centred on it, zoomed to its head and shoulders with
/// 30 % to spare. No dead band, no motion, nobody else kept in. Not used by the camera: it is
/// what `CenterStage` is measured against (docs/framing.md).
public final class FollowTheBox: Sendable {
    private let sensor: Size
    private struct State {
        var target = CenterStage.Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.5))
        var current = CenterStage.Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.5))
    }
    private let state = Mutex(State())

    /// The loop on a square sensor of `sensor`.
    public init(sensor: Size) { self.sensor = sensor }

    /// A detection: the largest of `faces` (sensor pixels) becomes the target; none: the
    /// target stays.
    public func update(faces: [DetectedFace], ratio: AspectRatio) {
        guard let f = faces.max(by: { $0.box.width * $0.box.height < $1.box.width * $1.box.height })?.box else { return }
        let crop = ratio.crop(in: sensor)
        let zoom = min(CenterStage.maxZoom, max(1, min(Double(crop.width) / (Double(f.width) * 2 * 1.3),
                                                       Double(crop.height) / (Double(f.height) * 2.5 * 1.3))))
        let centre = PicturePoint(x: (Double(f.x) + Double(f.width) / 2) / Double(sensor.width),
                                  y: (Double(f.y) + Double(f.height) / 2) / Double(sensor.height))
        state.withLock { $0.target = CenterStage.Window(zoom: zoom, centre: centre) }
    }

    /// The window for the next frame: 1/8 of the way to the target.
    public func step() -> CenterStage.Window {
        state.withLock { s in
            let t = s.target
            s.current.zoom += (t.zoom - s.current.zoom) / 8
            s.current.centre.x += (t.centre.x - s.current.centre.x) / 8
            s.current.centre.y += (t.centre.y - s.current.centre.y) / 8
            return s.current
        }
    }
}
