import Testing
import ReelStorage

/// Issue 25's soak: glibc's allocator is set for hours of recording once per process.
@Suite struct ProcessMemoryTests {
    @Test func theAllocatorIsSetOrLeftAsTheEnvironmentSetsIt() {
        // Nil: set (a fixed 2 MiB mmap threshold and 2 arenas), or left as GLIBC_TUNABLES /
        // MALLOC_* set it; a string would say which mallopt failed.
        #expect(ProcessMemory.tunedForLongRecordings == nil)
        #expect(ProcessMemory.mmapThreshold == 2 << 20 && ProcessMemory.arenas == 2)
    }
}
