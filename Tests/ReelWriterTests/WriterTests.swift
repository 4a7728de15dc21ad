import Foundation
import Synchronization
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelWriter

func temporaryDirectory() -> String {
    var template = Array("/tmp/reel-lib-XXXXXX".utf8CString)
    return String(cString: template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!)! })
}

let thirty = FrameRate(frames: 30)!

func makeWriter(_ dir: String, codec: VideoCodec = .prores(.proxy), container: Container = .mov, queue: Int = 8) throws -> AssetWriter {
    try AssetWriter(settings: WriterSettings(codec: codec, container: container, storage: try FileStorage(directory: dir),
                                             namePrefix: "w", queueCapacity: queue), rate: thirty)
}

/// Frames straight from a synthetic sensor, cropped to `ratio`, without a session.
func frames(_ count: Int, from source: SyntheticSource, ratio: AspectRatio, startingAt first: Int = 0) -> [CapturedFrame] {
    final class Grab: SourceDelegate, @unchecked Sendable {
        // Only the capture thread (the caller's) touches `got`.
        var got: [SourceFrame] = []
        func source(didCapture frame: SourceFrame) -> Bool { got.append(frame); return true }
        func source(didDrop count: Int, reason: DropReason, at index: Int) {}
    }
    let grab = Grab()
    try? source.capture(frameLimit: count, delegate: grab)
    return grab.got.map {
        CapturedFrame(lease: $0.lease, index: $0.index + first, pts: Timestamp(value: $0.pts.value + Int64(first), timescale: $0.pts.timescale),
                      duration: 1, ratio: ratio, crop: ratio.crop(in: source.format.size))
    }
}

@Suite(.serialized) struct AssetWriterTests {
    @Test func statusBackPressureAndAsyncAppend() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir, queue: 1)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        #expect(writer.status == .unknown)
        let batch = frames(30, from: source, ratio: .landscape16x9)
        await #expect(throws: WriterError.self) { try await writer.append(batch[0]) }
        writer.start()
        #expect(writer.status == .writing)
        var sawFull = false
        for f in batch {
            if !writer.isReadyForMoreMediaData { sawFull = true }
            try await writer.append(f)     // suspends while the one-frame queue is full
        }
        let result = await writer.finish()
        #expect(writer.status == .completed)
        #expect(sawFull, "a one-frame queue never filled: back-pressure untested")
        #expect(result.clips.count == 1 && result.framesWritten == 30 && result.framesLost == 0)
        #expect(result.queueHighWater == 1)
        await #expect(throws: WriterError.self) { try await writer.append(batch[0]) }
        let probe = try Inspector.probe(result.clips[0].path, frames: true)
        #expect(probe.frameIndices == Array(0..<30) && probe.width == 1280 && probe.height == 720)
    }

    @Test func splitStartsANewClipAtTheNextFrame() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir, codec: .h264, container: .mp4)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        writer.start()
        let batch = frames(20, from: source, ratio: .square)
        for f in batch.prefix(7) { #expect(writer.offer(f, waiting: true) == .taken) }
        writer.split()
        for f in batch.dropFirst(7) { #expect(writer.offer(f, waiting: true) == .taken) }
        let result = writer.finishAndWait()
        #expect(result.clips.map(\.frames) == [7, 13])
        #expect(result.clips.map(\.firstFrameIndex) == [0, 7])
        #expect(result.clips.map(\.ratio) == ["1x1", "1x1"])
        let report = try Inspector.verify([dir])
        #expect(report.ok, "\(report.violation ?? "")")
        #expect(writer.offer(batch[0], waiting: false) == .closed)
    }

    @Test func cancelThrowsAwayTheClipInProgressAndKeepsClosedOnes() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        writer.start()
        let batch = frames(30, from: source, ratio: .landscape16x9)
        for f in batch.prefix(10) { #expect(writer.offer(f, waiting: true) == .taken) }
        writer.split()
        for f in batch.dropFirst(10) { #expect(writer.offer(f, waiting: true) == .taken) }
        let result = writer.cancel()
        #expect(writer.status == .cancelled)
        #expect(result.clips.map(\.frames) == [10] && result.framesLost == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["w-0001-16x9.mov"])
        #expect(try Inspector.probe(result.clips[0].path, frames: true).frameIndices == Array(0..<10))
        #expect(writer.offer(batch[0], waiting: false) == .closed)
    }

    @Test func finishWithoutFramesWritesNothing() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir)
        writer.start()
        let result = writer.finishAndWait()
        #expect(result.clips.isEmpty && writer.status == .completed)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }

    @Test func refusesPairsLibavformatRefuses() {
        #expect(throws: WriterError.self) { _ = try makeWriter("/tmp", codec: .prores(.hq), container: .mp4) }
    }
}

