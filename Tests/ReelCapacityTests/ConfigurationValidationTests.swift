import Foundation
import Testing
import ReelCapacity
import ReelCore
import ReelMedia

/// Issue 24 item 3: the camera validates a request against the cost model, as libcamera's
/// `CameraConfiguration::validate()` answers Valid, Adjusted or Invalid.
@Suite struct ConfigurationValidationTests {
    let hd = Size(width: 1920, height: 1080)

    /// A calibration in which each codec costs its own CPU seconds per megapixel.
    func calibration(_ perMegapixel: [String: Double]) -> Calibration {
        var c = fakeCalibration(secondsPerMegapixel: 0.01)
        for (codec, spm) in perMegapixel {
            c.encoders[codec] = c.encoders[codec]!.map { p in
                var p = p
                p.cpuSecondsPerFrame = spm * p.pixels / 1e6
                return p
            }
        }
        return c
    }

    @Test func theLadderGoesDownTheProResProfilesThenToH264ThenDownTheRates() {
        #expect(CostModel.lighterCodecs(after: .prores(.hq)) == [.prores(.standard), .prores(.lt), .prores(.proxy), .h264])
        #expect(CostModel.lighterCodecs(after: .prores(.p4444)) == [.prores(.hq), .prores(.standard), .prores(.lt), .prores(.proxy), .h264])
        #expect(CostModel.lighterCodecs(after: .prores(.proxy)) == [.h264])
        #expect(CostModel.lighterCodecs(after: .hevc) == [.h264])
        #expect(CostModel.lighterCodecs(after: .ffv1) == [.h264])
        #expect(CostModel.lighterCodecs(after: .h264) == [])
        let demand = SessionDemand(outputs: [OutputDemand(codec: .prores(.lt), size: hd, framesPerSecond: 30)], preview: false)
        let rungs = CostModel.ladder(demand).map { "\($0.outputs[0].codec) \(CostFormat.fps($0.outputs[0].framesPerSecond))" }
        #expect(rungs == ["prores:lt 30", "prores:proxy 30", "h264 30", "h264 25", "h264 24", "h264 20", "h264 15", "h264 12",
                          "h264 10", "h264 5", "h264 2", "h264 1"])
        // A container that cannot hold a rung skips it.
        let noProRes = CostModel.ladder(demand) { if case .prores = $0 { return false } else { return true } }
        #expect(noProRes.map { "\($0.outputs[0].codec)" }.prefix(3) == ["prores:lt", "h264", "h264"])
    }

    @Test func validAdjustedAndInvalid() throws {
        // ProRes HQ 1080p30 at 0.024 s/MP: 0.0498 s a frame × 30 ÷ 2 = 0.75 (just fits);
        // at 0.03 s/MP it is 0.93 and Standard at 0.02 s/MP is 0.62.
        let fits = CostModel(calibration: calibration(["prores:hq": 0.024]), diskBytesPerSecond: nil, diskSource: "")
        let demand = SessionDemand(outputs: [OutputDemand(codec: .prores(.hq), size: hd, framesPerSecond: 30)], preview: false)
        guard case .valid(let asked) = try fits.validate(demand, others: []) else { Issue.record("not valid"); return }
        #expect(asked.codec == "prores:hq" && asked.cost <= 0.75)

        let heavy = CostModel(calibration: calibration(["prores:hq": 0.03, "prores:standard": 0.02]), diskBytesPerSecond: nil, diskSource: "")
        guard case .adjusted(let a, let rung) = try heavy.validate(demand, others: []) else { Issue.record("not adjusted"); return }
        #expect(a.requested.codec == "prores:hq" && abs(a.requested.cost - 0.03 * 2.0736 * 15) < 1e-9)
        #expect(a.chosen.codec == "prores:standard" && a.chosen.framesPerSecond == 30)
        #expect(rung.outputs[0].codec == .prores(.standard))
        #expect(a.figures == "measured" && a.target == CostModel.realtimeTarget)
        #expect(a.message.hasPrefix("prores:hq 1920×1080 at 30 fps needs 0.93 of this machine (encoder), more than the 0.75 a real-time recording may take (measured figures); recording prores:standard 1920×1080 at 30 fps instead (0.62)"))

        // Every codec at 1 s/MP: nothing fits, not even H.264 at 1 fps (1.04).
        let hopeless = CostModel(calibration: fakeCalibration(secondsPerMegapixel: 1), diskBytesPerSecond: nil, diskSource: "")
        guard case .invalid(let worst) = try hopeless.validate(demand, others: []) else { Issue.record("not invalid"); return }
        #expect(worst.codec == "prores:hq" && worst.cost > 1)
    }

    @Test func otherRecordingsCountAgainstTheTarget() throws {
        let model = CostModel(calibration: fakeCalibration(secondsPerMegapixel: 0.01), diskBytesPerSecond: nil, diskSource: "")
        let demand = SessionDemand(outputs: [OutputDemand(codec: .prores(.hq), size: hd, framesPerSecond: 30)], preview: false)
        // Alone: 0.0207 × 30 ÷ 2 = 0.31.
        guard case .valid = try model.validate(demand, others: []) else { Issue.record("not valid alone"); return }
        let other = RegisteredSession(pid: 1, start: nil, boot: nil,
                                      shares: SessionShares(encoder: 0.6, preview: 0, diskBytesPerSecond: 0, description: "other"), registeredAt: 0)
        // Beside one at 0.60: every codec costs the same here, so the rate steps down to 12 fps (0.12 + 0.60).
        guard case .adjusted(let a, _) = try model.validate(demand, others: [other]) else { Issue.record("not adjusted"); return }
        #expect(a.requested.otherRecordings == 1 && abs(a.requested.othersShare - 0.6) < 1e-9)
        #expect(a.requested.needs == "prores:hq 1920×1080 at 30 fps needs 0.31 of this machine (encoder), and 1 other Reel recording takes 0.60 (0.91 in all)")
        #expect(a.chosen.codec == "h264" && a.chosen.framesPerSecond == 12)
    }

    @Test func thePatternIsCostedAtItsShareOfTheRealisticScene() throws {
        var c = fakeCalibration(secondsPerMegapixel: 0.02)
        // The pattern at 1920×1080 measured at a quarter of the realistic scene's time and a tenth of its bytes.
        let cpu: Double = 0.02 * 2.0736 / 4, bytes: Double = 0.5 * 2.0736e6 / 10
        let point = EncoderPoint(width: 1920, height: 1080, cpuSecondsPerFrame: cpu, framesPerSecond: 1, bytesPerFrame: bytes)
        c.patternEncoders = ["prores:hq": [point]]
        let square = Size(width: 1920, height: 1920)
        let realistic = try #require(c.cpuSecondsPerFrame(.prores(.hq), square))
        let pattern = try #require(c.cpuSecondsPerFrame(.prores(.hq), square, pattern: true))
        #expect(abs(pattern - realistic / 4) < 1e-12)
        let patternBytes = try #require(c.bytesPerFrame(.prores(.hq), square, pattern: true))
        let expectedBytes: Double = 0.5 * 1920 * 1920 / 10
        #expect(abs(patternBytes - expectedBytes) < 1e-6)
        // A codec whose pattern was not measured is costed as the realistic scene.
        #expect(c.cpuSecondsPerFrame(.h264, square, pattern: true) == c.cpuSecondsPerFrame(.h264, square))
    }
}

