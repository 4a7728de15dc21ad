import Foundation


/// The ring's blocks, each allocated when the muxer first fills it: a clip that stays short
/// (seams make many) touches a block or two, not the whole ring, so opening a clip does not
/// page in 64 MiB. Only the muxer side allocates (`allocate`, before it hands the block over
/// under the file's lock); the writer thread reads only blocks it was handed.
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
        if pointers[i] == nil { pointers[i] = Sys.alignedAlloc(size) }
    }

    subscript(_ i: Int) -> UnsafeMutableRawPointer { pointers[i]! }

    func freeAll() {
        for i in 0..<count { if let p = pointers[i] { free(p) } }
        pointers.deallocate()
    }
}
