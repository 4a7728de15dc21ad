import Testing
import ReelStorage

/// Issue 25's soak: glibc's allocator is set for hours of recording once per process (the
/// effect is measured by `scripts/bench soak`: RSS over 30 minutes).
@Suite struct ProcessMemoryTests {
    @Test func mallOptSucceedsHere() {
        // Nil: set, or left as the environment sets it; a string would name the mallopt that failed.
        #expect(ProcessMemory.tunedForLongRecordings == nil)
    }

    @Test func onlyTheAllocatorsOwnSettingsLeaveItAlone() {
        #expect(!ProcessMemory.environmentSetsAllocator([:]))
        #expect(!ProcessMemory.environmentSetsAllocator(["GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2"]))
        #expect(!ProcessMemory.environmentSetsAllocator(["MALLOC_CHECK_": "3"]))
        #expect(ProcessMemory.environmentSetsAllocator(["GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2:glibc.malloc.arena_max=4"]))
        #expect(ProcessMemory.environmentSetsAllocator(["MALLOC_MMAP_THRESHOLD_": "131072"]))
        #expect(ProcessMemory.environmentSetsAllocator(["MALLOC_ARENA_MAX": "8"]))
    }
}
