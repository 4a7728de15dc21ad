import CMicroHTTPD
import Foundation
import Synchronization
import ReelCapture
import ReelCore

/// What `GET /status` and `GET /events` report.
public struct PreviewStatus: Codable, Sendable {
    /// True while the movie output records (`reel record`: false in `--standby` before a start
    /// and after a stop), false for `reel preview`.
    public var recording: Bool
    /// Seconds of media time captured.
    public var elapsed: Double
    /// Frames captured so far.
    public var frames: Int
    /// Frames captured per second of wall time.
    public var fps: Double
    /// Frames dropped, every reason.
    public var drops: Int
    /// Requests the server refused with 403 because another origin sent them (`Origin` or
    /// `Sec-Fetch-Site`), since it started.
    public var crossOriginRefused: Int
    /// The ratio in force (`16x9`, …).
    public var ratio: String
    /// Pictures the preview encoded, and its clients now streaming.
    public var previewFrames: Int
    /// The page's clients streaming the preview now.
    public var previewClients: Int
    /// Mean time to copy the crop out and encode it as JPEG, per picture, in milliseconds.
    public var previewEncodeMs: Double
    /// Bytes the storage pool can still take, when recording through a pool (else null).
    @EncodedNull public var poolRemainingCapacity: Int64?
    /// `poolRemainingCapacity` as seconds of recording at the bit rate of the last 10 s (null
    /// without a pool, or before a second was recorded).
    @EncodedNull public var poolRemainingSeconds: Double? = nil
    /// The system-pressure level a recording sees (`nominal`, …, `unknown`; null for `reel preview`).
    @EncodedNull public var pressure: String? = nil
    /// The zoom factor last applied (1–4) while recording with controls; null for `reel preview`.
    @EncodedNull public var zoom: Double? = nil
    /// The exposure bias last applied, in stops (−2…+2); null for `reel preview`.
    @EncodedNull public var exposure: Double? = nil
    /// The picture effect last applied (`none`, `grayscale`, a colour LUT's title); null for `reel preview`.
    @EncodedNull public var effect: String? = nil
    /// Frames dropped by reason (`late`, `outOfBuffers`, `discontinuity`, `corrupt`, zeros
    /// included) while recording; empty for `reel preview`.
    public var dropReasons: [String: Int] = [:]
    /// Ratio changes so far (each a seam: the clip after it is a new one); 0 for `reel preview`.
    public var seams: Int = 0
    /// The live controls as the page shows them (zoom, exposure, effect, ratio: range or
    /// titles, value, enabled), in the order the camera added them; empty for `reel preview`.
    public var controls: [ControlState] = []
    /// The name of the latest photo saved while the page was served (its thumbnail is
    /// `GET /photo.jpg`); null before the first. The server fills it in.
    @EncodedNull public var photo: String? = nil
    /// How many times the gallery's list (`GET /gallery`) changed: a clip finished, a photo
    /// saved, a clip deleted or moved away. When it moves the page fetches the list. The
    /// server fills it in.
    public var gallery: Int = 0
    /// What a secondary press (the page's second button) does now: `marker`, `lock` (a V4L2
    /// camera that can lock focus and exposure, unlocked), `unlock` (locked), `none`; null for
    /// `reel preview`.
    @EncodedNull public var secondary: String? = nil
    /// The sound's level: the largest sample of the last 300–400 ms in dBFS (0: full scale;
    /// −96: silence), shown as the page's level meter; null without sound (`--audio none`,
    /// `reel preview`) or before its first samples.
    @EncodedNull public var audioLevelDb: Double? = nil

    /// The session's part of the status; the server fills in the preview's own counters.
    public init(recording: Bool, elapsed: Double, frames: Int, fps: Double, drops: Int, ratio: String,
                poolRemainingCapacity: Int64? = nil) {
        self.recording = recording; self.elapsed = elapsed; self.frames = frames
        self.fps = fps; self.drops = drops; self.ratio = ratio
        previewFrames = 0; previewClients = 0; previewEncodeMs = 0; crossOriginRefused = 0
        self.poolRemainingCapacity = poolRemainingCapacity
    }
}

/// Where the preview listens: `[HOST:]PORT` (HOST an IPv4 literal or `[IPv6]`; default 127.0.0.1).
public struct PreviewAddress: Sendable, Hashable, CustomStringConvertible {
    /// The host to bind: an IPv4 literal or an IPv6 literal (without its brackets).
    public var host: String
    /// The TCP port.
    public var port: UInt16

