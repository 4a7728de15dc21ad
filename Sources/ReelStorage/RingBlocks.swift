import Foundation


/// The ring's blocks, each allocated when the muxer first fills it: a clip that stays short
/// (seams make many) touches a block or two, not the whole ring, so opening a clip does not
/// page in 64 MiB. Only the muxer side allocates (`allocate`, before it hands the block over
/// under the file's lock); the writer thread reads only blocks it was handed.
///
/// Each block is a private anonymous mapping of its own (page-aligned, as O_DIRECT needs, and
/// zero-filled by the kernel as it is touched), unmapped when the clip closes: its memory goes
/// back to the kernel at once. From glibc's heap (1 MiB is under the 2 MiB mmap threshold
/// `ProcessMemory` sets), every clip's 64 MiB ring was freed into the heap and stayed
/// resident between clips, fragmented (issue 25's soak).
final class RingBlocks: @unchecked Sendable {
    private let pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    let count: Int
    private let size: Int

    init(count: Int, size: Int) {
        self.count = count
        self.size = size
        pointers = .allocate(capacity: count)
        pointers.initialize(repeating: nil, count: count)
    }

    func allocate(_ i: Int) {
        if pointers[i] == nil { pointers[i] = Sys.mapAnonymous(size) }
    }

    subscript(_ i: Int) -> UnsafeMutableRawPointer { pointers[i]! }

    func freeAll() {
        for i in 0..<count { if let p = pointers[i] { Sys.unmapAnonymous(p, size) } }
        pointers.deallocate()
    }
}
