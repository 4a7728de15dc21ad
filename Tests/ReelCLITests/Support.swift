import Foundation
import Synchronization
import Testing
import ReelStorage
import ReelWriter

/// The output of one `reel` process.
struct Run {
    let status: Int32
    let stdout: String
    let stderr: String

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(stdout.utf8))
    }
}

/// The `reel` binary built next to this test bundle (or `$REEL_BINARY`).
let reelBinary: String = {
    if let p = ProcessInfo.processInfo.environment["REEL_BINARY"] { return p }
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return ((exe as NSString).deletingLastPathComponent as NSString).appendingPathComponent("reel")
}()

/// Runs `reel args…` to completion.
func reel(_ args: [String], in directory: String? = nil, environment: [String: String] = [:], pinScene: Bool = true, asAsked: Bool = true) throws -> Run {
    let p = try launch(args, in: directory, environment: environment, pinScene: pinScene, asAsked: asAsked)
    return p.wait()
}

/// A running `reel` process. A process still running when its `Launched` goes (a test that
/// failed before it stopped it: say, one recording until SIGINT) is killed, so it does not run
/// on beside the tests that follow.
final class Launched: @unchecked Sendable {
    let process: Process
    private let out: Pipe, err: Pipe
    /// The two buffers are written by one reader each (which hold this, not the `Launched`)
    /// and read only after `group` says both readers finished; `err` also under `lock`, so
    /// `stderrSoFar` can read it while the process runs.
    private final class Output: @unchecked Sendable {
        var out = Data(), err = Data()
        let lock = NSLock()
    }
    private let output = Output()
    private let group = DispatchGroup()

    init(process: Process, out: Pipe, err: Pipe) {
        self.process = process; self.out = out; self.err = err
        let output = self.output, group = self.group
        group.enter()
        DispatchQueue.global().async { output.out = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async {
            // Line by line as it comes: a `preview:` line's token is known while the process runs.
            let handle = err.fileHandleForReading
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                output.lock.lock()
                output.err.append(chunk)
                let text = String(decoding: output.err, as: UTF8.self)
                output.lock.unlock()
                notePreviewTokens(in: text)
            }
            group.leave()
        }
    }

    /// What the process has written on stderr so far.
    var stderrSoFar: String {
        output.lock.lock(); defer { output.lock.unlock() }
        return String(decoding: output.err, as: UTF8.self)
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    func wait() -> Run {
        process.waitUntilExit()
        group.wait()
        return Run(status: process.terminationStatus, stdout: String(decoding: output.out, as: UTF8.self),
                   stderr: String(decoding: output.err, as: UTF8.self))
    }
}

/// The storage pool recordings use in tests (`REEL_POOL`), made once per test run; pools of
/// earlier runs whose process is gone are removed first.
let testPool: String = {
    let fm = FileManager.default
    for name in (try? fm.contentsOfDirectory(atPath: "/tmp")) ?? [] {
        for prefix in ["reel-test-pool-", "reel-test-cache-", "reel-test-run-"] where name.hasPrefix(prefix) {
            if let pid = Int32(name.dropFirst(prefix.count)), kill(pid, 0) != 0 {
                try? fm.removeItem(atPath: "/tmp/" + name)
            }
        }
    }
    let path = "/tmp/reel-test-pool-\(getpid())"
    if !fm.fileExists(atPath: path + "/manifest.json") {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: reelBinary)
        p.arguments = ["pool", "create", path, "--capacity", "1G", "--slot", "64M", "--write-mode", "buffered"]
        p.standardOutput = FileHandle.nullDevice
        try? p.run()
        p.waitUntilExit()
    }
    return path
}()

/// The cache (`XDG_CACHE_HOME`) of the `reel` processes of this test run: empty, so no
/// write-mode measurement of an earlier run decides anything here.
let testCache: String = {
    let path = "/tmp/reel-test-cache-\(getpid())"
    try? FileManager.default.removeItem(atPath: path)
    return path
}()

