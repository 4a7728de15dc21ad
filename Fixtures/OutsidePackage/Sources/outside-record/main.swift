// Records 30 frames of the synthetic sensor into plain files in a temporary directory, through
// the library alone (no `reel` process), then verifies them with the library's decoder.
// Prints one line per clip and `frames N indices A..B`; exits nonzero on any problem.
import Foundation
import ReelCore
import ReelMedia
import ReelWriter

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("outside-record: \(message)\n".utf8))
    exit(1)
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reel-outside-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: directory) }

var options = RecordOptions()
options.source = .synthetic(size: 1280)
options.rate = FrameRate(frames: 30)!
options.length = .frames(30)
options.codec = .h264
options.container = .mov
options.realtime = false
options.storage = .plain
options.outputDirectory = directory
options.namePrefix = "outside"

do {
    let recording = try Recording(options: options)
    let summary = recording.run()
    if let failure = recording.failure { fail("recording failed: \(failure.description)") }
    guard summary.stopReason == "completed" else { fail("recording stopped: \(summary.stopReason)") }
    let report = try Inspector.verify([directory])
    for clip in report.clips {
        print("clip \((clip.path as NSString).lastPathComponent) \(clip.width)x\(clip.height) \(clip.frames) frames")
    }
    let first = report.clips.first?.firstFrameIndex ?? -1
    let last = report.clips.last?.lastFrameIndex ?? -1
    print("frames \(report.framesChecked) indices \(first)..\(last)")
    guard report.ok else { fail("verify: \(report.violation ?? "failed")") }
    guard report.framesChecked == 30, first == 0, last == 29 else { fail("expected 30 frames, indices 0..29") }
} catch {
    fail("\(error)")
}