    /// nil when `text` is not `[HOST:]PORT` with PORT 0–65535.
    public init?(parsing text: String) {
        var host = "127.0.0.1"
        var portText = Substring(text)
        if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { return nil }
        }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = UInt16(portText) else { return nil }
        self.host = host; self.port = port
    }

    /// The address `host`:`port`, unchecked.
    public init(host: String, port: UInt16) { self.host = host; self.port = port }

    /// True for 127.0.0.0/8 and ::1 (the `Host` header must then name this server too).
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" || host == "localhost" }

    /// `HOST:PORT`, or `[IPv6]:PORT`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The preview's HTTP server (libmicrohttpd, one thread per connection):
/// `GET /` (the page; its `/app.css` and `/app.js`), `/stream.mjpg`, `/snapshot.jpg`, `/status`,
/// `/events` (pushed on change), `/photo.jpg` (the latest photo's thumbnail), the gallery
/// (`/gallery`, `/gallery/ID.jpg`, `/media/ID`: `GalleryRoutes`), and the controls
/// `POST /ratio`, `/shutter`, `/record`, `/control` and `/press`. Every answer carries the
/// content-security policy `PreviewAssets.contentSecurityPolicy`.
///
/// Access: every request carries the session's token — `?token=`, `Authorization: Bearer`,
/// or the cookie the page's address sets (`HttpOnly; SameSite=Strict`) — or gets 401, whatever
/// the address it listens on (another local user can reach 127.0.0.1 too). A request that
/// changes something (any method but GET and HEAD) and comes from another origin (an `Origin`
/// that is not `http://` + its `Host`, or `Sec-Fetch-Site` other than `same-origin`/`none`)
/// gets 403 and changes nothing, cookie or not; so does a cookie-only GET that another site's
/// page embeds or fetches (`Sec-Fetch-Site: same-site|cross-site`, not a navigation).
///
/// Limits (`PreviewLimits`): connections at once, connections that have not made an
/// authorized request (the oldest is shut when a newer one needs the room), a total deadline
/// from accept for such a connection's headers (however slowly it trickles), an idle timeout,
/// request headers within `requestMemory` bytes, bodies within `limits.body` bytes (decided on
/// the headers: a body is never read before the request is authorized and allowed). Stream
/// clients share each picture's one immutable copy, so memory is bounded by the pictures
/// clients still hold (at most one each) plus per-connection buffers.
///
/// On loopback, a request whose `Host` header is not this server's address (`localhost`,
/// `127.0.0.1`, `[::1]` or the bound address, with the bound port) is refused with 403: a
/// page of another site that a DNS-rebinding attack points at 127.0.0.1 does not reach it.
public final class PreviewServer: @unchecked Sendable { // immutable after init but `daemon`/`context`, guarded by `stopLock`
    /// Bytes a connection may use for its request (MHD_OPTION_CONNECTION_MEMORY_LIMIT).
    public static let requestMemory = 32 * 1024
    /// How long a stream or snapshot waits for a picture before answering 503 or ending.
    public static let pictureWait: Double = 5

    /// The output whose pictures are served.
    public let output: PreviewOutput
    /// Where it listens (the bound port when 0 was asked).
    public let address: PreviewAddress
    /// The access token every request must carry (`?token=`, `Authorization: Bearer`, or the
    /// cookie `cookieName`).
    public let token: String
    /// What `POST /ratio` and `POST /shutter` call.
    public let controls: PreviewControls
    /// The server's limits.
    public let limits: PreviewLimits
    let status: @Sendable () -> PreviewStatus
    let clients = Counter()
    let refusedCrossOrigin = Counter()
    let changes = StatusChanges()
    let thumbnail = Mutex<(name: String, jpeg: [UInt8])?>(nil)
    /// This session's clips and photos (`GET /gallery`, `/gallery/ID.jpg`, `/media/ID`): the
    /// camera adds each clip when it finishes and each photo once saved.
    public let gallery = PreviewGallery()
    let connections: PreviewConnectionGuard
    private let stopLock = NSLock()
    private var daemon: OpaquePointer?
    private var context: Unmanaged<PreviewServer>?

