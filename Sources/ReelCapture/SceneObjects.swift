import Foundation
import ReelCore

/// The realistic scene's moving objects: a few textured discs that each follow their own
/// smooth path over the panning ground, so that a frame's motion is not one global shift
/// (inter-frame codecs must find several motions and code what each object uncovers).
///
/// Each disc shows a patch of the scene's texture (`SceneTexture`) that moves with it. Paths
/// are Lissajous curves at whole (even) pixels, a function of the frame index alone.
struct SceneObjects: Sendable {
    /// One disc: its radius, the texture patch it shows and its path.
    struct Disc: Sendable {
        /// Radius in luma pixels (even).
        let radius: Int
        /// Half-widths of its rows, luma (index dy + radius) and chroma (dy + radius / 2).
        let lumaSpans: [Int]
        let chromaSpans: [Int]
        /// The texture sample shown at its centre (luma pixels, even).
        let source: (x: Int, y: Int)
        /// Centre of the path, amplitudes and periods (frames), phases, in sensor pixels.
        let centre: (x: Double, y: Double)
        let amplitude: (x: Double, y: Double)
        let period: (x: Double, y: Double)
        let phase: (x: Double, y: Double)

        /// The disc's centre in frame `index` (even pixels).
        func position(index: Int) -> (x: Int, y: Int) {
            let t = Double(index)
            let x = centre.x + amplitude.x * sin(2 * Double.pi * t / period.x + phase.x)
            let y = centre.y + amplitude.y * sin(2 * Double.pi * t / period.y + phase.y)
            return (Int(x.rounded()) & ~1, Int(y.rounded()) & ~1)
        }
    }

    /// How many discs, and their radii as a share of the sensor's side.
    static let count = 6
    static let radii: ClosedRange<Double> = 0.03...0.08

    let discs: [Disc]

    /// Discs for a sensor of `size` (the same discs for the same size, every run).
    init(sensor size: Size) {
        var rng = SceneRandom(seed: 0x4F42_4A45_4354_5300)   // "OBJECTS"
        let side = Double(min(size.width, size.height))
        discs = (0..<Self.count).map { _ in
            let radius = Int(side * (Self.radii.lowerBound + Double(rng.unit()) * (Self.radii.upperBound - Self.radii.lowerBound))) & ~1
            func spans(_ r: Int) -> [Int] { (-r...r).map { dy in Int(Double(r * r - dy * dy).squareRoot()) } }
            return Disc(radius: radius, lumaSpans: spans(radius), chromaSpans: spans(radius / 2),
                        source: (Int(rng.next() % 4096) & ~1, Int(rng.next() % 4096) & ~1),
                        centre: (Double(size.width) * (0.2 + 0.6 * Double(rng.unit())), Double(size.height) * (0.2 + 0.6 * Double(rng.unit()))),
                        amplitude: (Double(size.width) * (0.1 + 0.25 * Double(rng.unit())), Double(size.height) * (0.1 + 0.25 * Double(rng.unit()))),
                        period: (120 + 360 * Double(rng.unit()), 120 + 360 * Double(rng.unit())),
                        phase: (2 * Double.pi * Double(rng.unit()), 2 * Double.pi * Double(rng.unit())))
        }
    }
}
