import CLinux
import Foundation
import ReelCore
import ReelMedia
import Synchronization

/// What a V4L2 device says about itself (`reel devices`).
public struct V4L2DeviceInfo: Sendable, Codable {
    /// One pixel format the device offers (`VIDIOC_ENUM_FMT`).
    public struct Format: Sendable, Codable {
        /// The format's FourCC (`YUYV`, `NV12`, `MJPG`, …).
        public var fourcc: String
        /// The driver's name for the format.
        public var description: String
        /// The discrete frame sizes offered in this format (`VIDIOC_ENUM_FRAMESIZES`).
        public var sizes: [Mode]
    }
    /// One frame size and the frame rates offered at it.
    public struct Mode: Sendable, Codable {
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int
        /// Discrete frame rates in frames per second (`VIDIOC_ENUM_FRAMEINTERVALS`); empty when the driver lists none.
        public var fps: [Double]
    }
    /// The device node (`/dev/video0`).
    public var path: String
    /// The driver's name (`VIDIOC_QUERYCAP` `driver`).
    public var driver: String
    /// The device's name (`card`).
    public var card: String
    /// Where the device is attached (`bus_info`).
    public var bus: String
    /// The pixel formats the device offers, in the driver's order.
    public var formats: [Format]
}

/// Errors of V4L2 devices, with the exit status `reel` reports.
public enum V4L2Error: UserFacingError {
    /// No such device node (exit status 66).
    case noDevice(String)
    /// Another program holds the camera: `open` or an ioctl gave EBUSY (exit status 69).
    case busy(String)
    /// `open` gave EACCES or EPERM (exit status 77).
    case permission(String)
    /// The node is not a streaming video capture device; the second string says why (exit status 69).
    case notCapture(String, String)
    /// The size, rate or format asked for is not offered; the second string lists what is (exit status 64).
    case formatNotOffered(String, String)
    /// A system call on the device failed (exit status 74).
    case failed(String, SystemError)

    /// The `reel` exit status of this error (see the cases).
    public var exitStatus: Int32 {
        switch self {
        case .noDevice: return ExitStatus.noInput
        case .busy, .notCapture: return ExitStatus.unavailable
        case .permission: return ExitStatus.permission
        case .formatNotOffered: return ExitStatus.usage
        case .failed: return ExitStatus.ioError
        }
    }

    /// One line naming the device and what went wrong.
    public var description: String {
        switch self {
        case .noDevice(let p): return "\(p): no such video device"
        case .busy(let p): return "\(p) is busy: another program is using the camera"
        case .permission(let p): return "\(p): permission denied (add yourself to the 'video' group)"
        case .notCapture(let p, let why): return "\(p) is not a video capture device (\(why))"
        case .formatNotOffered(let p, let offered): return "\(p) does not offer that format; it offers: \(offered)"
        case .failed(let p, let e): return "\(p): \(e.description)"
        }
    }
}

func fourccString(_ v: UInt32) -> String {
    String(decoding: [UInt8(v & 0xff), UInt8((v >> 8) & 0xff), UInt8((v >> 16) & 0xff), UInt8(v >> 24)], as: UTF8.self)
        .trimmingCharacters(in: .whitespaces)
}

func fourccValue(_ s: String) -> UInt32? {
    let b = Array(s.uppercased().utf8)
    guard b.count == 4 else { return nil }
    return UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
}

private func cString<T>(_ tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
    }
}

/// The cleanup failures of V4L2 devices said on stderr so far (one line each kind of call).
private let reportedCleanups = Mutex<Set<String>>([])

/// Says a failed cleanup call (STREAMOFF, munmap, close) on stderr as one `reel: ` line, the
/// first time that call fails in the process: the frames were delivered before it, so the
/// recording stands, but the failure is not hidden.
func reportV4L2Cleanup(_ e: SystemError) {
    let first = reportedCleanups.withLock { $0.insert(e.call).inserted }
    guard first else { return }
    let line = "reel: \(e.description) (while releasing the camera; what was captured is kept)\n"
    let bytes = Array(line.utf8)
    var done = 0
    while done < bytes.count {
        let n = bytes[done...].withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }   // stderr itself is gone: nowhere left to say it
        done += n
    }
}

