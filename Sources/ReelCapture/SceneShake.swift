import Foundation

/// A known camera shake for the realistic scenes (`--shake PIXELS`): the whole world the
/// sensor sees — the texture, the discs, the people — moved by `offset(index:)` in frame
/// `index`, while the per-frame parts (barcode, digits, LEDs) stay where the pattern puts them,
/// as a camera's burned-in overlay does. It is the ground truth stabilisation is scored
/// against.
///
/// Each axis is a sum of three sines whose periods (5.3, 8.9 and 17.1 frames across, 4.7, 10.3
/// and 23.9 down: 1.3 to 6.4 Hz at 30 fps, a hand's tremor and sway) share no common
/// multiple within a recording, weighted 0.35, 0.40 and 0.25, so the offset stays within
/// `amplitude` pixels of the rest position. Offsets are even (the chroma planes move by whole
/// samples).
public struct SceneShake: Sendable, Hashable {
    /// The largest offset on either axis, in sensor pixels.
    public let amplitude: Int

    private static let across: [(period: Double, weight: Double, phase: Double)] = [(5.3, 0.35, 0.4), (8.9, 0.40, 2.1), (17.1, 0.25, 4.0)]
    private static let down: [(period: Double, weight: Double, phase: Double)] = [(4.7, 0.35, 1.3), (10.3, 0.40, 5.2), (23.9, 0.25, 0.7)]

    /// A shake of at most `amplitude` pixels (0: none).
    public init(amplitude: Int) { self.amplitude = max(0, amplitude) }

    /// Where frame `index` shows the world, against the rest position: sensor pixels, even.
    public func offset(index: Int) -> (x: Int, y: Int) {
        guard amplitude > 0 else { return (0, 0) }
        func axis(_ terms: [(period: Double, weight: Double, phase: Double)]) -> Int {
            let t = Double(index)
            let v = terms.reduce(0.0) { $0 + $1.weight * sin(2 * Double.pi * t / $1.period + $1.phase) }
            return Int((v * Double(amplitude) / 2).rounded()) * 2
        }
        return (axis(Self.across), axis(Self.down))
    }
}
