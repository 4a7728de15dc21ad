import Foundation
import Glibc
import Testing
import ReelWriter

/// The keys of the summary these tests read (those added with Deferred Start optional, so that
/// a build without them fails on the figures, not on decoding).
struct StartFigures: Decodable {
    struct Clip: Decodable { var path: String; var frames: Int; var firstFrameIndex: Int }
    var clips: [Clip]
    var framesCaptured: Int
    var framesWritten: Int
    var framesDropped: Int
    var dropReasons: [String: Int]
    var longestClipOpenMs: Double
    var stopReason: String
    var startMode: String?
    var framesHeldBeforeReady: Int?
    var longestHoldMs: Double?
    var firstFrameWrittenMs: Double?
}

/// `reel record` with its pool's syncs slowed down by scripts/faults (`SLOWms`): every
/// fdatasync and fsync under the pool — the manifest's, the pool directory's — waits `ms`, as
/// on a slow disk, so opening the pool and claiming a slot (one manifest update: fdatasync of
/// the new manifest, fsync of the directory) take twice that.
func recordWithSlowPool(_ args: [String], syncMs: Int, pool: String, out: String) throws -> (Run, StartFigures) {
    let env = faultEnvironment("fdatasync:SLOW\(syncMs):1+,fsync:SLOW\(syncMs):1+", under: pool, log: out + ".faults.log")
    let run = try #require(try reel(["record", "--json", "--pool", pool, "--source", "synthetic:1280", "--codec", "prores:proxy",
                                     "--out", out, "--name", "s"] + args, within: 120, environment: env),
                           "reel record did not end within 120 s")
    #expect(run.status == 0, "\(run.stderr)")
    return (run, try run.decode(StartFigures.self))
}

/// Deferred Start in real `reel record` processes, in real time (the real-time pass).
@Suite(.serialized, .enabled(if: faultsLibrary != nil, "the fault library is not built: scripts/faults --build"))
struct RealtimeDeferredStartTests {
    /// The movie output initialises after the first frame; a slow initialisation (0.6 s: the
    /// slot claim's two syncs at 300 ms each) holds the first frames in the ring, and every
    /// one of them is written: the clip holds every index once, from 0. Not in real time (the
    /// source waits when the ring is full), so no frame can drop and the check is exact on any
    /// machine; what a full ring drops in real time is the next test's subject.
    @Test func framesHeldWhileTheMovieOutputInitialisesAreAllWritten() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        #expect(try createPool(dir + "/pool", "256M", slot: "64M").status == 0)
        let (_, s) = try recordWithSlowPool(["--duration", "3", "--no-realtime"], syncMs: 300, pool: dir + "/pool", out: dir + "/out")
        #expect(s.startMode == "deferred")
        #expect((s.framesHeldBeforeReady ?? 0) >= 10, "\(String(describing: s.framesHeldBeforeReady)) frames held")
        #expect((s.longestHoldMs ?? 0) >= 500, "\(String(describing: s.longestHoldMs)) ms")
        #expect(s.framesCaptured == 90 && s.framesWritten == 90 && s.framesDropped == 0, "\(s.dropReasons)")
        let clip = try #require(s.clips.first)
        #expect(clip.firstFrameIndex == 0)
        #expect(try probeFrames(clip.path).frameIndices == Array(0..<90))
    }

    /// An initialisation longer than the ring holds (2 s against 36 frames at 1280): the
    /// frames that find it full are dropped as `outOfBuffers`, counted, and the clip plays:
    /// the 36 held frames from 0, then the rest in order.
    @Test func aFullHoldRingDropsAsOutOfBuffersAndTheClipPlays() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        #expect(try createPool(dir + "/pool", "256M", slot: "64M").status == 0)
        let (_, s) = try recordWithSlowPool(["--duration", "4"], syncMs: 1000, pool: dir + "/pool", out: dir + "/out")
        #expect((s.dropReasons["outOfBuffers"] ?? 0) > 0, "\(s.dropReasons)")
        #expect(s.framesDropped == s.dropReasons.values.reduce(0, +))
        #expect(s.framesCaptured == 120 && s.framesWritten + s.framesDropped == 120, "\(s.dropReasons)")
        // The hold ring at 1280: 36 frames (docs/capture.md, Deferred Start).
        #expect(s.framesHeldBeforeReady == 36)
        let clip = try #require(s.clips.first)
        let indices = try #require(try probeFrames(clip.path).frameIndices)
        #expect(Array(indices.prefix(36)) == Array(0..<36))
        #expect(indices.count == clip.frames && zip(indices, indices.dropFirst()).allSatisfy { $0 < $1 })
    }

    /// Later clips claim their pool slot on the opener thread, ahead of the seam: with the
    /// claim slowed to 0.4 s, the encode thread still opens the clip at the seam in far less.
    @Test func theSeamDoesNotWaitForTheSlotClaim() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        #expect(try createPool(dir + "/pool", "256M", slot: "64M").status == 0)
        let (_, s) = try recordWithSlowPool(["--duration", "3", "--ratio-at", "1.5:9x16"], syncMs: 200, pool: dir + "/pool", out: dir + "/out")
        #expect(s.clips.count == 2)
        #expect(s.longestClipOpenMs < 200, "the seam waited \(s.longestClipOpenMs) ms (a slot claim takes 400 ms here)")
        for clip in s.clips { #expect(try risingIndices(clip.path, count: clip.frames)) }
    }

    /// `--eager-start`: everything initialises before the first frame; nothing is held.
    @Test func eagerStartHoldsNothing() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let (run, summary) = try record(["--eager-start", "--duration", "1", "--source", "synthetic:1280", "--codec", "prores:proxy"], out: dir)
        #expect(run.status == 0, "\(run.stderr)")
        let s = try run.decode(StartFigures.self)
        #expect(s.startMode == "eager" && s.framesHeldBeforeReady == 0 && s.longestHoldMs == 0)
        #expect((s.firstFrameWrittenMs ?? 0) > 0)
        #expect(try probeFrames(try #require(summary?.clips.first).path).frameIndices?.first == 0)
    }
}

