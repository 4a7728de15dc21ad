import Foundation
import Testing

/// Issue 14's scenario end to end, with the emulated evdev device (scripts/fake-evdev) and a
/// real `reel record --photos` (photo mode: primary presses take photos): a volume-down press
/// and release takes exactly one photo, of the pressed frame; a camera-key press cut by the
/// device's removal takes none; volume up lays a marker, which becomes a chapter of the MKV
/// clip. Timed against the capture clock (a press held 30 ms must still be in the zero
/// shutter lag ring), so it runs in the serial real-time pass.
@Suite("RealtimePhotoModeEvdevTests", .serialized, .enabled(if: installedTool("ffmpeg") != nil, "needs ffmpeg"))
struct RealtimePhotoModeEvdevTests {
    private struct Summary: Decodable {
        struct Shot: Decodable { let path: String; let frameIndex: Int; let pressedFrameIndex: Int; let lagFrames: Int }
        struct Clip: Decodable { let path: String }
        let photos: [Shot]
        let captureEvents: [EventJSON]
        let markers: [MarkerJSON]
        let clips: [Clip]
        let stopReason: String
    }

    @Test func aVolumeDownPressTakesOnePhotoOfThePressedFrameAndARemovedPressNone() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // The presses start 4 s after the device opens: capture and the photo output are
        // running by then (a press before would be buffered, which is not what is checked here).
        let script = [
            "wait 4000", "press KEY_VOLUMEDOWN", "wait 30", "release KEY_VOLUMEDOWN",
            "wait 300", "press KEY_CAMERA", "wait 100", "unplug", "wait 300", "plug",
            "wait 600", "press KEY_VOLUMEUP", "wait 50", "release KEY_VOLUMEUP",
        ].joined(separator: ";")
        let socket = dir + "/control.sock"
        let rec = try launch(["record", "--plain", "--json", "--out", dir + "/video", "--codec", "h264", "--container", "mkv",
                              "--source", "synthetic:1280", "--photos", dir + "/photos", "--photo-format", "jpeg",
                              "--input", "/dev/input/event0", "--control-socket", socket] + untilSIGINT,
                             environment: try evdevEnvironment(script: script))
        #expect(waitForFile(socket))
        #expect(try waitForEvents(6, socket: socket), "the scripted presses were not all logged within 60 s")
        let saved = waitUntil(60) { ((try? FileManager.default.contentsOfDirectory(atPath: dir + "/photos")) ?? []).contains { $0.hasSuffix(".jpg") } }
        #expect(saved, "no photo was saved")
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(Summary.self)
        let seen = s.captureEvents.map { "\($0.source.split(separator: "(").last!.dropLast()) \($0.action) \($0.phase)" }
        #expect(seen == [
            "KEY_VOLUMEDOWN primary began", "KEY_VOLUMEDOWN primary ended",
            "KEY_CAMERA primary began", "KEY_CAMERA primary cancelled",
            "KEY_VOLUMEUP secondary began", "KEY_VOLUMEUP secondary ended",
        ])
        // Exactly one photo: the volume-down press; the removed camera-key press took none.
        try #require(s.photos.count == 1, "photos: \(s.photos.map(\.path))")
        let shot = s.photos[0]
        let began = try #require(s.captureEvents.first?.frameIndex)
        // The photo is of the pressed frame (zero shutter lag), and shows it.
        #expect(shot.frameIndex == shot.pressedFrameIndex && shot.lagFrames == 0,
                "pressed \(shot.pressedFrameIndex), took \(shot.frameIndex)")
        #expect(try photoBarcode(shot.path).index == shot.frameIndex)
        // The logged frame is the newest captured when the event was handled (a loaded
        // machine may log a frame or two behind the press's own time, hence the margin).
        #expect(abs(shot.pressedFrameIndex - began) <= 3, "pressed at frame \(began), the photo says \(shot.pressedFrameIndex)")
        // Volume up: one marker at its `ended`, a chapter of the clip that holds it.
        try #require(s.markers.count == 1)
        #expect(s.markers[0].frameIndex == s.captureEvents[5].frameIndex)
        let chapters = try s.clips.flatMap { try probeFrames($0.path).chapters }
        #expect(chapters.map(\.title) == ["Marker 1"], "\(chapters)")
        #expect(s.stopReason == "interrupted")
    }
}
