import Foundation
import ReelCore

extension Inspector {
    /// The indexes (`*.index.json`, not hidden) in `path` when it is a directory, sorted by name;
    /// empty for a file or a directory without one.
    static func indexFiles(in path: String) -> [String] {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), isDir.boolValue else { return [] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        let dir = path.hasSuffix("/") ? String(path.dropLast()) : path
        return names.filter { $0.hasSuffix(".index.json") && !$0.hasPrefix(".") }.sorted().map { dir + "/" + $0 }
    }

    /// Checks a directory against its index (`reel verify DIR` when DIR holds one): every clip
    /// the index lists as kept exists, has the size the index gives, and decodes to the frame
    /// count and first frame index it gives; and each run's kept clips, in the index's order,
    /// pass the checks of ``verify(_:)`` — continuous within the run, except where the index
    /// records the clips between as deleted by loop recording (a run's clips after a deleted
    /// one start at the index's first frame). Files the index does not list, and deleted clips
    /// whose files are still there, are not read. Each run starts at its own frame 0 and
    /// session clock 0. Returns false at the first violation (in `report`).
    /// - Throws: ``InspectError/badIndex(_:)`` when the index cannot be used.
    static func verifyIndexed(_ indexPath: String, into report: inout VerifyReport) throws(InspectError) -> Bool {
        let loaded: SegmentIndex?
        do { loaded = try SegmentIndex.load(path: indexPath) } catch { throw .badIndex(error) }
        guard let index = loaded else { throw .badIndex(SegmentIndexError(path: indexPath, reason: "it is gone")) }
        report.indexes.append(indexPath)
        report.deletedClips += index.segments.filter(\.deleted).count + index.runs.reduce(0) { $0 + $1.deletedSegments }
        let dir = (indexPath as NSString).deletingLastPathComponent
        let indexName = (indexPath as NSString).lastPathComponent
        func fail(_ s: String) -> Bool {
            report.ok = false
            report.violation = s
            return false
        }
        let runs = Array(Set(index.segments.map(\.run))).sorted()
        for run in runs {
            // Groups of consecutive kept clips; a group after deleted clips resumes at its first frame.
            var groups: [(entries: [IndexedSegment], resumeAt: Int?)] = []
            // The run's oldest clips deleted: its first listed one starts where they ended.
            var afterDeleted = (index.runs.first { $0.run == run }?.deletedSegments ?? 0) > 0
            for e in index.segments where e.run == run {
                if e.deleted { afterDeleted = true; continue }
                if afterDeleted || groups.isEmpty {
                    groups.append(([e], afterDeleted ? e.firstFrameIndex : nil))
                } else {
                    groups[groups.count - 1].entries.append(e)
                }
                afterDeleted = false
            }
            for group in groups {
                var probes: [ProbeResult] = []
                var oddFrames: [String: OddFrame] = [:]
                var takes: [String: Take] = [:]
                for e in group.entries {
                    let path = dir + "/" + e.file
                    var st = stat()
                    if stat(path, &st) != 0 {
                        return fail("\(e.file): listed in \(indexName) but \(String(cString: strerror(errno)).lowercased())")
                    }
                    if Int64(st.st_size) != e.bytes {
                        return fail("\(e.file): \(st.st_size) bytes, \(indexName) says \(e.bytes)")
                    }
                    let decoded: (result: ProbeResult, oddFrame: OddFrame?, take: Take?)
                    do { decoded = try probeDecoding(path, frames: true) } catch {
                        return fail("\(e.file): listed in \(indexName) but cannot be read: \(error)")
                    }
                    let indices = decoded.result.frameIndices ?? []
                    if indices.count != e.frames || indices.first != e.firstFrameIndex {
                        let first = indices.first.map(String.init) ?? "none"
                        return fail("\(e.file): decodes \(indices.count) frames from frame \(first), \(indexName) says \(e.frames) from frame \(e.firstFrameIndex)")
                    }
                    probes.append(decoded.result)
                    oddFrames[path] = decoded.oddFrame
                    takes[path] = decoded.take
                }
                guard check(probes, oddFrames: oddFrames, takes: takes, resumeAt: group.resumeAt, into: &report) else { return false }
            }
        }
        return true
    }
}
