import Foundation
import Synchronization
import Testing
import ReelCore

/// Every clip's storage threads run on parked threads of their kind, not on new ones.
@Suite struct ThreadReuseTests {
    private final class Held: Sendable {}

    /// The calling thread's kernel id (its /proc/self/task entry) and name.
    private static func threadID() -> Int32 {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
        return Int32(link.split(separator: "/").last ?? "") ?? -1
    }

    @Test func aJobAfterAnotherRunsOnTheSameThreadAndLetsGoOfWhatItHeld() {
        let threads = ThreadReuse(name: "test.reuse")
        let ids = Mutex<[Int32]>([])
        let done = DispatchSemaphore(value: 0)
        weak var released: Held?
        do {
            let held = Held()
            released = held
            threads.run { [held] in
                _ = held
                ids.withLock { $0.append(Self.threadID()) }
                done.signal()
            }
        }
        done.wait()
        // The first job has finished; its thread parks (or is about to).
        #expect(waitFor { threads.idleCount == 1 }, "the thread did not park")
        #expect(released == nil, "the parked thread still holds the finished job's captures")
        threads.run {
            ids.withLock { $0.append(Self.threadID()) }
            done.signal()
        }
        done.wait()
        let seen = ids.withLock { $0 }
        #expect(seen.count == 2 && seen[0] > 0 && seen[0] == seen[1], "\(seen)")
        // The thread carries the kind's name.
        let name = try? String(contentsOfFile: "/proc/self/task/\(seen[0])/comm", encoding: .utf8)
        #expect(name?.trimmingCharacters(in: .whitespacesAndNewlines) == "test.reuse")
    }

    @Test func jobsAtOnceGetThreadsOfTheirOwnAndAtMostKeepIdleWait() {
        let threads = ThreadReuse(name: "test.many", keepIdle: 2)
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let ids = Mutex<Set<Int32>>([])
        for _ in 0..<4 {
            threads.run {
                ids.withLock { _ = $0.insert(Self.threadID()) }
                started.signal()
                release.wait()
                finished.signal()
            }
        }
        // All four run at once (none waits for another to finish).
        for _ in 0..<4 { started.wait() }
        #expect(ids.withLock { $0.count } == 4)
        for _ in 0..<4 { release.signal() }
        for _ in 0..<4 { finished.wait() }
        #expect(waitFor { threads.idleCount == 2 }, "idle: \(threads.idleCount)")
        // The two others ended.
        #expect(waitFor { ids.withLock { $0 }.filter { FileManager.default.fileExists(atPath: "/proc/self/task/\($0)") }.count == 2 })
    }

    @Test func prestartedThreadsWaitAndTakeTheFirstJobs() {
        let threads = ThreadReuse(name: "test.pre", keepIdle: 3)
        threads.prestart(2)
        #expect(waitFor { threads.idleCount == 2 }, "idle: \(threads.idleCount)")
        // Asking again for as many makes none.
        threads.prestart(2)
        #expect(threads.idleCount == 2)
        let done = DispatchSemaphore(value: 0)
        threads.run { done.signal() }
        done.wait()
        // The job ran on one of them, which parked again: still two alive, none made.
        #expect(waitFor { threads.idleCount == 2 })
        // More than keepIdle is capped at keepIdle.
        threads.prestart(10)
        #expect(waitFor { threads.idleCount == 3 } && threads.idleCount == 3)
    }

    /// Polls `condition` (a parked thread shows up a moment after its job returns).
    private func waitFor(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if condition() { return true }
            usleep(1_000)
        }
        return false
    }
}
