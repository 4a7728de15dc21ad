import ReelCapture
import ReelCore

/// Detection scored against the people scene's ground truth: a detection is a hit when it
/// overlaps a true face by at least `DetectionScore.match` (intersection over union; the
/// cascades' square boxes against the scene's hairline-to-chin boxes), each true face taken
/// by one detection at most. Recall counts the frontal faces of at least `minSide` pixels that
/// lie wholly in the frame; a detection of any true face (a profile, a face cut by the edge,
/// a small one) is not a false one.
public struct DetectionScore: Sendable, Hashable, Codable {
    /// The least intersection over union of a hit.
    public static let match = 0.3
    /// Frontal faces of at least this side (pixels, the smaller of width and height) count for recall.
    public static let minSide = 60

    /// Frontal faces that count, and those found.
    public var frontalFaces = 0, frontalFound = 0
    /// Detections, and those that matched no true face.
    public var detections = 0, falseDetections = 0
    /// Profile faces in frame, and those found (by either cascade).
    public var profileFaces = 0, profileFound = 0

    /// An empty score.
    public init() {}

    /// Share of the frontal faces found (1 when there were none).
    public var recall: Double { frontalFaces == 0 ? 1 : Double(frontalFound) / Double(frontalFaces) }
    /// Share of the detections that were faces (1 when there were none).
    public var precision: Double { detections == 0 ? 1 : Double(detections - falseDetections) / Double(detections) }

    /// Adds one frame: `found` against `truth`.
    public mutating func add(found: [DetectedFace], truth: [SceneFace]) {
        var taken = Set<Int>()
        var matchedTruth = [Int: Bool]()   // truth index → found
        for d in found.sorted(by: { $0.evidence > $1.evidence }) {
            detections += 1
            var best = -1, bestOverlap = Self.match
            for (i, t) in truth.enumerated() where !taken.contains(i) {
                let o = d.box.overlap(t.box)
                if o >= bestOverlap { best = i; bestOverlap = o }
            }
            if best < 0 { falseDetections += 1; continue }
            taken.insert(best)
            matchedTruth[best] = true
        }
        for (i, t) in truth.enumerated() {
            let hit = matchedTruth[i] ?? false
            if t.facing == .profile {
                profileFaces += 1
                if hit { profileFound += 1 }
            } else if t.inside && min(t.box.width, t.box.height) >= Self.minSide {
                frontalFaces += 1
                if hit { frontalFound += 1 }
            }
        }
    }
}
