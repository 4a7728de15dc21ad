import CLinux
import Foundation
import ReelCore
import ReelMetrics
import ReelStorage

/// `reel jitter`: the same paced writes through each arm, under each contention scenario.
public enum Jitter {
    /// Runs every arm under every contention scenario (and the floor), one after another.
    /// - Throws: `UsageError` for a rate, block or duration out of range; `JitterError.io`
    ///   when the scratch files cannot be made or written.
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
        return try withoutActuallyEscaping(progress) { progress in
            let bench = ArmRunner(options: o, work: work, progress: progress)
            var floor: ArmResult? = nil
            if o.floor {
                var f = try bench.run(directIOWorks(work) ? .poolDirect : .pool, [])
                f.arm = "floor (\(f.arm), alone)"
                floor = f
            }
            var results: [ArmResult] = []
            for round in 1...max(1, o.rounds) {
                // Interleaved: each round starts one arm later than the round before.
                let shift = (round - 1) % max(1, o.arms.count)
                let order = Array(o.arms[shift...] + o.arms[..<shift])
                if o.rounds > 1 { progress("round \(round) of \(o.rounds)") }
                for scenario in scenarios {
                    for arm in order {
                        var r = try bench.run(arm, scenario)
                        r.round = round
                        if let f = floor, f.latencyMs.p999 > 0 { r.p999VsFloor = r.latencyMs.p999 / f.latencyMs.p999 }
                        results.append(r)
                    }
                }
            }
            let verdicts = JitterVerdict.all(results)
            return JitterReport(directory: o.directory, filesystem: mount.filesystem, device: mount.device, mountOptions: mount.options,
                                rateMBps: Double(o.bytesPerSecond) / 1e6, blockBytes: o.blockSize, secondsPerArm: o.seconds,
                                fps: o.fps, floor: floor, arms: results, rounds: max(1, o.rounds),
                                verdicts: verdicts.isEmpty ? nil : verdicts)
        }
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

}

/// Runs one arm at a time in the scratch directory `work`: makes its sink, starts the
/// contention, paces the writes, and summarises them.
final class ArmRunner {
    let o: JitterOptions
    let work: String
    let progress: (String) -> Void
    /// Bytes each file is prepared with: the run's writes, in whole ring blocks (the pool's
    /// writer fills 1 MiB blocks whatever the write size).
    let total: Int64
    /// One zero-filled slot, reused by every pool arm: overwrites of written extents.
    private var slotReady = false
    private var slot: String { work + "/slot.bin" }

    init(options: JitterOptions, work: String, progress: @escaping (String) -> Void) {
        o = options
        self.work = work
        self.progress = progress
        let ringBlock = Int64(StoragePool.blockSize)
        total = (Int64(saturating: Double(o.bytesPerSecond) * o.seconds) + Int64(o.blockSize) * 4 + ringBlock - 1) / ringBlock * ringBlock
    }

    private func prepareSlot() throws {
        guard !slotReady else { return }
        progress("preparing a \(formatBytes(total)) zero-filled slot")
        try Jitter.prefill(slot, size: total, zero: true)
        slotReady = true
    }

    /// The writer of `arm`, its file prepared.
    private func makeSink(_ arm: JitterArm) throws -> any PacedSink {
        switch arm {
        case .pool, .poolDirect:
            try prepareSlot()
            return try PoolSink(file: slot, allocated: total, mode: arm == .pool ? .buffered : .direct,
                                ringBytes: Int(o.ringBytes), blockSize: o.blockSize)
        case .poolFallocate:
            let f = work + "/fallocated.bin"
            try Jitter.prefill(f, size: total, zero: false)
            return try PoolSink(file: f, allocated: total, mode: .buffered, ringBytes: Int(o.ringBytes), blockSize: o.blockSize)
        case .buffered: return try PlainSink(path: work + "/plain.bin", direct: false, syncEverySecond: false)
        case .bufferedFdatasync: return try PlainSink(path: work + "/plain.bin", direct: false, syncEverySecond: true)
        case .direct: return try PlainSink(path: work + "/plain.bin", direct: true, syncEverySecond: false)
        }
    }

    /// Runs `arm` beside the `contention` loads and summarises its writes.
    func run(_ arm: JitterArm, _ contention: [ContentionKind]) throws -> ArmResult {
        let name = contention.isEmpty ? "none" : contention.map(\.rawValue).joined(separator: "+")
        progress("\(arm.rawValue) under \(name): \(Int(saturating: o.seconds)) s at \(o.bytesPerSecond / 1_000_000) MB/s")
        let sink = try makeSink(arm)
        // Let the page cache settle between arms: nothing of the last arm still in flight.
        sync()
        Jitter.settle()
        let loads = try contention.map { try ContentionProcess($0, executable: o.executable, directory: work, seconds: o.seconds + 5) }
        defer { for l in loads { l.stop() } }
        if !loads.isEmpty { usleep(500_000) }   // loads get going first
        let before = SystemSample.read()
        let peaks = MeminfoPeaks()
        let (due, done) = try pacedRun(sink, options: o)
        let (dirty, writeback) = peaks.stop()
        let after = SystemSample.read()
        if arm == .poolFallocate { unlink(work + "/fallocated.bin") }
        return Jitter.summarize(arm: arm.rawValue, contention: name, due: due, done: done, options: o,
                                psi: (after.ioSome - before.ioSome, after.ioFull - before.ioFull,
                                      after.memSome - before.memSome, after.memFull - before.memFull),
                                peaks: (dirty, writeback))
    }
}