/// The shipped cost table a never-calibrated machine estimates from.
@Suite struct CostTableTests {
    @Test func theShippedTableIsAWholeCalibrationOfEveryCodecOnBothScenes() throws {
        let reference = try #require(CostTable.reference)
        #expect(Set(reference.encoders.keys) == Set(Calibration.codecs.map(\.description)))
        #expect(Set((reference.patternEncoders ?? [:]).keys) == Set(Calibration.codecs.map(\.description)))
        #expect(reference.encoders.values.allSatisfy { $0.map { "\($0.width)x\($0.height)" } == ["1280x720", "1920x1080", "1920x1920"] })
        #expect((reference.cpuProbeMilliseconds ?? 0) > 0 && reference.cores == 2)
        #expect(reference.version == Calibration.version)
        // The realistic scene is the hard one: ProRes HQ 1080p30 of it does not fit 2 cores within the target.
        let hq = try #require(reference.cpuSecondsPerFrame(.prores(.hq), Size(width: 1920, height: 1080)))
        #expect(hq * 30 / 2 > CostModel.realtimeTarget)
    }

    @Test func theEstimateScalesCPUTimesByTheProbeAndKeepsBytes() throws {
        let reference = try #require(CostTable.reference)
        let probe = try #require(reference.cpuProbeMilliseconds)
        let slower = try #require(CostTable.estimate(probeMilliseconds: probe * 2, cores: 4))
        #expect(slower.isEstimate && slower.origin == "estimated" && slower.cores == 4 && slower.staleness() == nil)
        let size = Size(width: 1920, height: 1080)
        for codec in Calibration.codecs {
            let a = try #require(reference.cpuSecondsPerFrame(codec, size)), b = try #require(slower.cpuSecondsPerFrame(codec, size))
            #expect(abs(b - 2 * a) < 1e-12, "\(codec)")
            #expect(slower.bytesPerFrame(codec, size) == reference.bytesPerFrame(codec, size))
        }
        #expect(abs(slower.previewMillisecondsPerPicture - 2 * reference.previewMillisecondsPerPicture) < 1e-12)
        // A probe far off is bounded (×8 at most), and a failed probe gives no estimate.
        let absurd = try #require(CostTable.estimate(probeMilliseconds: probe * 100, cores: 2))
        let bounded = try #require(absurd.cpuSecondsPerFrame(.h264, size)), unscaled = try #require(reference.cpuSecondsPerFrame(.h264, size))
        #expect(abs(bounded - 8 * unscaled) < 1e-12)
        // A probe that looks much faster is not trusted below 0.8× the table.
        let faster = try #require(CostTable.estimate(probeMilliseconds: probe / 4, cores: 2))
        let floor = try #require(faster.cpuSecondsPerFrame(.h264, size))
        #expect(abs(floor - CostTable.fastestScale * unscaled) < 1e-12)
        #expect(CostTable.estimate(probeMilliseconds: 0, cores: 2) == nil)
        #expect(CostTable.estimate(probeMilliseconds: .nan, cores: 2) == nil)
    }

    @Test func theProbeMeasuresSomething() {
        let ms = CPUProbe.milliseconds(runs: 2)
        #expect(ms > 0.1 && ms < 1000)
    }
}
