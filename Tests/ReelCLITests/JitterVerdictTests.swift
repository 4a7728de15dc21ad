import Foundation
import Testing
import ReelBench

/// The jitter rounds' statistic, fixed in advance: the pool's median p99.9 at or below plain
/// buffered writes' median, its worst round at or below buffered's worst, no ring drop in
/// any round.
@Suite struct JitterVerdictTests {
    /// An arm's figures as `reel jitter --json` gives them (the type has no public initialiser).
    func arm(_ name: String, _ contention: String, round: Int, p999: Double, drops: Int = 0) -> ArmResult {
        let latency: [String: Any] = ["count": 3000, "p50": 1.0, "p90": 2.0, "p99": p999 / 2, "p999": p999, "p9999": p999, "max": p999, "mean": 1.0]
        let json: [String: Any] = [
            "arm": name, "contention": contention, "round": round, "latencyMs": latency, "longestStallMs": p999,
            "writesOverFrameBudget": 0, "framesDroppedByRing": drops, "ringBytes": 64 << 20, "throughputMBps": 150.0,
            "psiIoSomeMs": 0.0, "psiIoFullMs": 0.0, "psiMemorySomeMs": 0.0, "psiMemoryFullMs": 0.0,
            "peakDirtyMiB": 0.0, "peakWritebackMiB": 0.0, "timeline": [[Double]](), "cdf": [[Double]](),
        ]
        return try! JSONDecoder().decode(ArmResult.self, from: JSONSerialization.data(withJSONObject: json))
    }

    func rounds(_ contention: String, pool: [Double], buffered: [Double], drops: [Int]? = nil) -> [ArmResult] {
        zip(pool, buffered).enumerated().flatMap { i, pb in
            [arm("pool", contention, round: i + 1, p999: pb.0, drops: drops?[i] ?? 0), arm("buffered", contention, round: i + 1, p999: pb.1)]
        }
    }

    @Test func medianAndWorstBothAtOrBelowBufferedIsMet() throws {
        let v = try #require(JitterVerdict.all(rounds("bulk", pool: [10, 40, 12, 11, 30], buffered: [100, 20, 50, 90, 200])).first)
        #expect(v.contention == "bulk")
        #expect(v.poolMedianMs == 12 && v.bufferedMedianMs == 90)
        #expect(v.poolWorstMs == 40 && v.bufferedWorstMs == 200)
        #expect(v.met)
        #expect(v.line.hasSuffix("pool ring drops 0: met"))
    }

    @Test func aWorseMedianIsNotMet() throws {
        let v = try #require(JitterVerdict.all(rounds("all", pool: [60, 70, 80], buffered: [50, 55, 500])).first)
        #expect(!v.met)   // median 70 > 55 though the worst is lower
        #expect(v.line.hasSuffix("NOT met"))
    }

    @Test func aWorseWorstRoundIsNotMet() throws {
        let v = try #require(JitterVerdict.all(rounds("bulk", pool: [10, 10, 900], buffered: [100, 100, 300])).first)
        #expect(!v.met)   // median 10 < 100, but the worst 900 > 300
    }

    @Test func aRingDropInAnyRoundIsNotMet() throws {
        let v = try #require(JitterVerdict.all(rounds("bulk", pool: [10, 10, 10], buffered: [100, 100, 100], drops: [0, 3, 0])).first)
        #expect(!v.met && v.poolRingDrops == [0, 3, 0])
    }

    @Test func anEvenCountTakesTheMeanOfTheMiddleTwo() throws {
        let v = try #require(JitterVerdict.all(rounds("none", pool: [1, 3, 5, 100], buffered: [2, 2, 2, 200])).first)
        #expect(v.poolMedianMs == 4)
    }

    @Test func everyScenarioInOrderAndOnlyRoundsWithBothArms() {
        var arms = rounds("none", pool: [1, 1], buffered: [2, 2]) + rounds("bulk", pool: [5], buffered: [50])
        arms.append(arm("pool", "bulk", round: 2, p999: 9999))   // no buffered arm in round 2: left out
        arms.append(arm("buffered-fdatasync", "fsync", round: 1, p999: 3))   // no pool: no verdict
        let v = JitterVerdict.all(arms)
        #expect(v.map(\.contention) == ["none", "bulk"])
        #expect(v[1].poolP999Ms.count == 1 && v[1].met)
    }
}

/// `reel jitter --rounds`: every round's rows, the arms interleaved, and the verdict with the
/// keys the documentation (docs/storage.md) names (whether it is met depends on the disk: the benchmark says).
@Suite struct JitterRoundsCLITests {
    @Test func roundsRotateTheArmsAndEndInAVerdict() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try reel(["jitter", "--dir", dir, "--duration", "0.3", "--rate", "10M", "--contention", "none",
                            "--arms", "pool,buffered", "--rounds", "3", "--no-floor", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let report = try run.decode(JitterReport.self)
        #expect(report.rounds == 3)
        #expect(report.arms.map { "\($0.round ?? 0) \($0.arm)" } == ["1 pool", "1 buffered", "2 buffered", "2 pool", "3 pool", "3 buffered"])
        let v = try #require(report.verdicts?.first)
        #expect(report.verdicts?.count == 1 && v.contention == "none" && v.poolP999Ms.count == 3 && v.bufferedP999Ms.count == 3)
        #expect(v.poolP999Ms == report.arms.filter { $0.arm == "pool" }.map(\.latencyMs.p999))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let keys = Set(((json["verdicts"] as? [[String: Any]])?.first ?? [:]).keys)
        #expect(keys == ["contention", "poolP999Ms", "bufferedP999Ms", "poolRingDrops", "poolMedianMs", "bufferedMedianMs",
                         "poolWorstMs", "bufferedWorstMs", "met"])
        let table = try reel(["jitter", "--dir", dir, "--duration", "0.2", "--rate", "10M", "--contention", "none",
                              "--arms", "pool,buffered", "--rounds", "2", "--no-floor"])
        #expect(table.status == 0)
        #expect(table.stdout.contains("verdict over 2 rounds, none: pool p99.9 median"))
        let bad = try reel(["jitter", "--dir", dir, "--rounds", "0"])
        #expect(bad.status == 64 && bad.stderr.contains("--rounds: 0 is out of range (1–100)"))
    }
}