/// Waits (at most 60 s: CI's machine is loaded) until `session` has captured `frames` frames.
func waitForFrames(_ session: CaptureSession, _ frames: Int) async throws {
    let deadline = MonotonicClock.now() + 60_000_000_000
    while session.stats.framesCaptured < frames && MonotonicClock.now() < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
}

/// Runs a session on its own thread, as `reel record` does.
func runInBackground(_ session: CaptureSession, frames: Int?) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    Thread { _ = try? session.run(frameLimit: frames); done.signal() }.start()
    return done
}

@Suite(.serialized) struct DynamicAspectRatioTests {
    @Test func returnedTimestampsAreTheSeamsTheWriterCutAt() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Not real time, so that no frame at a seam can be dropped on a loaded machine.
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        let writer = try makeWriter(dir)
        try session.addOutput(writer)
        writer.start()
        let done = runInBackground(session, frames: nil)   // until stopRunning: slow test hosts cannot outrun it
        try await waitForFrames(session, 9)   // the first clip has frames
        // Calls in flight at once complete in the order they were made, each ratio owning frames.
        let order: [AspectRatio] = [.portrait9x16, .square, .landscape4x3]
        let tasks = try await withThrowingTaskGroup(of: (Int, Timestamp).self) { group in
            for (k, r) in order.enumerated() {
                group.addTask { (k, try await session.setDynamicAspectRatio(r)) }
                try await Task.sleep(nanoseconds: 3_000_000)
            }
            var out: [(Int, Timestamp)] = []
            for try await x in group { out.append(x) }
            return out.sorted { $0.0 < $1.0 }.map(\.1)
        }
        #expect(tasks[0] < tasks[1] && tasks[1] < tasks[2], "\(tasks)")
        // The current ratio again: a timestamp, no seam.
        let same = try await session.setDynamicAspectRatio(.landscape4x3)
        #expect(same > tasks[2])
        session.stopRunning()
        done.wait()
        let result = writer.finishAndWait()
        #expect(result.clips.map(\.ratio) == ["16x9", "9x16", "1x1", "4x3"])
        for (clip, t) in zip(result.clips.dropFirst(), tasks) {
            #expect(abs(clip.firstPTS - t.seconds) < 1e-9)
        }
        #expect(session.stats.seams.count == 3)
    }

    @Test func unsupportedRatioIsAClearErrorAndRecordingGoesOn() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = try SyntheticSource(size: 4032, rate: thirty, realtime: false)
        #expect(source.format.supportedRatios == [.landscape4x3, .portrait3x4])
        let session = try CaptureSession(source: source)
        #expect(session.ratio == .landscape4x3)
        let writer = try makeWriter(dir)
        try session.addOutput(writer)
        writer.start()
        let done = runInBackground(session, frames: nil)   // until stopRunning: slow test hosts cannot outrun it
        try await waitForFrames(session, 6)   // the first clip has frames
        do {
            _ = try await session.setDynamicAspectRatio(.landscape16x9)
            Issue.record("16x9 on a still-photo format should be refused")
        } catch let e as CaptureError {
            #expect(e.description.contains("ratio 16x9 is not supported") && e.exitStatus == 64)
        }
        let t = try await session.setDynamicAspectRatio(.portrait3x4)
        try await waitForFrames(session, Int(t.seconds * 30) + 6)   // the second clip has frames
        session.stopRunning()
        done.wait()
        let result = writer.finishAndWait()
        #expect(result.clips.map(\.ratio) == ["4x3", "3x4"])
        #expect(result.clips.map { "\($0.width)x\($0.height)" } == ["4032x3024", "3024x4032"])
        #expect(abs(result.clips[1].firstPTS - t.seconds) < 1e-9)
        #expect(result.clips.reduce(0) { $0 + $1.frames } + session.stats.drops.total == session.stats.framesCaptured)
    }
}

