import Foundation
import ReelCapture
import ReelCore
import Synchronization

/// Center Stage for video: a crop window — a pan and a zoom within the square sensor — that
/// follows the people found and keeps them in the picture, the main face (the largest
/// frontal one) in the picture's centre third as far as the others allow.
///
/// Detections set a target (`update`), planned for where moving faces are going; every frame
/// steps the window towards it (`step`), position and size smoothed apart (position 1/4 of
/// the way a frame; zooming out 1/4, zooming in 1/30, or 1/8 while the main face is
/// off-centre). A dead band keeps the target while the people stay well inside the window and the
/// zoom they want is within 20 % of the zoom in force: a still subject gets a still frame. One
/// person walking is followed between detections (the target moves with their motion).
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

    /// The window in force: zoom and the picture's centre.
    public struct Window: Sendable, Hashable {
        /// Zoom factor (1: the whole sensor).
        public var zoom: Double
        /// The centre of the picture shown, in shares of the sensor's width and height.
        public var centre: PicturePoint
        /// A window of `zoom` around `centre`.
        public init(zoom: Double, centre: PicturePoint) { self.zoom = zoom; self.centre = centre }
    }

    /// The most it zooms in.
    public static let maxZoom = 3.0
    /// Every this many detections also look for faces in profile (they cost about 130 ms
    /// more at 1920²: docs/framing.md).
    public static let profilesEvery = 2
    /// Frames without faces before the window goes back to the whole picture.
    public static let emptyHold = 90

    private let sensor: Size
    private struct State {
        var target = Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.5))
        var current = Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.5))
        var lastFaces = -1
        var moves: [Move] = []
        var lastDetection: Int? = nil
        /// The last detection's faces and their motion.
        var tracked: [Tracked] = []
        var trackedFrame: Int? = nil
        /// The faces in profile of the last detection that looked for them.
        var profileFaces: [Tracked] = []
        var profileFrame = 0
        /// The main face of the last detection, its frame, and the ratio then.
        var main: Tracked? = nil
        var mainFrame = 0
        var ratio: AspectRatio? = nil
        /// Frames stepped.
        var frame = 0
        /// One person walking: the target moves with them between detections (`Drift`).
        var drift: Drift? = nil
    }

    /// The target of one person walking, carried along between detections: their motion
    /// (pixels a frame), the step count at the detection, how far ahead of it the target was
    /// planned (frames), and for how many frames the motion is trusted.
    struct Drift {
        var vx: Double, vy: Double
        var base: Int
        var planned: Double
        var horizon: Double
    }

    /// Frames the position's smoothing (1/4 of the way a frame) lags a target moving at a
    /// steady pace: a drifting target leads by as much.
    static let followLag = 3.0
    private let state = Mutex(State())

    /// Center Stage on a square sensor of `sensor`.
    public init(sensor: Size) { self.sensor = sensor }

    /// The part of the sensor a window shows through `ratio`, in sensor pixels: the zoomed
    /// square (`settings`' centre) scaled back to the sensor's size, and the ratio's crop of
    /// it at `settings`' pan.
    public static func picture(_ w: Window, ratio: AspectRatio, sensor: Size) -> CropRect {
        let (centre, pan) = settings(w, ratio: ratio, sensor: sensor)
        let square = ImageAdjustments.zoomCrop(w.zoom, centre: centre, in: sensor)
        let c = ratio.crop(in: sensor, pan: (pan.x, pan.y))
        let sx = Double(square.width) / Double(sensor.width), sy = Double(square.height) / Double(sensor.height)
        return CropRect(x: square.x + Int(Double(c.x) * sx), y: square.y + Int(Double(c.y) * sy),
                        width: Int(Double(c.width) * sx), height: Int(Double(c.height) * sy))
    }

    /// The picture adjustments that show window `w` through `ratio`: the zoomed square's
    /// centre and the ratio crop's pan within it. The picture (the ratio's crop at the window's
    /// zoom) is centred on the window's centre as far as the sensor allows; the square is the
    /// one nearest to centred on it that holds it, and the pan places it there — so a 16:9
    /// picture pans up and down the square sensor even at zoom 1.
    ///
    /// `marginZoom`: the further zoom the picture is cropped at (stabilisation's margin,
    /// `PictureSettings.marginZoom`): the square shrinks about its centre, and the pan is
    /// spread by as much, so that the picture keeps the window's centre.
    public static func settings(_ w: Window, ratio: AspectRatio, sensor: Size, marginZoom: Double = 1) -> (centre: PicturePoint, pan: PicturePoint) {
        let z = min(max(w.zoom, 1), 4)
        let c = ratio.crop(in: sensor)
        func axis(_ side: Int, _ length: Int, _ share: Double) -> (centre: Double, pan: Double) {
            let s = Double(side), square = s / z, picture = Double(length) / z
            let p0 = min(max(share * s - picture / 2, 0), s - picture)       // the picture's start
            let q0 = min(max(p0 + picture / 2 - square / 2, 0), s - square)  // the square's start
            let room = square - picture
            return ((q0 + square / 2) / s, room > 0.5 ? min(1, max(0, (p0 - q0) / room)) : 0.5)
        }
        let x = axis(sensor.width, c.width, w.centre.x), y = axis(sensor.height, c.height, w.centre.y)
        func spread(_ pan: Double) -> Double { min(1, max(0, 0.5 + marginZoom * (pan - 0.5))) }
        return (PicturePoint(x: x.centre, y: y.centre), PicturePoint(x: spread(x.pan), y: spread(y.pan)))
    }

    /// A face as the window plans for it: where it is and how fast it moves (pixels a frame).
    struct Tracked {
        var box: CropRect
        var profile: Bool
        var vx = 0.0, vy = 0.0
        /// Speeding up (pixels a frame, a frame), along the motion only.
        var ax = 0.0, ay = 0.0
        /// Whether the motion was measured (matched with a face of the detection before).
        var measured = false
        var cx: Double { Double(box.x) + Double(box.width) / 2 }
        var cy: Double { Double(box.y) + Double(box.height) / 2 }
        /// The box moved by `frames` of its motion.
        func ahead(_ frames: Double) -> CropRect {
            var b = box
            b.x += Int((vx * frames + ax * frames * frames / 2).rounded()); b.y += Int((vy * frames + ay * frames * frames / 2).rounded())
            return b
        }
    }

    /// Frames the window settles in after a detection moves its target (about the position's
    /// smoothing): a moving face is planned for where it will be this many frames after the
    /// next detection.
    static let settleFrames = 8.0

    /// A detection: `faces` (sensor pixels) in frame `frame`, the session at `ratio`;
    /// `profiles`: whether faces in profile were looked for in it (when not, the faces in
    /// profile of the last detection that looked are carried on, moved as they were moving).
    ///
    /// Each face is matched with the nearest of the last detection's (within two face widths):
    /// the two give its motion. A moving face is planned for from where it is to where it will
    /// be once the window has followed it after the next detection, so the window leads people
    /// walking instead of lagging them.
    public func update(faces found: [DetectedFace], frame: Int, ratio: AspectRatio, profiles: Bool = true) {
        let side = Double(sensor.width)
        state.withLock { s in
            let gap = s.lastDetection.map { Double(max(1, frame - $0)) } ?? 15
            s.lastDetection = frame
            var faces = found.map { Tracked(box: $0.box, profile: $0.profile) }
            if !profiles {
                // Faces in profile from the last search that looked, where they have moved to.
                for p in s.profileFaces {
                    let moved = Tracked(box: p.ahead(Double(frame - s.profileFrame)), profile: true, vx: p.vx, vy: p.vy, ax: p.ax, ay: p.ay,
                                        measured: p.measured)
                    if !faces.contains(where: { $0.box.overlap(moved.box) > 0.1 }) { faces.append(moved) }
                }
            }
            for i in faces.indices {
                // The nearest of the last detection's faces of the same kind, if this face is
                // the nearest to it of this detection's too, within two face widths.
                let f = faces[i]
                func distance(_ a: Tracked, _ b: Tracked) -> Double { hypot(a.cx - b.cx, a.cy - b.cy) }
                guard let last = s.trackedFrame,
                      let near = s.tracked.filter({ $0.profile == f.profile }).min(by: { distance($0, f) < distance($1, f) }),
                      distance(near, f) <= 2 * Double(f.box.width),
                      faces.filter({ $0.profile == f.profile }).allSatisfy({ distance($0, near) >= distance(f, near) }) else { continue }
                let dt = Double(max(1, frame - last))
                let vx = (f.cx - near.cx) / dt, vy = (f.cy - near.cy) / dt
                faces[i].vx = vx; faces[i].vy = vy; faces[i].measured = true
                // Speeding up (from a motion measured before, not from a face first seen): a
                // walk starting is planned for at the pace it is reaching.
                guard near.measured else { continue }
                let ax = (vx - near.vx) / dt, ay = (vy - near.vy) / dt
                faces[i].ax = ax * vx > 0 ? ax : 0; faces[i].ay = ay * vy > 0 ? ay : 0
            }
            s.tracked = faces; s.trackedFrame = frame
            if profiles { s.profileFaces = faces.filter(\.profile); s.profileFrame = frame }
            guard !faces.isEmpty else {
                if s.lastFaces >= 0, frame - s.lastFaces >= Self.emptyHold, s.target.zoom != 1 {
                    s.target = Window(zoom: 1, centre: PicturePoint(x: 0.5, y: 0.5))
                    s.moves.append(Move(frame: frame, zoom: 1, x: 0.5, y: 0.5))
                }
                return
            }
            s.lastFaces = frame
            // Everyone's head and shoulders, now and once followed; the main face is the largest.
            let lead = gap + Self.settleFrames
            var x0 = Int.max, y0 = Int.max, x1 = Int.min, y1 = Int.min
            for f in faces {
                for b in [f.box, f.ahead(lead)] {
                    x0 = min(x0, b.x - b.width / 2); x1 = max(x1, b.x + b.width + b.width / 2)
                    y0 = min(y0, b.y - b.height / 3); y1 = max(y1, b.y + b.height + b.height / 2)
                }
            }
            x0 = max(0, x0); y0 = max(0, y0); x1 = min(sensor.width, x1); y1 = min(sensor.height, y1)
            // The main face: the largest looking at the camera, else the largest.
            let frontal = faces.filter { !$0.profile }
            let largest = (frontal.isEmpty ? faces : frontal).max { $0.box.width * $0.box.height < $1.box.width * $1.box.height }!
            s.main = largest; s.mainFrame = s.frame; s.ratio = ratio
            let main = largest.ahead(lead / 2)
            let crop = ratio.crop(in: sensor)
            let bw = Double(x1 - x0), bh = Double(y1 - y0)
            var zoom = min(Self.maxZoom, max(1, min(Double(crop.width) / (bw * 1.3), Double(crop.height) / (bh * 1.3))))
            let mcx = Double(main.x) + Double(main.width) / 2, mcy = Double(main.y) + Double(main.height) / 2
            // The main face as near the middle as keeping everyone in allows; where that is
            // outside the picture's centre third, a wider picture (down to zoom 1) that has it there.
            func place(_ zoom: Double) -> (cx: Double, cy: Double, centred: Bool) {
                let w = Double(crop.width) / zoom, h = Double(crop.height) / zoom
                let cx = min(max(mcx, Double(x1) - w / 2), Double(x0) + w / 2)
                let cy = min(max(mcy + h * 0.05, Double(y1) - h / 2), Double(y0) + h / 2)
                // Where the sensor's edges leave the picture.
                let px = min(max(cx, w / 2), Double(sensor.width) - w / 2), py = min(max(cy, h / 2), Double(sensor.height) - h / 2)
                return (cx, cy, abs(mcx - px) <= w / 6 && abs(mcy - py) <= h / 6)
            }
            var placed = place(zoom)
            while !placed.centred && zoom > 1 {
                zoom = max(1, zoom * 0.95)
                placed = place(zoom)
            }
            if !placed.centred { zoom = min(Self.maxZoom, max(1, min(Double(crop.width) / (bw * 1.3), Double(crop.height) / (bh * 1.3)))); placed = place(zoom) }
            // One person walking (their motion measured): the target goes along with them until
            // the next detection and a little after, instead of waiting there for them.
            // Walking: at least 2 % of the face's width a frame (a still face's boxes wobble by
            // less between detections), and 1.5 pixels.
            let walking = faces.count == 1 && largest.measured
                && hypot(largest.vx, largest.vy) >= max(1.5, 0.02 * Double(largest.box.width))
            let wasWalking = s.drift != nil
            s.drift = walking ? Drift(vx: largest.vx, vy: largest.vy, base: s.frame, planned: lead / 2, horizon: gap + Self.settleFrames) : nil
            // Dead band: everyone well inside the window in force, the zoom they want near it
            // (not for someone walking, whose target moves anyway, nor for someone who has
            // just stopped: the target is planned again where they stopped).
            let now = Self.picture(s.target, ratio: ratio, sensor: sensor)
            let mx = Int(Double(now.width) * 0.06), my = Int(Double(now.height) * 0.06)
            let inside = x0 >= now.x + mx && y0 >= now.y + my && x1 <= now.x + now.width - mx && y1 <= now.y + now.height - my
            if !walking && !wasWalking && inside && abs(zoom / s.target.zoom - 1) < 0.2 { return }
            let (cx, cy) = (placed.cx, placed.cy)
            let z = (zoom * 100).rounded() / 100
            s.target = Window(zoom: z, centre: PicturePoint(x: cx / side, y: cy / Double(sensor.height)))
            s.moves.append(Move(frame: frame, zoom: z, x: cx / side, y: cy / Double(sensor.height)))
        }
    }

    /// The window for the next frame: one step from the window in force towards the target —
    /// position 1/4 of the way a frame; size 1/4 zooming out (to take in who came), 1/30
    /// zooming in, or 1/8 while the main face (as the last detection saw it, moved as it was
    /// moving) is outside the centre third of the picture — snapped to it once within half a
    /// pixel, so that a still target gives exactly still frames.
    public func step() -> Window {
        let side = Double(sensor.width)
        return state.withLock { s in
            var c = s.current
            var t = s.target
            if let d = s.drift {
                // Where the walker will be `followLag` frames on, from where the target planned them.
                let ahead = min(Double(s.frame - d.base) + 1 + Self.followLag, d.horizon) - d.planned
                t.centre.x = min(1, max(0, t.centre.x + d.vx * ahead / side))
                t.centre.y = min(1, max(0, t.centre.y + d.vy * ahead / Double(sensor.height)))
            }
            func approach(_ a: Double, _ b: Double, _ k: Double, _ snap: Double) -> Double {
                abs(b - a) <= snap ? b : a + (b - a) * k
            }
            var zoomIn = 1.0 / 30
            if t.zoom > c.zoom, let main = s.main, let ratio = s.ratio {
                let b = main.ahead(Double(s.frame - s.mainFrame)), p = Self.picture(c, ratio: ratio, sensor: sensor)
                let mx = Double(b.x) + Double(b.width) / 2, my = Double(b.y) + Double(b.height) / 2
                let centred = abs(mx - Double(p.x) - Double(p.width) / 2) <= Double(p.width) / 6
                    && abs(my - Double(p.y) - Double(p.height) / 2) <= Double(p.height) / 6
                if !centred { zoomIn = 1.0 / 8 }
            }
            let moving = c != t
            c.zoom = approach(c.zoom, t.zoom, t.zoom < c.zoom ? 1.0 / 4 : zoomIn, 0.002)
            c.centre.x = approach(c.centre.x, t.centre.x, 1.0 / 4, 0.5 / side)
            c.centre.y = approach(c.centre.y, t.centre.y, 1.0 / 4, 0.5 / side)
            // Zooming and panning at their own paces can carry the main face a little out of the
            // centre third on the way to a target that has it there: the picture moves by that
            // little (a twelfth of its size at most), unless that would leave another face out.
            // A window at its target is left alone (a still target, still frames).
            if moving, let main = s.main, let ratio = s.ratio {
                let ahead = Double(s.frame - s.mainFrame) + 1
                let b = main.ahead(ahead), p = Self.picture(c, ratio: ratio, sensor: sensor)
                let mx = Double(b.x) + Double(b.width) / 2, my = Double(b.y) + Double(b.height) / 2
                func miss(_ m: Double, _ start: Int, _ length: Int) -> Double {
                    let lo = Double(start) + Double(length) / 3, hi = Double(start) + 2 * Double(length) / 3
                    return m < lo ? m - lo - 1 : m > hi ? m - hi + 1 : 0
                }
                let target = Self.picture(t, ratio: ratio, sensor: sensor)
                let aimed = miss(mx, target.x, target.width) == 0 && miss(my, target.y, target.height) == 0
                let dx = miss(mx, p.x, p.width), dy = miss(my, p.y, p.height)
                if aimed && (dx != 0 || dy != 0) && abs(dx) <= Double(p.width) / 12 && abs(dy) <= Double(p.height) / 12 {
                    var moved = c
                    moved.centre.x = min(1, max(0, c.centre.x + dx / side))
                    moved.centre.y = min(1, max(0, c.centre.y + dy / Double(sensor.height)))
                    let q = Self.picture(moved, ratio: ratio, sensor: sensor)
                    let others = s.tracked.map { $0.ahead(Double(s.frame - s.mainFrame) + 1) }
                    if others.allSatisfy({ !p.contains($0) || q.contains($0) }) { c = moved }
                }
            }
            s.current = c
            s.frame += 1
            return c
        }
    }

    /// The window in force (the last `step`'s).
    public var current: Window { state.withLock { $0.current } }

    /// Every change of the target so far.
    public var moves: [Move] { state.withLock { $0.moves } }
}
