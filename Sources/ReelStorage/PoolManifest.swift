import Foundation
import ReelCore

/// The pool's manifest (`POOL/manifest.json`): versioned, written crash-consistently
/// (write a temporary file, fsync it, rename it over the old one, fsync the directory).
public struct PoolManifest: Codable, Sendable, Equatable {
    /// The `format` every Reel pool manifest has.
    public static let formatName = "reel-pool"
    /// The newest manifest version this Reel writes and reads.
    public static let currentVersion = 1

    /// `reel-pool`.
    public var format: String = PoolManifest.formatName
    /// The manifest's version (a newer one is refused).
    public var version: Int = PoolManifest.currentVersion
    /// Bytes the pool may hold, all slots together.
    public var capacity: Int64
    /// Bytes each slot is preallocated with.
    public var slotSize: Int64
    /// How recordings write the slots.
    public var writeMode: WriteMode
    /// `measured`, `asked`, `only` or `default` (see `PoolStatus.writeModeSource`).
    public var writeModeSource: String?
    /// The measurement the write mode was taken from.
    public var writeModeMeasurement: WriteModeMeasurement?
    /// How slots are prepared.
    public var prefill: Prefill
    /// The id the next slot gets (ids are never reused).
    public var nextSlotID: Int = 1
    /// Every slot, in the order made.
    public var slots: [Slot] = []
    /// Background work in progress (`adjustingCapacity`, `replenishing`), with progress.
    public var operations: [Operation] = []
    /// Why the last preparation of slots failed (no room, say); cleared by the next success.
    public var lastError: String?
    /// The bit rate of the last recording that used the pool, in bits a second (what
    /// `remainingSeconds` is reckoned at); nil before any.
    public var lastBitrate: Double?

    /// One preallocated slot file (`slots/slot-NNNNNN.bin`).
    public struct Slot: Codable, Sendable, Equatable {
        /// Its id (its file's name).
        public var id: Int
        /// What it is doing.
        public var state: SlotState
        /// Bytes allocated to the slot's file (grows when a clip outgrows one slot).
        public var allocated: Int64
        /// The pid of the process holding it (preparing, recording or recovering it).
        public var owner: Int32?
        /// The owner's start time and boot id (see `ProcessIdentity`); absent in manifests
        /// written before they were recorded.
        public var ownerStart: UInt64?
        /// The owner's boot id.
        public var ownerBoot: String?
        /// Where its clip will be published.
        public var destination: String?
        /// `mov`, `mp4` or `mkv`: how recovery finds complete fragments.
        public var container: String?
        /// When the recording claimed it (seconds since 1970).
        public var startedAt: Double?

        var ownerIdentity: ProcessIdentity? { owner.map { ProcessIdentity(pid: $0, start: ownerStart, boot: ownerBoot) } }
        /// The owner is a live process (the same one that took the slot).
        var ownerIsAlive: Bool { ownerIdentity.map(Sys.isAlive) ?? false }
        /// This process owns the slot.
        var isMine: Bool { ownerIdentity?.isCurrent ?? false }
        mutating func setOwner(_ p: ProcessIdentity?) { owner = p?.pid; ownerStart = p?.start; ownerBoot = p?.boot }
    }

    /// Background work on the pool and who does it.
    public struct Operation: Codable, Sendable, Equatable {
        /// `adjustingCapacity` or `replenishing`.
        public var reason: String
        /// The worker's pid.
        public var pid: Int32
        /// Bytes prepared so far, of `total`.
        public var done: Int64
        /// Bytes the operation prepares in all.
        public var total: Int64
        /// The worker's start time and boot id (see `ProcessIdentity`).
        public var start: UInt64?
        /// The worker's boot id.
        public var boot: String?

        var identity: ProcessIdentity { ProcessIdentity(pid: pid, start: start, boot: boot) }
        var isAlive: Bool { Sys.isAlive(identity) }
        mutating func setWorker(_ p: ProcessIdentity) { pid = p.pid; start = p.start; boot = p.boot }
    }

    /// Bytes allocated to all slots.
    public var allocatedBytes: Int64 { slots.reduce(0) { $0 + $1.allocated } }
    /// Bytes in free slots: the remaining capacity.
    public var freeBytes: Int64 { slots.filter { $0.state == .free }.reduce(0) { $0 + $1.allocated } }
}

/// What a slot is doing, as the manifest spells it. A struct, not an enum (the swift-system
/// `Errno` pattern): a state this version does not know, written by a newer one, survives a
/// manifest round trip.
public struct SlotState: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    /// The name, as the manifest spells it.
    public let rawValue: String
    /// Any name (one this version does not know survives a round trip).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Being preallocated (and zero-filled) by its owner.
    public static let preparing = SlotState(rawValue: "preparing")
    /// Ready for a recorder to claim.
    public static let free = SlotState(rawValue: "free")
    /// A recorder (its owner) writes a clip into it.
    public static let active = SlotState(rawValue: "active")
    /// Its owner died; a process is publishing what it held.
    public static let recovering = SlotState(rawValue: "recovering")

    /// The name (`rawValue`).
    public var description: String { rawValue }
}