/// The tests pin what would otherwise depend on this machine's speed at the moment:
/// - the synthetic sensor's flat test pattern (issue 24): cheap frames, so that the suite does
///   not slow down. A test whose subject is the scene gives `--scene` itself (or `scene: false`);
///   a V4L2 source has no scene.
/// - `reel record --no-adjust`: the configuration a test asks for is the one recorded. What
///   the validation chooses depends on a CPU probe and on the load of the moment (the parallel
///   suite once made an FFV1 seam test record H.264 at 25 fps); tests of the validation give
///   `--strict` or `--no-adjust` themselves, or `asAsked: false` with figures they pin
///   (`capacityEnvironment`).
func pinned(_ args: [String], scene: Bool = true, asAsked: Bool = true) -> [String] {
    guard let command = args.first, ["record", "preview", "photo"].contains(command),
          !args.contains("--help"), !args.contains("-h")
    else { return args }
    var pinned = args
    if scene && !args.contains("--scene") && !args.contains(where: { $0.hasPrefix("v4l2:") }) { pinned += ["--scene", "pattern"] }
    if asAsked && command == "record" && !args.contains("--strict") && !args.contains("--no-adjust") { pinned += ["--no-adjust"] }
    return pinned
}

/// A runtime directory (`XDG_RUNTIME_DIR`) of each `reel` process's own, so that its session
/// registry holds no other test's recording: what one test's recording costs never depends on
/// the tests running beside it. Tests of the registry give theirs.
func privateRuntimeDirectory() -> String {
    let n = runtimeDirectories.add(1, ordering: .relaxed).newValue
    return "/tmp/reel-test-run-\(getpid())/\(n)"
}
private let runtimeDirectories = Atomic<Int>(0)

func launch(_ args: [String], in directory: String? = nil, environment: [String: String] = [:], pinScene: Bool = true, asAsked: Bool = true) throws -> Launched {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: reelBinary)
    p.arguments = pinned(args, scene: pinScene, asAsked: asAsked)
    var env = ProcessInfo.processInfo.environment
    env["REEL_POOL"] = testPool
    env["XDG_CACHE_HOME"] = testCache
    env["REEL_PRESSURE_DIR"] = testPressureDirectory   // issue 13: see testPressureDirectory
    env["REEL_SYSFS_DIR"] = testSysfsDirectory   // issue 13 item 3: see testSysfsDirectory
    env["XDG_RUNTIME_DIR"] = privateRuntimeDirectory()
    for (k, v) in environment { env[k] = v }
    p.environment = env
    if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    return Launched(process: p, out: out, err: err)
}

