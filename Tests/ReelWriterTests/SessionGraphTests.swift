import Foundation
import Synchronization
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelWriter

/// An output that takes every frame and counts them; `prepare` can be made slow.
final class CountingOutput: FrameOutput, @unchecked Sendable {
    let frames = Mutex(0)
    let prepareSeconds: Double
    init(prepareSeconds: Double = 0) { self.prepareSeconds = prepareSeconds }
    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult { frames.withLock { $0 += 1 }; return .taken }
    func prepare(ratio: AspectRatio, size: Size, timescale: Int32) {
        if prepareSeconds > 0 { usleep(UInt32(prepareSeconds * 1e6)) }
    }
}

/// A gate a thread waits at until the test opens it (at most 60 s, then `ranOut` is set: the
/// caller that should never have waited for it did). Once open it stays open.
final class Gate: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    /// Signalled each time a thread starts waiting at the gate.
    let reached = DispatchSemaphore(value: 0)
    let ranOut = Mutex(false)
    func pass() {
        reached.signal()
        if semaphore.wait(timeout: .now() + 60) == .timedOut { ranOut.withLock { $0 = true } } else { semaphore.signal() }
    }
    func open() { semaphore.signal() }
}

/// An output that counts frames; `prepare` waits at `prepareGate`, and once `holdOffers` is
/// set an `offer` waits at `offerGate`: the capture thread is busy in the outputs.
final class GatedOutput: FrameOutput, @unchecked Sendable {
    let frames = Mutex(0)
    let prepareGate = Gate(), offerGate = Gate()
    let holdOffers = Mutex(false)
    func offer(_ frame: CapturedFrame, waiting: Bool) -> OfferResult {
        frames.withLock { $0 += 1 }
        if holdOffers.withLock({ $0 }) { offerGate.pass() }
        return .taken
    }
    func prepare(ratio: AspectRatio, size: Size, timescale: Int32) { prepareGate.pass() }
}

/// Polls `condition` every 5 ms until it holds (true) or 60 s have passed (false): CI runs
/// the suite on a loaded machine.
@discardableResult
func waitUntil(_ condition: () -> Bool) -> Bool {
    let deadline = MonotonicClock.now() + 60_000_000_000
    while !condition() {
        if MonotonicClock.now() >= deadline { return false }
        usleep(5_000)
    }
    return true
}

/// Records what the session told it, and what the preview-like output had seen by then.
final class DeferredStartWatcher: CaptureSessionDelegate, @unchecked Sendable {
    let events = Mutex<[String]>([])
    let preview: DataOutput
    init(preview: DataOutput) { self.preview = preview }
    func sessionWillRunDeferredStart(_ session: CaptureSession) {
        let seen = session.stats.framesCaptured
        events.withLock { $0.append("will after \(seen > 0 ? "a frame" : "no frame")") }
    }
    func sessionDidRunDeferredStart(_ session: CaptureSession) { events.withLock { $0.append("did") } }
}