/// A live frame-rate step of a V4L2 camera (`V4L2Source.setFrameRate` while it captures): the
/// rate its frames now come at and how it got there.
public struct V4L2RateStep: Sendable, Equatable {
    /// The rate asked for.
    public var requested: FrameRate
    /// The rate the frames come at from the step on: the driver's (S_PARM) divided by
    /// `keepEvery`; at or below `requested` (the nearest the camera can keep regular).
    public var rate: FrameRate
    /// `S_PARM` (the driver took the new rate while streaming) or `decimation` (it refused
    /// or has no frame-rate control: every `keepEvery`-th frame of the camera's is kept).
    public var method: String
    /// 1 with S_PARM; k when every k-th frame is kept.
    public var keepEvery: Int
    /// What differs from the request and why (the rate rounded down to a whole divisor or to
    /// one the camera offers; the driver's refusal), nil when the step is what was asked.
    public var note: String?
}

/// An open V4L2 device node.
final class V4L2Device {
    let path: String
    let fd: Int32

    init(path: String) throws {
        self.path = path
        let fd = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        if fd < 0 {
            switch errno {
            case ENOENT, ENODEV, ENXIO: throw V4L2Error.noDevice(path)
            case EBUSY: throw V4L2Error.busy(path)
            case EACCES, EPERM: throw V4L2Error.permission(path)
            default: throw V4L2Error.failed(path, .last("open", path: path))
            }
        }
        self.fd = fd
    }

    /// `close(2)`, checked: a failure is said once on stderr (``reportV4L2Cleanup(_:)``): by
    /// then every frame was delivered, so it is worth a line but not an error.
    deinit {
        if Glibc.close(fd) != 0 && errno != EINTR { reportV4L2Cleanup(.last("close", path: path)) }
    }

    @discardableResult
    func ioctl<T>(_ request: UInt, _ name: String, _ arg: inout T) throws -> Int32 {
        let r = withUnsafeMutablePointer(to: &arg) { CLinux_ioctl(fd, request, $0) }
        if r < 0 {
            let e = SystemError.last(name, path: path)
            if e.errno == EBUSY { throw V4L2Error.busy(path) }
            throw V4L2Error.failed(path, e)
        }
        return r
    }

    /// ioctl that may fail with EINVAL to end an enumeration.
    func enumerate<T>(_ request: UInt, _ arg: inout T) -> Bool {
        withUnsafeMutablePointer(to: &arg) { CLinux_ioctl(fd, request, $0) } == 0
    }

    func info() throws -> V4L2DeviceInfo {
        var cap = v4l2_capability()
        try ioctl(CLinux_VIDIOC_QUERYCAP, "VIDIOC_QUERYCAP", &cap)
        var formats: [V4L2DeviceInfo.Format] = []
        var i: UInt32 = 0
        while true {
            var d = v4l2_fmtdesc()
            d.index = i
            d.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            guard enumerate(CLinux_VIDIOC_ENUM_FMT, &d) else { break }
            var sizes: [V4L2DeviceInfo.Mode] = []
            var k: UInt32 = 0
            while true {
                var s = v4l2_frmsizeenum()
                s.index = k
                s.pixel_format = d.pixelformat
                guard enumerate(CLinux_VIDIOC_ENUM_FRAMESIZES, &s), s.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue else { break }
                let w = s.discrete.width, h = s.discrete.height
                var rates: [Double] = []
                var j: UInt32 = 0
                while true {
                    var v = v4l2_frmivalenum()
                    v.index = j; v.pixel_format = d.pixelformat; v.width = w; v.height = h
                    guard enumerate(CLinux_VIDIOC_ENUM_FRAMEINTERVALS, &v), v.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue else { break }
                    if v.discrete.numerator > 0 { rates.append(Double(v.discrete.denominator) / Double(v.discrete.numerator)) }
                    j += 1
                }
                sizes.append(.init(width: Int(w), height: Int(h), fps: rates))
                k += 1
            }
            formats.append(.init(fourcc: fourccString(d.pixelformat), description: cString(d.description), sizes: sizes))
            i += 1
        }
        return V4L2DeviceInfo(path: path, driver: cString(cap.driver), card: cString(cap.card), bus: cString(cap.bus_info), formats: formats)
    }
}

/// Lists the V4L2 capture devices (/dev/video0 … /dev/video63 that open and answer QUERYCAP).
/// Nodes that fail to open or answer are left out; nothing is thrown.
public func listV4L2Devices() -> [V4L2DeviceInfo] {
    (0..<64).compactMap { n in
        guard let d = try? V4L2Device(path: "/dev/video\(n)"), let info = try? d.info() else { return nil }
        return info
    }
}
