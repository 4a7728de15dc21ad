import Foundation
import Testing

/// `reel record SOURCE… --codec h264 --plain --json` with a control socket and `--photos
/// DIR/photos` (`--photo-format format`, clips in `DIR/video` named `name`): once it listens,
/// the control socket's shutter is pressed until a photo is saved (a press before the first
/// frame waits for one; polled with a generous deadline of 90 s, pressing again every 5 s),
/// then SIGINT. Expects the socket, a saved photo and exit 0; returns what `reel` printed.
func recordPressingTheShutter(in dir: String, source: [String], format: String, name: String,
                              environment: [String: String] = [:],
                              sourceLocation: SourceLocation = #_sourceLocation) throws -> Run {
    let socket = dir + "/control.sock"
    let photos = dir + "/photos"
    // Runs until SIGINT: the shutter is pressed once the recording listens.
    let rec = try launch(["record"] + source + ["--codec", "h264", "--plain",
                          "--duration", "600", "--control-socket", socket, "--photos", photos, "--photo-format", format,
                          "--json", "--out", dir + "/video", "--name", name],
                         environment: environment)
    defer { if rec.process.isRunning { rec.signal(SIGKILL) } }
    #expect(waitForFile(socket), "the recording never listened on its control socket", sourceLocation: sourceLocation)
    let deadline = Date(timeIntervalSinceNow: 90)
    var saved: [String] = []
    var lastPress = Date.distantPast
    while saved.isEmpty && Date() < deadline && rec.process.isRunning {
        if Date().timeIntervalSince(lastPress) > 5 {
            #expect(try reel(["control", "--socket", socket, "shutter"]).status == 0, sourceLocation: sourceLocation)
            lastPress = Date()
        }
        usleep(100_000)
        saved = ((try? FileManager.default.contentsOfDirectory(atPath: photos)) ?? []).filter { !$0.hasPrefix(".") }
    }
    #expect(!saved.isEmpty, "no photo within 90 s", sourceLocation: sourceLocation)
    rec.signal(SIGINT)
    let run = rec.wait()
    #expect(run.status == 0, "\(run.stderr)", sourceLocation: sourceLocation)
    return run
}