/// The session as a graph: configuration batched and resolved once per commit, a run that
/// never holds the caller's thread.
@Suite(.serialized) struct SessionGraphTests {
    @Test func twentyChangesInABatchResolveOnceAndChangesOutsideABatchOnceEach() throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        let before = session.graphResolutions
        let outputs = (0..<10).map { _ in CountingOutput() }
        session.beginConfiguration()
        for o in outputs { try session.addOutput(o) }                              // 10
        for o in outputs.prefix(4) { try session.removeOutput(o) }                 // 14
        for r in [AspectRatio.square, .portrait9x16, .landscape4x3, .portrait3x4] { try session.setRatio(r) }  // 18
        try session.setFrameRate(FrameRate(frames: 25)!)                       // 19
        try session.setRatio(.square)                                          // 20
        #expect(session.graphResolutions == before, "nothing is resolved inside a batch")
        #expect(session.outputs.isEmpty && session.ratio == .landscape16x9, "nothing applies before the commit")
        try session.commitConfiguration()
        #expect(session.graphResolutions == before + 1)
        #expect(session.outputs.count == 6 && session.ratio == .square && session.source.format.rate == FrameRate(frames: 25)!)
        // Outside a batch: each change on its own.
        try session.addOutput(CountingOutput())
        try session.setRatio(.landscape16x9)
        try session.removeOutput(outputs[9])
        #expect(session.graphResolutions == before + 4)
        // Nested batches: the outermost commit resolves.
        session.beginConfiguration()
        session.beginConfiguration()
        try session.setRatio(.portrait3x4)
        try session.commitConfiguration()
        #expect(session.graphResolutions == before + 4)
        try session.commitConfiguration()
        #expect(session.graphResolutions == before + 5 && session.ratio == .portrait3x4)
        // The run uses what was committed: 25 fps, 3x4.
        let stats = try session.run(frameLimit: 5)
        #expect(stats.framesCaptured == 5 && session.outputs.allSatisfy { ($0 as! CountingOutput).frames.withLock { $0 } == 5 })
    }

    @Test func aBatchThatCannotBeResolvedIsRefusedWhole() throws {
        let small = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let photo = try SyntheticSource(size: 4032, rate: thirty, realtime: false, buffers: 2)
        let session = try CaptureSession(source: small, ratio: .landscape16x9)
        let count = session.graphResolutions
        session.beginConfiguration()
        try session.addOutput(CountingOutput())
        try session.setSource(photo)          // 4032 offers 4x3 and 3x4 only: 16x9 cannot stay
        #expect(throws: CaptureError.self) { try session.commitConfiguration() }
        #expect(session.source === small && session.outputs.isEmpty && session.graphResolutions == count)
        // The same with the ratio in the batch resolves.
        session.beginConfiguration()
        try session.setSource(photo)
        try session.setRatio(.landscape4x3)
        try session.commitConfiguration()
        #expect(session.source === photo && session.ratio == .landscape4x3 && session.graphResolutions == count + 1)
        // Outside a batch the change throws at once and changes nothing.
        #expect(throws: CaptureError.self) { try session.setRatio(.square) }
        #expect(session.ratio == .landscape4x3)
    }

    /// A configuration check that refuses a second output: `addOutput` outside a batch
    /// throws its error and the output is not in the graph (it was swallowed before, and the
    /// caller recorded without it); in a batch, the commit throws it and nothing changes.
    @Test func aRefusedOutputThrowsAndIsNotAdded() throws {
        struct TooMany: Error {}
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        try session.setConfigurationCheck { c in if c.outputs.count > 1 { throw TooMany() } }
        let first = CountingOutput(), second = CountingOutput()
        try session.addOutput(first)
        #expect(throws: TooMany.self) { try session.addOutput(second) }
        #expect(session.outputs.count == 1 && session.outputs[0] === first)
        session.beginConfiguration()
        try session.addOutput(second)
        #expect(throws: TooMany.self) { try session.commitConfiguration() }
        #expect(session.outputs.count == 1)
        let stats = try session.run(frameLimit: 3)
        #expect(stats.framesCaptured == 3 && first.frames.withLock { $0 } == 3 && second.frames.withLock { $0 } == 0)
    }

    /// Neither call waits for the outputs: `startRunning` returns while an output's `prepare`
    /// is held at a gate, `stopRunning` while the capture thread is held in an `offer` (had
    /// either waited, the gate would have run out after 60 s). No clock is involved.
    @Test func startAndStopRunningNeverBlockTheCaller() throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: true)
        let session = try CaptureSession(source: source)
        let slow = GatedOutput()
        try session.addOutput(slow)
        session.startRunning(frameLimit: 300)
        #expect(!slow.prepareGate.ranOut.withLock { $0 }, "startRunning waited for the outputs")
        #expect(session.isRunning)
        slow.prepareGate.open()
        // Frames flow once the output is ready, on the session's thread.
        #expect(waitUntil { slow.frames.withLock { $0 } >= 5 })
        #expect(throws: CaptureError.self) { try session.setFrameRate(FrameRate(frames: 25)!) }
        #expect(throws: CaptureError.self) { try session.setRatio(.square) }   // setDynamicAspectRatio does that
        slow.holdOffers.withLock { $0 = true }
        #expect(slow.offerGate.reached.wait(timeout: .now() + 60) == .success, "no frame came to the output")
        session.stopRunning()
        #expect(!slow.offerGate.ranOut.withLock { $0 }, "stopRunning waited for the capture thread")
        slow.offerGate.open()
        let stats = try session.waitUntilStopped()
        #expect(stats.framesCaptured < 300 && !session.isRunning)
    }

    @Test func stoppedAwaitsTheRunWithoutBlockingAThread() async throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        let output = CountingOutput()
        try session.addOutput(output)
        session.startRunning(frameLimit: 12)
        let stats = try await session.stopped()
        #expect(stats.framesCaptured == 12 && output.frames.withLock { $0 } == 12 && !session.isRunning)
    }
}

