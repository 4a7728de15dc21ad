import CLinux
import Foundation
import ReelCore
import ReelMetrics
import ReelStorage

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

/// Writes `blockSize` bytes at a time; `complete()` says when each write finished.
public protocol PacedSink {
    func write(_ block: UnsafeRawPointer, count: Int) throws
    /// Completion times of the writes in order, or nil when `write` returning is completion.
    func complete() throws -> [UInt64]?
}

/// The open-loop paced writer: write `i` is due at `start + i × blockSize / rate`, and its
/// latency is measured from when it was due, so a stall counts against every write it delays.
public func pacedRun(_ sink: any PacedSink, options: JitterOptions) throws -> (due: [UInt64], done: [UInt64]) {
    let count = Int(saturating: Double(options.bytesPerSecond) * options.seconds / Double(options.blockSize))
    let interval = Double(options.blockSize) / Double(options.bytesPerSecond) * 1e9
    let block = UnsafeMutableRawPointer.allocate(byteCount: options.blockSize, alignment: 4096)
    defer { block.deallocate() }
    memset(block, 0xa5, options.blockSize)
    var due = [UInt64](), done = [UInt64]()
    due.reserveCapacity(count); done.reserveCapacity(count)
    let start = MonotonicClock.now() + 10_000_000
    for i in 0..<count {
        let t = start + UInt64(saturating: Double(i) * interval)
        if MonotonicClock.now() < t { MonotonicClock.sleep(until: t) }
        block.storeBytes(of: UInt64(i), as: UInt64.self)   // every block differs
        try sink.write(block, count: options.blockSize)
        due.append(t)
        done.append(MonotonicClock.now())
    }
    if let completions = try sink.complete() { done = completions }
    return (due, done)
}

/// Plain file writes on the calling thread.
final class PlainSink: PacedSink {
    let fd: FileDescriptor
    var path: String { fd.path }
    let syncEverySecond: Bool
    var offset: Int64 = 0
    var lastSync = MonotonicClock.now()

    init(path: String, direct: Bool, syncEverySecond: Bool) throws {
        self.syncEverySecond = syncEverySecond
        do { fd = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC | (direct ? CLinux_O_DIRECT : 0)) } catch let e as SystemError {
            throw JitterError.io("cannot open \(path) for writing\(direct ? " with O_DIRECT" : ""): \(e.text)")
        }
    }
    deinit {
        // A scratch file: nothing left to report once the arm is measured.
        fd.closeQuietly()
        if unlink(path) != 0 { return }
    }

    func write(_ block: UnsafeRawPointer, count: Int) throws {
        do {
            try fd.writeAll(block, count: count, toAbsoluteOffset: offset)
            offset += Int64(count)
            if syncEverySecond && MonotonicClock.now() - lastSync > 1_000_000_000 {
                try fd.dataSync()
                lastSync = MonotonicClock.now()
            }
        } catch let e as SystemError {
            throw JitterError.io("\(e.call == "pwrite" ? "write" : e.call) \(path): \(e.text)")
        }
    }
    func complete() throws -> [UInt64]? {
        do { try fd.dataSync() } catch let e as SystemError { throw JitterError.io("\(e.call) \(path): \(e.text)") }
        return nil
    }
}

/// The pool's own write path (`PoolSlotFile`): the ring and its writer thread.
/// Each write of `blockSize` bytes is done when the pool's writer thread has written its last
/// byte (the ring works in 1 MiB blocks, whatever size the writes are).
final class PoolSink: PacedSink {
    let file: PoolSlotFile
    let blockSize: Int
    init(file: PoolSlotFile, blockSize: Int) { self.file = file; self.blockSize = blockSize }
    func write(_ block: UnsafeRawPointer, count: Int) throws {
        try file.write(UnsafeRawBufferPointer(start: block, count: count))
    }
    func complete() throws -> [UInt64]? { try file.finishBenchmark(writeSize: blockSize) }
}