@Suite struct IdleSessionTests {
    @Test func aRatioSetWhileStoppedAppliesToTheNextRunAndReturnsAtOnce() async throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        let t = try await session.setDynamicAspectRatio(.square)
        #expect(t == Timestamp.zero(timescale: 30) && session.ratio == .square)
        _ = try session.run(frameLimit: 5)
        let after = try await session.setDynamicAspectRatio(.portrait9x16)
        #expect(after == Timestamp(value: 5, timescale: 30))
    }
}

@Suite struct FragmentTests {
    @Test func cutAnywhereThePrefixUpToTheLastFragmentPlays() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try AssetWriter(settings: WriterSettings(codec: .h264, container: .mp4, storage: try FileStorage(directory: dir),
                                                              namePrefix: "f", fragmentInterval: 0.5), rate: thirty)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 100)
        writer.start()
        for f in frames(90, from: source, ratio: .landscape16x9) { _ = writer.offer(f, waiting: true) }
        let path = writer.finishAndWait().clips[0].path
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        var keptCounts: [Int] = []
        for fraction in [0.2, 0.45, 0.7, 0.95] {
            let cut = dir + "/cut.mp4"
            try whole.prefix(Int(Double(whole.count) * fraction)).write(to: URL(fileURLWithPath: cut))
            let length = try #require(FragmentScanner.playableLength(of: cut))
            #expect(length <= Int64(Double(whole.count) * fraction))
            let file = try #require(FileHandle(forWritingAtPath: cut))
            try file.truncate(atOffset: UInt64(length))
            try file.close()
            let probe = try Inspector.probe(cut, frames: true)
            let kept = probe.frameIndices ?? []
            #expect(kept == Array(0..<kept.count), "cut at \(fraction): \(kept)")
            keptCounts.append(kept.count)
            try FileManager.default.removeItem(atPath: cut)
        }
        #expect(keptCounts == keptCounts.sorted() && keptCounts.last! >= 60, "\(keptCounts)")
        #expect(FragmentScanner.playableLength(of: path) == Int64(whole.count))
    }
}

/// Runs `body` on a thread of its own and waits for it at most `seconds`: a call that hangs
/// fails the test instead of hanging the suite.
func returns(within seconds: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    let t = Thread { body(); done.signal() }
    t.stackSize = 4 << 20
    t.start()
    return done.wait(timeout: .now() + seconds) == .success
}

