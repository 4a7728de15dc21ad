/// Why a frame never reached a clip, as AVFoundation's `didDrop` reasons.
public enum DropReason: String, CaseIterable, Sendable, Codable {
    /// The pipeline could not take the frame in time (Apple's `lateData`).
    case late
    /// The source had no free buffer to capture into (Apple's `outOfBuffers`).
    case outOfBuffers
    /// The device skipped sequence numbers (V4L2 `sequence` jumped).
    case discontinuity
    /// The device delivered a frame that could not be used: an MJPEG frame that does not
    /// decode, or a buffer the driver flagged V4L2_BUF_FLAG_ERROR.
    case corrupt
}

/// Counts of dropped frames by reason.
public struct DropCounts: Sendable, Equatable {
    /// The count of each reason that has been added (a reason never added is absent).
    public private(set) var byReason: [DropReason: Int] = [:]
    /// No drops.
    public init() {}
    /// Counts `count` more drops for `reason`.
    public mutating func add(_ reason: DropReason, count: Int = 1) { byReason[reason, default: 0] += count }
    /// Drops of every reason together.
    public var total: Int { byReason.values.reduce(0, +) }
    /// Drops for `reason` (0 when none).
    public subscript(reason: DropReason) -> Int { byReason[reason] ?? 0 }
    /// Every reason, zeros included, keyed by its raw name: the `dropReasons` JSON object.
    public var table: [String: Int] {
        Dictionary(uniqueKeysWithValues: DropReason.allCases.map { ($0.rawValue, self[$0]) })
    }
}
