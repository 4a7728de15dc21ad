import Foundation
import Synchronization
import Testing
import ReelCapture
import ReelCore
import ReelMedia
import ReelWriter

/// Runs `body` on each of the first `count` frames of `source`, on the capture thread, and
/// lets each buffer go back to the pool afterwards.
private func eachFrame(of source: SyntheticSource, count: Int, _ body: @escaping @Sendable (SourceFrame) -> Void) {
    final class Each: SourceDelegate, @unchecked Sendable {
        let body: @Sendable (SourceFrame) -> Void
        var dropped = 0
        init(_ body: @escaping @Sendable (SourceFrame) -> Void) { self.body = body }
        func source(didCapture frame: SourceFrame) -> Bool { body(frame); return true }
        func source(didDrop count: Int, reason: DropReason, at index: Int) { dropped += count }
    }
    let each = Each(body)
    try? source.capture(frameLimit: count, delegate: each)
    precondition(each.dropped == 0, "the sensor dropped \(each.dropped) frames")
}

/// A hash of every sample of a 4:2:0 frame.
private func hash(_ buffer: PixelBuffer) -> Int {
    var h = Hasher()
    for plane in 0..<3 {
        let (base, stride) = buffer.plane(plane)
        let width = plane == 0 ? buffer.size.width : buffer.size.width / 2
        let rows = plane == 0 ? buffer.size.height : buffer.size.height / 2
        for r in 0..<rows { h.combine(bytes: UnsafeRawBufferPointer(start: base + r * stride, count: width)) }
    }
    return h.finalize()
}

/// The luma plane of `buffer`, copied.
private func luma(_ buffer: PixelBuffer) -> [UInt8] {
    let (base, stride) = buffer.plane(0)
    let w = buffer.size.width
    var out = [UInt8](repeating: 0, count: w * buffer.size.height)
    out.withUnsafeMutableBufferPointer { o in
        for r in 0..<buffer.size.height { (o.baseAddress! + r * w).update(from: base + r * stride, count: w) }
    }
    return out
}

/// Luma of the frames `indices` of a fresh realistic sensor of side `size`.
private func lumaFrames(size: Int, indices: Set<Int>, noise: Bool = true) throws -> [Int: [UInt8]] {
    let source = try SyntheticSource(size: size, rate: thirty, realtime: false, buffers: 4, scene: .realistic, temporalNoise: noise)
    let got = Mutex([Int: [UInt8]]())
    eachFrame(of: source, count: (indices.max() ?? 0) + 1) { frame in
        if indices.contains(frame.index) { let l = luma(frame.lease.buffer); got.withLock { $0[frame.index] = l } }
    }
    return got.withLock { $0 }
}

/// The shift (dx, dy) that best maps `patch` of `b` onto `a` (`b(x, y)` ≈ `a(x + dx, y + dy)`),
/// by the least mean absolute difference, searched over ±`range` around `centre` in steps of
/// `step` (samples of the patch taken `step` apart too: a search on a downscaled picture).
private func bestShift(_ a: [UInt8], _ b: [UInt8], width: Int, height: Int, patch: (x: Range<Int>, y: Range<Int>),
                       range: (x: Int, y: Int), step: Int = 1, around centre: (x: Int, y: Int) = (0, 0)) -> (x: Int, y: Int) {
    var best = (x: 0, y: 0), bestScore = Int.max
    a.withUnsafeBufferPointer { pa in
        b.withUnsafeBufferPointer { pb in
            for dy in stride(from: centre.y - range.y, through: centre.y + range.y, by: step) {
                for dx in stride(from: centre.x - range.x, through: centre.x + range.x, by: step) {
                    var sum = 0, n = 0
                    for y in stride(from: patch.y.lowerBound, to: patch.y.upperBound, by: step) where y + dy >= 0 && y + dy < height {
                        for x in stride(from: patch.x.lowerBound, to: patch.x.upperBound, by: step) where x + dx >= 0 && x + dx < width {
                            sum += abs(Int(pb[y * width + x]) - Int(pa[(y + dy) * width + x + dx]))
                            n += 1
                        }
                    }
                    guard n > 0 else { continue }
                    let score = sum * 1000 / n
                    if score < bestScore { bestScore = score; best = (dx, dy) }
                }
            }
        }
    }
    return best
}

