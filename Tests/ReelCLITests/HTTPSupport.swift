import Foundation
import Synchronization
import Testing

// MARK: HTTP as a user's client sees it: Debian's curl (an independent client), one helper for
// every test that talks to the preview's page, `/status` and controls.

/// Whether curl is installed (scripts/test installs it): tests that need it are skipped without.
let haveCurl = installedTool("curl") != nil

/// One HTTP answer as curl got it.
struct HTTPAnswer {
    /// The status code; 0 when no answer came within the time allowed.
    let status: Int
    /// The response headers, names lower-cased.
    let headers: [String: String]
    /// The body (empty when none came).
    let body: Data

    /// The body as UTF-8 text.
    var text: String { String(decoding: body, as: UTF8.self) }
    /// The body as a JSON object; nil when it is not one.
    var object: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
}

/// The preview tokens of the `reel` processes this test run started, by port: read from
/// each `preview: http://HOST:PORT/?token=TOKEN` line on their stderr as it comes (`Launched`,
/// `TerminalRun`).
private let previewTokens = Mutex<[UInt16: String]>([:])

/// Notes the token of every whole `preview:` line in `stderr` (a terminal's lines end `\r\n`).
func notePreviewTokens(in stderr: String) {
    for match in stderr.matches(of: /preview: http:\/\/[^\s\/]+:([0-9]+)\/\?token=([A-Za-z0-9_-]+)\s/) {
        if let port = UInt16(match.1) { previewTokens.withLock { $0[port] = String(match.2) } }
    }
}

/// The token the `preview:` line of the process serving on `port` printed, if one did yet.
func previewToken(_ port: UInt16) -> String? { previewTokens.withLock { $0[port] } }

/// `curl -s -m SECONDS [-X POST] EXTRA… URL`: the status code, headers and body. With
/// `authorized` (the default) a URL on a port whose `reel` printed its preview token carries
/// it as `Authorization: Bearer TOKEN`, as a user's script would; tests of refusals pass false.
/// - Throws: when curl is not installed or cannot be started.
func curl(_ url: String, post: Bool = false, extra: [String] = [], seconds: Double = 10, authorized: Bool = true) throws -> HTTPAnswer {
    let dir = temporaryDirectory("reel-curl")
    defer { removeTree(dir) }
    var auth: [String] = []
    if authorized, let port = url.firstMatch(of: /^http:\/\/[^\/]+:([0-9]+)\//).flatMap({ UInt16($0.1) }), let token = previewToken(port) {
        auth = ["-H", "Authorization: Bearer \(token)"]
    }
    let code = try runTool("curl", ["-s", "-m", String(seconds), "-D", dir + "/h", "-o", dir + "/b", "-w", "%{http_code}"]
                                   + (post ? ["-X", "POST"] : []) + auth + extra + [url]).stdout
    var headers: [String: String] = [:]
    for line in (try? String(contentsOfFile: dir + "/h", encoding: .utf8))?.split(separator: "\r\n") ?? [] {
        if let colon = line.firstIndex(of: ":") {
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }
    return HTTPAnswer(status: Int(String(decoding: code, as: UTF8.self)) ?? 0, headers: headers,
                      body: (try? Data(contentsOf: URL(fileURLWithPath: dir + "/b"))) ?? Data())
}

/// The address of the preview on `port` of loopback: `http://127.0.0.1:PORT/`.
func previewBase(_ port: UInt16) -> String { "http://127.0.0.1:\(port)/" }

/// The page's address with its token, as the `preview:` line prints it (a browser opens it).
func previewPage(_ port: UInt16) -> String { previewBase(port) + (previewToken(port).map { "?token=\($0)" } ?? "") }

/// The preview's `/status` at `base` (`query` carries a token) as a JSON object, asked with
/// `seconds` to answer; nil while it does not answer 200 with one (not yet serving, or curl
/// missing).
func previewStatus(_ base: String, query: String = "", seconds: Double = 2) -> [String: Any]? {
    guard let answer = try? curl(base + "status" + query, seconds: seconds), answer.status == 200 else { return nil }
    return answer.object
}
