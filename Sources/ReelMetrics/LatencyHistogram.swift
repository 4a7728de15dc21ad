#if canImport(Glibc)
import Glibc
#endif

/// A log-bucketed latency histogram: constant memory, O(1) record, and every percentile
/// within 1 % of the true sample (buckets grow by 2 %, values are reported at the bucket's
/// geometric centre). Range 1 µs … ~1000 s; smaller values count in the first bucket.
public struct LatencyHistogram: Sendable, Equatable {
    static let growth = 1.02
    static let floorNanos = 1_000.0
    static let bucketCount = 1400   // 1 µs × 1.02^1400 ≈ 10^15 ns: far beyond any stall
    private static let logGrowth = log(growth)

    private var counts: [UInt64]
    /// Samples recorded.
    public private(set) var count: UInt64 = 0
    /// The largest sample, exact (0 when empty).
    public private(set) var maxNanos: UInt64 = 0
    /// The smallest sample, exact (`UInt64.max` when empty).
    public private(set) var minNanos: UInt64 = .max
    /// The sum of the samples, for the mean.
    public private(set) var sumNanos: Double = 0

    /// An empty histogram (1,400 buckets, allocated once).
    public init() { counts = [UInt64](repeating: 0, count: Self.bucketCount) }

    @inline(__always)
    static func bucket(_ nanos: UInt64) -> Int {
        let v = Double(nanos)
        guard v > floorNanos else { return 0 }
        return min(bucketCount - 1, Int(log(v / floorNanos) / logGrowth) + 1)
    }

    /// The value a bucket reports: its geometric centre.
    static func value(ofBucket b: Int) -> Double {
        if b == 0 { return floorNanos }
        let lo = floorNanos * pow(growth, Double(b - 1))
        return lo * sqrt(growth)
    }

    /// Counts one sample of `nanos` nanoseconds.
    public mutating func record(nanos: UInt64) {
        counts[Self.bucket(nanos)] += 1
        count += 1
        maxNanos = max(maxNanos, nanos)
        minNanos = min(minNanos, nanos)
        sumNanos += Double(nanos)
    }

    /// Adds every sample of `other` (the histograms of several clips or threads into one).
    public mutating func merge(_ other: LatencyHistogram) {
        for i in counts.indices { counts[i] += other.counts[i] }
        count += other.count
        maxNanos = max(maxNanos, other.maxNanos)
        minNanos = min(minNanos, other.minNanos)
        sumNanos += other.sumNanos
    }

    /// The `p`-th percentile (0…100) in nanoseconds; the maximum is exact.
    public func percentile(_ p: Double) -> Double {
        guard count > 0 else { return 0 }
        if p >= 100 { return Double(maxNanos) }
        let rank = UInt64((p / 100 * Double(count)).rounded(.up))
        var seen: UInt64 = 0
        for (b, c) in counts.enumerated() where c > 0 {
            seen += c
            if seen >= max(rank, 1) { return min(Self.value(ofBucket: b), Double(maxNanos)) }
        }
        return Double(maxNanos)
    }

    /// The exact mean in nanoseconds (0 when empty).
    public var meanNanos: Double { count == 0 ? 0 : sumNanos / Double(count) }

    /// Samples above `nanos`.
    public func count(above nanos: UInt64) -> UInt64 {
        let b = Self.bucket(nanos)
        return counts[(b + 1)...].reduce(0, +)
    }

    /// The standard summary, in milliseconds.
    public var summary: LatencySummary {
        LatencySummary(count: Int(count), p50: percentile(50) / 1e6, p90: percentile(90) / 1e6, p99: percentile(99) / 1e6,
                       p999: percentile(99.9) / 1e6, p9999: percentile(99.99) / 1e6,
                       max: Double(maxNanos) / 1e6, mean: meanNanos / 1e6)
    }
}

/// Percentiles of a latency histogram, in milliseconds (the JSON form).
public struct LatencySummary: Sendable, Codable, Equatable {
    /// Samples.
    public var count: Int
    /// Median.
    public var p50: Double
    /// 90th percentile.
    public var p90: Double
    /// 99th percentile.
    public var p99: Double
    /// 99.9th percentile.
    public var p999: Double
    /// 99.99th percentile.
    public var p9999: Double
    /// The largest sample, exact.
    public var max: Double
    /// The mean.
    public var mean: Double
}