/// A fresh directory under /tmp, removed by the caller when it likes.
func temporaryDirectory(_ tag: String = "reel-test") -> String {
    var template = Array("/tmp/\(tag)-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: made!)
}

func removeTree(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

/// A directory for what a test keeps for people to look at (the browser's screenshots):
/// `$REEL_TEST_ARTIFACTS/NAME`, by default `.build/test-artifacts/NAME` in the repository,
/// emptied first. `scripts/test` prints where they are.
func artifactDirectory(_ name: String) throws -> String {
    let root = ProcessInfo.processInfo.environment["REEL_TEST_ARTIFACTS"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-artifacts").path
    let dir = root + "/" + name
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// Records with `reel record … --json` and decodes the summary.
func record(_ args: [String], out: String) throws -> (Run, RecordingSummary?) {
    let run = try reel(["record", "--json", "--out", out] + args)
    return (run, try? run.decode(RecordingSummary.self))
}

/// `reel probe --frames --json FILE`.
func probeFrames(_ path: String) throws -> ProbeResult {
    let run = try reel(["probe", "--frames", "--json", path])
    guard run.status == 0 else { throw ProbeFailed(message: run.stderr) }
    return try run.decode(ProbeResult.self)
}

struct ProbeFailed: Error { let message: String }

/// ffprobe's view of a file, when ffprobe is installed: codec name, width, height, frames.
func ffprobe(_ path: String) -> (codec: String, width: Int, height: Int, frames: Int)? {
    guard installedTool("ffprobe") != nil,
          let data = try? runTool("ffprobe", ["-v", "error", "-count_packets", "-select_streams", "v:0",
                                              "-show_entries", "stream=codec_name,width,height,nb_read_packets", "-of", "csv=p=0", path]).stdout
    else { return nil }
    let f = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
    guard f.count == 4, let w = Int(f[1]), let h = Int(f[2]), let n = Int(f[3]) else { return nil }
    return (String(f[0]), w, h, n)
}

/// Mounts a small tmpfs (or another memory filesystem) at a new directory, or nil when this
/// machine does not allow it.
func mountTmpfs(sizeKiB: Int, readOnly: Bool = false, type: String = "tmpfs") -> String? {
    let dir = temporaryDirectory("reel-mnt")
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/mount")
    p.arguments = ["-t", type, "-o", "size=\(sizeKiB)k\(readOnly ? ",ro" : "")", type, dir]
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return nil }
    p.waitUntilExit()
    if p.terminationStatus != 0 { removeTree(dir); return nil }
    return dir
}

func unmount(_ dir: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/umount")
    p.arguments = [dir]
    try? p.run()
    p.waitUntilExit()
    removeTree(dir)
}

// MARK: What this machine offers (for `.enabled(if:)`: a test that cannot run here is skipped
// with the reason, never passed; `scripts/test` installs and arranges all of it, and prints
// how many tests were skipped).

/// Runs `/bin/sh -c command`, output discarded; its exit status.
func sh(_ command: String) -> Int32 {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/bin/sh")
    p.arguments = ["-c", command]
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    guard (try? p.run()) != nil else { return 127 }
    p.waitUntilExit()
    return p.terminationStatus
}

/// Whether tests may mount a filesystem of this type (root, in a container that allows it).
func canMount(_ type: String) -> Bool {
    guard let dir = mountTmpfs(sizeKiB: 1024, type: type) else { return false }
    unmount(dir)
    return true
}
let canMountTmpfs = canMount("tmpfs")
let canMountRamfs = canMount("ramfs")

/// Whether an ext4 image can be made (e2fsprogs) and loop-mounted here.
let canLoopMountExt4: Bool = {
    let dir = temporaryDirectory("reel-loop")
    defer { removeTree(dir) }
    return sh("truncate -s 16M \(dir)/fs.img && mkfs.ext4 -q \(dir)/fs.img && mkdir \(dir)/mnt && mount -o loop \(dir)/fs.img \(dir)/mnt && umount \(dir)/mnt") == 0
}()

/// Whether files in /tmp can be opened with O_DIRECT.
let tmpHasDirectIO: Bool = {
    let dir = temporaryDirectory("reel-direct")
    defer { removeTree(dir) }
    return sh("dd if=/dev/zero of=\(dir)/probe bs=4096 count=1 oflag=direct") == 0
}()

/// The path of an installed tool, or nil.
func installedTool(_ name: String) -> String? {
    ["/usr/bin/", "/bin/", "/usr/local/bin/", "/usr/sbin/", "/sbin/"].map { $0 + name }
        .first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// Runs the installed program `tool` (a name, or an absolute path) with `args`, and with
/// `environment` added to this process's; its status and stdout (stderr is dropped).
func runTool(_ tool: String, _ args: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: Data) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: tool.hasPrefix("/") ? tool : try #require(installedTool(tool), "\(tool) is not installed"))
    p.arguments = args
    if !environment.isEmpty { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let out = Pipe()
    p.standardOutput = out
    p.standardError = FileHandle.nullDevice
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, data)
}

// MARK: Waiting for conditions (CI runs the suite on a loaded 2-core machine: a test waits for
// what it needs, with a generous deadline, never for a fixed time).

/// `reel record` arguments for a recording that must outlive the test's checks: it runs until
/// the test sends SIGINT (86400 s is the longest `--duration`; no test waits that long).
let untilSIGINT = ["--duration", "86400"]

/// Polls `condition` every `interval` seconds (20 ms unless told) until it holds (true) or
/// `seconds` have passed (false).
@discardableResult
func waitUntil(_ seconds: Double = 60, every interval: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        usleep(UInt32(interval * 1e6))
    }
}

/// Whether process `pid` has ended (gone, or a zombie not yet reaped: what Reel counts as dead).
func processHasEnded(_ pid: Int32) -> Bool {
    guard kill(pid, 0) == 0 else { return errno == ESRCH }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return true }
    let state = stat[stat.index(after: close)...].split(separator: " ").first
    return state == "Z" || state == "X"
}

/// Waits (at most 60 s) until the recorder `pid` has at least `count` complete fragments
/// (MOV/MP4) or clusters (MKV) in its slot of `pool` — what recovery would publish if it died
/// now. The scan counts the fragment being written as complete once its header is on disk,
/// so this waits until it counts `count + 1`.
func waitForFragments(_ count: Int, of pid: Int32, in pool: String, container: String = "mov") -> Bool {
    waitUntil(60) {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: pool + "/manifest.json")),
              let m = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let slot = (m["slots"] as? [[String: Any]])?.first(where: { ($0["owner"] as? Int).map { Int32($0) } == pid && $0["state"] as? String == "active" }),
              let id = slot["id"] as? Int else { return false }
        let path = pool + "/slots/" + String(format: "slot-%06d.bin", id)
        let found = container == "mkv" ? FragmentScanner.completeClusters(of: path) : FragmentScanner.completeFragments(of: path)
        return (found?.count ?? 0) >= count + 1
    }
}
/// Waits (at most 60 s) until the active slot of `pid` in `pool` holds complete fragments
/// with at least `frames` frames: the slot cut at its last complete fragment, copied aside
/// and decoded (`Inspector.probe`). Fragments are cut at a second or at
/// `Muxer.fragmentByteLimit` bytes, so their count says little of how many frames are safe.
func waitForCompleteFrames(_ frames: Int, of pid: Int32, in pool: String) -> Bool {
    let copy = temporaryDirectory("reel-slot-prefix") + "/prefix.mov"
    defer { removeTree((copy as NSString).deletingLastPathComponent) }
    return waitUntil(60, every: 0.1) {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: pool + "/manifest.json")),
              let m = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let slot = (m["slots"] as? [[String: Any]])?.first(where: { ($0["owner"] as? Int).map { Int32($0) } == pid && $0["state"] as? String == "active" }),
              let id = slot["id"] as? Int else { return false }
        let path = pool + "/slots/" + String(format: "slot-%06d.bin", id)
        guard let found = FragmentScanner.completeFragments(of: path), found.count > 0,
              let h = FileHandle(forReadingAtPath: path) else { return false }
        let prefix = h.readData(ofLength: Int(found.length))
        try? h.close()
        guard (try? prefix.write(to: URL(fileURLWithPath: copy))) != nil else { return false }
        return ((try? Inspector.probe(copy, frames: true))?.frameIndices?.count ?? 0) >= frames
    }
}

