import CLinux
import Foundation
import ReelCore
import Synchronization

/// Locks and unlocks a V4L2 camera's focus and exposure — what a secondary press does
/// (`reel record --secondary lock`, the default where the camera supports it): auto exposure
/// (`V4L2_CID_EXPOSURE_AUTO`) set to `V4L2_EXPOSURE_MANUAL` keeping the current exposure time
/// (`V4L2_CID_EXPOSURE_ABSOLUTE`), continuous autofocus (`V4L2_CID_FOCUS_AUTO`) set to 0; the
/// unlock puts back the modes the lock found. Controls through `VIDIOC_QUERYCTRL`,
/// `VIDIOC_G_CTRL` and `VIDIOC_S_CTRL`.
public final class V4L2FocusExposureLock: Sendable {
    /// `V4L2_CID_FOCUS_AUTO` (`V4L2_CID_CAMERA_CLASS_BASE + 12`, linux/v4l2-controls.h: a
    /// function-like macro Swift does not import).
    public static let focusAutoID: UInt32 = 0x009a_090c

    /// The controls the lock sets, as v4l2-ctl names them from the driver's names
    /// (`auto_exposure` and/or `focus_automatic_continuous` on current kernels).
    public let controls: [String]
    private let source: V4L2Source
    private let exposure: Bool, exposureTime: Bool, focus: Bool
    /// The names of auto exposure, exposure time and autofocus (v4l2-ctl's).
    private let names: (exposure: String, time: String, focus: String)
    private struct Saved { var exposureAuto: Int32?; var focusAuto: Int32? }
    /// The modes found at the lock (nil: unlocked).
    private let saved = Mutex<Saved?>(nil)

    private init(source: V4L2Source, exposure: String?, exposureTime: String?, focus: String?) {
        self.source = source
        self.exposure = exposure != nil
        self.exposureTime = exposureTime != nil
        self.focus = focus != nil
        names = (exposure ?? "auto_exposure", exposureTime ?? "exposure_time_absolute", focus ?? "focus_automatic_continuous")
        controls = [exposure, focus].compactMap { $0 }
    }

    /// A control's name as v4l2-ctl spells it: the driver's name (`v4l2_queryctrl.name`) in
    /// lower case, every run of other characters than letters and digits one `_`, none at the
    /// ends ("Auto Exposure" → `auto_exposure`).
    public static func v4l2ctlName(_ name: String) -> String {
        var out = ""
        for ch in name.lowercased() {
            if ch.isASCII && (ch.isLetter || ch.isNumber) { out.append(ch) } else if !out.isEmpty && out.last != "_" { out.append("_") }
        }
        while out.last == "_" { out.removeLast() }
        return out
    }

    private static func name(of q: v4l2_queryctrl) -> String {
        let text = withUnsafeBytes(of: q.name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return v4l2ctlName(text)
    }

    /// The lock for `camera`, or why it has none: neither an auto exposure menu whose range
    /// holds manual exposure nor a continuous autofocus control (each writable, not disabled;
    /// `VIDIOC_QUERYCTRL`).
    public static func make(for camera: V4L2Source) -> Result<V4L2FocusExposureLock, V4L2ControlUnavailable> {
        let device = camera.device
        func usable(_ id: UInt32) -> v4l2_queryctrl? {
            var q = v4l2_queryctrl()
            q.id = id
            guard device.enumerate(CLinux_VIDIOC_QUERYCTRL, &q) else { return nil }
            guard q.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0, q.flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY) == 0 else { return nil }
            return q
        }
        var exposure: String? = nil
        if let q = usable(CLinux_V4L2_CID_EXPOSURE_AUTO), q.type == V4L2_CTRL_TYPE_MENU.rawValue,
           q.minimum <= CLinux_V4L2_EXPOSURE_MANUAL && CLinux_V4L2_EXPOSURE_MANUAL <= q.maximum {
            exposure = name(of: q)
        }
        var probe = v4l2_queryctrl()
        probe.id = CLinux_V4L2_CID_EXPOSURE_ABSOLUTE
        // Exposure time is inactive while auto exposure runs, but readable: present is enough.
        let exposureTime = exposure != nil && device.enumerate(CLinux_VIDIOC_QUERYCTRL, &probe) ? name(of: probe) : nil
        let focus = usable(focusAutoID).map(name(of:))
        guard exposure != nil || focus != nil else {
            return .failure(V4L2ControlUnavailable(description: "\(device.path) has no auto exposure or continuous autofocus control to lock (VIDIOC_QUERYCTRL)"))
        }
        return .success(V4L2FocusExposureLock(source: camera, exposure: exposure, exposureTime: exposureTime, focus: focus))
    }

    /// Whether focus and exposure are locked now.
    public var isLocked: Bool { saved.withLock { $0 != nil } }

    private func get(_ id: UInt32) throws -> Int32 {
        var c = v4l2_control(id: id, value: 0)
        try source.device.ioctl(CLinux_VIDIOC_G_CTRL, "VIDIOC_G_CTRL", &c)
        return c.value
    }

    private func set(_ id: UInt32, _ value: Int32) throws {
        var c = v4l2_control(id: id, value: value)
        try source.device.ioctl(CLinux_VIDIOC_S_CTRL, "VIDIOC_S_CTRL", &c)
    }

    /// The lock's controls as the driver reports them now (`VIDIOC_G_CTRL`), by v4l2-ctl name.
    /// - Throws: ``V4L2Error`` when an ioctl fails.
    public func values() throws -> [String: Int32] {
        var v: [String: Int32] = [:]
        if exposure {
            v[names.exposure] = try get(CLinux_V4L2_CID_EXPOSURE_AUTO)
            if exposureTime { v[names.time] = try get(CLinux_V4L2_CID_EXPOSURE_ABSOLUTE) }
        }
        if focus { v[names.focus] = try get(Self.focusAutoID) }
        return v
    }

    /// Locks: remembers the auto modes, reads the exposure time the camera uses now, sets
    /// manual exposure with that time and turns continuous autofocus off. Returns the values
    /// read back (`values()`). Locking twice changes nothing.
    /// - Throws: ``V4L2Error`` when an ioctl fails (the modes already changed stay remembered,
    ///   so an unlock puts them back).
    @discardableResult
    public func lock() throws -> [String: Int32] {
        if isLocked { return try values() }
        var s = Saved()
        if exposure { s.exposureAuto = try get(CLinux_V4L2_CID_EXPOSURE_AUTO) }
        if focus { s.focusAuto = try get(Self.focusAutoID) }
        saved.withLock { $0 = s }
        if exposure {
            let time = exposureTime ? try get(CLinux_V4L2_CID_EXPOSURE_ABSOLUTE) : nil
            try set(CLinux_V4L2_CID_EXPOSURE_AUTO, CLinux_V4L2_EXPOSURE_MANUAL)
            if let time { try set(CLinux_V4L2_CID_EXPOSURE_ABSOLUTE, time) }
        }
        if focus { try set(Self.focusAutoID, 0) }
        return try values()
    }

    /// Unlocks: puts back the auto modes the lock found. Returns the values read back.
    /// Unlocking while unlocked changes nothing.
    /// - Throws: ``V4L2Error`` when an ioctl fails.
    @discardableResult
    public func unlock() throws -> [String: Int32] {
        guard let s = saved.withLock({ v -> Saved? in defer { v = nil }; return v }) else { return try values() }
        if let e = s.exposureAuto { try set(CLinux_V4L2_CID_EXPOSURE_AUTO, e) }
        if let f = s.focusAuto { try set(Self.focusAutoID, f) }
        return try values()
    }
}
