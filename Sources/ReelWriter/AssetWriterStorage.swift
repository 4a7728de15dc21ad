import Foundation
import Synchronization
import ReelStorage

/// A `ClipStorage` opened on first use: what `open` makes (for `reel record`: open, create
/// or recover the storage pool) is made when the first clip is created or `open()` is called,
/// not before — so that under Deferred Start the pool's opening happens after the first
/// preview frame. The outcome, a failure too, is kept: it is made once.
public final class DeferredStorage: ClipStorage, Sendable {
    /// Writes one block of `count` bytes through the arm's write path.
    /// - Throws: `JitterError.io` (plain files), or the pool file's storage error, when the write
    ///   fails.
    public let destination: String
    private let opener: @Sendable () throws -> any ClipStorage
    private let opened = Mutex<Result<any ClipStorage, any Error>?>(nil)

    /// - Parameters:
    ///   - destination: the directory finished clips land in.
    ///   - open: makes the storage; called once, by the first `createClip` or `open()`.
    public init(destination: String, open: @escaping @Sendable () throws -> any ClipStorage) {
        self.destination = destination
        self.opener = open
    }

    /// Opens the storage now (once; later calls return what the first made).
    /// - Throws: what `open` threw (again on every call).
    @discardableResult
    public func open() throws -> any ClipStorage {
        try opened.withLock { r -> Result<any ClipStorage, any Error> in
            if let r { return r }
            let made = Result { try opener() }
            r = made
            return made
        }.get()
    }

    /// Whether the storage has been opened (or its opening failed).
    public var isOpen: Bool { opened.withLock { $0 != nil } }

    /// Opens the storage if need be, then creates the clip there.
    /// - Throws: what opening the storage threw, or what creating the clip throws
    ///   (`StorageError.exists`, the pool's `PoolError`s).
    public func createClip(named name: String) throws -> any ClipFile {
        try open().createClip(named: name)
    }

    /// The opened storage's deletion (a clip was finished, so it is open).
    public func deleteFinishedClip(_ path: String) -> ClipDeletion {
        if let storage = try? open() { return storage.deleteFinishedClip(path) }
        return unlink(path) == 0 ? .unlinked : .failed(errno)
    }

    /// The opened storage's.
    public func finishedClipSettled() { (try? open())?.finishedClipSettled() }
}
