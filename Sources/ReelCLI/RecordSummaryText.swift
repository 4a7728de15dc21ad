import ReelCamera
import ReelControl
import ReelCore
import ReelStorage
import ReelWriter

/// `reel record`'s summary as text: the clips, storage and seams, then the capture events,
/// markers, control changes, photos and locks.
enum RecordSummaryText {
    /// Every line of the summary, on stdout.
    static func print(_ result: CameraSummary) {
        printRecording(result.recording)
        printEvents(result.controls)
        printPhotos(result.photos)
        printLocks(result.locks)
    }

    static func printRecording(_ s: RecordingSummary) {
        let frames = s.clips.reduce(0) { $0 + $1.frames }
        Swift.print("recorded \(s.clips.count) clip\(s.clips.count == 1 ? "" : "s"), \(frames) frames, \(s.framesDropped) dropped, in \(fixed(s.elapsedSeconds)) s (\(s.stopReason))")
        let deleted = Set(s.loopDeletions.filter { $0.error == nil }.map(\.path))
        for c in s.clips {
            Swift.print("  \(c.path)  \(c.width)x\(c.height) \(c.ratio) \(c.codec)/\(c.container)  \(c.frames) frames #\(c.firstFrameIndex)-\(c.lastFrameIndex)  \(fixed(c.durationSeconds, 2)) s  \(megabytes(c.bytes))\(c.salvaged ? "  (salvaged)" : "")\(deleted.contains(c.path) ? "  (deleted: loop budget)" : "")")
        }
        let st = s.storage
        var line = "  storage: \(st.mode)"
        if let pool = st.pool { line += " \(pool) (\(st.writeMode))" }
        line += ", write p99 \(fixed(st.writeLatencyMs.p99, 2)) ms, max \(fixed(st.longestStallMs, 2)) ms"
        if let before = st.remainingCapacityBefore, let after = st.remainingCapacityAfter {
            line += ", remaining \(formatBytes(before)) -> \(formatBytes(after))"
        }
        Swift.print(line)
        if let a = s.audio {
            Swift.print("  sound: \(a.device) \(a.sampleRate) Hz \(a.channels) ch \(a.codec), \(a.samplesWritten) of \(a.samplesCaptured) samples written, \(a.samplesDropped) lost")
            if let o = a.avOffset {
                Swift.print(String(format: "  A/V offset, read back from the clips: %+.2f ms at the first click, %+.2f ms at the last, at most %.2f ms (%d clicks)",
                                   o.firstMs, o.lastMs, o.largestMs, o.clicks))
            }
        }
        for seam in s.seams {
            Swift.print("  seam at frame \(seam.frameIndex) (\(fixed(seam.pts, 3)) s): \(seam.from) -> \(seam.to)")
        }
        for cut in s.segments {
            let at = cut.boundarySeconds.map { "boundary \(fixed($0, 3)) s" } ?? "by size"
            Swift.print("  segment at frame \(cut.frameIndex) (\(fixed(cut.pts, 3)) s, \(at))\(cut.ratioSeam ? ", with a seam" : "")")
        }
        for d in s.loopDeletions where d.error != nil {
            Swift.print("  loop budget: could not delete \(d.path): \(d.error ?? "")")
        }
        for t in s.recordingToggles {
            Swift.print("  record \(t.action.rawValue) at \(fixed(t.atSeconds, 2)) s (take \(t.take), frame \(t.frameIndex.map(String.init) ?? "-")) from \(t.source)")
        }
        if s.framesDropped > 0 {
            Swift.print("  drops: " + s.dropReasons.filter { $0.value > 0 }.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "))
        }
    }

    /// The text summary's lines for capture events and markers (none without events).
    static func printEvents(_ s: ControlSummary) {
        for e in s.captureEvents {
            Swift.print("  event \(e.action.rawValue) \(e.phase.rawValue) at frame \(e.frameIndex.map(String.init) ?? "-") from \(e.source)")
        }
        for m in s.markers {
            Swift.print("  marker at frame \(m.frameIndex.map(String.init) ?? "-")")
        }
        for c in s.controlChanges {
            Swift.print("  \(c.control) \(c.title ?? number(c.value)) at frame \(c.frameIndex.map(String.init) ?? "-")")
        }
    }

    /// The text summary's line for each photo taken during the recording.
    static func printPhotos(_ photos: [CameraPhoto]) {
        for r in photos {
            let p = r.photo
            Swift.print("  photo \(p.path)  \(p.width)x\(p.height) \(p.format.rawValue), frame #\(p.frameIndex) (pressed #\(p.pressedFrameIndex), lag \(p.lagFrames))"
                  + (r.burst.map { "  burst \($0)" } ?? ""))
        }
    }

    /// The text summary's line for each lock and unlock.
    static func printLocks(_ locks: [LockRecord]) {
        for l in locks {
            let values = l.controls.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            Swift.print("  \(l.locked ? "lock" : "unlock") at frame \(l.frameIndex.map(String.init) ?? "-") (\(values)) from \(l.source)")
        }
    }
}