/// Calls of the writer's API that used to wait forever.
@Suite(.serialized) struct WriterNeverHangsTests {
    @Test func finishOnAWriterThatNeverStartedReturns() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir)
        // Polled without blocking a thread of the cooperative pool, which the call needs.
        let done = Mutex(false)
        Task { _ = await writer.finish(); done.withLock { $0 = true } }
        var waited = 0
        while !done.withLock({ $0 }) && waited < 6000 {   // 60 s: a hang, not a slow machine
            try await Task.sleep(nanoseconds: 10_000_000)
            waited += 1
        }
        #expect(done.withLock { $0 }, "finish() on a writer that never started did not return")
        #expect(writer.status == .completed)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }

    @Test func cancelAfterAFailureReturns() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The first clip's name is taken: opening it fails, and the writer with it.
        #expect(FileManager.default.createFile(atPath: dir + "/w-0001-16x9.mov", contents: Data("mine".utf8)))
        let writer = try makeWriter(dir)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        writer.start()
        let batch = frames(3, from: source, ratio: .landscape16x9)
        #expect(writer.offer(batch[0], waiting: true) == .taken)
        let deadline = Date().addingTimeInterval(60)
        while writer.status == .writing && Date() < deadline { usleep(5_000) }
        guard case .failed(let e) = writer.status else { Issue.record("the writer did not fail: \(writer.status)"); return }
        #expect(e.exitStatus == 73, "\(e)")
        #expect(returns(within: 60) { writer.cancel() }, "cancel() after a failure did not return")
        #expect(returns(within: 60) { _ = writer.finishAndWait() })
        #expect(try String(contentsOfFile: dir + "/w-0001-16x9.mov", encoding: .utf8) == "mine")
    }

    @Test func aProducerWaitingInOfferIsRefusedOnceFinishIsAsked() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A one-frame queue: the producer is nearly always waiting in offer(waiting: true).
        let writer = try makeWriter(dir, codec: .prores(.hq), queue: 1)
        let source = try SyntheticSource(size: 1920, rate: thirty, realtime: false, buffers: 64)
        let batch = frames(60, from: source, ratio: .square)
        writer.start()
        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var taken = 0, closed = 0
        }
        let tally = Tally()
        let producer = DispatchSemaphore(value: 0)
        Thread {
            for f in batch {
                let r = writer.offer(f, waiting: true)
                tally.lock.lock()
                if r == .taken { tally.taken += 1 } else { tally.closed += 1 }
                tally.lock.unlock()
                if r == .closed { break }
            }
            producer.signal()
        }.start()
        // Finish while the producer waits for room.
        while true {
            tally.lock.lock(); let n = tally.taken; tally.lock.unlock()
            if n >= 5 { break }
            usleep(1_000)
        }
        let finishing = Mutex<WriterResult?>(nil)
        #expect(returns(within: 60) { let r = writer.finishAndWait(); finishing.withLock { $0 = r } }, "finish did not return")
        #expect(producer.wait(timeout: .now() + 60) == .success, "the producer is still waiting in offer")
        let r = try #require(finishing.withLock { $0 })
        // Every frame the writer said it took is in the clip; none was queued behind the finish.
        #expect(r.framesLost == 0)
        #expect(r.framesWritten == tally.taken, "took \(tally.taken), wrote \(r.framesWritten)")
        #expect(tally.closed == 1)
        #expect(try Inspector.probe(r.clips[0].path, frames: true).frameIndices == Array(0..<tally.taken))
    }
}

/// Clips opened before their first frame: the first before capture, the next ones ahead of
/// the ratio changes the session announces.
@Suite(.serialized) struct OpeningAheadTests {
    @Test func scheduledChangesAreOpenedAheadAndFFV1KeyframesStayInPlace() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        try session.scheduleAspectRatio(.portrait9x16, at: .frame(40))
        try session.scheduleAspectRatio(.portrait9x16, at: .frame(45))   // no change: no clip
        try session.scheduleAspectRatio(.square, at: .frame(80))
        let writer = try makeWriter(dir, codec: .ffv1, container: .mkv)
        try session.addOutput(writer)
        writer.start()
        _ = try session.run(frameLimit: 120)
        let result = writer.finishAndWait()
        #expect(result.clips.map(\.ratio) == ["16x9", "9x16", "1x1"])
        #expect(result.clips.map(\.frames) == [40, 40, 40], "\(String(describing: result.error)) \(result.clips.map(\.salvaged)) lost \(result.framesLost)")
        #expect(result.clipsOpenedAhead == 3)
        // Nothing opened ahead is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == result.clips.map { ($0.path as NSString).lastPathComponent })
        let report = try Inspector.verify([dir])
        #expect(report.ok, "\(report.violation ?? "")")
        // The warm-up frame is not in the file, and keyframes come every 30 frames from each clip's first.
        for clip in result.clips {
            let keys = try keyframes(clip.path)
            #expect(keys == Array(stride(from: 0, to: clip.frames, by: 30)), "\(clip.path): \(keys)")
        }
    }

    @Test func aRatioThatComesBackStartsOnItsEarlierFFV1Encoder() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        try session.scheduleAspectRatio(.portrait9x16, at: .frame(35))
        try session.scheduleAspectRatio(.landscape16x9, at: .frame(70))
        try session.scheduleAspectRatio(.portrait9x16, at: .frame(100))
        let writer = try makeWriter(dir, codec: .ffv1, container: .mkv)
        try session.addOutput(writer)
        writer.start()
        _ = try session.run(frameLimit: 130)
        let result = writer.finishAndWait()
        #expect(result.clips.map(\.ratio) == ["16x9", "9x16", "16x9", "9x16"])
        #expect(result.clips.map(\.frames) == [35, 35, 30, 30])
        #expect(result.encodersReused == 2 && result.clipsOpenedAhead == 4)
        // Each clip decodes on its own from its first frame, keyframes where a new encoder puts them.
        let report = try Inspector.verify([dir])
        #expect(report.ok, "\(report.violation ?? "")")
        for clip in result.clips {
            #expect(try keyframes(clip.path) == Array(stride(from: 0, to: clip.frames, by: 30)), "\(clip.path)")
            #expect(try Inspector.probe(clip.path, frames: true).frameIndices == Array(clip.firstFrameIndex...clip.lastFrameIndex))
        }
    }

    @Test func aClipOpenedForAChangeThatDoesNotComeIsThrownAway() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        try session.scheduleAspectRatio(.square, at: .frame(20))
        let writer = try makeWriter(dir, codec: .h264, container: .mp4)
        try session.addOutput(writer)
        writer.start()
        // Told 3x4 comes next, but 1x1 does: the 3x4 clip opened ahead does not fit and goes,
        // the 1x1 clip opens when its frame comes, and the clip opened ahead after it goes at the end.
        writer.expect(ratio: .portrait3x4, size: AspectRatio.portrait3x4.crop(in: source.format.size).size, timescale: 30)
        _ = try session.run(frameLimit: 30)
        let result = writer.finishAndWait()
        #expect(result.clips.map(\.ratio) == ["16x9", "1x1"])
        #expect(result.clips.map(\.frames) == [20, 10])
        #expect(result.clipsOpenedAhead == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["w-0001-16x9.mp4", "w-0002-1x1.mp4"])
        let report = try Inspector.verify([dir])
        #expect(report.ok, "\(report.violation ?? "")")
    }
}

