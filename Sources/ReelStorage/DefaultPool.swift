import CLinux
import Foundation
import ReelCore
import Synchronization

/// The size the default pool is made with on first use: room for `minutes` of recording at
/// `bitrate`, capped at a tenth of the filesystem's free space and by
/// `$REEL_DEFAULT_POOL_CAPACITY`.
public struct DefaultPoolSize: Sendable, Equatable {
    /// Bytes, a whole number of slots.
    public var capacity: Int64
    /// Bytes per slot: 256 MiB, or a quarter of a capacity under 1 GiB (at least 4 MiB).
    public var slotSize: Int64
    /// What decided the capacity, for the announcement (`30 min at 44 Mbit/s`, `capped at
    /// 10 % of the 73.6 GiB free`, `capped by REEL_DEFAULT_POOL_CAPACITY`).
    public var reason: String

    /// The bit rate the default pool is sized for: ProRes 422 HQ of the default configuration
    /// (the synthetic sensor's 1920×1080 crop at 30 fps, its flat pattern), measured with
    /// ffprobe (`format.bit_rate` of `reel record --plain --no-realtime --pressure-handler off
    /// --duration 10`: 43.4 Mbit/s), rounded up to 44 Mbit/s. A busier scene (a camera's ~220
    /// Mbit/s) is covered by the same formula with its rate.
    public static let defaultBitrate: Double = 44e6
    /// Minutes of recording at `defaultBitrate` the default pool holds.
    public static let minutes = 30.0
    /// The most of the filesystem's free space the default pool takes.
    public static let freeSpaceShare = 0.10
    /// The environment variable that caps the default pool's capacity (a size: `16M`, `2G`).
    public static let capVariable = "REEL_DEFAULT_POOL_CAPACITY"

    /// capacity = min(`bitrate`/8 × `minutes` × 60 rounded up to whole slots, 10 % of
    /// `freeBytes` and `cap` rounded down; at least one slot); slots of 256 MiB, or a quarter
    /// of a capacity under 1 GiB (at least 4 MiB).
    public static func compute(bitrate: Double = defaultBitrate, freeBytes: Int64?, cap: Int64?) -> DefaultPoolSize {
        let wanted = Int64((bitrate / 8 * minutes * 60).rounded(.up))
        var capacity = wanted
        var reason = "\(Int(minutes)) min at \(Int((bitrate / 1e6).rounded())) Mbit/s"
        if let free = freeBytes, Int64(Double(free) * freeSpaceShare) < capacity {
            capacity = Int64(Double(free) * freeSpaceShare)
            reason = "capped at \(Int(freeSpaceShare * 100)) % of the \(formatBytes(free)) free"
        }
        if let cap, cap < capacity {
            capacity = cap
            reason = "capped by \(capVariable)"
        }
        let mib = Int64(StoragePool.blockSize)
        let slot = capacity >= 4 * StoragePool.defaultSlotSize ? StoragePool.defaultSlotSize : max(4 * mib, capacity / 4 / mib * mib)
        // Whole slots: rounded up to hold the minutes, down to stay under a cap.
        let slots = capacity == wanted ? (capacity + slot - 1) / slot : capacity / slot
        return DefaultPoolSize(capacity: max(1, slots) * slot, slotSize: slot, reason: reason)
    }

    /// `compute` for the default pool's filesystem and `$REEL_DEFAULT_POOL_CAPACITY`.
    /// - Throws: `UsageError` when the variable is not a size.
    public static func forDefaultPool(at path: String) throws -> DefaultPoolSize {
        var cap: Int64? = nil
        if let text = ProcessInfo.processInfo.environment[capVariable], !text.isEmpty {
            guard let n = parseByteSize(text), n >= 4 << 20 else {
                throw UsageError("\(capVariable): '\(text)' is not a size of at least 4M (like 64M, 2G)")
            }
            cap = n
        }
        // Unreadable free space: no cap from it (creating the pool checks the room it needs).
        let free = (try? Sys.freeSpace(at: path)) ?? nil
        return compute(freeBytes: free, cap: cap)
    }
}

/// How fast, and at which I/O priority, slots are prepared beside a recording.
public struct PreparationPace: Sendable, Equatable {
    /// The most bytes a second written to prepare slots.
    public var bytesPerSecond: Int64
    /// Bytes written between two `fdatasync`s: what the page cache holds of the preparation
    /// at most, so that its writeback never queues in front of the recording's.
    public var syncEvery: Int64
    /// The pace of the default pool's first preparation: 64 MiB/s, synced every 16 MiB.
    public static let beside = PreparationPace(bytesPerSecond: 64 << 20, syncEvery: 16 << 20)
}

