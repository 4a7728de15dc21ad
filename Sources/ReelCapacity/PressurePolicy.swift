import Foundation

/// What a recorder should do at a pressure level: the capture frame rate to run at, whether
/// the preview runs, whether to finish the clip and stop.
public struct PressureAction: Codable, Sendable, Equatable {
    /// The capture frame rate to run at.
    public var framesPerSecond: Double
    /// Whether the preview is paused.
    public var previewPaused: Bool
    /// Whether to finish the clip and stop recording.
    public var stop: Bool
    /// An action at `framesPerSecond`, preview running and recording on unless said.
    public init(framesPerSecond: Double, previewPaused: Bool = false, stop: Bool = false) {
        self.framesPerSecond = framesPerSecond; self.previewPaused = previewPaused; self.stop = stop
    }
}

/// The handler: a replaceable policy that turns each level change into an action.
/// `current` is what the recorder does now, `nominal` what it was configured to do.
public protocol PressurePolicy: Sendable {
    /// The action to take when the level changes to `level`.
    func action(for level: PressureLevel, current: PressureAction, nominal: PressureAction) -> PressureAction
}

/// The default handler: at `serious` the frame rate goes one step down the ladder (30 → 24 →
/// 15 for a 30 fps recording; each further `serious` report goes one more step), at
/// `critical` straight to the lowest step with the preview paused, at `shutdown` the clip is
/// finished and the recording stops; `nominal` restores the configured rate and preview;
/// `fair` and `unknown` keep what runs.
public struct FrameRateStepPolicy: PressurePolicy {
    /// Rates below the configured one to step through, highest first (those not below it are skipped).
    public var ladder: [Double]
    /// A policy that steps through `ladder` (24, then 15 fps by default).
    public init(ladder: [Double] = [24, 15]) { self.ladder = ladder }

    /// The ladder's rates below `nominal`, highest first.
    public func steps(below nominal: Double) -> [Double] { ladder.filter { $0 < nominal }.sorted(by: >) }

    /// The action for `level` (see the type's documentation).
    public func action(for level: PressureLevel, current: PressureAction, nominal: PressureAction) -> PressureAction {
        let steps = steps(below: nominal.framesPerSecond)
        switch level {
        case .unknown, .fair:
            return current
        case .nominal:
            return nominal
        case .serious:
            let next = steps.first { $0 < current.framesPerSecond } ?? current.framesPerSecond
            return PressureAction(framesPerSecond: next, previewPaused: current.previewPaused)
        case .critical:
            return PressureAction(framesPerSecond: steps.last ?? current.framesPerSecond, previewPaused: true)
        case .shutdown:
            return PressureAction(framesPerSecond: steps.last ?? current.framesPerSecond, previewPaused: true, stop: true)
        }
    }
}

/// A policy that never changes anything (the handler off).
public struct NoPressurePolicy: PressurePolicy {
    /// The policy that does nothing.
    public init() {}
    /// Returns `current`: nothing changes.
    public func action(for level: PressureLevel, current: PressureAction, nominal: PressureAction) -> PressureAction { current }
}
