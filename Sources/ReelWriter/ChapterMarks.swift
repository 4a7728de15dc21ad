import Synchronization

/// The frames where the recording's markers are (a secondary button's `ended`, say): each
/// becomes a chapter of the clip holding that frame, when the clip is closed.
///
/// The writer reads the list from its source when it closes each clip, so markers laid while
/// a clip is being written all reach it. Shared by every copy of the `WriterSettings` holding it.
public final class ChapterMarks: Sendable {
    private let source = Mutex<@Sendable () -> [Int]>({ [] })

    /// No markers until `setSource`.
    public init() {}

    /// Where the marker frames come from (the capture-event dispatcher's markers).
    public func setSource(_ frames: @escaping @Sendable () -> [Int]) { source.withLock { $0 = frames } }

    /// The marker frames so far, in order: marker N (from 1) is the Nth.
    public var frameIndices: [Int] { source.withLock { $0 }().sorted() }
}