extension StoragePool {
    /// The default pool as a recording finds it: opened when it exists, else made on the
    /// spot without preparing anything — its slots reserved (`preparing`, busy reason
    /// `adjustingCapacity`, owned by this process), sized by `DefaultPoolSize` — so that the
    /// recording starts at once; `startPreparing` then prepares the slots in the background.
    /// `created` is the size it was made with, nil when it existed.
    /// - Throws: what `open(at:)` or `create(at:…)` throws; `UsageError` for a
    ///   `REEL_DEFAULT_POOL_CAPACITY` that is not a size.
    public static func openDefault() throws -> (StoragePool, created: DefaultPoolSize?) {
        let p = defaultPath
        if FileManager.default.fileExists(atPath: p + "/manifest.json") { return (try open(at: p), nil) }
        let size = try DefaultPoolSize.forDefaultPool(at: p)
        let pool = try create(at: p, capacity: size.capacity, slotSize: size.slotSize, writeMode: nil, measurement: nil,
                              prefill: .zero, preallocate: false, measuring: false, progress: nil)
        return (pool, size)
    }

    /// Prepares the slots this process reserved, in the background at `pace` and the idle I/O
    /// class: with `command` (`reel pool _prepare --idle`, to which PATH, `--from PID` are
    /// added) in a detached process that outlives this one, else on a thread of this process
    /// (slots it leaves `preparing` when the process ends are made again by the next
    /// replenishing). `wait()` on the result waits for the hand-over, never for the work.
    /// The work starts `delay` seconds from now (the recording's first seconds — encoders
    /// opening, the held frames draining — are the busiest), or at once on `hurry()`.
    public func startPreparing(command: [String]?, pace: PreparationPace = .beside, delay: Double = 2) -> BackgroundPreparation {
        let preparation = BackgroundPreparation()
        let t = Thread { [self] in
            defer { preparation.finish() }
            preparation.waitToStart(seconds: delay)
            if let command {
                // Handing over fails only when the process cannot start: then prepare here.
                do {
                    if try prepareInBackground(command: command + [path, "--from", String(getpid())]) != nil { return }
                } catch {}
            }
            preparation.finish()   // nothing to hand over: the recording need not wait for this thread
            if !StoragePool.lowerToIdlePriority() {
                // No say over I/O priority here: the pace alone keeps the preparation gentle.
            }
            // A failure (no room, an I/O error) is kept in the manifest (`lastError`); the
            // recording goes on in plain files, and the next use replenishes.
            do { try fillReservedSlots(pace: pace) } catch {}
        }
        t.name = "reel.pool-prepare"
        t.start()
        return preparation
    }

    /// Puts the calling thread in the idle I/O class (`ioprio_set`, `IOPRIO_CLASS_IDLE`) and
    /// at the lowest CPU priority (nice 19): a preparation beside a recording takes neither
    /// disk nor CPU from it. False when the kernel refused either (that part then goes at its
    /// default priority).
    public static func lowerToIdlePriority() -> Bool {
        let io = Sys.lowerToIdleIOPriority()
        let cpu = Sys.lowerToLowestCPUPriority()
        return io && cpu
    }

    /// Stores the bit rate of the recording that just used the pool (bits a second), which
    /// `status()` turns remaining capacity into time with.
    /// - Throws: the manifest's `PoolError`s, `SystemError` when it cannot be written.
    public func noteBitrate(_ bitsPerSecond: Double) throws {
        guard bitsPerSecond.isFinite, bitsPerSecond > 0 else { return }
        try withManifest { m in m.lastBitrate = bitsPerSecond }
    }
}

/// A background preparation being handed over (`StoragePool.startPreparing`).
public final class BackgroundPreparation: Sendable {
    private let handedOver = Mutex(false)
    private let group = DispatchGroup()
    private let go = DispatchSemaphore(value: 0)

    /// Starts the work now if it is still waiting out its delay (the recording ends).
    public func hurry() { go.signal() }

    func waitToStart(seconds: Double) {
        if go.wait(timeout: .now() + seconds) == .timedOut {
            // The delay ran out: start.
        }
    }

    init() { group.enter() }

    func finish() {
        let first = handedOver.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if first { group.leave() }
    }

    /// Waits until the work was handed to the detached process or the thread began it.
    public func wait() { group.wait() }
}
