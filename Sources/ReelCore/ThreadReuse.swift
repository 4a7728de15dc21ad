import CLinux
import Foundation
import Synchronization

/// Threads for work that comes and goes with every clip (a clip's storage writer and syncer,
/// the opener of the next clip): a job runs on a parked thread of its kind when one is idle,
/// and a thread is made only when none is. So an hours-long recording does not make and end
/// threads at every segment, and its thread count stays at the most it needed at once.
///
/// One `ThreadReuse` per kind of job: a job may set what stays with its thread (an I/O
/// priority, say), and every job of a kind sets the same. A job must not wait for a later
/// job of its own kind to start.
public final class ThreadReuse: Sendable {
    private final class Worker: Sendable {
        let wake = DispatchSemaphore(value: 0)
        let job = Mutex<(@Sendable () -> Void)?>(nil)

        /// Runs the job handed over, and lets go of it (and of what it holds) on return.
        func runPending() {
            let j = job.withLock { j in
                defer { j = nil }
                return j
            }
            j?()
        }
    }

    private let name: String
    private let keepIdle: Int
    private let stackSize: Int?
    private let idle = Mutex<[Worker]>([])
    /// Threads of this kind alive: at work or parked.
    private let alive = Mutex(0)

    /// Threads named `name`, with a stack of `stackSize` bytes (nil: Foundation's default); at
    /// most `keepIdle` wait for work, more end when their job does.
    public init(name: String, keepIdle: Int = 4, stackSize: Int? = nil) {
        self.name = name
        self.keepIdle = keepIdle
        self.stackSize = stackSize
    }

    /// How many threads of this kind wait for work now.
    public var idleCount: Int { idle.withLock { $0.count } }

    /// Makes parked threads until `count` of this kind are alive (at most `keepIdle` wait), so
    /// that work that starts later — a recording's first clips — starts none.
    public func prestart(_ count: Int) {
        let more = alive.withLock { n -> Int in
            let k = max(0, min(count, keepIdle) - n)
            n += k
            return k
        }
        for _ in 0..<more { startThread(Worker()) }
    }

    /// Runs `job` on an idle thread of this kind, or on a new one.
    public func run(_ job: @escaping @Sendable () -> Void) {
        if let worker = idle.withLock({ $0.popLast() }) {
            worker.job.withLock { $0 = job }
            worker.wake.signal()
            return
        }
        let worker = Worker()
        worker.job.withLock { $0 = job }
        alive.withLock { $0 += 1 }
        startThread(worker)
    }

    private func startThread(_ worker: Worker) {
        // The thread holds only the worker: a finished job's captures go with it.
        let t = Thread { [self, worker, name] in
            // The kind's name shows in /proc/PID/task/*/comm (at most 15 bytes).
            _ = CLinux_name_this_thread(String(decoding: name.utf8.prefix(15), as: UTF8.self))
            repeat { worker.runPending() } while park(worker)
        }
        t.name = name
        if let stackSize { t.stackSize = stackSize }
        t.start()
    }

    /// Waits until a job is handed over (true), or returns false (the thread ends) when
    /// enough threads of this kind wait already.
    private func park(_ worker: Worker) -> Bool {
        let kept = idle.withLock { list -> Bool in
            guard list.count < keepIdle else { return false }
            list.append(worker)
            return true
        }
        if kept { worker.wake.wait() } else { alive.withLock { $0 -= 1 } }
        return kept
    }
}
