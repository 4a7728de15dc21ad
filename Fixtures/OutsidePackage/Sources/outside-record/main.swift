// A camera built on the library alone (no `reel` process): the synthetic sensor recorded to
// plain files, with the preview page served, a photo taken while it records, and the pressure
// handler on. It verifies the clips with the library's decoder and prints what it made.
import Foundation
import ReelCamera
import ReelCore
import ReelPreview
import ReelWriter

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("outside-record: \(message)\n".utf8))
    exit(1)
}

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reel-outside-\(getpid())").path
defer { try? FileManager.default.removeItem(atPath: directory) }

var configuration = CameraConfiguration()
configuration.recording.source = .synthetic(size: 1280)
configuration.recording.length = .frames(3000)   // until the photo is taken
configuration.recording.codec = .h264
configuration.recording.realtime = false
configuration.recording.storage = .plain
configuration.recording.outputDirectory = directory
configuration.preview = PreviewRequest(address: PreviewAddress(host: "127.0.0.1", port: 0))
configuration.photos = CameraPhotoRequest(directory: directory + "/photos")
configuration.pressureHandler = true

do {
    let camera = try Camera(configuration) { event in print("event \(event)") }
    let ended = DispatchSemaphore(value: 0)
    Thread {
        let summary = camera.run()
        print("recorded \(summary.recording.clips.count) clip(s), \(summary.photos.count) photo(s), pressure \(summary.pressure.level)")
        ended.signal()
    }.start()
    let photo = try camera.takePhoto()   // waits for the first frame, then for the file
    camera.stop()
    ended.wait()
    print("photo \(photo.width)x\(photo.height) frame \(photo.frameIndex)")
    if let failure = camera.recording.failure { fail("recording failed: \(failure.description)") }
    let report = try Inspector.verify([directory])
    let first = report.clips.first?.firstFrameIndex ?? -1, last = report.clips.last?.lastFrameIndex ?? -1
    print("frames \(report.framesChecked) indices \(first)..\(last) contiguous \(report.framesChecked == last - first + 1)")
    guard report.ok, first == 0, report.framesChecked == last + 1 else { fail("verify: \(report.violation ?? "not 0..N-1")") }
} catch {
    fail("\(error)")
}
