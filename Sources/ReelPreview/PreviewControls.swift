import Foundation
import Synchronization
import ReelCapture
import ReelCore

/// What the page's ratio buttons (`POST /ratio?to=R`) answer: the seam the change made.
public struct PreviewRatioChange: Codable, Sendable, Equatable {
    /// The ratio now in force.
    public var ratio: String
    /// The frame the change landed on (the first frame of the new clip), or null when the
    /// ratio was already in force (no seam) or the session was not running.
    @EncodedNull public var frameIndex: Int?
    /// That frame's time on the session clock, in seconds.
    public var pts: Double

    /// A change to `ratio` that landed on `frameIndex` at `pts` seconds.
    public init(ratio: String, frameIndex: Int?, pts: Double) {
        self.ratio = ratio; self.frameIndex = frameIndex; self.pts = pts
    }
}

/// The page's controls, handled by whoever owns the session (the CLI wires them).
/// A control left nil answers 501 with a JSON reason.
public struct PreviewControls: Sendable {
    /// `POST /ratio?to=R`: changes the crop from the next frame on (a seam there).
    /// Throws what the session throws (`CaptureError.unsupportedRatio`: 422).
    public var setRatio: (@Sendable (AspectRatio) throws -> PreviewRatioChange)?
    /// `POST /shutter`: takes a photo; returns the JSON object the endpoint answers with.
    /// Provided by the photo output; nil when no photo output is attached.
    public var shutter: (@Sendable () throws -> Data)?
    /// `POST /record?action=start|stop|toggle`: starts or stops the movie output on the
    /// running session; returns the JSON object the endpoint answers with. Throws when the
    /// request is refused (409: already recording, not recording, the recording ended).
    /// Nil when the session has no movie output (`reel preview`).
    public var record: (@Sendable (String) throws -> Data)?
    /// `POST /control?name=N&value=V`: sets the live control `N` (`zoom`, `exposure`,
    /// `effect`, `ratio`) from text, as the control socket does; returns the JSON object the
    /// endpoint answers with. Throws `PreviewControlError.refused` (422: an unknown control,
    /// a value it does not take, a disabled control). Nil without live controls (`reel preview`).
    public var setControl: (@Sendable (_ name: String, _ value: String) throws -> Data)?
    /// `POST /press?button=B&action=A`: a press of the page's button as a capture event, `B`
    /// `down`, `up` or `leave`, `A` `primary` or `secondary` (a marker, or the focus/exposure
    /// lock); false for a button or action it does not take (400). Nil without capture events.
    public var press: (@Sendable (_ button: String, _ action: String) -> Bool)?

    /// The handlers; a nil one makes its endpoint answer 501. Throws nothing itself (the
    /// handlers throw their refusals when called).
    public init(setRatio: (@Sendable (AspectRatio) throws -> PreviewRatioChange)? = nil,
                shutter: (@Sendable () throws -> Data)? = nil,
                record: (@Sendable (String) throws -> Data)? = nil,
                setControl: (@Sendable (String, String) throws -> Data)? = nil,
                press: (@Sendable (String, String) -> Bool)? = nil) {
        self.setRatio = setRatio; self.shutter = shutter; self.record = record
        self.setControl = setControl; self.press = press
    }

    /// How long `POST /ratio` waits for the frame the change lands on.
    public static let ratioTimeout: Double = 5

    /// Ratio changes through `session.setDynamicAspectRatio` (the seam at the frame the
    /// change lands on, as `--ratio-at` makes), waiting at most `ratioTimeout` seconds for
    /// that frame. Throws `CaptureError.unsupportedRatio`, or `PreviewControlError.timedOut`
    /// when no frame came.
    public static func ratio(of session: CaptureSession) -> @Sendable (AspectRatio) throws -> PreviewRatioChange {
        { ratio in
            // The session checks the ratio on this thread (a refusal is thrown here, at once)
            // and calls back from its capture thread with the seam: no task to wait for.
            let done = DispatchSemaphore(value: 0)
            let seam = SeamBox()
            try session.setDynamicAspectRatio(ratio) { pts in
                seam.pts.withLock { $0 = pts }
                done.signal()
            }
            guard done.wait(timeout: .now() + ratioTimeout) == .success, let pts = seam.pts.withLock({ $0 }) else {
                throw PreviewControlError.timedOut("no frame came within \(Int(ratioTimeout)) s to carry the ratio change")
            }
            let landed = session.stats.seams.last { $0.pts == pts.seconds && $0.to == ratio }
            return PreviewRatioChange(ratio: ratio.description, frameIndex: landed?.frameIndex, pts: pts.seconds)
        }
    }
}

/// Why a control could not act.
public enum PreviewControlError: Error, CustomStringConvertible, Sendable {
    /// The session did not deliver the frame a change waits for in time.
    case timedOut(String)
    /// The control refused the change (unknown control, bad value, disabled), with the reason.
    case refused(String)
    /// One line saying why.
    public var description: String {
        switch self { case .timedOut(let why), .refused(let why): return why }
    }
}

/// The seam's time, handed from the session's capture thread to the waiting request.
private final class SeamBox: Sendable {
    let pts = Mutex<Timestamp?>(nil)
}
