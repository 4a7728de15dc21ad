import Foundation

/// The ring's blocks, each allocated when the muxer first fills it: a clip that stays short
/// (seams make many) touches a block or two, not the whole ring, so opening a clip does not
/// page in 64 MiB. Only the muxer side allocates (`allocate`, before it hands the block over
/// under the file's lock); the writer thread reads only blocks it was handed.
///
/// A block is a private anonymous mapping (page-aligned, as O_DIRECT needs), never glibc's
/// heap: from the heap (when `ProcessMemory`'s mmap threshold was 2 MiB, 1 MiB was under it) every
/// clip's freed ring stayed resident between clips, fragmented (issue 25's soak). A closed
/// clip's blocks go to a cache the next clip's ring takes from, up to two rings' worth (a clip
/// recording and the one closing); the rest are unmapped. A cached block's pages go back to
/// the kernel as it is cached (`madvise(MADV_DONTNEED)`): it reads as zeros when next used,
/// as a fresh mapping does, and holds no memory meanwhile. So the memory of a recording of
/// many clips stays flat — not mapped and unmapped clip by clip — and each clip holds only the
/// blocks its own ring went deep enough to use: a disk stall in one clip does not keep its
/// ring's depth resident for the rest of the recording.
final class RingBlocks: @unchecked Sendable {
    private let pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    let count: Int
    private let size: Int

    /// Blocks of `StoragePool.blockSize` that closed clips gave back.
    private static let cache = BlockCache()
    /// The most blocks the cache keeps: two 64 MiB rings.
    static let cacheLimit = 128

    init(count: Int, size: Int) {
        self.count = count
        self.size = size
        pointers = .allocate(capacity: count)
        pointers.initialize(repeating: nil, count: count)
    }

    func allocate(_ i: Int) {
        guard pointers[i] == nil else { return }
        if size == StoragePool.blockSize, let p = RingBlocks.cache.take() {
            pointers[i] = p   // its pages were discarded when cached: zeros, as a fresh mapping
        } else {
            pointers[i] = Sys.mapAnonymous(size)
        }
    }

    subscript(_ i: Int) -> UnsafeMutableRawPointer { pointers[i]! }

    func freeAll() {
        for i in 0..<count {
            guard let p = pointers[i] else { continue }
            // Cached only once its pages are discarded (no byte of this clip reaches the next
            // one's slot, and it holds no memory meanwhile); else unmapped.
            if !(size == StoragePool.blockSize && Sys.discardPages(p, size) && RingBlocks.cache.give(p, limit: RingBlocks.cacheLimit)) {
                Sys.unmapAnonymous(p, size)
            }
        }
        pointers.deallocate()
    }

    /// Blocks in the cache now (for tests).
    static var cached: Int { cache.count }
}

/// The blocks closed clips gave back, from any thread.
private final class BlockCache: @unchecked Sendable {
    private let lock = NSLock()
    // Guarded by `lock`.
    private var blocks: [UnsafeMutableRawPointer] = []

    func take() -> UnsafeMutableRawPointer? {
        lock.lock(); defer { lock.unlock() }
        return blocks.popLast()
    }

    /// Keeps `p` unless `limit` blocks are kept already; false when not kept.
    func give(_ p: UnsafeMutableRawPointer, limit: Int) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard blocks.count < limit else { return false }
        blocks.append(p)
        return true
    }

    var count: Int {
        lock.lock(); defer { lock.unlock() }
        return blocks.count
    }
}
