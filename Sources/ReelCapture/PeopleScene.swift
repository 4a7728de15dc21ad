import Foundation
import ReelCore
import ReelMedia

/// The people scene (`SyntheticScene.people`): the realistic scene with up to three people
/// (head-and-shoulders portraits, `PersonSprite`) who enter, walk, stand still and leave on a
/// scripted timeline, one to three at a time. The scene knows where every face is in every
/// frame (`faces(index:)`): the ground truth detection and framing are scored against.
///
/// The timeline repeats every `period` frames (24 s at 30 fps); positions are shares of the
/// sensor's side, so every sensor size shows the same scene. Frames 0–59 are empty; person 0
/// (the astronaut, frontal) walks in from the left at 60, stands at x 0.35 from 150 to 420,
/// moves to the middle and stands there from 480 to 660, leaves right by 720; person 1 (the
/// astronaut mirrored, smaller) stands at x 0.72 from 300 to 540; person 2 (the cameraman,
/// in profile) stands at x 0.18 from 390 to 450. Frames 390–449 show all three.
public struct PeopleScene: Sendable {
    /// One person: the portrait, its height as a share of the sensor's side, and the path of
    /// its face's centre as key frames (frame, x, y), shares of the side, eased between keys.
    struct Person: Sendable {
        let sprite: PersonSprite.Kind
        let height: Double
        let keys: [(frame: Int, x: Double, y: Double)]
    }

    /// Frames in one run of the timeline (24 s at 30 fps).
    public static let period = 720
    /// The cast, in person order.
    static let cast: [Person] = [
        Person(sprite: .astronaut, height: 0.28,
               keys: [(60, -0.12, 0.36), (150, 0.35, 0.36), (420, 0.35, 0.36), (480, 0.5, 0.30), (660, 0.5, 0.30), (719, 1.12, 0.30)]),
        Person(sprite: .astronautMirrored, height: 0.20,
               keys: [(240, 1.1, 0.40), (300, 0.72, 0.40), (540, 0.72, 0.40), (599, 1.1, 0.40)]),
        Person(sprite: .cameraman, height: 0.22,
               keys: [(330, -0.12, 0.38), (390, 0.18, 0.38), (450, 0.18, 0.38), (509, -0.12, 0.38)]),
    ]

    /// The sensor (square) the scene is drawn on.
    public let sensor: Size
    /// The camera shake that moves the people with the rest of the world.
    public let shake: SceneShake
    private let sprites: [PersonSprite]

    /// The scene on a sensor of `sensor` (its portraits scaled to it once per process), moved
    /// by `shake`.
    public init(sensor: Size, shake: SceneShake = SceneShake(amplitude: 0)) {
        self.sensor = sensor
        self.shake = shake
        let side = Double(min(sensor.width, sensor.height))
        sprites = Self.cast.map { PersonSprite.shared($0.sprite, height: Int(($0.height * side).rounded()) & ~1) }
    }

    /// Where person `p`'s face centre is in frame `index` (sensor pixels), nil when off stage.
    private func faceCentre(_ p: Int, index: Int) -> (x: Double, y: Double)? {
        let keys = Self.cast[p].keys
        let f = index % Self.period
        guard let first = keys.first, let last = keys.last, f >= first.frame, f <= last.frame else { return nil }
        var (x, y) = (last.x, last.y)
        for (a, b) in zip(keys, keys.dropFirst()) where f >= a.frame && f <= b.frame {
            let t = Double(f - a.frame) / Double(b.frame - a.frame)
            let s = t * t * (3 - 2 * t)   // eased: a walk starts and ends at rest
            (x, y) = (a.x + (b.x - a.x) * s, a.y + (b.y - a.y) * s)
            break
        }
        let side = Double(min(sensor.width, sensor.height))
        return (x * side, y * side)
    }

    /// Where person `p`'s portrait goes in frame `index`: its top-left corner (even pixels).
    private func origin(_ p: Int, index: Int) -> (x: Int, y: Int)? {
        guard let c = faceCentre(p, index: index) else { return nil }
        let sprite = sprites[p], face = sprite.face, s = shake.offset(index: index)
        return ((Int((c.x - Double(face.x) - Double(face.width) / 2).rounded()) & ~1) + s.x,
                (Int((c.y - Double(face.y) - Double(face.height) / 2).rounded()) & ~1) + s.y)
    }

    /// Every face at least partly in frame `index`, in person order: the ground truth.
    public func faces(index: Int) -> [SceneFace] {
        (0..<Self.cast.count).compactMap { p in
            guard let o = origin(p, index: index) else { return nil }
            let sprite = sprites[p], face = sprite.face
            let x0 = o.x + face.x, y0 = o.y + face.y, x1 = x0 + face.width, y1 = y0 + face.height
            let cx0 = max(0, x0), cy0 = max(0, y0), cx1 = min(sensor.width, x1), cy1 = min(sensor.height, y1)
            guard cx1 > cx0, cy1 > cy0 else { return nil }
            return SceneFace(person: p, box: CropRect(x: cx0, y: cy0, width: cx1 - cx0, height: cy1 - cy0),
                             facing: sprite.facing, inside: cx0 == x0 && cy0 == y0 && cx1 == x1 && cy1 == y1)
        }
    }

    /// Draws the people of frame `index` into `buffer` (4:2:0 planar, the sensor's size), over
    /// what is there.
    func draw(_ buffer: PixelBuffer, index: Int) {
        for p in 0..<Self.cast.count {
            guard let o = origin(p, index: index) else { continue }
            sprites[p].draw(into: buffer, x: o.x, y: o.y)
        }
    }
}
