import CEvdev
import Foundation
import ReelCore
import Synchronization

/// Capture events from one evdev input device (`/dev/input/eventN`) read with libevdev.
///
/// A mapped key's press (value 1) is `began`, its release (0) `ended`; auto-repeat (2) is
/// ignored, and so are keys the map does not name. A press cut by SYN_DROPPED (the kernel's
/// queue overflowed: the release may be lost) or by the device going away is `cancelled`.
/// A device that goes away is opened again every 250 ms until it comes back (or `stop()`).
/// Optionally grabs the device (EVIOCGRAB) so the desktop does not also see the keys.
public final class EvdevSource: Sendable {
    /// The input device's path (`/dev/input/eventN`).
    public let path: String
    /// Which keys are capture keys, and the action each takes.
    public let keys: KeyMap
    /// Whether it grabs the device (EVIOCGRAB) while it reads.
    public let grab: Bool
    private let stopped = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Reads `path` with `keys`; `grab`: EVIOCGRAB while reading. Nothing is opened until `start`.
    public init(path: String, keys: KeyMap = .standard, grab: Bool = false) {
        self.path = path
        self.keys = keys
        self.grab = grab
    }

    /// Opens the device (open(2) O_RDONLY|O_NONBLOCK, `libevdev_new_from_fd`,
    /// `libevdev_set_clock_id(CLOCK_MONOTONIC)`, `libevdev_grab` when asked) and reads it on
    /// its own thread, calling `handler` for each event and `notice` when the device goes or
    /// comes back. Throws `ControlError` (permission 77, missing 66, grabbed 75, not evdev 69).
    public func start(_ handler: @escaping @Sendable (CaptureEvent) -> Void,
                      notice: @escaping @Sendable (String) -> Void = { _ in }) throws {
        let first = try Self.open(path, grab: grab)
        let box = DeviceBox(first)
        let t = Thread { [self] in
            read(box, handler: handler, notice: notice)
            finished.signal()
        }
        t.name = "reel.evdev"
        started.store(true, ordering: .releasing)
        t.start()
    }

    /// Stops reading, cancels a press still down, releases the grab and closes the device;
    /// returns once the reading thread has ended. Safe more than once.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if started.load(ordering: .acquiring) { finished.wait() }
    }

    /// An open device: libevdev's handle on its descriptor.
    struct Device {
        let fd: Int32
        let dev: OpaquePointer
        let path: String
        /// The kernel stamps events on CLOCK_MONOTONIC (EVIOCSCLOCKID worked).
        var monotonic = false
        func close() {
            libevdev_free(dev)
            FileDescriptor(rawValue: fd, path: path).closeQuietly()   // read-only: nothing to lose
        }
    }
    final class DeviceBox: @unchecked Sendable {  // handed once to the reading thread
        let device: Device
        init(_ d: Device) { device = d }
    }

    static func open(_ path: String, grab: Bool) throws -> Device {
        var fd: Int32
        repeat { fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw ControlError.opening(path, errno: errno) }
        var dev: OpaquePointer? = nil
        let rc = libevdev_new_from_fd(fd, &dev)
        guard rc == 0, let dev else {
            FileDescriptor(rawValue: fd, path: path).closeQuietly()
            throw ControlError.opening(path, errno: rc < 0 ? -rc : EINVAL)
        }
        // Without CLOCK_MONOTONIC stamps (an old kernel) the events carry Reel's own time.
        let device = Device(fd: fd, dev: dev, path: path, monotonic: libevdev_set_clock_id(dev, CLOCK_MONOTONIC) == 0)
        if grab {
            let g = libevdev_grab(dev, CEvdev_grab)
            if g != 0 { device.close(); throw ControlError.opening(path, errno: -g) }
        }
        return device
    }

    private func read(_ box: DeviceBox, handler: @Sendable (CaptureEvent) -> Void, notice: @Sendable (String) -> Void) {
        var device: Device? = box.device
        var down: [UInt16: CaptureEvent.Action] = [:]
        func now() -> Double { Double(MonotonicClock.now()) / 1e9 }
        func cancelAll(_ time: Double) {
            for (code, action) in down.sorted(by: { $0.key < $1.key }) {
                handler(CaptureEvent(phase: .cancelled, action: action, source: source(code), time: time))
            }
            down.removeAll()
        }
        while !stopped.load(ordering: .acquiring) {
            guard let d = device else {
                Thread.sleep(forTimeInterval: 0.25)
                if let again = try? Self.open(path, grab: grab) {
                    device = again
                    notice("\(path) is back")
                }
                continue
            }
            var pfd = pollfd(fd: d.fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { continue }
            var gone = ready < 0
            while !gone {
                var ev = input_event()
                let rc = libevdev_next_event(d.dev, UInt32(CEvdev_readNormal.rawValue), &ev)
                if rc == -EAGAIN { break }
                if rc == CEvdev_statusSync {
                    // SYN_DROPPED: a release may be lost, so a press now down is cancelled.
                    // The sync events that follow only bring libevdev's state up to date.
                    cancelAll(d.monotonic ? Self.seconds(ev) : now())
                    var s: Int32 = CEvdev_statusSync
                    while s == CEvdev_statusSync { s = libevdev_next_event(d.dev, UInt32(CEvdev_readSync.rawValue), &ev) }
                    if s != -EAGAIN && s < 0 { gone = true }
                    continue
                }
                if rc < 0 { gone = true; break }
                guard Int32(ev.type) == EV_KEY, let action = keys.actions[ev.code] else { continue }
                let time = d.monotonic ? Self.seconds(ev) : now()
                switch ev.value {
                case 1 where down[ev.code] == nil:
                    down[ev.code] = action
                    handler(CaptureEvent(phase: .began, action: action, source: source(ev.code), time: time))
                case 0 where down[ev.code] != nil:
                    down[ev.code] = nil
                    handler(CaptureEvent(phase: .ended, action: action, source: source(ev.code), time: time))
                default:
                    break   // auto-repeat, a release without its press
                }
            }
            if gone {
                cancelAll(now())
                d.close()
                device = nil
                notice("\(path) went away; waiting for it to come back")
            }
        }
        if let d = device {
            cancelAll(now())
            if grab && libevdev_grab(d.dev, CEvdev_ungrab) != 0 {
                // Closing the descriptor releases the grab as well.
            }
            d.close()
        }
    }

    private func source(_ code: UInt16) -> String { "evdev:\(path) (\(KeyMap.name(of: code)))" }

    private static func seconds(_ ev: input_event) -> Double {
        Double(ev.time.tv_sec) + Double(ev.time.tv_usec) / 1e6
    }
}
