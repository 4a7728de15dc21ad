import CLinux
import Foundation
import ReelCore

/// What `reel pool status` reports.
public struct PoolStatus: Sendable, Codable {
    /// The pool's directory.
    public var path: String
    /// Bytes the pool holds, all slots together.
    public var capacity: Int64
    /// Bytes in free slots.
    public var remainingCapacity: Int64
    /// `remainingCapacity` as seconds of recording at `bitrate`.
    public var remainingSeconds: Double
    /// The bit rate `remainingSeconds` is reckoned at, bits a second: the last recording's that
    /// used the pool, else `DefaultPoolSize.defaultBitrate` (the default configuration's).
    public var bitrate: Double
    /// Bytes each slot is preallocated with.
    public var slotSize: Int64
    /// Bytes of the largest free slot (nil with none free). More than `slotSize` when a loop
    /// recording's deleted clip came back as one free slot covering several slot sizes
    /// (`reclaim`).
    public var largestFreeSlot: Int64?
    /// Slots ready, recording, and being prepared.
    public var slotsFree: Int
    /// Slots a recorder is writing.
    public var slotsActive: Int
    /// Slots being preallocated.
    public var slotsPreparing: Int
    /// `adjustingCapacity`, `replenishing`, `capturing` (Apple's busy reasons).
    public var busyReasons: [String]
    /// Progress of background work, 0…1, by reason.
    public var progress: [String: Double]
    /// Who is doing that work: one entry per live process preparing slots.
    public var operations: [Operation]
    /// The filesystem type (`ext4`, `tmpfs`, …).
    public var filesystem: String
    /// The alignment O_DIRECT needs here, or nil when the filesystem has no direct I/O.
    public var directIOAlignment: Int?
    /// How recordings write the slots.
    public var writeMode: WriteMode
    /// `measured` (taken from `writeModeMeasurement`), `asked` (`--write-mode`), `only` (no
    /// direct I/O here, so buffered) or `default` (auto with no measurement of this filesystem yet).
    public var writeModeSource: String
    /// The measurement the write mode was taken from, if any.
    public var writeModeMeasurement: WriteModeMeasurement?
    /// How slots are prepared.
    public var prefill: Prefill
    /// Why the last preparation of slots failed, if it did.
    public var lastError: String?
    /// The manifest's version.
    public var manifestVersion: Int
}

extension PoolStatus {
    /// A live process preparing slots.
    public struct Operation: Sendable, Codable, Equatable {
        /// `adjustingCapacity` or `replenishing`.
        public var reason: String
        /// Its pid.
        public var pid: Int32
        /// Its progress, 0…1.
        public var progress: Double
    }
}

// MARK: Status and write mode

extension StoragePool {
    /// What `reel pool status` reports (reads the manifest; no lock).
    /// - Throws: `PoolError.notAPool`, `.damagedManifest`, `.foreignManifest`, `.unsupportedVersion`.
    public func status() throws -> PoolStatus {
        let m = try readManifest()
        var busy: [String] = []
        var progress: [String: Double] = [:]
        var operations: [PoolStatus.Operation] = []
        for op in m.operations where op.isAlive {
            if !busy.contains(op.reason) { busy.append(op.reason) }
            let fraction = op.total > 0 ? Double(op.done) / Double(op.total) : 0
            progress[op.reason] = min(progress[op.reason] ?? 1, fraction)
            operations.append(.init(reason: op.reason, pid: op.pid, progress: fraction))
        }
        let active = m.slots.filter { $0.state == .active }
        if !active.isEmpty { busy.append("capturing") }
        let bitrate = m.lastBitrate ?? DefaultPoolSize.defaultBitrate
        let free = m.slots.filter { $0.state == .free }
        return PoolStatus(path: path, capacity: m.capacity, remainingCapacity: m.freeBytes,
                          remainingSeconds: Double(m.freeBytes) * 8 / bitrate, bitrate: bitrate, slotSize: m.slotSize,
                          largestFreeSlot: free.map(\.allocated).max(),
                          slotsFree: free.count, slotsActive: active.count,
                          slotsPreparing: m.slots.filter { $0.state == .preparing }.count,
                          busyReasons: busy, progress: progress, operations: operations, filesystem: Sys.filesystemName(path),
                          directIOAlignment: directIOAlignment(), writeMode: m.writeMode,
                          writeModeSource: m.writeModeSource ?? "asked", writeModeMeasurement: m.writeModeMeasurement,
                          prefill: m.prefill, lastError: m.lastError, manifestVersion: m.version)
    }

    /// The O_DIRECT alignment this filesystem accepts (512 or 4096), or nil without direct I/O.
    public func directIOAlignment() -> Int? {
        ReelStorage.directIOAlignment(inDirectory: path, probeName: ".dio-probe")
    }


    /// Takes the write mode from a new measurement of this pool's filesystem; recordings that
    /// claim a slot from now on use it.
    /// - Throws: the manifest's `PoolError`s (`notAPool`, `damagedManifest`, `busy` on a held lock)
    ///   or `SystemError` when it cannot be written.
    public func adopt(_ measurement: WriteModeMeasurement) throws {
        let direct = directIOAlignment() != nil
        try withManifest { m in
            let chosen = WriteMode(rawValue: measurement.chosen)
            m.writeMode = chosen == .direct && !direct ? .buffered : chosen
            m.writeModeSource = "measured"
            m.writeModeMeasurement = measurement
        }
    }

}
