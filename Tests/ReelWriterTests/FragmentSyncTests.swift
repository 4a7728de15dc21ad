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

    /// The mdat payloads of `path`'s top-level boxes, in order (a fragmented MOV/MP4).
    static func mdatSizes(_ path: String) throws -> [Int] {
        let d = try Data(contentsOf: URL(fileURLWithPath: path))
        var sizes: [Int] = [], i = 0
        while i + 8 <= d.count {
            var size = d[i..<i + 4].reduce(0) { $0 << 8 | Int($1) }, header = 8
            if size == 1 { size = d[i + 8..<i + 16].reduce(0) { $0 << 8 | Int($1) }; header = 16 }
            if String(decoding: d[i + 4..<i + 8], as: UTF8.self) == "mdat" { sizes.append(size - header) }
            guard size >= header else { break }
            i += size
        }
        return sizes
    }

    /// The video packets' sizes, as ffprobe reads them.
    static func packetSizes(_ path: String) throws -> [Int] {
        let p = Process(), out = Pipe()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        p.arguments = ["-v", "error", "-select_streams", "v", "-show_entries", "packet=size", "-of", "csv=p=0", path]
        p.standardOutput = out
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return text.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// ProRes HQ of the realistic scene (about 0.9 MB a frame at 1920² cropped to 16:9) in the
    /// default 1 s fragments: movenc cuts each fragment at `Muxer.fragmentByteLimit` bytes of
    /// packets (one frame alone when a frame is larger), so it never holds a second of ProRes
    /// in memory; the sink still hears of a complete fragment about once a second (what it
    /// fdatasyncs at), not at every one; every frame is in the file, once, in order.
    @Test func anIntraOnlyFragmentHoldsAtMostTheByteLimit() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let storage = NotingStorage(dir)
        let writer = try AssetWriter(settings: WriterSettings(codec: .prores(.hq), container: .mov, storage: storage,
                                                              namePrefix: "f", fragmentInterval: 1.0), rate: thirty)
        let source = try SyntheticSource(size: 1920, rate: thirty, realtime: false, buffers: 80, scene: .realistic)
        writer.start()
        for f in frames(75, from: source, ratio: .landscape16x9) { #expect(writer.offer(f, waiting: true) == .taken) }
        let result = writer.finishAndWait()
        let clip = try #require(storage.clips.withLock { $0.first })
        #expect(result.clips.first?.frames == 75)
        let mdats = try Self.mdatSizes(clip.path)
        let frameBytes = try Self.packetSizes(clip.path).max() ?? 0
        #expect(mdats.count >= 40, "\(mdats.count) fragments for 75 frames of ProRes HQ")
        #expect(mdats.allSatisfy { $0 <= max(Muxer.fragmentByteLimit, frameBytes) }, "largest \(mdats.max() ?? 0) bytes, limit \(Muxer.fragmentByteLimit)")
        // 2.5 s: told at the fragments starting at 0, ~1 and ~2 s (the last, closed by the trailer, may be one of them).
        #expect((2...3).contains(clip.marks.count), "told \(clip.marks.count) times: \(clip.marks)")
        #expect(try Inspector.probe(clip.path, frames: true).frameIndices == Array(0..<75))
    }
}