/// Deferred Start: the outputs that are not deferred (here a data output, as the preview)
/// get the first frame before the deferred writer initialises; nothing is lost meanwhile.
@Suite(.serialized) struct DeferredStartTests {
    func deferredWriter(_ dir: String, queue: Int = 36) throws -> AssetWriter {
        let writer = try AssetWriter(settings: WriterSettings(codec: .prores(.proxy), container: .mov, storage: try FileStorage(directory: dir),
                                                              namePrefix: "d", queueCapacity: queue), rate: thirty)
        writer.deferredStartEnabled = true
        return writer
    }

    /// A session the app runs Deferred Start for itself (`automaticallyRunsDeferredStart`
    /// off), capturing 60 frames (from a 40-buffer sensor) into a deferred writer whose hold
    /// ring takes `queue` frames; running.
    func manualDeferredStart(_ dir: String, realtime: Bool, queue: Int) throws -> (CaptureSession, AssetWriter) {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: realtime, buffers: 40)
        let session = try CaptureSession(source: source)
        session.automaticallyRunsDeferredStart = false
        let writer = try deferredWriter(dir, queue: queue)
        try session.addOutput(writer)
        writer.start()
        session.startRunning(frameLimit: 60)
        return (session, writer)
    }

    @Test func theWriterInitialisesAfterTheFirstPreviewFrameAndWritesEveryFrameFromZero() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: true, buffers: 40)
        let session = try CaptureSession(source: source)
        let firstSeen = Mutex<Int?>(nil)
        let preview = DataOutput { f in firstSeen.withLock { if $0 == nil { $0 = f.index } } }
        let writer = try deferredWriter(dir)
        #expect(writer.deferredStartEnabled && !preview.deferredStartEnabled)
        let watcher = DeferredStartWatcher(preview: preview)
        session.delegate = watcher
        try session.addOutput(preview)
        try session.addOutput(writer)
        writer.start()
        let stats = try session.run(frameLimit: 45)
        let result = writer.finishAndWait()
        #expect(watcher.events.withLock { $0 } == ["will after a frame", "did"])
        #expect(session.deferredStartsRun == 1)
        #expect(firstSeen.withLock { $0 } == 0)
        #expect(stats.framesCaptured == 45 && result.framesWritten + stats.drops.total == 45, "\(stats.drops.byReason)")
        #expect(result.framesHeldBeforeReady >= 1, "frame 0 waits for the writer's initialisation")
        #expect(result.clipsOpenedAhead == 1)
        let probe = try Inspector.probe(try #require(result.clips.first).path, frames: true)
        #expect(probe.frameIndices?.first == 0)
        if stats.drops.total == 0 { #expect(probe.frameIndices == Array(0..<45)) }
    }

    @Test func withoutAutomaticDeferredStartFramesWaitForTheAppAndNoneIsLost() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Not real time: the source waits while the ring is full, so every frame is kept.
        let (session, writer) = try manualDeferredStart(dir, realtime: false, queue: 20)
        // The ring fills (20 frames) and capture waits: nothing is written (still so 0.2 s later).
        waitUntil { writer.holdCounters.frames >= 20 }
        usleep(200_000)
        #expect(writer.holdCounters.frames == 20 && writer.progress.frames == 0 && session.deferredStartsRun == 0)
        session.runDeferredStartWhenNeeded()
        let stats = try session.waitUntilStopped()
        let result = writer.finishAndWait()
        #expect(session.deferredStartsRun == 1)
        #expect(stats.framesCaptured == 60 && stats.drops.total == 0 && result.framesWritten == 60)
        #expect(result.framesHeldBeforeReady == 20 && result.longestHold >= 0.2)
        #expect(try Inspector.probe(try #require(result.clips.first).path, frames: true).frameIndices == Array(0..<60))
    }

    @Test func aFullHoldRingDropsAsOutOfBuffersAndTheClipStillPlays() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (session, writer) = try manualDeferredStart(dir, realtime: true, queue: 6)
        // Two thirds of a second of frames for a 6-frame ring.
        waitUntil { session.stats.framesCaptured >= 20 }
        session.runDeferredStartWhenNeeded()
        let stats = try session.waitUntilStopped()
        let result = writer.finishAndWait()
        #expect(stats.drops[.outOfBuffers] >= 10, "\(stats.drops.byReason)")
        #expect(result.framesHeldBeforeReady >= 6)
        #expect(stats.framesCaptured == 60 && result.framesWritten + stats.drops.total == 60, "\(stats.drops.byReason)")
        let clip = try #require(result.clips.first)
        let indices = try #require(try Inspector.probe(clip.path, frames: true).frameIndices)
        // The six held frames from 0, then what came once the writer was ready, in order.
        #expect(Array(indices.prefix(6)) == Array(0..<6))
        #expect(indices == indices.sorted() && Set(indices).count == indices.count && indices.count == clip.frames)
        // Every frame of the file decodes (probe decoded them all above).
    }

    @Test func aDataOutputDeliversFramesToACallbackWithoutHoldingCapture() throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40)
        let session = try CaptureSession(source: source)
        let seen = Mutex<[Int]>([])
        // The callback is held at a gate until the run has ended: had capture waited for it,
        // the gate would have run out (60 s) before the 50 frames. No clock is involved.
        let gate = Gate()
        let output = DataOutput { f in
            let (luma, stride) = f.buffer.plane(0)
            let index = FrameBarcode.read(LumaPlane(base: UnsafeRawPointer(luma), stride: stride, width: f.buffer.size.width,
                                                    height: f.buffer.size.height, depth: 8))
            seen.withLock { $0.append(index ?? -1) }
            gate.pass()
        }
        try session.addOutput(output)
        _ = try session.run(frameLimit: 50)
        #expect(!gate.ranOut.withLock { $0 }, "capture waited for the callback")
        gate.open()
        output.stop()
        // The callbacks that began have returned (the frame waiting at the stop is delivered too).
        waitUntil { output.counters.delivered >= 1 && output.counters.delivered == seen.withLock { $0.count } }
        let (delivered, discarded) = output.counters
        #expect(delivered >= 1 && delivered + discarded <= 50 && discarded > 0)
        let got = seen.withLock { $0 }
        // Each callback saw a whole frame (its barcode reads), newer than the one before.
        #expect(!got.isEmpty && got.allSatisfy { (0..<50).contains($0) } && got == got.sorted() && Set(got).count == got.count, "\(got)")
    }
}

