import Foundation
import ReelCore
import Synchronization

/// One recommendation of the smart-framing monitor, as the summary's `framingRecommendations`
/// and the control socket's events give it.
public struct FramingRecommendation: Sendable, Hashable, Codable {
    /// Session time of the frame it was made from (seconds).
    public var time: Double
    /// That frame's index.
    public var frame: Int
    /// The recommended ratio (`3x4`).
    public var ratio: String
    /// The recommended zoom factor.
    public var zoom: Double
    /// Faces the detection found.
    public var faces: Int
    /// Whether it was applied (`--smart-framing`: the ratio, then the zoom, set through the
    /// controls); false: recommended only.
    public var applied: Bool
    /// The first frame showing the applied framing (nil: not applied, or no frame came).
    public var appliedFrame: Int?

    /// The framing.
    public var framing: Framing? { AspectRatio(parsing: ratio).map { Framing(ratio: $0, zoom: zoom) } }
}

/// The smart-framing monitor (Apple's `AVCaptureSmartFramingMonitor`): from the faces found
/// it recommends framings — an aspect ratio and a zoom factor — that the app may apply or
/// ignore.
///
/// - It recommends nothing until `enabledFramings` is set (empty by default), and only from
///   those.
/// - It is active only with the sensor's 4032×4032 photo format (`inactiveReason` says why
///   otherwise; `startMonitoring` refuses then).
/// - `startMonitoring` and `stopMonitoring` work on a running session.
/// - A framing is recommended once it has won `settle` detections in a row and differs from
///   the last one recommended (and from the framing in force); a zoom-in needs a wider margin
///   than staying (`FramingPolicy`), so a still subject gets no new recommendations.
public final class SmartFramingMonitor: Sendable {
    /// Every framing the sensor gives (its photo format's ratios × `Framing.zoomSteps`).
    public let supportedFramings: [Framing]
    /// Why the monitor cannot run on this session, or nil when it can.
    public let inactiveReason: String?
    /// Detections in a row a new framing must win before it is recommended.
    public let settle: Int
    private let policy: FramingPolicy

    private struct State {
        var enabled: [Framing] = []
        var monitoring = false
        var candidate: Framing? = nil
        var wins = 0
        var recommended: Framing? = nil
        var history: [FramingRecommendation] = []
        var observers: [@Sendable (FramingRecommendation) -> Void] = []
    }
    private let state = Mutex(State())

    /// The side of the photo format the monitor needs.
    public static let photoSide = 4032

    /// A monitor for a square sensor of `sensor` whose photo format is `photoFormat` (its
    /// size and ratios; nil: the session has none).
    public init(sensor: Size, photoFormat: (size: Size, ratios: [AspectRatio])?, settle: Int = 3) {
        policy = FramingPolicy(sensor: sensor)
        self.settle = max(1, settle)
        let side = Self.photoSide
        if let p = photoFormat, p.size == Size(width: side, height: side) {
            supportedFramings = Framing.supported(ratios: p.ratios)
            inactiveReason = nil
        } else {
            supportedFramings = []
            let what = photoFormat.map { "the \($0.size.width)×\($0.size.height) photo format" } ?? "no photo format"
            inactiveReason = "smart framing needs the \(side)×\(side) photo format (--source synthetic:\(side)); this session has \(what)"
        }
    }

    /// The framings it may recommend (empty: it recommends nothing).
    public var enabledFramings: [Framing] { state.withLock { $0.enabled } }

    /// Sets `enabledFramings`: all of `supportedFramings` or a subset.
    /// - Throws: `FramingError` (64) for a framing the sensor does not support.
    public func setEnabledFramings(_ framings: [Framing]) throws {
        for f in framings where !supportedFramings.contains(f) {
            throw FramingError("framing \(f) is not supported (supported: \(supportedFramings.map(\.description).joined(separator: ", ")))", status: ExitStatus.usage)
        }
        state.withLock { $0.enabled = framings; $0.candidate = nil; $0.wins = 0 }
    }

    /// Whether it is monitoring.
    public var isMonitoring: Bool { state.withLock { $0.monitoring } }
    /// The newest recommendation's framing, nil before the first.
    public var recommendedFraming: Framing? { state.withLock { $0.recommended } }
    /// Every recommendation so far, oldest first.
    public var recommendations: [FramingRecommendation] { state.withLock { $0.history } }

    /// Starts monitoring (on a running session too).
    /// - Throws: `FramingError` (64) with `inactiveReason` when the photo format is not 4032.
    public func startMonitoring() throws {
        if let why = inactiveReason { throw FramingError(why, status: ExitStatus.usage) }
        state.withLock { $0.monitoring = true; $0.candidate = nil; $0.wins = 0 }
    }

    /// Stops monitoring: no more recommendations until `startMonitoring`.
    public func stopMonitoring() { state.withLock { $0.monitoring = false } }

    /// Calls `observer` with every recommendation from now on (on the detection's thread).
    public func observe(_ observer: @escaping @Sendable (FramingRecommendation) -> Void) {
        state.withLock { $0.observers.append(observer) }
    }

    /// Feeds one detection: `faces` (sensor pixels) in frame `frame` at `time`, with
    /// `current` the framing in force. Returns the recommendation it made, if any (observers
    /// have been told).
    @discardableResult
    public func update(faces: [DetectedFace], frame: Int, time: Double, current: Framing) -> FramingRecommendation? {
        let (made, observers) = state.withLock { s -> (FramingRecommendation?, [@Sendable (FramingRecommendation) -> Void]) in
            guard s.monitoring, let choice = policy.choose(faces: faces, enabled: s.enabled, current: s.recommended ?? current) else {
                return (nil, [])
            }
            if choice == s.candidate { s.wins += 1 } else { s.candidate = choice; s.wins = 1 }
            guard s.wins >= settle, choice != (s.recommended ?? current) else { return (nil, []) }
            s.recommended = choice
            let r = FramingRecommendation(time: time, frame: frame, ratio: choice.ratio.rawValue, zoom: choice.zoom,
                                          faces: faces.count, applied: false, appliedFrame: nil)
            s.history.append(r)
            return (r, s.observers)
        }
        if let made { for o in observers { o(made) } }
        return made
    }

    /// Marks the recommendation made at frame `frame` as applied, from `appliedFrame` on.
    public func markApplied(frame: Int, appliedFrame: Int?) {
        state.withLock { s in
            guard let i = s.history.lastIndex(where: { $0.frame == frame }) else { return }
            s.history[i].applied = true
            s.history[i].appliedFrame = appliedFrame
        }
    }
}