public enum Jitter {
    /// Runs every arm under every contention scenario (and the floor), one after another.
    public static func run(_ o: JitterOptions, scenarios: [[ContentionKind]], progress: (String) -> Void) throws -> JitterReport {
        guard o.bytesPerSecond > 0 else { throw UsageError("--rate must be more than 0") }
        guard o.blockSize >= 4096, o.blockSize % 4096 == 0 else { throw UsageError("--block must be a multiple of 4 KiB") }
        guard o.seconds > 0 else { throw UsageError("--duration must be more than 0") }
        let work = o.directory + "/.reel-jitter-\(getpid())"
        guard mkdir(work, 0o755) == 0 || errno == EEXIST else {
            throw JitterError.io("cannot write in \(o.directory): \(SystemError.last("mkdir").text)")
        }
        defer { try? FileManager.default.removeItem(atPath: work) }
        let mount = mountInfo(for: o.directory)
        // Whole ring blocks: the pool's writer fills 1 MiB blocks whatever the write size.
        let ringBlock = Int64(StoragePool.blockSize)
        let total = (Int64(saturating: Double(o.bytesPerSecond) * o.seconds) + Int64(o.blockSize) * 4 + ringBlock - 1) / ringBlock * ringBlock

        // One zero-filled slot, reused by every pool arm: overwrites of written extents.
        let slot = work + "/slot.bin"
        var slotReady = false
        func prepareSlot() throws {
            guard !slotReady else { return }
            progress("preparing a \(formatBytes(total)) zero-filled slot")
            try prefill(slot, size: total, zero: true)
            slotReady = true
        }

        func runArm(_ arm: JitterArm, _ contention: [ContentionKind]) throws -> ArmResult {
            let name = contention.isEmpty ? "none" : contention.map(\.rawValue).joined(separator: "+")
            progress("\(arm.rawValue) under \(name): \(Int(saturating: o.seconds)) s at \(o.bytesPerSecond / 1_000_000) MB/s")
            let sink: any PacedSink
            switch arm {
            case .pool, .poolDirect:
                try prepareSlot()
                sink = PoolSink(file: try PoolSlotFile(benchmarkFile: slot, allocated: total, mode: arm == .pool ? .buffered : .direct,
                                                       ringBytes: Int(o.ringBytes), traceCapacity: Int(total / ringBlock) + 1),
                                blockSize: o.blockSize)
            case .poolFallocate:
                let f = work + "/fallocated.bin"
                try prefill(f, size: total, zero: false)
                sink = PoolSink(file: try PoolSlotFile(benchmarkFile: f, allocated: total, mode: .buffered,
                                                       ringBytes: Int(o.ringBytes), traceCapacity: Int(total / ringBlock) + 1),
                                blockSize: o.blockSize)
            case .buffered: sink = try PlainSink(path: work + "/plain.bin", direct: false, syncEverySecond: false)
            case .bufferedFdatasync: sink = try PlainSink(path: work + "/plain.bin", direct: false, syncEverySecond: true)
            case .direct: sink = try PlainSink(path: work + "/plain.bin", direct: true, syncEverySecond: false)
            }
            // Let the page cache settle between arms: nothing of the last arm still in flight.
            sync()
            settle()
            let loads = try contention.map { try ContentionProcess($0, executable: o.executable, directory: work, seconds: o.seconds + 5) }
            defer { for l in loads { l.stop() } }
            if !loads.isEmpty { usleep(500_000) }   // loads get going first
            let before = SystemSample.read()
            let peaks = MeminfoPeaks()
            let (due, done) = try pacedRun(sink, options: o)
            let (dirty, writeback) = peaks.stop()
            let after = SystemSample.read()
            if arm == .poolFallocate { unlink(work + "/fallocated.bin") }
            return summarize(arm: arm.rawValue, contention: name, due: due, done: done, options: o,
                             psi: (after.ioSome - before.ioSome, after.ioFull - before.ioFull,
                                   after.memSome - before.memSome, after.memFull - before.memFull),
                             peaks: (dirty, writeback))
        }

        var floor: ArmResult? = nil
        if o.floor {
            var f = try runArm(directIOWorks(work) ? .poolDirect : .pool, [])
            f.arm = "floor (\(f.arm), alone)"
            floor = f
        }
        var results: [ArmResult] = []
        for scenario in scenarios {
            for arm in o.arms {
                var r = try runArm(arm, scenario)
                if let f = floor, f.latencyMs.p999 > 0 { r.p999VsFloor = r.latencyMs.p999 / f.latencyMs.p999 }
                results.append(r)
            }
        }
        return JitterReport(directory: o.directory, filesystem: mount.filesystem, device: mount.device, mountOptions: mount.options,
                            rateMBps: Double(o.bytesPerSecond) / 1e6, blockBytes: o.blockSize, secondsPerArm: o.seconds,
                            fps: o.fps, floor: floor, arms: results)
    }

    /// Waits (up to 10 s) until Dirty + Writeback are under 32 MiB.
    static func settle() {
        let deadline = MonotonicClock.now() + 10_000_000_000
        while MonotonicClock.now() < deadline {
            let s = SystemSample.read()
            if s.dirtyKiB + s.writebackKiB < 32 * 1024 { break }
            usleep(100_000)
        }
        usleep(300_000)
    }

    /// Whether `dir` takes O_DIRECT writes of 4 KiB (the probe the pool makes).
    static func directIOWorks(_ dir: String) -> Bool {
        directIOAlignment(inDirectory: dir, probeName: ".dio") != nil
    }

