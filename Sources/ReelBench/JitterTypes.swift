import Foundation
import ReelCore
import ReelMetrics


/// The ways `reel jitter` can write.
public enum JitterArm: String, CaseIterable, Sendable, Codable {
    /// The pool's write path (ring + writer thread, buffered with early writeback) into a
    /// preallocated, zero-filled slot: what `reel record` uses.
    case pool
    /// The same, with O_DIRECT writes.
    case poolDirect = "pool-direct"
    /// The pool's buffered path into a slot made with fallocate only (unwritten extents).
    case poolFallocate = "pool-fallocate"
    /// Plain buffered writes into a new file, on the capture thread.
    case buffered
    /// Plain buffered writes with an fdatasync every second.
    case bufferedFdatasync = "buffered-fdatasync"
    /// O_DIRECT writes into a new file, on the capture thread.
    case direct
}

/// What a jitter run is asked.
public struct JitterOptions: Sendable {
    /// Where the scratch files are written (its filesystem is what is measured).
    public var directory: String
    /// The paced write rate, bytes per second.
    public var bytesPerSecond: Int64 = 150_000_000
    /// Bytes per write.
    public var blockSize = 1 << 20
    /// Seconds each arm writes.
    public var seconds: Double = 30
    /// The competing loads of the single scenario (see `Jitter.run`'s `scenarios`).
    public var contention: [ContentionKind] = []
    /// The writers compared, in order.
    public var arms: [JitterArm] = [.pool, .buffered, .bufferedFdatasync]
    /// The capture ring simulated in front of each writer.
    public var ringBytes: Int64 = 64 << 20
    /// Frames per second: the frame budget and the ring simulation's frame size.
    public var fps: Double = 30
    /// Also run the device floor (pool-direct, alone, no contention).
    public var floor = true
    /// Rounds: each runs every scenario once, its arms in an order rotated by one from the
    /// round before (arms interleaved, so a drift of the machine falls on every arm alike).
    public var rounds = 1
    /// The `reel` executable, to start contention processes.
    public var executable: String
    /// Defaults for everything but where to write and the `reel` binary.
    public init(directory: String, executable: String) { self.directory = directory; self.executable = executable }
}

/// The figures of one arm under one contention scenario.
public struct ArmResult: Sendable, Codable {
    /// The arm's name (`JitterArm.rawValue`, or the floor's label).
    public var arm: String
    /// The loads beside it (`none`, `bulk`, `bulk+fsync`, …).
    public var contention: String
    /// The round it ran in, from 1 (nil for the floor and a recording's own report).
    public var round: Int?
    /// Latency of each write from when it was due, in ms.
    public var latencyMs: LatencySummary
    /// The longest any write was late, in ms.
    public var longestStallMs: Double
    /// Writes later than one frame interval.
    public var writesOverFrameBudget: Int
    /// Frames a capture ring of `ringBytes` would have dropped.
    public var framesDroppedByRing: Int
    /// The capture ring simulated.
    public var ringBytes: Int64
    /// Bytes written per second over the arm, in MB/s.
    public var throughputMBps: Double
    /// PSI deltas over the arm, in ms of stall time.
    public var psiIoSomeMs: Double, psiIoFullMs: Double, psiMemorySomeMs: Double, psiMemoryFullMs: Double
    /// The highest Dirty and Writeback of `/proc/meminfo` during the arm, in MiB.
    public var peakDirtyMiB: Double, peakWritebackMiB: Double
    /// p99.9 of this arm divided by the device floor's.
    public var p999VsFloor: Double?
    /// Latencies over time for the plot: (seconds since start, ms), thinned.
    public var timeline: [[Double]]
    /// The CDF for the plot: (ms, fraction), log-spaced.
    public var cdf: [[Double]]
}

/// What `reel jitter` found (`--json`, `--report DIR/jitter.json`).
public struct JitterReport: Sendable, Codable {
    /// Where it measured.
    public var directory: String
    /// The filesystem type there, its device and mount options.
    public var filesystem: String
    /// The device holding it.
    public var device: String
    /// Its mount options.
    public var mountOptions: String
    /// The paced rate, MB/s.
    public var rateMBps: Double
    /// Bytes per write.
    public var blockBytes: Int
    /// Seconds each arm wrote.
    public var secondsPerArm: Double
    /// Frames per second of the frame budget.
    public var fps: Double
    /// The device floor (the pool's path, direct where it can be, alone), if it was run.
    public var floor: ArmResult?
    /// Every arm under every scenario, in the order run.
    public var arms: [ArmResult]
    /// Rounds run (each arm ran once per scenario per round).
    public var rounds: Int?
    /// Per scenario where `pool` and `buffered` both ran: the statistic fixed in advance.
    public var verdicts: [JitterVerdict]?
}

/// Errors of `reel jitter` writing its files (bad options are a `UsageError`).
public enum JitterError: UserFacingError {
    /// A scratch file, the report or a load could not be written or started (exit 74); the message.
    case io(String)
    /// 74: the scratch files could not be written.
    public var exitStatus: Int32 { ExitStatus.ioError }
    /// The one-line message `reel` prints.
    public var description: String {
        switch self {
        case .io(let s): return s
        }
    }
}