    /// Starts `output` (its JPEG thread), binds `address` (port 0: any free port, see
    /// `address.port` after) and starts serving, with `token` (nil: a fresh random one,
    /// `generateToken()`). On any failure nothing is left behind: the output is stopped and
    /// joined, the socket closed, the daemon not running.
    /// - Throws: `PreviewError.alreadyStarted`/`.encoderUnavailable` (from `output.start()`),
    ///   `.badAddress`, `.listen` (errno, EADDRINUSE when the port is in use),
    ///   `.serverUnavailable` (`MHD_start_daemon` failed).
    public init(address: PreviewAddress, token: String? = nil, output: PreviewOutput, controls: PreviewControls = PreviewControls(),
                limits: PreviewLimits = .standard, status: @escaping @Sendable () -> PreviewStatus) throws {
        self.output = output; self.token = token ?? Self.generateToken(); self.status = status; self.controls = controls
        self.limits = limits
        try output.start()
        var error: Int32 = 0
        var bound: UInt16 = 0
        let fd = CMicroHTTPD_listen(address.host, address.port, 64, &error, &bound)
        if fd < 0 {
            output.stop()
            if error == EINVAL || error == EADDRNOTAVAIL { throw PreviewError.badAddress(address.host) }
            throw PreviewError.listen(address: address.description, errno: error)
        }
        self.address = PreviewAddress(host: address.host, port: bound)
        connections = PreviewConnectionGuard(limits: limits)
        let me = Unmanaged.passRetained(self)
        guard let d = CMicroHTTPD_start(fd, previewAccessHandler, me.toOpaque(), previewConnectionNotice, limits.connections,
                                        Self.requestMemory, limits.idleTimeout) else {
            me.release()
            if close(fd) != 0 { /* the start failure is the one reported */ }
            connections.stop()
            output.stop()
            throw PreviewError.serverUnavailable(address.description)
        }
        daemon = d
        context = me
    }

    /// The page's address with the token: `http://HOST:PORT/?token=TOKEN` (opening it sets the cookie).
    public var pageURL: String { "http://\(address)/?token=\(token)" }

    /// Connections shut so far that made no authorized request: at the header deadline
    /// (`limits.headerDeadline`), and to make room for newer ones (`limits.unauthenticated`).
    public var shutConnections: (deadline: Int, room: Int) { connections.counts }

    /// The cookie that carries the token once the page's address was opened: one name per
    /// port, so two previews on one host keep theirs apart.
    public var cookieName: String { "reel-preview-\(address.port)" }

    /// Stops serving: stops the output (streaming clients end), closes every connection
    /// (`MHD_stop_daemon`, which joins the connection threads) and the listening socket.
    public func stop() {
        output.stop()
        stopLock.lock()
        let d = daemon, c = context
        daemon = nil; context = nil
        stopLock.unlock()
        guard let d else { return }
        MHD_stop_daemon(d)
        connections.stop()
        c?.release()
    }

    /// Tells the `/events` streams that the status changed (a control, recording started or
    /// stopped): each sends the new status at once rather than at its next refresh.
    public func statusChanged() { changes.bump() }

    /// A photo named `name` was saved: the newest preview picture becomes its thumbnail
    /// (`GET /photo.jpg`, the status's `photo`), and the streams are told. No picture yet: nothing.
    public func photoSaved(_ name: String) {
        guard let frame = output.frame(after: 0, timeout: 0) else { return }
        thumbnail.withLock { $0 = (name, Array(frame.jpeg)) }
        statusChanged()
    }

    /// A clip this session recorded finished at `path`: it joins the gallery (checked, probed,
    /// its thumbnail decoded) and the streams are told. A path added before: nothing.
    /// - Throws: `GalleryRefusal` when the file is not one to serve.
    public func clipFinished(at path: String) throws {
        if try gallery.addClip(at: path) != nil { statusChanged() }
    }

    /// The clip at `path` was deleted or moved away (`--keep`'s loop budget): it leaves the
    /// gallery and the streams are told. A path not listed: nothing.
    public func clipGone(at path: String) {
        if gallery.remove(path: path) { statusChanged() }
    }

    /// A photo this session took was saved at `path` (`width`×`height`, `format` `jpeg`,
    /// `heic` or `png`): it joins the gallery (a HEIC or PNG photo's thumbnail is the newest
    /// preview picture) and the streams are told. A path added before: nothing.
    /// - Throws: `GalleryRefusal` when the file is not one to serve.
    public func photoFinished(at path: String, width: Int, height: Int, format: String) throws {
        guard !gallery.contains(path) else { return }
        let picture = format == "jpeg" ? nil : output.frame(after: 0, timeout: 0).map { Array($0.jpeg) }
        if try gallery.addPhoto(at: path, width: width, height: height, format: format, picture: picture) != nil { statusChanged() }
    }

