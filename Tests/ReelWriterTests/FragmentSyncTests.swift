import Foundation
import Synchronization
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelWriter

/// A plain clip file that notes the clip's length each time the muxer says a fragment is
/// complete (`fragmentCompleted`), and passes everything on.
private final class NotingClip: ClipFile, @unchecked Sendable {
    // Used by one thread at a time, as every ClipFile is.
    let inner: PlainFile
    var marks: [Int64] = []
    init(_ inner: PlainFile) { self.inner = inner }
    var path: String { inner.path }
    var position: Int64 { inner.position }
    var size: Int64 { inner.size }
    func write(_ bytes: UnsafeRawBufferPointer) throws { try inner.write(bytes) }
    func seek(to offset: Int64) throws { try inner.seek(to: offset) }
    func fragmentCompleted() {
        marks.append(inner.size)
        inner.fragmentCompleted()
    }
    func publish() throws -> Int64 { try inner.publish() }
    func truncate(to length: Int64) throws { try inner.truncate(to: length) }
    var writeStats: WriteStats? { inner.writeStats }
    var workingPath: String { inner.workingPath }
    func discard() { inner.discard() }
    var writtenLength: Int64 { inner.writtenLength }
}

/// Plain files in `destination`, each noting its fragment ends.
private final class NotingStorage: ClipStorage, Sendable {
    let destination: String
    let clips = Mutex<[NotingClip]>([])
    init(_ directory: String) { destination = directory }
    func createClip(named name: String) throws -> any ClipFile {
        let clip = NotingClip(try PlainFile(path: destination + "/" + name))
        clips.withLock { $0.append(clip) }
        return clip
    }
}

/// Where the muxer says a fragment is complete — what a plain recording syncs at.
@Suite(.serialized) struct FragmentSyncTests {
    /// Every complete fragment (MOV/MP4) or cluster (MKV) but the last (the trailer ends it,
    /// and publishing syncs it) is signalled where it ends, as it ends: the file cut there is
    /// playable and holds the clip's first frames, one prefix longer than the other.
    @Test(arguments: [(VideoCodec.prores(.proxy), Container.mov), (.h264, .mp4), (.ffv1, .mkv)])
    func everyCompleteFragmentIsSignalledWhereItEnds(codec: VideoCodec, container: Container) throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let storage = NotingStorage(dir)
        let writer = try AssetWriter(settings: WriterSettings(codec: codec, container: container, storage: storage,
                                                              namePrefix: "f", fragmentInterval: 0.2), rate: thirty)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        writer.start()
        for f in frames(30, from: source, ratio: .landscape16x9) { #expect(writer.offer(f, waiting: true) == .taken) }
        let result = writer.finishAndWait()
        let clip = try #require(storage.clips.withLock { $0.first })
        #expect(result.clips.count == 1 && result.clips.first?.frames == 30)
        let whole = try Data(contentsOf: URL(fileURLWithPath: clip.path))
        let fragments = try #require(container == .mkv ? FragmentScanner.completeClusters(of: clip.path)
                                                       : FragmentScanner.completeFragments(of: clip.path))
        // 30 frames in 0.2 s fragments: 5 fragments (FFV1's clusters may be one a frame).
        #expect(fragments.count >= 5, "\(fragments.count) fragments")
        #expect(clip.marks.count >= fragments.count - 1, "\(clip.marks) for \(fragments.count) fragments")
        #expect(zip(clip.marks, clip.marks.dropFirst()).allSatisfy { $0 < $1 }, "\(clip.marks)")
        var framesBefore = 0
        for mark in clip.marks {
            let cut = dir + "/cut-\(mark)." + container.rawValue
            try whole.prefix(Int(mark)).write(to: URL(fileURLWithPath: cut))
            let indices = try Inspector.probe(cut, frames: true).frameIndices ?? []
            #expect(indices == Array(0..<indices.count), "cut at \(mark): \(indices)")
            #expect(indices.count > framesBefore || (indices.isEmpty && framesBefore == 0), "cut at \(mark): \(indices.count) frames after \(framesBefore)")
            framesBefore = indices.count
            try FileManager.default.removeItem(atPath: cut)
        }
        #expect(framesBefore > 0 && framesBefore < 30)
    }
}