@Suite struct StopWhileOutputsPrepareTests {
    /// An output that takes its time to get ready, and says when it started.
    final class SlowToPrepare: FrameOutput, @unchecked Sendable {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let frames = Mutex(0)
        func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult { frames.withLock { $0 += 1 }; return .taken }
        func prepare(ratio: AspectRatio, size: Size, timescale: Int32) {
            started.signal()
            release.wait()
        }
    }

    @Test func aStopWhileTheOutputsGetReadyEndsTheRunBeforeTheSourceStarts() throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: true)
        let session = try CaptureSession(source: source)
        let output = SlowToPrepare()
        try session.addOutput(output)
        let done = runInBackground(session, frames: 300)
        #expect(output.started.wait(timeout: .now() + 60) == .success)
        session.stopRunning()          // as SIGINT does, while the first clip opens
        output.release.signal()
        // (A lost stop would capture frames, which the next check counts.)
        #expect(done.wait(timeout: .now() + 60) == .success, "the run went on after stopRunning()")
        #expect(output.frames.withLock { $0 } == 0)
        // The next run is not stopped by it.
        output.release.signal()
        _ = try session.run(frameLimit: 3)
        #expect(output.frames.withLock { $0 } == 3)
    }
}

@Suite struct WriterHoldTests {
    /// docs/json.md: a recording's writer may hold the synthetic sensor's buffers less 4; the sensor
    /// has as many buffers (12–40) as 192 MiB holds.
    @Test func aRecordingHoldsAboutASecondOf1920Frames() throws {
        #expect(Recording.sensorBuffers(side: 1920) == 36 && Recording.holdFrames(synthetic: 1920) == 32)
        #expect(36 * 1920 * 1920 * 3 / 2 <= Recording.sensorBudget)
        #expect(Recording.sensorBuffers(side: 1280) == 40 && Recording.sensorBuffers(side: 4032) == 12)
        #expect(Recording.holdFrames(sourceBuffers: 40) == 36 && Recording.holdFrames(sourceBuffers: 3) == 1)
        var options = RecordOptions()
        options.scene = .pattern   // cheap frames: the scene is not this test's subject
        options.storage = .plain
        options.outputDirectory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: options.outputDirectory) }
        let recording = try Recording(options: options)
        #expect(recording.writer.settings.queueCapacity == 32)
    }
}

/// Frame positions of the keyframes in `path`, from the packets' flags.
func keyframes(_ path: String) throws -> [Int] {
    let reader = try MediaReader(path: path)
    var keys: [Int] = []
    var n = 0
    try reader.forEachPacket { p in
        if p.isKeyframe { keys.append(n) }
        n += 1
    }
    return keys
}