    /// A random 128-bit token as 32 hex digits (`SystemRandomNumberGenerator`: getrandom(2) on Linux).
    public static func generateToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max, using: &g)) }.joined()
    }

    func currentStatus() -> PreviewStatus {
        var s = status()
        let counters = output.counters
        s.previewFrames = counters.encoded
        s.previewEncodeMs = counters.meanEncodeMilliseconds
        s.previewClients = clients.value
        s.crossOriginRefused = refusedCrossOrigin.value
        s.photo = thumbnail.withLock { $0?.name }
        s.gallery = gallery.changes
        return s
    }

    func statusJSON() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(currentStatus())) ?? Data("{}".utf8))
    }

    /// How a request carries the token.
    enum Credential { case query, bearer, cookie }

    /// How `connection`'s request carries the token, or nil when it does not (compared in
    /// constant time).
    func credential(_ connection: OpaquePointer) -> Credential? {
        if let q = value(connection, CMicroHTTPD_argumentKind, "token"), Self.constantTimeEqual(q, token) { return .query }
        if let h = value(connection, CMicroHTTPD_headerKind, "Authorization"), Self.constantTimeEqual(h, "Bearer " + token) { return .bearer }
        if let c = value(connection, CMicroHTTPD_cookieKind, cookieName), Self.constantTimeEqual(c, token) { return .cookie }
        return nil
    }

    /// True when the request comes from a page of another origin: `Sec-Fetch-Site` other
    /// than `same-origin` or `none` (typed by the user), or an `Origin` that is not `http://`
    /// + the request's `Host`. A client that sends neither (curl) is not a browser page.
    func crossOrigin(_ connection: OpaquePointer) -> Bool {
        if let site = value(connection, CMicroHTTPD_headerKind, "Sec-Fetch-Site")?.lowercased(), site != "same-origin", site != "none" {
            return true
        }
        if let origin = value(connection, CMicroHTTPD_headerKind, "Origin") {
            guard let host = value(connection, CMicroHTTPD_headerKind, "Host") else { return true }
            return origin.lowercased() != "http://" + host.lowercased()
        }
        return false
    }

    /// A GET that another site's page embeds or fetches (`Sec-Fetch-Site` `same-site` — another
    /// port of 127.0.0.1 is the same site — or `cross-site`), other than a navigation to it.
    func embeddedByAnotherSite(_ connection: OpaquePointer) -> Bool {
        guard let site = value(connection, CMicroHTTPD_headerKind, "Sec-Fetch-Site")?.lowercased(),
              site == "same-site" || site == "cross-site" else { return false }
        return value(connection, CMicroHTTPD_headerKind, "Sec-Fetch-Mode")?.lowercased() != "navigate"
    }

    func value(_ connection: OpaquePointer, _ kind: MHD_ValueKind, _ key: String) -> String? {
        MHD_lookup_connection_value(connection, kind, key).map { String(cString: $0) }
    }

    /// True when the `Host` header names this server: `localhost`, `127.0.0.1`, `[::1]` or
    /// the bound host, with the bound port (or none when it is 80).
    func hostAllowed(_ connection: OpaquePointer) -> Bool {
        guard let raw = MHD_lookup_connection_value(connection, CMicroHTTPD_headerKind, "Host") else { return false }
        return Self.hostAllowed(String(cString: raw), address: address)
    }

    /// Whether a `Host` header value names a server bound at `address` (the DNS-rebinding
    /// guard of a loopback preview).
    public static func hostAllowed(_ header: String, address: PreviewAddress) -> Bool {
        let value = header.lowercased()
        var name: Substring, port: Substring?
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return false }
            name = value[value.index(after: value.startIndex)..<close]
            let rest = value[value.index(after: close)...]
            if rest.isEmpty { port = nil } else if rest.hasPrefix(":") { port = rest.dropFirst() } else { return false }
        } else if let colon = value.lastIndex(of: ":") {
            name = value[..<colon]; port = value[value.index(after: colon)...]
        } else {
            name = Substring(value); port = nil
        }
        let names: Set<String> = ["localhost", "127.0.0.1", "::1", address.host.lowercased()]
        guard names.contains(String(name)) else { return false }
        if let port { return UInt16(port) == address.port }
        return address.port == 80
    }

    /// Equal strings, in time that depends only on their lengths.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in 0..<x.count { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
