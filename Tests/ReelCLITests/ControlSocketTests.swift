import Foundation
import Testing

/// A stream socket connected to the UNIX socket at `path`, `text` sent on it (the caller closes it).
func connectAndSend(_ path: String, _ text: String) throws -> Int32 {
    let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard s >= 0 else { throw ProbeFailed(message: "socket") }
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
    guard r == 0 else { close(s); throw ProbeFailed(message: "connect \(path): \(errno)") }
    let bytes = Array(text.utf8)
    guard bytes.withUnsafeBytes({ send(s, $0.baseAddress, $0.count, 0) }) == bytes.count else { close(s); throw ProbeFailed(message: "send") }
    return s
}

/// Connects to the UNIX socket at `path`, sends `text`, and reads until `lines` answer lines came.
func talk(_ path: String, _ text: String, lines: Int) throws -> [String] {
    let s = try connectAndSend(path, text)
    defer { close(s) }
    var got = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 4096)
    var tv = timeval(tv_sec: 5, tv_usec: 0)
    guard setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size)) == 0 else { throw ProbeFailed(message: "setsockopt") }
    while got.filter({ $0 == UInt8(ascii: "\n") }).count < lines {
        let n = chunk.withUnsafeMutableBytes { read(s, $0.baseAddress, $0.count) }
        guard n > 0 else { break }
        got += chunk[0..<n]
    }
    return String(decoding: got, as: UTF8.self).split(separator: "\n").map(String.init)
}

/// Waits (at most 60 s: a loaded machine starts `reel` slowly) until `path` exists.
func waitForFile(_ path: String) -> Bool {
    waitUntil(60) { FileManager.default.fileExists(atPath: path) }
}

