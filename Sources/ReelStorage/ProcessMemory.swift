import Foundation
import CLinux

/// glibc's allocator, set for a process that records for hours (issue 25's soak). In
/// ReelStorage, beside the pool it keeps steady.
///
/// By default glibc raises its mmap threshold each time a large block it had mapped is freed
/// (up to 32 MiB), so the multi-megabyte buffers a recording makes and frees again — the
/// muxer's fragment (about 27 MB a second of ProRes HQ), each clip's conversion frames (8 MB
/// each), packets of a megabyte — soon come from the heap instead, where freed memory stays
/// resident; and every short-lived thread (a clip's opener, syncer, storage writer) may get
/// an arena of its own. Measured with 10 s segments and `--keep 1min` (24 clips in 4 minutes,
/// the default recording): RssAnon grew from 228 to 309 MB between the first minute and the
/// fourth by default, and stayed at 153–154 MB with a fixed 2 MiB threshold and 2 arenas.
/// At 2 MiB the heap still swung between 5 and 9 MiB within each clip — packets of half a
/// megabyte (one frame of ProRes 422) freed into it and left resident until the clip's trim —
/// and at 256 KiB it stays at 1.1–1.5 MiB: a packet's memory goes back as it is freed (10
/// minutes of 1-minute segments, the soak's recording, sampled every 10 s; docs/benchmarks.md).
public enum ProcessMemory {
    /// The fixed mmap threshold: a block of 256 KiB or more is mapped and unmapped on free.
    public static let mmapThreshold: Int32 = 256 << 10
    /// At most this many malloc arenas.
    public static let arenas: Int32 = 2

    /// Whether `environment` sets glibc's allocator itself: `glibc.malloc.` tunables in
    /// `GLIBC_TUNABLES` (others there do not count), `MALLOC_MMAP_THRESHOLD_` or `MALLOC_ARENA_MAX`.
    public static func environmentSetsAllocator(_ environment: [String: String]) -> Bool {
        environment["GLIBC_TUNABLES"]?.contains("glibc.malloc.") == true
            || environment["MALLOC_MMAP_THRESHOLD_"] != nil || environment["MALLOC_ARENA_MAX"] != nil
    }

    /// Sets the threshold and the arena count once per process (a `Camera` does it when it is
    /// made), unless the environment already sets glibc's allocator (`glibc.malloc.` tunables
    /// in `GLIBC_TUNABLES`, `MALLOC_MMAP_THRESHOLD_`, `MALLOC_ARENA_MAX`): then it is left as set. Nil when it
    /// was set (or left), else why not.
    public static let tunedForLongRecordings: String? = {
        if environmentSetsAllocator(ProcessInfo.processInfo.environment) { return nil }
        switch CLinux_tune_malloc(mmapThreshold, arenas) {
        case 1: return nil
        case 0: return "mallopt(M_MMAP_THRESHOLD, \(mmapThreshold)) failed"
        default: return "mallopt(M_ARENA_MAX, \(arenas)) failed"
        }
    }()

    /// Gives the free pages inside glibc's heaps back to the kernel (`malloc_trim(0)`): called
    /// once a clip is closed, so that what the clip's encoder, muxer and writer freed does not
    /// stay resident between clips (glibc only returns the top of a heap by itself). It walks
    /// the arenas once: about a millisecond, on the finaliser's thread, never the capture's.
    public static func releaseFreedMemory() {
        _ = CLinux_trim_malloc()   // 1 or 0 (nothing to give back): neither is an error
    }
}