/// How a pool writes its slots, as the manifest spells it (a struct for the same reason as
/// `SlotState`).
public struct WriteMode: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    /// The name, as the manifest spells it.
    public let rawValue: String
    /// Any name (one this version does not know survives a round trip).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Through the page cache, writeback started early by the pool's syncer thread.
    public static let buffered = WriteMode(rawValue: "buffered")
    /// With O_DIRECT, around the page cache.
    public static let direct = WriteMode(rawValue: "direct")

    /// The one-line message `reel` prints.
    public var description: String { rawValue }
}

/// How a pool prepares its slots, as the manifest spells it (a struct for the same reason as
/// `SlotState`).
public struct Prefill: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    /// The name, as the manifest and `--prefill` spell it.
    public let rawValue: String
    /// A prefill named `rawValue` (any name survives a manifest round trip; only the two below
    /// are made by this version).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// fallocate(2), then written with zeros and synced: overwrites touch no metadata.
    public static let zero = Prefill(rawValue: "zero")
    /// fallocate(2) only: unwritten extents, which the first write of each block converts.
    public static let fallocate = Prefill(rawValue: "fallocate")

    /// The prefills this version makes.
    public static let all: [Prefill] = [.zero, .fallocate]

    /// The name (`rawValue`).
    public var description: String { rawValue }
}

/// Errors of the storage pool.
public enum PoolError: UserFacingError {
    /// The path has no manifest.json (exit 66).
    case notAPool(String)
    /// The manifest (of the pool at the path) does not parse; the reason (exit 65).
    case damagedManifest(String, String)
    /// manifest.json is not a Reel pool manifest; its format field (exit 65).
    case foreignManifest(String, String)
    /// The manifest's version is newer than this Reel understands (exit 65).
    case unsupportedVersion(String, Int)
    /// The path to create a pool at exists and is not an empty directory (exit 73).
    case exists(String)
    /// The pool is busy (another process changes it, slots still being prepared, recordings in the
    /// way); why, and try again (exit 75).
    case busy(String)
    /// No free slot, or no room on the filesystem for the slots; the message (exit 74).
    case full(String)
    /// Creating or growing the pool would need more than the filesystem has free.
    case noRoom(String)
    /// The filesystem cannot do what the pool asks (direct I/O); the message (exit 69).
    case unsupportedFilesystem(String)
    /// A file call failed (exit 74).
    case io(SystemError)

    /// The exit status `reel` ends with (see the README's table).
    public var exitStatus: Int32 {
        switch self {
        case .notAPool: return ExitStatus.noInput
        case .damagedManifest, .foreignManifest, .unsupportedVersion: return ExitStatus.dataError
        case .exists: return ExitStatus.cantCreate
        case .busy: return 75   // EX_TEMPFAIL: try again when the pool is ready
        case .full: return ExitStatus.ioError
        case .noRoom: return ExitStatus.cantCreate
        case .unsupportedFilesystem: return ExitStatus.unavailable
        case .io: return ExitStatus.ioError
        }
    }

    /// The one-line message `reel` prints.
    public var description: String {
        switch self {
        case .notAPool(let p): return "\(p) is not a storage pool (no manifest.json; create one with reel pool create)"
        case .damagedManifest(let p, let why): return "the manifest of pool \(p) is damaged (\(why)); nothing was changed or deleted"
        case .foreignManifest(let p, let f): return "\(p)/manifest.json is not a Reel pool manifest (format '\(f)'); nothing was changed or deleted"
        case .unsupportedVersion(let p, let v): return "pool \(p) has manifest version \(v), newer than this reel understands (\(PoolManifest.currentVersion))"
        case .exists(let p): return "\(p) already exists and is not an empty directory"
        case .busy(let why): return "the pool is busy: \(why)"
        case .full(let why), .noRoom(let why): return why
        case .unsupportedFilesystem(let why): return why
        case .io(let e): return e.description
        }
    }
}

/// Parses `4G`, `512M`, `1.5GiB`, `1000000` (bytes; K/M/G/T are powers of 1024).
public func parseByteSize(_ text: String) -> Int64? {
    let t = text.trimmingCharacters(in: .whitespaces).uppercased()
    var number = t
    var unit: Int64 = 1
    let units: [(String, Int64)] = [
        ("TIB", 1 << 40), ("GIB", 1 << 30), ("MIB", 1 << 20), ("KIB", 1 << 10),
        ("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10),
        ("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10), ("B", 1),
    ]
    for (suffix, scale) in units where t.hasSuffix(suffix) {
        number = String(t.dropLast(suffix.count))
        unit = scale
        break
    }
    guard let v = Double(number), v.isFinite, v > 0 else { return nil }
    let bytes = v * Double(unit)
    guard bytes < 9e18 else { return nil }
    return Int64(bytes)
}

/// `512 B`, `4.0 MiB`, `1.5 GiB`: sizes for people.
public func formatBytes(_ n: Int64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var v = Double(n), i = 0
    while v >= 1024 && i < units.count - 1 { v /= 1024; i += 1 }
    return i == 0 ? "\(n) B" : String(format: "%.1f %@", v, units[i])
}
