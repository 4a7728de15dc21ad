/// One control's state as a UI shows it: a slider's range and value, or a picker's titles and
/// choice. The control socket's `status`, the preview's `/status` and the camera library report
/// the same value.
public struct ControlState: Sendable, Hashable, Codable {
    /// The control's name (`zoom`, `exposure`, `effect`, `ratio`).
    public var identifier: String
    /// `slider` or `picker`.
    public var kind: String
    /// The slider's value, or the picker's index.
    public var value: Double
    /// The picker's selected title (nil for a slider).
    public var title: String?
    /// The slider's lower bound, or 0 for a picker.
    public var minimum: Double
    /// The slider's upper bound, or titles − 1 for a picker.
    public var maximum: Double
    /// The picker's titles (nil for a slider).
    public var titles: [String]?
    /// Whether it takes changes; when not, `disabledReason` says why.
    public var enabled: Bool
    /// Why it is off (nil when `enabled`).
    public var disabledReason: String?

    /// A control's state, every field given.
    public init(identifier: String, kind: String, value: Double, title: String?, minimum: Double, maximum: Double,
                titles: [String]?, enabled: Bool, disabledReason: String?) {
        self.identifier = identifier; self.kind = kind; self.value = value; self.title = title
        self.minimum = minimum; self.maximum = maximum; self.titles = titles; self.enabled = enabled
        self.disabledReason = disabledReason
    }
}
