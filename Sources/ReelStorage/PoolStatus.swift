import CLinux
import Foundation
import ReelCore

/// What `reel pool status` reports.
public struct PoolStatus: Sendable, Codable {
    public var path: String
    public var capacity: Int64
    public var remainingCapacity: Int64
    public var slotSize: Int64
    public var slotsFree: Int
    public var slotsActive: Int
    public var slotsPreparing: Int
    /// `adjustingCapacity`, `replenishing`, `capturing` (Apple's busy reasons).
    public var busyReasons: [String]
    /// Progress of background work, 0…1, by reason.
    public var progress: [String: Double]
    /// Who is doing that work: one entry per live process preparing slots.
    public var operations: [Operation]
    public var filesystem: String
    /// The alignment O_DIRECT needs here, or nil when the filesystem has no direct I/O.
    public var directIOAlignment: Int?
    public var writeMode: WriteMode
    /// `measured` (taken from `writeModeMeasurement`), `asked` (`--write-mode`), `only` (no
    /// direct I/O here, so buffered) or `default` (auto with no measurement of this filesystem yet).
    public var writeModeSource: String
    public var writeModeMeasurement: WriteModeMeasurement?
    public var prefill: Prefill
    /// Why the last preparation of slots failed, if it did.
    public var lastError: String?
    public var manifestVersion: Int
}

extension PoolStatus {
    public struct Operation: Sendable, Codable, Equatable {
        public var reason: String
        public var pid: Int32
        public var progress: Double
    }
}

// MARK: Status and write mode

extension StoragePool {
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
        return PoolStatus(path: path, capacity: m.capacity, remainingCapacity: m.freeBytes, slotSize: m.slotSize,
                          slotsFree: m.slots.filter { $0.state == .free }.count, slotsActive: active.count,
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
