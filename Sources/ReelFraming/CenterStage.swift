import Foundation
import ReelCapture
import ReelCore
import Synchronization

/// Center Stage for video: a crop window — a pan and a zoom within the square sensor — that
/// follows the people found and keeps them in the picture, the main face (the largest) as
/// near the middle as the others allow.
///
/// Detections set a target (`update`); every frame steps the window towards it (`step`),
/// position and size smoothed apart (position in about half a second, size in about a
/// second). A dead band keeps the target while the people stay well inside the window and the
/// zoom they want is within 20 % of the zoom in force: a still subject gets a still frame.
/// Nobody found for 3 s: the window goes back to the whole picture.
public final class CenterStage: Sendable {
    /// Who may steer the zoom (Apple's `AVCaptureDevice.CenterStageControlMode`).
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// Center Stage steers; the user's own zoom takes precedence while it is not 1.
        case cooperative
        /// Center Stage alone steers the zoom (the zoom control is disabled).
        case app
    }

    /// A change of the window's target, as the summary lists it.
    public struct Move: Sendable, Hashable, Codable {
        /// The frame of the detection that moved it.
        public var frame: Int
        /// The target zoom and centre (shares of the sensor's side).
        public var zoom: Double, x: Double, y: Double
    }

    /// The window in force: zoom and centre.
    public struct Window: Sendable, Hashable {
        /// Zoom factor (1: the whole sensor).
        public var zoom: Double
        /// Centre, in shares of the sensor's width and height.
        public var centre: PicturePoint
        /// A window of `zoom` around `centre`.
        public init(zoom: Double, centre: PicturePoint) { self.zoom = zoom; self.centre = centre }
    }

    /// The most it zooms in.
    public static let maxZoom = 3.0
    /// Frames without faces before the window goes back to the whole picture.
    public static let emptyHold = 90

    private let sensor: Size
    private struct State {
        var target = Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.5))
        var current = Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.5))
        var lastFaces = -1
        var moves: [Move] = []
    }
    private let state = Mutex(State())

    /// Center Stage on a square sensor of `sensor`.
    public init(sensor: Size) { self.sensor = sensor }

    /// The part of the sensor a window shows through `ratio` (the zoom's square part, then
    /// the ratio's crop of it), in sensor pixels.
    public static func picture(_ w: Window, ratio: AspectRatio, sensor: Size) -> CropRect {
        let square = ImageAdjustments.zoomCrop(w.zoom, centre: w.centre, in: sensor)
        let c = ratio.crop(in: sensor)
        let pw = Int(Double(c.width) / w.zoom), ph = Int(Double(c.height) / w.zoom)
        return CropRect(x: square.x + (square.width - pw) / 2, y: square.y + (square.height - ph) / 2, width: pw, height: ph)
    }

    /// A detection: `faces` (sensor pixels) in frame `frame`, the session at `ratio`.
    public func update(faces: [DetectedFace], frame: Int, ratio: AspectRatio) {
        let side = Double(sensor.width)
        state.withLock { s in
            guard !faces.isEmpty else {
                if s.lastFaces >= 0, frame - s.lastFaces >= Self.emptyHold, s.target.zoom != 1 {
                    s.target = Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.5))
                    s.moves.append(Move(frame: frame, zoom: 1, x: 0.5, y: 0.5))
                }
                return
            }
            s.lastFaces = frame
            // Everyone's head and shoulders; the main face is the largest.
            var x0 = Int.max, y0 = Int.max, x1 = Int.min, y1 = Int.min
            for f in faces {
                let b = f.box
                x0 = min(x0, b.x - b.width / 2); x1 = max(x1, b.x + b.width + b.width / 2)
                y0 = min(y0, b.y - b.height / 3); y1 = max(y1, b.y + b.height + b.height)
            }
            x0 = max(0, x0); y0 = max(0, y0); x1 = min(sensor.width, x1); y1 = min(sensor.height, y1)
            let main = faces.max { $0.box.width * $0.box.height < $1.box.width * $1.box.height }!.box
            let crop = ratio.crop(in: sensor)
            let bw = Double(x1 - x0), bh = Double(y1 - y0)
            let zoom = min(Self.maxZoom, max(1, min(Double(crop.width) / (bw * 1.3), Double(crop.height) / (bh * 1.3))))
            // Dead band: everyone well inside the window in force, the zoom they want near it.
            let now = Self.picture(s.target, ratio: ratio, sensor: sensor)
            let mx = Int(Double(now.width) * 0.06), my = Int(Double(now.height) * 0.06)
            let inside = x0 >= now.x + mx && y0 >= now.y + my && x1 <= now.x + now.width - mx && y1 <= now.y + now.height - my
            if inside && abs(zoom / s.target.zoom - 1) < 0.2 { return }
            // The main face as near the middle as keeping everyone in allows.
            let w = Double(crop.width) / zoom, h = Double(crop.height) / zoom
            let mcx = Double(main.x) + Double(main.width) / 2, mcy = Double(main.y) + Double(main.height) / 2 + h * 0.1
            let cx = min(max(mcx, Double(x1) - w / 2), Double(x0) + w / 2)
            let cy = min(max(mcy, Double(y1) - h / 2), Double(y0) + h / 2)
            let z = (zoom * 100).rounded() / 100
            s.target = Window(zoom: z, centre: PicturePoint(x: cx / side, y: cy / Double(sensor.height)))
            s.moves.append(Move(frame: frame, zoom: z, x: cx / side, y: cy / Double(sensor.height)))
        }
    }

    /// The window for the next frame: one step from the window in force towards the target
    /// (position 1/8 of the way a frame; size 1/8 zooming out, to take in who came, 1/30
    /// zooming in), snapped to it once within half a pixel, so that a still target gives
    /// exactly still frames.
    public func step() -> Window {
        let side = Double(sensor.width)
        return state.withLock { s in
            var c = s.current
            let t = s.target
            func approach(_ a: Double, _ b: Double, _ k: Double, _ snap: Double) -> Double {
                abs(b - a) <= snap ? b : a + (b - a) * k
            }
            c.zoom = approach(c.zoom, t.zoom, t.zoom < c.zoom ? 1.0 / 4 : 1.0 / 30, 0.002)
            c.centre.x = approach(c.centre.x, t.centre.x, 1.0 / 6, 0.5 / side)
            c.centre.y = approach(c.centre.y, t.centre.y, 1.0 / 6, 0.5 / side)
            s.current = c
            return c
        }
    }

    /// Every change of the target so far.
    public var moves: [Move] { state.withLock { $0.moves } }
}
