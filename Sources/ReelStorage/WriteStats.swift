import ReelMetrics


/// Write-path figures of one clip, or of a recording (merged).
public struct WriteStats: Sendable {
    /// Service time of every write the storage layer made.
    public var histogram = LatencyHistogram()
    /// The most bytes waiting in the ring at once, and the ring's size.
    public var ringHighWater: Int64 = 0
    /// The ring's size.
    public var ringBytes: Int64 = 0
    /// Times the muxer had to wait for a free ring block (the ring was full).
    public var ringFullWaits = 0
    /// `buffered`, `direct`, or `mixed` once clips of both were merged.
    public var writeMode: String
    /// Bytes the writer thread wrote.
    public var bytesWritten: Int64 = 0
    /// Slots clips grew into beyond their first.
    public var slotGrowths = 0
    /// Each write as (monotonic ns when it started, ns it took), for plots; at most `sampleLimit`.
    public var samples: [(start: UInt64, took: UInt64)] = []
    /// The most samples kept.
    public static let sampleLimit = 1 << 18

    /// Empty figures of a clip written in `writeMode`.
    public init(writeMode: String) { self.writeMode = writeMode }

    /// Adds `o` (another clip of the recording).
    public mutating func merge(_ o: WriteStats) {
        histogram.merge(o.histogram)
        ringHighWater = max(ringHighWater, o.ringHighWater)
        ringBytes = max(ringBytes, o.ringBytes)
        ringFullWaits += o.ringFullWaits
        bytesWritten += o.bytesWritten
        slotGrowths += o.slotGrowths
        // Clips written in different modes (a direct open that failed for one) say so.
        writeMode = writeMode == o.writeMode ? o.writeMode : "mixed"
        samples += o.samples.prefix(max(0, WriteStats.sampleLimit - samples.count))
    }
}
