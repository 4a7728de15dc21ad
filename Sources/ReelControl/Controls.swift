import Foundation
import ReelCore
import Synchronization

/// A control of the capture session, as Camera Control's: a slider or a picker, with an action
/// that runs on the session's serial queue and a value the UI follows.
public protocol CaptureControl: AnyObject, Sendable {
    /// `zoom`, `exposure`, `ratio`: the name `reel control` and the socket use.
    var identifier: String { get }
    /// Why it is off (`nil`: it is on). A disabled control refuses changes with this reason.
    var disabledReason: String? { get }
    /// What `status` reports: kind, value, range or titles, enabled.
    var state: ControlState { get }
    /// Sets the value from text (a number, or a picker's title or index); the result says
    /// what it became and whether it was clamped. Runs the action on `queue` (in call order).
    func set(_ text: String, on queue: DispatchQueue) -> ControlSetResult
}

/// What a change did: the value it became, and whether the asked value was out of range.
public struct ControlSetResult: Sendable, Hashable, Codable {
    /// Whether the change was made.
    public var ok: Bool
    /// The control's identifier.
    public var control: String
    /// The value it became (nil when refused).
    public var value: Double?
    /// The picker's title it became (nil for a slider, or when refused).
    public var title: String?
    /// The asked value was out of range and was clamped.
    public var clamped: Bool
    /// Why the change was refused.
    public var error: String?
    /// A result with every field given (nil value and title, not clamped, by default).
    public init(ok: Bool, control: String, value: Double? = nil, title: String? = nil, clamped: Bool = false, error: String? = nil) {
        self.ok = ok
        self.control = control
        self.value = value
        self.title = title
        self.clamped = clamped
        self.error = error
    }
}

/// Keeps a value that observers see in the order the actions applied it: the action and the
/// notification of each change run on one serial queue, so the last value observed is the
/// last value set (no stale zoom factor after rapid changes).
public final class ObservableValue<Value: Sendable & Equatable>: Sendable {
    private struct State { var value: Value; var observers: [Int: @Sendable (Value) -> Void] = [:]; var next = 0 }
    private let state: Mutex<State>
    /// Starts at `value`.
    public init(_ value: Value) { state = Mutex(State(value: value)) }
    /// The value as last applied.
    public var value: Value { state.withLock { $0.value } }
    /// Calls `observer` with each applied value, on the queue that applied it; returns a token
    /// for `removeObserver`.
    @discardableResult public func observe(_ observer: @escaping @Sendable (Value) -> Void) -> Int {
        state.withLock { s in s.next += 1; s.observers[s.next] = observer; return s.next }
    }
    /// Stops calling the observer `observe` returned `token` for.
    public func removeObserver(_ token: Int) { state.withLock { _ = $0.observers.removeValue(forKey: token) } }
    /// Applies `value` (on the control queue) and tells the observers.
    func apply(_ value: Value) {
        let observers = state.withLock { s -> [@Sendable (Value) -> Void] in
            s.value = value
            return s.observers.sorted { $0.key < $1.key }.map(\.value)
        }
        for o in observers { o(value) }
    }
}

/// A system slider: `zoom` (1×–4×) or `exposure` bias (−2…+2 EV), or any range.
public final class SystemSlider: CaptureControl {
    /// The slider's name (`zoom`, `exposure`).
    public let identifier: String
    /// Values outside are clamped.
    public let range: ClosedRange<Double>
    /// Why it is off (`nil`: it is on); `disable` changes it once the source is known.
    public var disabledReason: String? { disabled.withLock { $0 } }
    private let disabled: Mutex<String?>
    /// The value the UI shows: applied on the control queue, observed in order.
    public let value: ObservableValue<Double>
    private let action: @Sendable (Double) -> Void

