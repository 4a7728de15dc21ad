import CFaceDetect
import Foundation
import ReelCore

/// A face found in a picture: its box (in the picture's pixels) and which way it looks.
public struct DetectedFace: Sendable, Hashable {
    /// The box, in the pixels of the picture that was searched.
    public var box: CropRect
    /// Frontal (the frontal cascade found it) or profile (only the profile cascade did).
    public var profile: Bool
    /// Neighbouring raw detections merged into this one: OpenCV's evidence for it.
    public var evidence: Int
    /// A face at `box`.
    public init(box: CropRect, profile: Bool, evidence: Int) { self.box = box; self.profile = profile; self.evidence = evidence }
}

/// Faces in grey pictures, found by OpenCV's cascade classifiers (Viola–Jones), from Debian's
/// `libopencv-objdetect-dev` through the `CFaceDetect` shim; the cascades are Debian's
/// `opencv-data`. The picture is shrunk first (area averaging) and histogram-equalised.
/// One detector is used by one thread at a time.
public final class FaceDetector: @unchecked Sendable {
    /// The frontal cascades OpenCV ships.
    public enum Cascade: String, Sendable, CaseIterable {
        /// `haarcascade_frontalface_default.xml` (Haar features).
        case haar
        /// `haarcascade_frontalface_alt2.xml` (Haar features, the tree-based variant).
        case haarAlt2 = "haar-alt2"
        /// `lbpcascade_frontalface_improved.xml` (local binary patterns: faster, fewer features).
        case lbp

        /// The cascade's file under `FaceDetector.cascadeDirectory`.
        var file: String {
            switch self {
            case .haar: "haarcascades/haarcascade_frontalface_default.xml"
            case .haarAlt2: "haarcascades/haarcascade_frontalface_alt2.xml"
            case .lbp: "lbpcascades/lbpcascade_frontalface_improved.xml"
            }
        }
    }

    /// Where Debian's `opencv-data` puts the cascades.
    public static let cascadeDirectory = "/usr/share/opencv4"
    /// The cascade smart framing uses: of the three, the one with the best recall and
    /// precision on the people scene's ground truth (docs/framing.md).
    public static let defaultCascade = Cascade.lbp

    private let handle: OpaquePointer
    /// The frontal cascade in use.
    public let cascade: Cascade
    /// Whether faces in profile are looked for too (a second cascade, run on the picture and its mirror).
    public let findsProfiles: Bool

    /// Loads the cascades.
    /// - Throws: `FramingError` (exit 69) when a cascade file is missing or unreadable
    ///   (Debian's `opencv-data` is not installed).
    public init(cascade: Cascade = FaceDetector.defaultCascade, profiles: Bool = false) throws {
        let frontal = "\(Self.cascadeDirectory)/\(cascade.file)"
        // Haar's profile cascade, whatever the frontal one (LBP's found none of the people
        // scene's faces in profile: docs/framing.md).
        let profile = !profiles ? nil : "\(Self.cascadeDirectory)/haarcascades/haarcascade_profileface.xml"
        for path in [frontal, profile].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: path) {
            throw FramingError("face detection needs OpenCV's cascades: cannot read \(path) (install Debian's opencv-data)",
                               status: ExitStatus.unavailable)
        }
        var error = [CChar](repeating: 0, count: 256)
        guard let h = reel_face_detector_open(frontal, profile, &error, error.count) else {
            throw FramingError("face detection: \(cText(error))", status: ExitStatus.unavailable)
        }
        handle = h
        self.cascade = cascade
        findsProfiles = profiles
    }

    deinit { reel_face_detector_close(handle) }

    /// How a picture is searched.
    public struct Search: Sendable, Hashable {
        /// The picture is shrunk by this first (area averaging).
        public var shrink: Int
        /// Faces outside these sides (the picture's own pixels) are not looked for.
        public var minSize: Int, maxSize: Int
        /// Step between the scales searched (1.2: 20 %).
        public var scaleFactor: Double
        /// Raw detections a face needs around it to be kept (more: fewer false faces).
        public var minNeighbors: Int
        /// Whether the profile cascade runs too.
        public var profiles: Bool
        /// The profile cascade searches the picture shrunk by this (it costs several times the
        /// frontal cascade), for faces from `profileMinSize` (the picture's own pixels).
        public var profileShrink: Int, profileMinSize: Int

        /// The search smart framing uses on a square sensor of side `side`: shrunk to about
        /// 960 pixels (the LBP cascade's 24-pixel window: faces from 60 pixels at 1920), faces
        /// up to half the side, scales 15 % apart, 5 neighbours, no profile cascade (it costs
        /// about four times the frontal one: docs/framing.md).
        public static func forSensor(side: Int) -> Search {
            Search(shrink: max(1, side / 960), minSize: 60, maxSize: side / 2,
                   scaleFactor: 1.15, minNeighbors: 5, profiles: false)
        }

        /// This search, and faces in profile too: Haar's profile cascade on the picture shrunk
        /// to about 320 pixels, for faces of 150 pixels (at 1920) or more — it found 9 of the
        /// 11 faces in profile of the people scene at 130 ms or so more a detection
        /// (docs/framing.md); at the frontal search's 960 pixels it costs 600–800 ms.
        public var withProfiles: Search {
            var s = self
            s.profiles = true
            s.profileShrink = max(1, Int((Double(2 * maxSize) / 320).rounded()))   // 6 at 1920, 13 at 4032
            s.profileMinSize = max(minSize, maxSize * 5 / 32)   // 150 at 1920
            return s
        }

        /// A search with every parameter given.
        public init(shrink: Int, minSize: Int, maxSize: Int, scaleFactor: Double, minNeighbors: Int, profiles: Bool) {
            self.shrink = shrink; self.minSize = minSize; self.maxSize = maxSize
            self.scaleFactor = scaleFactor; self.minNeighbors = minNeighbors; self.profiles = profiles
            profileShrink = shrink; profileMinSize = minSize
        }
    }

    /// Faces in the grey picture at `gray` (`size`, rows `stride` bytes apart; a frame's luma
    /// plane), searched as `search` says; boxes in the picture's own pixels.
    /// - Throws: `FramingError` (exit 70) when OpenCV fails.
    public func detect(gray: UnsafePointer<UInt8>, size: Size, stride: Int, search: Search) throws -> [DetectedFace] {
        var error = [CChar](repeating: 0, count: 256)
        var out = [reel_face](repeating: reel_face(), count: 32)
        var s = reel_face_search(shrink: Int32(max(1, search.shrink)), min_size: Int32(search.minSize), max_size: Int32(search.maxSize),
                                 scale_factor: search.scaleFactor, min_neighbors: Int32(search.minNeighbors), profiles: search.profiles ? 1 : 0,
                                 profile_shrink: Int32(max(1, search.profileShrink)), profile_min_size: Int32(search.profileMinSize))
        let n = reel_face_detect(handle, gray, Int32(size.width), Int32(size.height), Int32(stride), &s,
                                 &out, Int32(out.count), &error, error.count)
        guard n >= 0 else { throw FramingError("face detection failed: \(cText(error))", status: ExitStatus.software) }
        return out.prefix(Int(min(n, Int32(out.count)))).map {
            DetectedFace(box: CropRect(x: Int($0.x), y: Int($0.y), width: Int($0.width), height: Int($0.height)),
                         profile: $0.profile != 0, evidence: Int($0.evidence))
        }
    }
}

/// The NUL-terminated text in `bytes`.
func cText(_ bytes: [CChar]) -> String {
    String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
