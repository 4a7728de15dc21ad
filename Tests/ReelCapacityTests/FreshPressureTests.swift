import Foundation
import Synchronization
import Testing
import ReelCapacity

/// A clock the test moves by hand (nanoseconds).
private final class HandClock: Sendable {
    let value = Atomic<UInt64>(1_000_000_000)
    var clock: PressureClock { PressureClock { [self] in self.value.load(ordering: .acquiring) } }
    func advance(seconds: Double) { value.add(UInt64(seconds * 1e9), ordering: .releasing) }
}

/// The changes a monitor reported, as they came.
private final class Seen: Sendable {
    let states = Mutex<[PressureState]>([])
    var levels: [PressureLevel] { states.withLock { $0.map(\.level) } }
}

/// PSI files in `dir` as /proc/pressure has them: every `avg10` at `avg10`, and the cumulative
/// `total` counters (µs) as given (`io.some` …; figures not named stay at `base`).
private func writePSI(_ dir: String, avg10: Double, totals: [String: UInt64] = [:], base: UInt64 = 7_000_000_000) throws {
    for file in ["cpu", "io", "memory"] {
        func line(_ kind: String) -> String {
            let total = totals["\(file).\(kind)"] ?? base
            return "\(kind) avg10=\(String(format: "%.2f", avg10)) avg60=\(String(format: "%.2f", avg10)) avg300=1.00 total=\(total)\n"
        }
        try (line("some") + line("full")).write(toFile: dir + "/" + file, atomically: true, encoding: .utf8)
    }
}

/// The first pressure level comes from the stall counters' movement after the monitor starts,
/// never from `avg10`, which still holds work that ended before (an I/O burst, the pool's
/// creation). The monitor's clock is the test's, and it reads when the test wakes it (a pipe):
/// no sleep stands for anything.
@Suite(.serialized) struct FreshPressureTests {
    /// A monitor of `dir` on `clock` that reads only when `wake` is written to (its timeouts
    /// are 600 s), with every change in `seen`.
    private func monitor(_ dir: String, clock: HandClock, wake: Int32, seen: Seen) -> PressureMonitor {
        PressureMonitor(directory: dir, interval: 600, idleTimeout: 600, sysfsRoot: nil, triggers: false, wakeSources: [wake],
                        clock: clock.clock, onChange: { s in seen.states.withLock { $0.append(s) } })
    }

    /// Wakes the monitor and waits (on its stream) for its next state, for at most 60 s.
    func nextState(_ stream: inout AsyncStream<PressureState>.Iterator, wake: Int32) async -> PressureState? {
        var byte: UInt8 = 1
        guard write(wake, &byte, 1) == 1 else { return nil }
        return await stream.next()
    }

    /// avg10 at 85 % everywhere (critical by avg10: an I/O burst that has just ended) but
    /// counters that do not move: nominal at the first level; later levels follow the
    /// counters too, not avg10.
    @Test func aBurstThatEndedBeforeTheStartIsNotPressure() async throws {
        let dir = scratch("fresh-psi")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writePSI(dir, avg10: 85)
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        let clock = HandClock()
        let seen = Seen()
        let m = monitor(dir, clock: clock, wake: fds[0], seen: seen)
        m.start()
        // The first reading only started the window: no level yet.
        #expect(m.level == .unknown && m.timeline.isEmpty)
        clock.advance(seconds: 0.5)
        var states = m.states().makeAsyncIterator()
        let first = try #require(await nextState(&states, wake: fds[1]))
        #expect(first.level == .nominal, "\(first)")
        #expect(first.atSeconds == 0.5)
        #expect(first.sample.ioSome == 0 && first.sample.cpuSome == 0 && first.sample.memoryFull == 0)
        // A second later, avg10 still at 85 % but 450 ms of cpu stall since the start (1.5 s):
        // 30 %, fair — where avg10 would say critical.
        clock.advance(seconds: 1)
        try writePSI(dir, avg10: 85, totals: ["cpu.some": 7_000_450_000])
        let second = try #require(await nextState(&states, wake: fds[1]))
        m.stop()
        #expect(second.level == .fair && second.factors == ["cpu.some 30.0%"], "\(second)")
        #expect(m.timeline.map(\.level) == [.nominal, .fair])
        #expect(seen.levels == [PressureLevel.nominal, .fair])
    }

    /// avg10 at 0 but `io` counters that moved 350 ms (some) and 250 ms (full) in the 0.5 s
    /// window: io some 70 %, io full 50 % — critical at once.
    @Test func countersThatMoveFastSetTheFirstLevel() async throws {
        let dir = scratch("fresh-psi")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writePSI(dir, avg10: 0)
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        let clock = HandClock()
        let seen = Seen()
        let m = monitor(dir, clock: clock, wake: fds[0], seen: seen)
        m.start()
        var states = m.states().makeAsyncIterator()
        try writePSI(dir, avg10: 0, totals: ["io.some": 7_000_350_000, "io.full": 7_000_250_000])
        clock.advance(seconds: 0.5)
        let first = try #require(await nextState(&states, wake: fds[1]))
        m.stop()
        #expect(first.level == .critical, "\(first)")
        #expect(first.factors == ["io.some 70.0%", "io.full 50.0%"])
        #expect(first.sample.cpuSome == 0)
    }

    /// A wake before the window has passed (a trigger, say) is waited through: the first
    /// level still covers the whole window.
    @Test func theWindowIsWaitedThrough() async throws {
        let dir = scratch("fresh-psi")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writePSI(dir, avg10: 0)
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        let clock = HandClock()
        let seen = Seen()
        let m = monitor(dir, clock: clock, wake: fds[0], seen: seen)
        m.start()
        var states = m.states().makeAsyncIterator()
        // 100 ms of cpu stall after 0.1 s (100 %): not read yet…
        try writePSI(dir, avg10: 0, totals: ["cpu.some": 7_000_100_000])
        clock.advance(seconds: 0.1)
        var byte: UInt8 = 1
        #expect(write(fds[1], &byte, 1) == 1)
        // …and at 0.5 s the same 100 ms is 20 % of the window: fair.
        clock.advance(seconds: 0.4)
        let first = try #require(await nextState(&states, wake: fds[1]))
        m.stop()
        #expect(first.level == .fair && first.factors == ["cpu.some 20.0%"], "\(first)")
        #expect(first.atSeconds == 0.5)
    }

    /// A monitor stopped before its window has passed (a recording of a few frames) still
    /// reports a first level, from the counters' movement so far.
    @Test func stoppedBeforeTheWindowItStillHasAFirstLevel() throws {
        let dir = scratch("fresh-psi")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writePSI(dir, avg10: 90)
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        let clock = HandClock()
        let seen = Seen()
        let m = monitor(dir, clock: clock, wake: fds[0], seen: seen)
        m.start()
        try writePSI(dir, avg10: 90, totals: ["memory.some": 7_000_010_000])
        clock.advance(seconds: 0.1)
        m.stop()
        // memory some: 10 ms of 100 ms, 10 %: serious (7 %); avg10's 90 % plays no part.
        #expect(m.timeline.map(\.level) == [.serious])
        #expect(m.timeline.first?.factors == ["memory.some 10.0%"])
    }
}
