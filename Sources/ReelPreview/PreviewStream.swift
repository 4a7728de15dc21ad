import CMicroHTTPD
import Foundation
import Synchronization
import ReelCapture
import ReelCore

func stream(_ connection: OpaquePointer, _ server: PreviewServer, _ client: Stream, type: String) -> MHD_Result {
    let context = Unmanaged.passRetained(client)
    guard let response = MHD_create_response_from_callback(CMicroHTTPD_sizeUnknown, 64 * 1024, streamReader,
                                                           context.toOpaque(), streamFree) else {
        context.release()
        return CMicroHTTPD_no
    }
    defer { MHD_destroy_response(response) }
    guard MHD_add_response_header(response, "Content-Type", type) == CMicroHTTPD_yes,
          MHD_add_response_header(response, "Cache-Control", "no-store") == CMicroHTTPD_yes else { return CMicroHTTPD_no }
    return MHD_queue_response(connection, 200, response)
}

/// One streaming client: the bytes it is sending now (for the MJPEG stream, the shared part
/// of one picture: assigning the array shares its storage, nothing is copied), and how far
/// it got. Used only by its connection's thread.
final class Stream: @unchecked Sendable {
    enum Kind { case mjpeg, events }
    let server: PreviewServer
    let kind: Kind
    var pending: [UInt8]
    var offset = 0
    var lastSequence = 0
    /// The events stream's state: the change last sent, the status last sent, and when (uptime ns).
    var lastChange = -1
    var lastJSON: [UInt8] = []
    var lastCheck: UInt64 = 0
    var lastSent: UInt64 = 0
    /// The first picture, sent right after the opening boundary.
    var first: PreviewFrame?

    init(server: PreviewServer, kind: Kind, first: PreviewFrame?) {
        self.server = server; self.kind = kind; self.first = first
        pending = kind == .mjpeg ? Array("--\(PreviewFrame.boundary)\r\n".utf8) : []
        server.clients.add(1)
    }
    deinit { server.clients.add(-1) }

    /// The next bytes to send; false ends the stream (the output stopped, no picture can
    /// come, or none came for `pictureWait` seconds).
    func refill() -> Bool {
        switch kind {
        case .mjpeg:
            // The newest picture this client has not sent: a slow client skips the rest.
            var frame = first
            first = nil
            let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(PreviewServer.pictureWait * 1e9)
            while frame == nil {
                if server.output.unavailableReason != nil || DispatchTime.now().uptimeNanoseconds >= deadline { return false }
                frame = server.output.frame(after: lastSequence, timeout: 0.5)
            }
            guard let frame else { return false }
            lastSequence = frame.sequence
            // The part ends with the next boundary, so a browser shows the picture at once.
            pending = frame.part
        case .events:
            // Pushed on change: a control, the recording, a photo (`statusChanged`) wakes the
            // stream at once; the counters (frames, fps, elapsed, drops…) are looked at every
            // `refresh` and sent when they moved. Nothing changes: a comment every `keepalive`.
            let refresh: UInt64 = 250_000_000, keepalive: UInt64 = 15_000_000_000
            while true {
                if server.output.isStopped { return false }
                let seen = server.changes.current
                let now = DispatchTime.now().uptimeNanoseconds
                if seen != lastChange || now >= lastCheck + refresh {
                    lastCheck = now
                    let json = server.statusJSON()
                    if seen != lastChange || json != lastJSON {
                        lastChange = seen; lastJSON = json; lastSent = now
                        pending = Array("data: ".utf8) + json + Array("\n\n".utf8)
                        break
                    }
                }
                if now >= lastSent + keepalive {
                    lastSent = now
                    pending = Array(": keepalive\n\n".utf8)
                    break
                }
                _ = server.changes.wait(after: seen, until: lastCheck + refresh)
            }
        }
        offset = 0
        return true
    }
}

private let streamReader: MHD_ContentReaderCallback = { cls, _, buf, max in
    guard let cls, let buf else { return CMicroHTTPD_endWithError }
    let client = Unmanaged<Stream>.fromOpaque(cls).takeUnretainedValue()
    if client.offset >= client.pending.count, !client.refill() { return CMicroHTTPD_endOfStream }
    let n = min(max, client.pending.count - client.offset)
    client.pending.withUnsafeBytes { raw in
        UnsafeMutableRawPointer(buf).copyMemory(from: raw.baseAddress! + client.offset, byteCount: n)
    }
    client.offset += n
    return n
}

private let streamFree: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<Stream>.fromOpaque(cls).release()
}