    /// `action` runs on the control set's serial queue with each new (clamped) value.
    public init(identifier: String, range: ClosedRange<Double>, value: Double, disabledReason: String? = nil,
                action: @escaping @Sendable (Double) -> Void = { _ in }) {
        self.identifier = identifier
        self.range = range
        self.disabled = Mutex(disabledReason)
        self.value = ObservableValue(min(max(value, range.lowerBound), range.upperBound))
        self.action = action
    }

    /// Turns the slider off with `reason` (the source turned out to have no such control), or
    /// on again with nil.
    public func disable(_ reason: String?) { disabled.withLock { $0 = reason } }

    /// The zoom slider, 1×–4× (digital zoom: a crop of the square sensor).
    public static func zoom(action: @escaping @Sendable (Double) -> Void = { _ in }) -> SystemSlider {
        SystemSlider(identifier: "zoom", range: 1...4, value: 1, action: action)
    }
    /// The exposure-bias slider, −2…+2 EV; `disabledReason` when the source has no exposure.
    public static func exposureBias(disabledReason: String? = nil, action: @escaping @Sendable (Double) -> Void = { _ in }) -> SystemSlider {
        SystemSlider(identifier: "exposure", range: -2...2, value: 0, disabledReason: disabledReason, action: action)
    }

    /// The slider's state as the UI shows it.
    public var state: ControlState {
        ControlState(identifier: identifier, kind: "slider", value: value.value, title: nil,
                     minimum: range.lowerBound, maximum: range.upperBound, titles: nil,
                     enabled: disabledReason == nil, disabledReason: disabledReason)
    }

    /// Sets `v` clamped to the range; the action and the observers run on `queue`.
    public func set(_ v: Double, on queue: DispatchQueue) -> ControlSetResult {
        if let why = disabledReason { return ControlSetResult(ok: false, control: identifier, value: nil, title: nil, clamped: false, error: why) }
        guard v.isFinite else { return ControlSetResult(ok: false, control: identifier, value: nil, title: nil, clamped: false, error: "\(identifier): not a number") }
        let c = min(max(v, range.lowerBound), range.upperBound)
        queue.async { [self] in
            action(c)
            value.apply(c)
        }
        return ControlSetResult(ok: true, control: identifier, value: c, title: nil, clamped: c != v, error: nil)
    }

    /// Sets from text (`2`, `2x`, `-1.5`); not a number: an error result.
    public func set(_ text: String, on queue: DispatchQueue) -> ControlSetResult {
        guard let v = Double(text.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "x", with: "")) else {
            return ControlSetResult(ok: false, control: identifier, value: nil, title: nil, clamped: false, error: "\(identifier): '\(text)' is not a number")
        }
        return set(v, on: queue)
    }
}

/// An index picker (AVCaptureIndexPicker): one of a list of titles, e.g. the ratios.
public final class IndexPicker: CaptureControl {
    /// The picker's name (`ratio`).
    public let identifier: String
    /// What can be picked, in order.
    public let titles: [String]
    /// Why it is off (`nil`: it is on).
    public let disabledReason: String?
    /// The selected index the UI shows.
    public let selectedIndex: ObservableValue<Int>
    private let action: @Sendable (Int) -> Void

    /// `action` runs on the control set's serial queue with each new index; no titles: disabled.
    public init(identifier: String, titles: [String], selectedIndex: Int = 0, disabledReason: String? = nil,
                action: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.identifier = identifier
        self.titles = titles
        self.disabledReason = disabledReason ?? (titles.isEmpty ? "nothing to pick" : nil)
        self.selectedIndex = ObservableValue(min(max(selectedIndex, 0), max(titles.count - 1, 0)))
        self.action = action
    }

    /// The picker's state as the UI shows it.
    public var state: ControlState {
        let i = selectedIndex.value
        return ControlState(identifier: identifier, kind: "picker", value: Double(i), title: titles.indices.contains(i) ? titles[i] : nil,
                            minimum: 0, maximum: Double(max(titles.count - 1, 0)), titles: titles,
                            enabled: disabledReason == nil, disabledReason: disabledReason)
    }

