import Foundation
import ReelCapture
import ReelCore
import ReelMedia
import ReelPreview
import Testing

/// `curl -s -m SECONDS url`: status code, body, and how long it took.
private func curl(_ url: String, extra: [String] = [], seconds: Double = 10) throws -> (status: Int, body: String, took: Double) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    p.arguments = ["-s", "-m", String(seconds), "-o", "-", "-w", "\n%{http_code}"] + extra + [url]
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    let start = Date()
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    let code = text.split(separator: "\n").last.flatMap { Int($0) } ?? 0
    return (code, String(text.dropLast(String(code).count + 1)), Date().timeIntervalSince(start))
}

/// Threads of this process whose name is the preview's JPEG thread (`/proc/self/task/*/comm`).
private func jpegThreads() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { task in
        let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        return comm.hasPrefix("reel-preview-jp")
    }.count
}

/// Open file descriptors of this process.
private func openDescriptors() -> Int {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).count
}

/// A frame of `format` offered as the session would.
private func frame(_ pool: PixelBufferPool, index: Int) throws -> CapturedFrame {
    let lease = try #require(pool.lease())
    return CapturedFrame(lease: lease, index: index, pts: Timestamp(value: Int64(index), timescale: 30), duration: 1,
                         ratio: .landscape16x9, crop: CropRect(x: 0, y: 0, width: 640, height: 360))
}

private let haveCurl = FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")

/// The preview's bounded wait for a first picture. Not a real-time suite: the test waits 5 s,
/// and its bounds (4.5 to 10 s) hold on a loaded machine, so it runs in the parallel pass.
@Suite(.enabled(if: haveCurl, "needs curl (scripts/test installs it)"))
struct PreviewFirstPictureWaitTests {
    /// No frame at all (a camera that delivers nothing): 503 after the bounded wait, not a hang.
    @Test func noFrameAtAllAnswers503AfterTheWait() throws {
        let output = PreviewOutput()
        let server = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), token: nil, output: output) { PreviewStatus(recording: false, elapsed: 0, frames: 0, fps: 0, drops: 0, ratio: "16x9") }
        defer { server.stop() }
        let r = try curl("http://127.0.0.1:\(server.address.port)/stream.mjpg?token=\(server.token)", seconds: 20)
        #expect(r.status == 503)
        #expect(r.body == "503 no picture: no picture within 5 s\n")
        #expect(r.took > 4.5 && r.took < 10, "took \(r.took) s")
    }
}

@Suite("RealtimePreviewServerTests", .serialized, .enabled(if: haveCurl, "needs curl (scripts/test installs it)"))
struct RealtimePreviewServerTests {
    private static func status() -> PreviewStatus {
        PreviewStatus(recording: false, elapsed: 0, frames: 0, fps: 0, drops: 0, ratio: "16x9")
    }

    /// A camera format the preview cannot convert (10-bit): the stream and the snapshot answer
    /// 503 with the reason at once, instead of waiting forever for a picture that never comes.
    @Test func noPictureCanComeAnswers503() throws {
        let output = PreviewOutput()
        let server = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), token: nil, output: output) { Self.status() }
        defer { server.stop() }
        let pool = try PixelBufferPool(count: 2, size: Size(width: 640, height: 360), format: .yuv422p10)
        for i in 0..<3 { #expect(output.offer(try frame(pool, index: i), waiting: false) == .taken); usleep(20_000) }
        let base = "http://127.0.0.1:\(server.address.port)/"
        for path in ["stream.mjpg", "snapshot.jpg"] {
            let r = try curl(base + path + "?token=\(server.token)", seconds: 15)
            #expect(r.status == 503, "/\(path): \(r.status) after \(r.took) s")
            #expect(r.body == "503 no picture: the camera's pixel format yuv422p10 cannot be previewed (8-bit YUV only)\n")
            #expect(r.took < 3)
        }
    }

    /// `stop()` returns only once the JPEG thread has ended.
    @Test func stopJoinsTheEncodingThread() throws {
        let pool = try PixelBufferPool(count: 2, size: Size(width: 640, height: 360), format: .yuv420p)
        for i in 0..<20 {
            let output = PreviewOutput()
            try output.start()
            #expect(output.offer(try frame(pool, index: i), waiting: false) == .taken)
            output.stop()
            #expect(jpegThreads() == 0, "a JPEG thread outlived stop() (round \(i))")
        }
    }

    /// A server that cannot start leaves nothing behind: no daemon, socket or JPEG thread, for
    /// an output that cannot start (an output runs once) and for a port in use, 100 times each.
    @Test func failedStartLeavesNothingBehind() throws {
        let used = PreviewOutput()
        try used.start()
        used.stop()
        let blocker = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), token: nil, output: PreviewOutput()) { Self.status() }
        defer { blocker.stop() }
        let fds = openDescriptors()
        for _ in 0..<100 {
            #expect(throws: PreviewError.self) {
                _ = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), token: nil, output: used) { Self.status() }
            }
            #expect(throws: PreviewError.self) {
                _ = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: blocker.address.port), token: nil,
                                      output: PreviewOutput()) { Self.status() }
            }
        }
        #expect(jpegThreads() == 1, "only the blocker's JPEG thread runs")
        // Other tests of this process open files meanwhile; a leak would be 100 or 200.
        #expect(openDescriptors() - fds < 40, "descriptors: \(fds) -> \(openDescriptors())")
    }

    /// Every client streams the picture's one shared part; it carries the frame index and
    /// its capture time on CLOCK_MONOTONIC.
    @Test func partsCarryCaptureTimeAndAreShared() throws {
        let output = PreviewOutput()
        let server = try PreviewServer(address: PreviewAddress(host: "127.0.0.1", port: 0), token: nil, output: output) { Self.status() }
        defer { server.stop() }
        let pool = try PixelBufferPool(count: 2, size: Size(width: 640, height: 360), format: .yuv420p)
        let before = MonotonicClock.now()
        #expect(output.offer(try frame(pool, index: 7), waiting: false) == .taken)
        let picture = try #require(output.frame(after: 0, timeout: 60))
        #expect(picture.index == 7)
        #expect(picture.captureMonotonicNanoseconds >= before && picture.captureMonotonicNanoseconds <= MonotonicClock.now())
        let head = String(decoding: picture.part[..<picture.jpegRange.lowerBound], as: UTF8.self)
        #expect(head.contains("X-Frame-Index: 7\r\n") && head.contains("X-Capture-Monotonic-Ns: \(picture.captureMonotonicNanoseconds)\r\n"))
        #expect(Array(picture.jpeg.prefix(2)) == [0xFF, 0xD8])
        // The JPEG is a view into the part: one copy per picture, whatever the clients.
        picture.part.withUnsafeBufferPointer { whole in
            picture.jpeg.withUnsafeBufferPointer { jpeg in
                #expect(jpeg.baseAddress! == whole.baseAddress! + picture.jpegRange.lowerBound)
            }
        }
        #expect(output.frame(after: 0, timeout: 1) === picture)
    }

    /// The Host header on loopback (DNS rebinding).
    @Test(arguments: [
        ("127.0.0.1:8080", true), ("localhost:8080", true), ("LOCALHOST:8080", true), ("[::1]:8080", true),
        ("127.0.0.1:8081", false), ("evil.example:8080", false), ("evil.example", false), ("127.0.0.1", false),
        ("[::1]", false), ("[::1:8080", false), ("", false),
    ])
    func hostHeader(_ header: String, allowed: Bool) {
        #expect(PreviewServer.hostAllowed(header, address: PreviewAddress(host: "127.0.0.1", port: 8080)) == allowed)
    }
}
