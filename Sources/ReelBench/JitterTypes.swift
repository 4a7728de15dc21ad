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
    public var directory: String
    public var bytesPerSecond: Int64 = 150_000_000
    public var blockSize = 1 << 20
    public var seconds: Double = 30
    public var contention: [ContentionKind] = []
    public var arms: [JitterArm] = [.pool, .buffered, .bufferedFdatasync]
    public var ringBytes: Int64 = 64 << 20
    public var fps: Double = 30
    /// Also run the device floor (pool-direct, alone, no contention).
    public var floor = true
    /// The `reel` executable, to start contention processes.
    public var executable: String
    public init(directory: String, executable: String) { self.directory = directory; self.executable = executable }
}

/// The figures of one arm under one contention scenario.
public struct ArmResult: Sendable, Codable {
    public var arm: String
    public var contention: String
    public var latencyMs: LatencySummary
    /// The longest any write was late, in ms.
    public var longestStallMs: Double
    /// Writes later than one frame interval.
    public var writesOverFrameBudget: Int
    /// Frames a capture ring of `ringBytes` would have dropped.
    public var framesDroppedByRing: Int
    public var ringBytes: Int64
    public var throughputMBps: Double
    /// PSI deltas over the arm, in ms of stall time.
    public var psiIoSomeMs: Double, psiIoFullMs: Double, psiMemorySomeMs: Double, psiMemoryFullMs: Double
    public var peakDirtyMiB: Double, peakWritebackMiB: Double
    /// p99.9 of this arm divided by the device floor's.
    public var p999VsFloor: Double?
    /// Latencies over time for the plot: (seconds since start, ms), thinned.
    public var timeline: [[Double]]
    /// The CDF for the plot: (ms, fraction), log-spaced.
    public var cdf: [[Double]]
}

public struct JitterReport: Sendable, Codable {
    public var directory: String
    public var filesystem: String
    public var device: String
    public var mountOptions: String
    public var rateMBps: Double
    public var blockBytes: Int
    public var secondsPerArm: Double
    public var fps: Double
    public var floor: ArmResult?
    public var arms: [ArmResult]
}

/// Errors of `reel jitter` writing its files (bad options are a `UsageError`).
public enum JitterError: UserFacingError {
    case io(String)
    public var exitStatus: Int32 { ExitStatus.ioError }
    public var description: String {
        switch self {
        case .io(let s): return s
        }
    }
}
