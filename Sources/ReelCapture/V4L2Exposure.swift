import CLinux
import Foundation
import ReelCore

/// The camera control an exposure bias drives on a V4L2 camera: its brightness when it has
/// one, else its manual exposure time (with auto exposure switched to manual), found with
/// `VIDIOC_QUERYCTRL`.
public struct V4L2ExposureControl: Sendable, Hashable {
    /// The control's name as v4l2-ctl lists it: `brightness` or `exposure_time_absolute`.
    public let name: String
    /// `V4L2_CID_BRIGHTNESS` or `V4L2_CID_EXPOSURE_ABSOLUTE`.
    public let id: UInt32
    /// The control's range and default (`v4l2_queryctrl`).
    public let minimum: Int32, maximum: Int32, defaultValue: Int32
    /// Exposure time: auto exposure (`V4L2_CID_EXPOSURE_AUTO`) is set to manual first.
    public let needsManualExposure: Bool

    /// The control's value for a bias of `stops` (−2…+2): brightness moves linearly from its
    /// default to its minimum at −2 and its maximum at +2; exposure time doubles per stop
    /// from its default. Clamped to the control's range.
    public func value(forBias stops: Double) -> Int32 {
        let s = min(max(stops, -2), 2)
        let v: Double
        if needsManualExposure {
            v = Double(defaultValue) * pow(2, s)
        } else {
            let span = s >= 0 ? Double(maximum) - Double(defaultValue) : Double(defaultValue) - Double(minimum)
            v = Double(defaultValue) + s / 2 * span
        }
        return Int32(min(max(v.rounded(), Double(minimum)), Double(maximum)))
    }
}

extension V4L2Source {
    /// The control exposure bias can drive (`VIDIOC_QUERYCTRL` for brightness, then for
    /// auto exposure and exposure time), or why there is none: the reason a disabled exposure
    /// slider shows.
    public func exposureControl() -> Result<V4L2ExposureControl, V4L2ControlUnavailable> {
        func query(_ id: UInt32) -> v4l2_queryctrl? {
            var q = v4l2_queryctrl()
            q.id = id
            guard device.enumerate(CLinux_VIDIOC_QUERYCTRL, &q) else { return nil }
            // Disabled or read-only controls cannot take a bias.
            guard q.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0, q.flags & UInt32(V4L2_CTRL_FLAG_READ_ONLY) == 0 else { return nil }
            return q
        }
        if let q = query(CLinux_V4L2_CID_BRIGHTNESS), q.maximum > q.minimum {
            return .success(V4L2ExposureControl(name: "brightness", id: CLinux_V4L2_CID_BRIGHTNESS, minimum: q.minimum,
                                                maximum: q.maximum, defaultValue: q.default_value, needsManualExposure: false))
        }
        if query(CLinux_V4L2_CID_EXPOSURE_AUTO) != nil, let q = query(CLinux_V4L2_CID_EXPOSURE_ABSOLUTE), q.maximum > q.minimum {
            return .success(V4L2ExposureControl(name: "exposure_time_absolute", id: CLinux_V4L2_CID_EXPOSURE_ABSOLUTE, minimum: q.minimum,
                                                maximum: q.maximum, defaultValue: q.default_value, needsManualExposure: true))
        }
        return .failure(V4L2ControlUnavailable(description: "\(device.path) has no brightness or exposure control (VIDIOC_QUERYCTRL)"))
    }

    /// Sets `control` for a bias of `stops` (`VIDIOC_S_CTRL`; auto exposure to manual first
    /// for exposure time) and returns the value the driver kept (`VIDIOC_G_CTRL`).
    /// - Throws: ``V4L2Error`` when an ioctl fails (busy: `.busy`).
    @discardableResult
    public func setExposureBias(_ stops: Double, on control: V4L2ExposureControl) throws -> Int32 {
        if control.needsManualExposure {
            var manual = v4l2_control(id: CLinux_V4L2_CID_EXPOSURE_AUTO, value: CLinux_V4L2_EXPOSURE_MANUAL)
            try device.ioctl(CLinux_VIDIOC_S_CTRL, "VIDIOC_S_CTRL", &manual)
        }
        var c = v4l2_control(id: control.id, value: control.value(forBias: stops))
        try device.ioctl(CLinux_VIDIOC_S_CTRL, "VIDIOC_S_CTRL", &c)
        var got = v4l2_control(id: control.id, value: 0)
        try device.ioctl(CLinux_VIDIOC_G_CTRL, "VIDIOC_G_CTRL", &got)
        return got.value
    }
}

/// Why a camera control cannot be used: the reason a disabled control shows.
public struct V4L2ControlUnavailable: Error, Sendable, CustomStringConvertible {
    /// One line: which device, and what it lacks.
    public let description: String
}
