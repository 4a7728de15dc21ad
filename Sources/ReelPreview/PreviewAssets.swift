import Foundation
import Synchronization

/// The page's files (Sources/ReelPreview/Web), embedded in the binary at build time by
/// SwiftPM's `embedInCode` resources: a `reel` copied anywhere serves them without its source tree.
public enum PreviewAssets {
    /// The content-security policy every answer carries: the page's own script, styles,
    /// pictures (and `blob:`/`data:` pictures), requests and streams only; no inline script,
    /// no plug-ins, no framing by another page, forms only to this server.
    public static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; "
        + "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    /// The file served at `path` (`/` is index.html) with its `Content-Type`; nil for any other path.
    public static func asset(_ path: String) -> (bytes: [UInt8], type: String)? {
        switch path {
        case "/", "/index.html": return (PackageResources.index_html, "text/html; charset=utf-8")
        case "/app.css": return (PackageResources.app_css, "text/css; charset=utf-8")
        case "/app.js": return (PackageResources.app_js, "text/javascript; charset=utf-8")
        default: return nil
        }
    }
}

/// Tells the `/events` streams that the status changed: each waits on it between events, so a
/// change is pushed at once instead of at the next refresh of the counters.
final class StatusChanges: @unchecked Sendable { // `generation` guarded by `condition`
    private let condition = NSCondition()
    private var generation = 0

    /// The changes so far.
    var current: Int { condition.lock(); defer { condition.unlock() }; return generation }

    /// One more change: wakes every waiting stream.
    func bump() {
        condition.lock()
        generation += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until a change after `seen`, or `deadline` (uptime nanoseconds); returns the changes then.
    func wait(after seen: Int, until deadline: UInt64) -> Int {
        condition.lock()
        defer { condition.unlock() }
        while generation == seen {
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline { break }
            if !condition.wait(until: Date(timeIntervalSinceNow: Double(deadline - now) / 1e9)) { break }
        }
        return generation
    }
}