/// PSI files (`cpu`, `io`, `memory`) at nominal figures that the tests' `reel` processes read
/// (`REEL_PRESSURE_DIR`) unless a test gives its own: the pressure handler is on by default,
/// and on the loaded CI machine the kernel's figures would lower the frame rate and pause the
/// preview of every recording. Inside `testCache`, removed with it.
let testPressureDirectory: String = {
    let dir = testCache + "/psi"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let nominal = "some avg10=1.00 avg60=1.00 avg300=1.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    for name in ["cpu", "io", "memory"] {
        try? nominal.write(toFile: dir + "/" + name, atomically: true, encoding: .utf8)
    }
    return dir
}()

/// A TCP port on loopback that was free a moment ago (bound to port 0, read back, closed);
/// a test that launches a server on it retries when another took it meanwhile.
func freePort() throws -> UInt16 {
    let (fd, port) = try loopbackSocket(listening: false)
    close(fd)
    return port
}

/// A TCP socket bound to a free port of 127.0.0.1 (port 0, read back with getsockname), and
/// listening (backlog 1) when `listening`; the caller closes it.
func loopbackSocket(listening: Bool) throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    try #require(fd >= 0)
    var a = sockaddr_in()
    a.sin_family = sa_family_t(AF_INET)
    a.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &a) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && (!listening || listen(fd, 1) == 0) && getsockname(fd, $0, &length) == 0
        }
    }
    if !ok { close(fd) }
    try #require(ok)
    return (fd, UInt16(bigEndian: a.sin_port))
}

/// An empty sysfs root (`REEL_SYSFS_DIR`) for the tests' `reel` processes unless a test gives its
/// own: no thermal zones, no cpufreq — so a hot or capped CI machine does not make the pressure
/// handler lower every recording's frame rate. Inside `testCache`, removed with it.
let testSysfsDirectory: String = {
    let dir = testCache + "/sysfs"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}()