/// The terminal is put back whatever ends or stops `reel record` with live keys on.
@Suite(.serialized) struct RealtimeTerminalSignalTests {
    func isStopped(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(close, offsetBy: 2)] == "T"
    }

    @Test func sigtermFinishesTheClipAndPutsTheTerminalBack() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let term = try TerminalRun(["record", "--duration", "30", "--source", "synthetic:1280", "--codec", "prores:proxy",
                                    "--out", dir, "--name", "term", "--json"])
        defer { term.finish() }
        let before = try term.settings()
        _ = try #require(term.waitForProgress(30) { frames, _ in frames >= 15 }, "no progress line: \(term.screen)")
        #expect(try term.settings().c_lflag & tcflag_t(ICANON | ECHO) == 0, "live keys need the terminal in raw mode")
        kill(term.pid, SIGTERM)
        let end = term.waitForExit(30)
        #expect(end.status == 0 && end.signal == nil, "\(end) \(term.screen.suffix(300))")
        #expect(try term.settings().snapshot == before.snapshot, "the terminal was left in raw mode")
        let s = try JSONDecoder().decode(RecordingSummary.self, from: Data(term.stdout.utf8))
        #expect(s.stopReason == "interrupted" && s.framesCaptured < 900)
    }

    @Test func ctrlZPutsTheTerminalBackAndContinuingTakesTheKeysAgain() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        // Until `q` (below): stopped and continued, it may take long on a loaded machine.
        let term = try TerminalRun(["record", "--source", "synthetic:1280", "--codec", "prores:proxy",
                                    "--out", dir, "--name", "tstp", "--json"] + untilSIGINT)
        defer { term.finish() }
        let before = try term.settings()
        _ = try #require(term.waitForProgress(30) { frames, _ in frames >= 15 }, "no progress line: \(term.screen)")
        #expect(try term.settings().c_lflag & tcflag_t(ICANON | ECHO) == 0)
        term.type("\u{1A}")   // Ctrl-Z
        waitUntil(60) { isStopped(term.pid) }
        #expect(isStopped(term.pid), "Ctrl-Z did not stop the process")
        let whileStopped = try term.settings()
        #expect(whileStopped.snapshot == before.snapshot,
                "stopped with the terminal in raw mode: \(whileStopped.snapshot) against \(before.snapshot); \(term.screen.suffix(300))")
        kill(term.pid, SIGCONT)   // fg
        try waitUntil(60) { try term.settings().c_lflag & tcflag_t(ICANON) == 0 }
        #expect(try term.settings().c_lflag & tcflag_t(ICANON | ECHO) == 0, "the keys are off after fg")
        term.type("q")
        let end = term.waitForExit(30)
        #expect(end.status == 0 && end.signal == nil, "\(end) \(term.screen.suffix(300))")
        #expect(try term.settings().snapshot == before.snapshot)
        let s = try JSONDecoder().decode(RecordingSummary.self, from: Data(term.stdout.utf8))
        #expect(s.stopReason == "interrupted")
    }
}