/// Review findings in the writer and the session (each failed before its fix).
@Suite(.serialized) struct WriterReviewTests {
    /// A clip opened ahead for a change that did not come is thrown away; its FFV1 encoder is
    /// kept for a later clip of its size, as a finished clip's is.
    @Test func aStaleClipsFFV1EncoderIsKeptForALaterClipOfItsSize() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false)
        let session = try CaptureSession(source: source)
        try session.scheduleAspectRatio(.square, at: .frame(20))
        try session.scheduleAspectRatio(.portrait9x16, at: .frame(45))
        let writer = try makeWriter(dir, codec: .ffv1, container: .mkv)
        try session.addOutput(writer)
        writer.start()
        // Told 9x16 comes next, but 1x1 does: the 9x16 clip opened ahead goes, and its encoder
        // starts the 9x16 clip that does come later.
        writer.expect(ratio: .portrait9x16, size: AspectRatio.portrait9x16.crop(in: source.format.size).size, timescale: 30)
        _ = try session.run(frameLimit: 60)
        let result = writer.finishAndWait()
        #expect(result.clips.map(\.ratio) == ["16x9", "1x1", "9x16"])
        #expect(result.encodersReused >= 1, "the 9x16 encoder opened ahead was thrown away")
        #expect(try Inspector.verify([dir]).ok)
    }

    /// A source that is told to capture and starts only when the test lets it (`proceed`):
    /// a stop that came in that window used to be lost, and the run went on to its limit.
    final class LateStartingSource: VideoSource, @unchecked Sendable {
        let inner: SyntheticSource
        let entered = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        init(_ inner: SyntheticSource) { self.inner = inner }
        var format: SourceFormat { inner.format }
        var isRealtime: Bool { inner.isRealtime }
        func capture(frameLimit: Int?, delegate: any SourceDelegate) throws {
            entered.signal()
            _ = proceed.wait(timeout: .now() + 60)
            try inner.capture(frameLimit: frameLimit, delegate: delegate)
        }
        func stop() { inner.stop() }
    }

    @Test func aStopJustBeforeTheSourceStartsIsNotLost() throws {
        let source = LateStartingSource(try SyntheticSource(size: 1280, rate: thirty, realtime: true))
        let session = try CaptureSession(source: source)
        try session.addOutput(CountingOutput())
        let done = runInBackground(session, frames: 900)   // 30 s
        #expect(source.entered.wait(timeout: .now() + 10) == .success)
        // The stop comes after the session told the source to capture, before it started.
        session.stopRunning()
        source.proceed.signal()
        // (A lost stop runs the 900 frames: 30 s.)
        #expect(done.wait(timeout: .now() + 20) == .success, "the stop was lost: the run went on")
        #expect(session.stats.framesCaptured <= 2)
    }
}
