import Foundation
import Synchronization
import ReelCapture
import ReelControl
import ReelCore

/// Keys 1–5 switch ratio while recording, q stops; only when stdin is the terminal and this
/// process is in its foreground (a background `reel record &` leaves the terminal alone).
///
/// The terminal goes out of canonical mode without echo (ISIG stays on, so Ctrl-C still
/// interrupts) and is put back by `stop()` — also on the second SIGINT, before exiting.
final class LiveKeys: Sendable {
    /// The terminal settings before recording, once the keys are on.
    private let saved = Mutex<termios?>(nil)
    /// The keys' settings while the process is stopped by Ctrl-Z.
    private let suspended = Mutex<termios?>(nil)
    private let done = Atomic<Bool>(false)
    /// Ratio requests in the order the keys came, applied one at a time.
    private let requests: AsyncStream<AspectRatio>.Continuation
    private let stream: AsyncStream<AspectRatio>
    /// ReelControl: where the terminal's capture events go (space: primary, `m`: secondary).
    private let captureEvents = Mutex<(@Sendable (CaptureEvent) -> Void)?>(nil)

    /// ReelControl: the space bar sends a primary press and `m` a secondary one to `send`, each
    /// `began` then `ended` at once (a terminal reports no key release).
    func sendCaptureEvents(to send: @escaping @Sendable (CaptureEvent) -> Void) {
        captureEvents.withLock { $0 = send }
    }

    /// Nothing happens until `start`: made first so that a signal handler can call `stop()`.
    init() {
        (stream, requests) = AsyncStream.makeStream(of: AspectRatio.self)
    }

    /// Turns the keys on when stdin is the foreground terminal; says so on stderr when it
    /// cannot set the terminal up. Start it after the SIGINT source: its thread inherits the
    /// signal mask, so it never takes a SIGINT meant for that source.
    func start(session: CaptureSession, stop: @escaping @Sendable () -> Void) {
        guard isatty(STDIN_FILENO) == 1, tcgetpgrp(STDIN_FILENO) == getpgrp() else { return }
        let on: Bool = saved.withLock { saved in
            var before = termios()
            guard retryingEINTR({ tcgetattr(STDIN_FILENO, &before) }) == 0 else {
                printError("live keys are off: cannot read the terminal's settings: \(String(cString: strerror(errno)))")
                return false
            }
            var raw = before
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
            withUnsafeMutableBytes(of: &raw.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
            guard retryingEINTR({ tcsetattr(STDIN_FILENO, TCSANOW, &raw) }) == 0 else {
                printError("live keys are off: cannot set the terminal: \(String(cString: strerror(errno)))")
                return false
            }
            saved = before
            return true
        }
        guard on else { return }
        // One request at a time, in key order: each returns at the first frame at its ratio.
        let stream = self.stream
        Task {
            for await ratio in stream {
                do { _ = try await session.setDynamicAspectRatio(ratio) } catch {
                    writeStderr("\r\u{1B}[K")
                    printError((error as? any UserFacingError)?.description ?? "\(error)")
                }
            }
        }
        let thread = Thread { [self] in readKeys(stop: stop) }
        thread.name = "reel.keys"
        thread.start()
    }

    private func readKeys(stop: @Sendable () -> Void) {
        var byte: UInt8 = 0
        while !done.load(ordering: .acquiring) {
            var pfd = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 { return }
            if ready == 0 { continue }
            if pfd.revents & Int16(POLLIN) == 0 { return }  // hung up or closed: no more keys
            let n = read(STDIN_FILENO, &byte, 1)
            if n < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if n <= 0 { return }
            switch byte {
            case UInt8(ascii: "1")...UInt8(ascii: "5"):
                requests.yield(AspectRatio.keyOrder[Int(byte - UInt8(ascii: "1"))])
            case UInt8(ascii: "q"):
                stop()
            case UInt8(ascii: " "), UInt8(ascii: "m"):  // ReelControl: capture events
                if let send = captureEvents.withLock({ $0 }) {
                    let action: CaptureEvent.Action = byte == UInt8(ascii: " ") ? .primary : .secondary
                    send(CaptureEvent(phase: .began, action: action, source: "terminal"))
                    send(CaptureEvent(phase: .ended, action: action, source: "terminal"))
                }
            default:
                break
            }
        }
    }

    /// Ctrl-Z (SIGTSTP, which `reel record` catches): puts the terminal back as it was and
    /// stops the process (SIGSTOP, as the default action of SIGTSTP would). `continued()`
    /// (on SIGCONT: `fg`) takes the keys' settings again. Called on the signal source's queue.
    func suspendProcess() {
        saved.withLock { saved in
            guard var settings = saved, !done.load(ordering: .acquiring) else { return }
            var current = termios()
            guard retryingEINTR({ tcgetattr(STDIN_FILENO, &current) }) == 0 else { return }
            if retryingEINTR({ tcsetattr(STDIN_FILENO, TCSANOW, &settings) }) != 0 {
                printError("cannot restore the terminal's settings (`stty sane` does): \(String(cString: strerror(errno)))")
                return
            }
            suspended.withLock { $0 = current }
        }
        if kill(getpid(), SIGSTOP) != 0 {
            printError("cannot stop: \(String(cString: strerror(errno)))")
        }
    }

    /// SIGCONT after `suspendProcess`: the keys' settings again, only in the foreground (`bg`
    /// leaves the terminal alone). (Not right after the SIGSTOP: the process may run on a
    /// moment before it stops.)
    func continued() {
        guard var raw = suspended.withLock({ s -> termios? in defer { s = nil }; return s }) else { return }
        saved.withLock { saved in
            guard saved != nil, !done.load(ordering: .acquiring), tcgetpgrp(STDIN_FILENO) == getpgrp() else { return }
            if retryingEINTR({ tcsetattr(STDIN_FILENO, TCSANOW, &raw) }) != 0 {
                printError("live keys are off: cannot set the terminal: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Stops reading keys and puts the terminal back as it was. Safe from any thread, and
    /// more than once.
    func stop() {
        done.store(true, ordering: .releasing)
        requests.finish()
        saved.withLock { saved in
            guard var settings = saved else { return }
            if retryingEINTR({ tcsetattr(STDIN_FILENO, TCSANOW, &settings) }) != 0 {
                printError("cannot restore the terminal's settings (`stty sane` does): \(String(cString: strerror(errno)))")
            }
        }
    }
}

/// Calls `body` again while it fails with EINTR.
private func retryingEINTR(_ body: () -> Int32) -> Int32 {
    while true {
        let r = body()
        if r == -1 && errno == EINTR { continue }
        return r
    }
}
