import Testing
import ReelMetrics

@Suite struct HistogramTests {
    /// Every percentile within 1 % of the exact value from a sorted list.
    @Test func percentilesWithinOnePercentOfASortedList() {
        var rng = SplitMix(seed: 42)
        var samples: [UInt64] = []
        var h = LatencyHistogram()
        for _ in 0..<200_000 {
            // Log-uniform from 10 µs to 2 s, like write latencies with stalls.
            let x = UInt64(10_000 * pow2(rng.nextDouble() * 17.6))
            samples.append(x)
            h.record(nanos: x)
        }
        samples.sort()
        for p in [1.0, 10, 50, 90, 99, 99.9, 99.99] {
            let rank = Int((p / 100 * Double(samples.count)).rounded(.up)) - 1
            let exact = Double(samples[max(0, rank)])
            let got = h.percentile(p)
            #expect(abs(got - exact) / exact <= 0.01, "p\(p): \(got) vs \(exact)")
        }
        #expect(h.percentile(100) == Double(samples.last!))
        #expect(h.count == 200_000)
    }

    @Test func countsAboveABudget() {
        var h = LatencyHistogram()
        for ms in [1, 2, 3, 40, 50, 60] { h.record(nanos: UInt64(ms) * 1_000_000) }
        #expect(h.count(above: 33_333_333) == 3)
        #expect(h.summary.max == 60)
    }
}

struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
    mutating func nextDouble() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

func pow2(_ x: Double) -> Double {
    var r = 1.0, e = x
    while e >= 1 { r *= 2; e -= 1 }
    // 2^e for 0 ≤ e < 1 by a short series of exp(e ln 2).
    let y = e * 0.6931471805599453
    var term = 1.0, sum = 1.0
    for n in 1..<20 { term *= y / Double(n); sum += term }
    return r * sum
}
