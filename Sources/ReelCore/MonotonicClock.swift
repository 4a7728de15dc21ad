#if canImport(Glibc)
import Glibc
#endif

/// `CLOCK_MONOTONIC` in nanoseconds: the clock frame schedules and latencies are measured on.
public enum MonotonicClock {
    /// Nanoseconds on `CLOCK_MONOTONIC` (`clock_gettime`).
    public static func now() -> UInt64 {
        var ts = timespec()
        // CLOCK_MONOTONIC always exists on Linux and `ts` is valid memory: EINVAL/EFAULT cannot
        // happen, so a failure is a broken system, not an error to report.
        guard clock_gettime(CLOCK_MONOTONIC, &ts) == 0 else { fatalError("clock_gettime(CLOCK_MONOTONIC) failed: errno \(errno)") }
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Sleeps until the monotonic clock reads `deadline` (`clock_nanosleep`, absolute; EINTR resumes the sleep).
    public static func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    /// Seconds elapsed since `start`, a reading of ``now()``.
    public static func seconds(since start: UInt64) -> Double { Double(now() &- start) / 1e9 }
}

/// The calling thread's CPU time so far, in seconds (`CLOCK_THREAD_CPUTIME_ID`; 0 if the
/// clock cannot be read): what a piece of work cost the thread that ran it.
public func threadCPUSeconds() -> Double {
    var t = timespec()
    guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 else { return 0 }
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}
