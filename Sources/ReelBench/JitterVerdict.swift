import Foundation

/// The pool's steadiness under one contention scenario, by a statistic fixed before the
/// rounds ran: over the rounds, the pool's median p99.9 is at or below the median p99.9 of
/// plain buffered writes, its worst round at or below buffered's worst, and it has no ring
/// drop in any round.
public struct JitterVerdict: Sendable, Codable, Equatable {
    /// The loads of the scenario (`none`, `bulk`, `bulk+fsync+metadata+memory`, …).
    public var contention: String
    /// The pool's p99.9 in each round, in ms, in round order.
    public var poolP999Ms: [Double]
    /// Plain buffered writes' p99.9 in each round, in ms, in round order.
    public var bufferedP999Ms: [Double]
    /// The pool's ring drops in each round.
    public var poolRingDrops: [Int]
    /// The median of `poolP999Ms` (the mean of the middle two for an even count).
    public var poolMedianMs: Double
    /// The median of `bufferedP999Ms`.
    public var bufferedMedianMs: Double
    /// The largest of `poolP999Ms`.
    public var poolWorstMs: Double
    /// The largest of `bufferedP999Ms`.
    public var bufferedWorstMs: Double
    /// Median and worst both at or below buffered's, and no ring drop in any round.
    public var met: Bool

    /// The verdict of every scenario in `arms` where both `pool` and `buffered` ran, in the
    /// order the scenarios first appear; rounds where one of the two is missing are left out.
    public static func all(_ arms: [ArmResult]) -> [JitterVerdict] {
        var order: [String] = []
        for a in arms where !order.contains(a.contention) { order.append(a.contention) }
        return order.compactMap { contention in
            let pool = arms.filter { $0.arm == JitterArm.pool.rawValue && $0.contention == contention }
            let buffered = arms.filter { $0.arm == JitterArm.buffered.rawValue && $0.contention == contention }
            let rounds = Set(pool.map { $0.round ?? 0 }).intersection(buffered.map { $0.round ?? 0 }).sorted()
            guard !rounds.isEmpty else { return nil }
            let p = rounds.map { r in pool.first { ($0.round ?? 0) == r }! }
            let b = rounds.map { r in buffered.first { ($0.round ?? 0) == r }! }
            return JitterVerdict(contention: contention, pool: p.map(\.latencyMs.p999), buffered: b.map(\.latencyMs.p999),
                                 poolRingDrops: p.map(\.framesDroppedByRing))
        }
    }

    /// The verdict of these rounds' figures (each array in round order, of equal length).
    public init(contention: String, pool: [Double], buffered: [Double], poolRingDrops: [Int]) {
        self.contention = contention
        poolP999Ms = pool
        bufferedP999Ms = buffered
        self.poolRingDrops = poolRingDrops
        poolMedianMs = Self.median(pool)
        bufferedMedianMs = Self.median(buffered)
        poolWorstMs = pool.max() ?? 0
        bufferedWorstMs = buffered.max() ?? 0
        met = !pool.isEmpty && poolMedianMs <= bufferedMedianMs && poolWorstMs <= bufferedWorstMs && poolRingDrops.allSatisfy { $0 == 0 }
    }

    /// The middle value of `values` (the mean of the middle two for an even count; 0 for none).
    static func median(_ values: [Double]) -> Double {
        let s = values.sorted()
        guard !s.isEmpty else { return 0 }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// One line: the rounds, the medians and worsts, and the verdict.
    public var line: String {
        func f(_ v: Double) -> String { String(format: "%.1f", v) }
        let drops = poolRingDrops.reduce(0, +)
        return "\(contention): pool p99.9 median \(f(poolMedianMs)) ms, worst \(f(poolWorstMs)) (rounds: \(poolP999Ms.map(f).joined(separator: " ")))"
            + " vs buffered median \(f(bufferedMedianMs)) ms, worst \(f(bufferedWorstMs)) (rounds: \(bufferedP999Ms.map(f).joined(separator: " ")));"
            + " pool ring drops \(drops): \(met ? "met" : "NOT met")"
    }
}