    /// Selects `index` (clamped to the titles); the action and the observers run on `queue`.
    public func select(_ index: Int, on queue: DispatchQueue) -> ControlSetResult {
        if let why = disabledReason { return ControlSetResult(ok: false, control: identifier, value: nil, title: nil, clamped: false, error: why) }
        let c = min(max(index, 0), titles.count - 1)
        queue.async { [self] in
            action(c)
            selectedIndex.apply(c)
        }
        return ControlSetResult(ok: true, control: identifier, value: Double(c), title: titles[c], clamped: c != index, error: nil)
    }

    /// Selects by title (`9x16`) or by index.
    public func set(_ text: String, on queue: DispatchQueue) -> ControlSetResult {
        if let i = titles.firstIndex(of: text) { return select(i, on: queue) }
        if let i = Int(text) { return select(i, on: queue) }
        return ControlSetResult(ok: false, control: identifier, value: nil, title: nil, clamped: false,
                                error: "\(identifier): '\(text)' is not one of \(titles.joined(separator: ", "))")
    }
}

/// The controls of a session, added in a configuration batch as with AVCaptureSession's
/// `beginConfiguration`/`addControl`/`commitConfiguration`; their actions run on one serial
/// queue (the session's). Until the capture session has its own batch, it has this one.
public final class ControlSet: Sendable {
    /// At most this many controls (as AVCaptureSession's `maxControlsCount`).
    public static let maximumCount = 6
    private struct State { var controls: [any CaptureControl] = []; var pending: [any CaptureControl]? = nil }
    private let state = Mutex(State())
    /// The serial queue every action runs on.
    public let queue: DispatchQueue

    /// `queue`: the serial queue every control's action runs on (the session's).
    public init(queue: DispatchQueue = DispatchQueue(label: "reel.session-controls")) { self.queue = queue }

    /// Starts a batch: controls added until `commitConfiguration` appear together.
    public func beginConfiguration() { state.withLock { s in if s.pending == nil { s.pending = s.controls } } }
    /// Ends the batch: the controls added in it are the session's from now on.
    public func commitConfiguration() { state.withLock { s in if let p = s.pending { s.controls = p; s.pending = nil } } }

    /// Whether `control` can be added: not already there (by object or identifier), and room left.
    public func canAddControl(_ control: any CaptureControl) -> Bool {
        state.withLock { s in
            let list = s.pending ?? s.controls
            return list.count < Self.maximumCount && !list.contains { $0 === control || $0.identifier == control.identifier }
        }
    }

    /// Adds `control` (in the open batch, or at once without one). Throws `ControlError`
    /// (exit 64) when `canAddControl` says no.
    public func addControl(_ control: any CaptureControl) throws {
        try state.withLock { s in
            var list = s.pending ?? s.controls
            guard list.count < Self.maximumCount, !list.contains(where: { $0 === control || $0.identifier == control.identifier }) else {
                throw ControlError("cannot add control '\(control.identifier)': already there, or \(Self.maximumCount) controls already", exitStatus: ExitStatus.usage)
            }
            list.append(control)
            if s.pending != nil { s.pending = list } else { s.controls = list }
        }
    }

    /// The committed controls, in the order added.
    public var controls: [any CaptureControl] { state.withLock { $0.controls } }

    /// The committed control named `identifier`.
    public func control(_ identifier: String) -> (any CaptureControl)? { controls.first { $0.identifier == identifier } }

    /// Sets control `identifier` from text; an unknown control is an error result.
    public func set(_ identifier: String, _ text: String) -> ControlSetResult {
        guard let c = control(identifier) else {
            return ControlSetResult(ok: false, control: identifier, value: nil, title: nil, clamped: false,
                                    error: "no control '\(identifier)' (controls: \(controls.map(\.identifier).joined(separator: ", ")))")
        }
        return c.set(text, on: queue)
    }

    /// Waits until every action asked for so far has run.
    public func drain() { queue.sync {} }
}