/// Waits (at most 60 s) until the directory `path` holds a file: a recording's first clip
/// exists once its first frame was captured (Deferred Start).
func waitForFirstClip(in path: String) -> Bool {
    waitUntil(60) { !((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).isEmpty }
}

struct ControlChangeJSON: Decodable { var control: String; var value: Double; var title: String?; var frameIndex: Int? }
struct SeamJSON: Decodable { var frameIndex: Int; var to: String }
struct SocketSummaryJSON: Decodable {
    var captureEvents: [EventJSON]
    var markers: [MarkerJSON]
    var controlChanges: [ControlChangeJSON]
    var seams: [SeamJSON]
    var stopReason: String
}

/// The control socket and `reel control`, with real processes.
@Suite struct ControlSocketTests {
    /// During a recording: the socket is mode 0600 and its path printed; `reel control` changes
    /// zoom (clamped, saying so), exposure and the ratio (a seam at the frame the summary
    /// states), sends a shutter and a marker press, and reads the status; malformed JSON gets
    /// an error reply and the connection stays usable; two clients at once; the socket is gone
    /// afterwards.
    @Test func theSocketTakesEventsAndControls() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let path = dir + "/control.sock"
        // Until SIGINT (below): the checks take a while on a loaded machine.
        let rec = try launch(["record", "--plain", "--json", "--out", dir + "/out", "--codec", "h264",
                              "--source", "synthetic:1280", "--control-socket", path] + untilSIGINT)
        #expect(waitForFile(path))
        var st = stat()
        #expect(stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFSOCK && st.st_mode & 0o777 == 0o600)
        // The ratio change below lands on a frame once capture has begun.
        #expect(waitForFirstClip(in: dir + "/out"))
        let zoom = try reel(["control", "--socket", path, "zoom", "8", "exposure", "-1", "ratio", "9x16"])
        #expect(zoom.status == 0, "\(zoom.stderr)")
        let answers = zoom.stdout.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(answers.count == 3)
        #expect(answers[0]?["clamped"] as? Bool == true && answers[0]?["value"] as? Double == 4)
        #expect(answers[1]?["clamped"] as? Bool == false && answers[1]?["value"] as? Double == -1)
        #expect(answers[2]?["title"] as? String == "9x16")
        let press = try reel(["control", "--socket", path, "shutter", "marker", "event", "began", "primary", "event", "cancelled", "primary"])
        #expect(press.status == 0 && press.stdout.split(separator: "\n").count == 6)
        // Malformed JSON: an error reply, and the same connection answers the next line; a
        // second client meanwhile.
        let other = try talk(path, "{\"status\": true}\n", lines: 1)
        let raw = try talk(path, "this is not json\n{\"status\": true}\n", lines: 2)
        #expect(raw.first == "{\"error\":\"not a JSON object\",\"ok\":false}")
        #expect(raw.count == 2 && raw[1].contains("\"ok\":true") && raw[1].contains("\"title\":\"9x16\"") && raw[1].contains("\"value\":4"))
        #expect(other.first?.contains("\"ok\":true") == true)
        // The UI's view follows: status shows the last values set.
        let status = try reel(["control", "--socket", path, "status"])
        let s = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any])
        let controls = try #require(s["controls"] as? [[String: Any]])
        #expect(controls.first { $0["identifier"] as? String == "zoom" }?["value"] as? Double == 4)
        #expect(controls.first { $0["identifier"] as? String == "exposure" }?["value"] as? Double == -1)
        // A control the session lacks: the socket says no (exit 65); an unknown word: usage (64).
        let bad = try reel(["control", "--socket", path, "zoom", "x"])
        #expect(bad.status == 65 && bad.stdout.contains("\"ok\":false"))
        #expect(try reel(["control", "--socket", path, "focus", "1"]).status == 64)
        rec.signal(SIGINT)
        let run = rec.wait()
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("control: \(path)"))
        #expect(!FileManager.default.fileExists(atPath: path))
        let summary = try run.decode(SocketSummaryJSON.self)
        #expect(summary.captureEvents.map { "\($0.action) \($0.phase) \($0.source)" } == [
            "primary began socket", "primary ended socket", "secondary began socket", "secondary ended socket",
            "primary began socket", "primary cancelled socket",
        ])
        #expect(summary.markers.count == 1)
        #expect(summary.controlChanges.map(\.control) == ["zoom", "exposure", "ratio"])
        #expect(summary.controlChanges.map(\.value) == [4, -1, 1])
        let seam = try #require(summary.seams.first)
        #expect(seam.to == "9x16")
        let ratioFrame = try #require(summary.controlChanges.last?.frameIndex)
        #expect(ratioFrame >= seam.frameIndex, "the ratio change is recorded at \(ratioFrame), before its seam at \(seam.frameIndex)")
    }

    /// The socket path: a file that is not a socket is refused (73), a live socket too (75),
    /// a stale one (nobody listening) is replaced; `reel control` with no socket exits 66.
    @Test func theSocketPathIsCheckedFirst() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let file = dir + "/plain"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("keep".utf8)))
        let notSocket = try reel(["record", "--plain", "--out", dir + "/out", "--frames", "3", "--control-socket", file])
        #expect(notSocket.status == 73 && notSocket.stderr.contains("is not a socket"))
        #expect(FileManager.default.contents(atPath: file) == Data("keep".utf8))

        // A stale socket: bound, never listened on, closed.
        let stale = dir + "/stale.sock"
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: Array(stale.utf8)) }
        #expect(withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } } == 0)
        close(s)
        // The first recording runs until SIGINT (without --duration it would stop after the
        // default 5 s), so a slow machine cannot end it before the checks below; it is
        // listening once `reel control status` answers.
        let first = try launch(["record", "--plain", "--out", dir + "/out", "--codec", "h264", "--control-socket", stale] + untilSIGINT)
        let listening = try waitUntil(60) { try reel(["control", "--socket", stale, "status"]).status == 0 }
        #expect(listening, "the recording never listened on the stale socket's path")
        let live = try reel(["record", "--plain", "--out", dir + "/out2", "--frames", "3", "--control-socket", stale])
        #expect(live.status == 75 && live.stderr.contains("in use"))
        #expect(try reel(["control", "--socket", stale, "status"]).status == 0)
        first.signal(SIGINT)
        #expect(first.wait().status == 0)
        let none = try reel(["control", "--socket", dir + "/nothing.sock", "status"])
        #expect(none.status == 66 && none.stderr.hasPrefix("reel: control: cannot connect"))
    }
}