@Suite(.serialized) struct SyntheticSceneTests {
    @Test func theBarcodeReadsOnRealisticFrames() throws {
        let indices: Set<Int> = [0, 1, 17, 29, 30, 59]
        for mounting in [SensorOrientation.landscape, .portrait] {
            let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 4, mounting: mounting, scene: .realistic)
            let read = Mutex([Int: Int]())
            eachFrame(of: source, count: 60) { frame in
                guard indices.contains(frame.index) else { return }
                let (base, stride) = frame.lease.buffer.plane(0)
                let plane = LumaPlane(base: base, stride: stride, width: 1280, height: 1280, depth: 8)
                let index = FrameBarcode.read(plane, displayQuarterTurns: mounting.displayQuarterTurns)
                read.withLock { $0[frame.index] = index ?? -1 }
            }
            #expect(read.withLock { $0 } == Dictionary(uniqueKeysWithValues: indices.map { ($0, $0) }), "\(mounting)")
        }
    }

    @Test(arguments: [VideoCodec.prores(.hq), .h264])
    func theBarcodeReadsAfterLossyEncoding(codec: VideoCodec) async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let writer = try makeWriter(dir, codec: codec, container: codec == .h264 ? .mp4 : .mov)
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 40, scene: .realistic)
        writer.start()
        for f in frames(30, from: source, ratio: .landscape16x9) { try await writer.append(f) }
        let result = await writer.finish()
        #expect(result.framesWritten == 30)
        let probe = try Inspector.probe(result.clips[0].path, frames: true)
        #expect(probe.frameIndices == Array(0..<30))
    }

    @Test func ninetyFramesAreNinetyDifferentPictures() throws {
        let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 4, scene: .realistic)
        let hashes = Mutex([Int]())
        eachFrame(of: source, count: 90) { frame in let h = hash(frame.lease.buffer); hashes.withLock { $0.append(h) } }
        let all = hashes.withLock { $0 }
        #expect(all.count == 90 && Set(all).count == 90)
    }

    @Test func frames0And30DifferByTheMeasuredPan() throws {
        let side = 1280
        let f = try lumaFrames(size: side, indices: [0, 30], noise: false)
        let (a, b) = (try #require(f[0]), try #require(f[30]))
        // A 256×128 patch above the centre square that holds the barcode, digits and LEDs
        // (which do not move), searched ±160 by ±80 pixels downscaled 4× (every 4th sample),
        // then refined at full resolution.
        let patch = (x: 512..<768, y: 0..<128)
        let coarse = bestShift(a, b, width: side, height: side, patch: patch, range: (160, 80), step: 4)
        let fine = bestShift(a, b, width: side, height: side, patch: patch, range: (4, 4), around: coarse)
        #expect(fine.x == 30 * 4 && fine.y == 30 * 2, "found a shift of \(fine), expected (120, 60)")
        // The search finds no shift between a frame and itself.
        let still = bestShift(a, a, width: side, height: side, patch: patch, range: (160, 80), step: 4)
        #expect(still.x == 0 && still.y == 0)
    }

    @Test func aFrameIsTheSameEveryTimeItIsDrawn() throws {
        func hashes() throws -> [Int] {
            let source = try SyntheticSource(size: 1280, rate: thirty, realtime: false, buffers: 4, scene: .realistic)
            let got = Mutex([Int]())
            eachFrame(of: source, count: 8) { frame in let h = hash(frame.lease.buffer); got.withLock { $0.append(h) } }
            return got.withLock { $0 }
        }
        let first = try hashes(), second = try hashes()
        #expect(first.count == 8 && first == second)
    }

    @Test func theNoiseChangesSamplesButNotTheTexture() throws {
        let side = 1280
        let on = try lumaFrames(size: side, indices: [0, 1]), off = try lumaFrames(size: side, indices: [0, 1], noise: false)
        let (on0, on1, off0, off1) = (try #require(on[0]), try #require(on[1]), try #require(off[0]), try #require(off[1]))
        func meanAbsoluteDifference(_ x: [UInt8], _ y: [UInt8]) -> Double {
            var sum = 0
            for i in x.indices { sum += abs(Int(x[i]) - Int(y[i])) }
            return Double(sum) / Double(x.count)
        }
        func changed(_ x: [UInt8], _ y: [UInt8]) -> Int { zip(x, y).filter { $0 != $1 }.count }
        // The noise touches some samples by a level or so, nothing more.
        #expect(on0 != off0)
        #expect(changed(on0, off0) > side * side / 100)
        #expect(meanAbsoluteDifference(on0, off0) < 0.5)
        // Without noise the frame still has the texture: far from flat.
        let mean = Double(off0.reduce(0) { $0 + Int($1) }) / Double(off0.count)
        let deviation = (off0.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / Double(off0.count)).squareRoot()
        #expect(deviation > 15, "a luma deviation of \(deviation) is not a texture")
        // Consecutive noisy frames differ by more than the pan alone would leave unchanged.
        #expect(on0 != on1 && off0 != off1)
    }

    @Test func proResHQOfTheSceneIsAsHeavyAsACameras() throws {
        func megabitsPerSecond(noise: Bool) throws -> Double {
            let source = try SyntheticSource(size: 1920, rate: thirty, realtime: false, buffers: 4, scene: .realistic, temporalNoise: noise)
            let crop = AspectRatio.landscape16x9.crop(in: source.format.size)
            let encoder = try VideoEncoder(EncoderSettings(codec: .prores(.hq), size: crop.size, rate: thirty, threads: 2), globalHeader: true)
            let bytes = Mutex(0), failure = Mutex<(any Error)?>(nil)
            let frames = 8
            eachFrame(of: source, count: frames) { frame in
                do {
                    try encoder.encode(frame.lease.buffer, crop: crop, pts: Int64(frame.index), duration: 1) { p in bytes.withLock { $0 += p.byteCount } }
                } catch { failure.withLock { $0 = error } }
            }
            if let error = failure.withLock({ $0 }) { throw error }
            try encoder.flush(duration: 1) { p in bytes.withLock { $0 += p.byteCount } }
            return Double(bytes.withLock { $0 }) * 8 * 30 / Double(frames) / 1e6
        }
        let withNoise = try megabitsPerSecond(noise: true), without = try megabitsPerSecond(noise: false)
        print("realistic scene, ProRes 422 HQ (prores_aw) 1920x1080 30 fps, 8 frames: \(Int(withNoise)) Mbit/s, \(Int(without)) without noise")
        #expect((150...330).contains(withNoise), "ProRes 422 HQ 1080p30: \(withNoise) Mbit/s")
        #expect(without >= 100, "ProRes 422 HQ 1080p30 without noise: \(without) Mbit/s")
        #expect(without < withNoise)
    }

    /// `measureDrawingCost` draws what it is asked and reports a cost for both scenes at the
    /// 1920² sensor and the 4032² photo format (printed: in a release build, as `scripts/test`
    /// builds, these are the figures docs/capture.md quotes; whether they meet a target is not
    /// a test's to say).
    @Test func drawingCostIsMeasuredForBothScenes() throws {
        for side in [1920, 4032] {
            for scene in SyntheticScene.allCases {
                let cost = try scene.measureDrawingCost(sensorSide: side, frames: 60)
                print(cost)
                #expect(cost.scene == scene && cost.sensorSide == side && cost.frames == 60)
                #expect(cost.cpuSecondsPerFrame > 0 && cost.wallSecondsPerFrame > 0)
            }
        }
    }
}
