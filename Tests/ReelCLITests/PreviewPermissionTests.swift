import Foundation
import ReelCore
import ReelWriter
import Testing

/// `reel ARGS…` as the unprivileged user nobody (`setpriv`, util-linux), with a cache of its
/// own in `home`: what a user who may not bind a low port sees.
private func reelAsNobody(_ args: [String], home: String) throws -> Run {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: try #require(installedTool("setpriv")))
    p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", reelBinary] + pinned(args)
    var env = ProcessInfo.processInfo.environment
    env["HOME"] = home
    env["XDG_CACHE_HOME"] = home + "/cache"
    env["XDG_RUNTIME_DIR"] = home + "/run"
    env["REEL_POOL"] = home + "/pool"
    p.environment = env
    p.currentDirectoryURL = URL(fileURLWithPath: home)
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    return Launched(process: p, out: out, err: err).wait()
}

/// The lowest port an unprivileged process may bind (`net.ipv4.ip_unprivileged_port_start`).
private let unprivilegedPortStart = Int(((try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_unprivileged_port_start", encoding: .utf8)) ?? "")
    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0

/// Binding the preview's port is not allowed (EACCES: port 80 for a user without the
/// privilege): one line, exit 77, before capture starts — for `reel preview` and `reel record`.
@Suite struct PreviewPermissionTests {
    @Test(.enabled(if: getuid() == 0 && installedTool("setpriv") != nil && unprivilegedPortStart > 80,
                   "needs root, setpriv (util-linux) and an unprivileged port start above 80 to run as nobody and be refused port 80"))
    func aPortThisUserMayNotBindIsExit77() throws {
        let home = temporaryDirectory("reel-nobody")
        defer { removeTree(home) }
        #expect(chmod(home, 0o777) == 0)
        let line = "reel: preview: no permission to listen on 127.0.0.1:80 (use a port above 1023)\n"
        let preview = try reelAsNobody(["preview", "--preview", "127.0.0.1:80", "--source", "synthetic:1280"], home: home)
        #expect(preview.status == 77, "\(preview.stderr)")
        #expect(preview.stderr == line)
        let record = try reelAsNobody(["record", "--preview", "127.0.0.1:80", "--frames", "3", "--plain", "--out", home + "/out"], home: home)
        #expect(record.status == 77, "\(record.stderr)")
        #expect(record.stderr == line)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: home + "/out")) ?? []).isEmpty, "no clip")
    }
}
