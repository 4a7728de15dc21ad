import Foundation
import Testing
import ReelCapacity
import ReelCore

/// Stabilisation charged in the hardware-cost model (issue 29).
@Suite struct StabilizationCostTests {
    /// At 1920² and 30 fps, 14 ms a frame (lowLatency) is 0.42 of one core, of 2 cores: 0.21
    /// more of the CPU; cinematic's 15 ms, 0.225; 4032² costs in proportion to the area; the
    /// description says so; the rung of a lower rate pays at that rate.
    @Test func stabilisationAddsItsCPUToTheRecording() throws {
        let c = fakeCalibration(secondsPerMegapixel: 0.001)
        let model = CostModel(calibration: c, diskBytesPerSecond: nil, diskSource: "")
        let output = OutputDemand(codec: .h264, size: Size(width: 1920, height: 1080), framesPerSecond: 30)
        let plain = try model.shares(SessionDemand(outputs: [output], preview: false))
        let causal = SessionDemand(outputs: [output], preview: false,
                                   stabilization: StabilizationDemand(sensorSide: 1920, framesPerSecond: 30, looksAhead: false))
        let shares = try model.shares(causal)
        #expect(abs(shares.encoder - plain.encoder - 0.21) < 1e-9)
        #expect(shares.description.hasSuffix(" + stabilisation"))
        let ahead = SessionDemand(outputs: [output], preview: false,
                                  stabilization: StabilizationDemand(sensorSide: 1920, framesPerSecond: 30, looksAhead: true))
        let aheadShares = try model.shares(ahead)
        #expect(abs(aheadShares.encoder - plain.encoder - 0.225) < 1e-9)
        #expect(aheadShares.description.hasSuffix(" + cinematic stabilisation"))
        let half = causal.at(framesPerSecond: 15)
        #expect(half.stabilization?.framesPerSecond == 15)
        let big = StabilizationDemand(sensorSide: 4032, framesPerSecond: 30, looksAhead: false)
        #expect(abs(big.cpuSecondsPerFrame(scale: 1) - 0.014 * 4.41) < 1e-9)
    }
}