    /// Makes `path` a file of `size` bytes the way a pool slot is made (see `prepareSlotFile`).
    static func prefill(_ path: String, size: Int64, zero: Bool) throws {
        do { try prepareSlotFile(path, size: size, zero: zero, chunk: 4 << 20) } catch let e as SystemError {
            switch e.call {
            case "open": throw JitterError.io("cannot create \(path): \(e.text)")
            case "fallocate": throw JitterError.io("cannot preallocate \(formatBytes(size)) in \(path): \(e.text)")
            case "pwrite": throw JitterError.io("cannot fill \(path): \(e.text)")
            default: throw JitterError.io("\(e.call) \(path): \(e.text)")
            }
        }
    }

    /// A report of a recording's own writes (service time of each), for `reel record --report`.
    public static func recordingReport(samples: [(start: UInt64, took: UInt64)], label: String, directory: String,
                                       fps: Double, ringBytes: Int64, bytesWritten: Int64) -> JitterReport {
        let sorted = samples.sorted { $0.start < $1.start }
        let due = sorted.map(\.start), done = sorted.map { $0.start + $0.took }
        var o = JitterOptions(directory: directory, executable: "")
        o.fps = fps
        o.ringBytes = max(ringBytes, 1)
        let span = Double((done.last ?? 0) - (due.first ?? 0)) / 1e9
        o.seconds = max(span, 0.001)
        o.bytesPerSecond = Int64(saturating: Double(bytesWritten) / max(span, 0.001))
        var r = summarize(arm: label, contention: "recording", due: due, done: done, options: o, psi: (0, 0, 0, 0), peaks: (0, 0))
        r.framesDroppedByRing = 0   // the recording counted its own drops; no simulation here
        let mount = mountInfo(for: directory)
        return JitterReport(directory: directory, filesystem: mount.filesystem, device: mount.device, mountOptions: mount.options,
                            rateMBps: Double(o.bytesPerSecond) / 1e6, blockBytes: StoragePool.blockSize, secondsPerArm: span,
                            fps: fps, floor: nil, arms: [r])
    }

    /// Latency of each write from when it was due; the ring simulation; throughput.
    public static func summarize(arm: String, contention: String, due: [UInt64], done: [UInt64], options o: JitterOptions,
                          psi: (Int64, Int64, Int64, Int64), peaks: (Int64, Int64)) -> ArmResult {
        var h = LatencyHistogram()
        let n = min(due.count, done.count)
        var lat = [Double](repeating: 0, count: n)
        for i in 0..<n {
            let l = done[i] > due[i] ? done[i] - due[i] : 0
            h.record(nanos: l)
            lat[i] = Double(l) / 1e6
        }
        let budgetNs = UInt64(saturating: 1e9 / o.fps)
        // A capture ring of ringBytes in front of this writer: at each frame's due time, the
        // bytes produced but not yet written must fit, else that frame is dropped.
        let frameBytes = Double(o.bytesPerSecond) / o.fps
        let frames = Int(saturating: o.seconds * o.fps)
        var dropped = 0
        var j = 0   // writes completed by the frame's time
        let start = due.first ?? 0
        for f in 0..<frames {
            let t = start + UInt64(saturating: Double(f) / o.fps * 1e9)
            while j < n && done[j] <= t { j += 1 }
            let produced = Double(f + 1) * frameBytes
            let written = Double(j) * Double(o.blockSize)
            if produced - written > Double(o.ringBytes) { dropped += 1 }
        }
        let span = Double((done.last ?? 0) - (due.first ?? 0)) / 1e9
        // Plot data: a thinned timeline (max of each bucket) and a log-spaced CDF.
        var timeline: [[Double]] = []
        let step = max(1, n / 600)
        var i = 0
        while i < n {
            let slice = lat[i..<min(n, i + step)]
            timeline.append([Double(due[i] - start) / 1e9, slice.max() ?? 0])
            i += step
        }
        let sorted = lat.sorted()
        var cdf: [[Double]] = []
        if let lo = sorted.first, let hi = sorted.last {
            var x = max(lo, 0.001)
            var k = 0
            while x <= hi * 1.0001 {
                while k < sorted.count && sorted[k] <= x { k += 1 }
                cdf.append([x, Double(k) / Double(sorted.count)])
                x *= 1.15
            }
            cdf.append([max(hi, 0.001), 1])
        }
        return ArmResult(arm: arm, contention: contention, latencyMs: h.summary, longestStallMs: Double(h.maxNanos) / 1e6,
                         writesOverFrameBudget: Int(h.count(above: budgetNs)), framesDroppedByRing: dropped, ringBytes: o.ringBytes,
                         throughputMBps: span > 0 ? Double(n) * Double(o.blockSize) / span / 1e6 : 0,
                         psiIoSomeMs: Double(psi.0) / 1000, psiIoFullMs: Double(psi.1) / 1000,
                         psiMemorySomeMs: Double(psi.2) / 1000, psiMemoryFullMs: Double(psi.3) / 1000,
                         peakDirtyMiB: Double(peaks.0) / 1024, peakWritebackMiB: Double(peaks.1) / 1024,
                         p999VsFloor: nil, timeline: timeline, cdf: cdf)
    }
}
