import Foundation
import Testing
import ReelCapacity
import ReelCore

/// Face detection charged in the hardware-cost model (issue 29).
@Suite struct FaceDetectionCostTests {
    /// Two detections a second at 1920² take 2 × 0.24 s of one core, of 2 cores: 0.24 more of
    /// the CPU; at 4032², 2 × 0.34 s: 0.34; the description says so; a machine whose probe is
    /// twice the reference's pays twice (bounded to one core); the rung of a lower rate keeps it.
    @Test func detectionAddsItsCPUToTheRecording() throws {
        var c = fakeCalibration(secondsPerMegapixel: 0.001)
        let output = OutputDemand(codec: .h264, size: Size(width: 1920, height: 1080), framesPerSecond: 30)
        let plain = try CostModel(calibration: c, diskBytesPerSecond: nil, diskSource: "").shares(SessionDemand(outputs: [output], preview: false))
        let small = SessionDemand(outputs: [output], preview: false, faceDetection: FaceDetectionDemand(sensorSide: 1920, perSecond: 2))
        let withFaces = try CostModel(calibration: c, diskBytesPerSecond: nil, diskSource: "").shares(small)
        #expect(abs(withFaces.encoder - plain.encoder - 0.24) < 1e-9)
        #expect(withFaces.description.hasSuffix(" + face detection 2/s"))
        let big = SessionDemand(outputs: [output], preview: false, faceDetection: FaceDetectionDemand(sensorSide: 4032, perSecond: 2))
        #expect(abs(try CostModel(calibration: c, diskBytesPerSecond: nil, diskSource: "").shares(big).encoder - plain.encoder - 0.34) < 1e-9)
        #expect(small.at(framesPerSecond: 15).faceDetection == small.faceDetection)
        // Twice as slow a CPU: 2 × 0.48 s = 0.96 of one core.
        c.cpuProbeMilliseconds = 2 * (CostTable.reference?.cpuProbeMilliseconds ?? 0)
        #expect(abs(c.cpuScale - 2) < 1e-9)
        #expect(abs(try CostModel(calibration: c, diskBytesPerSecond: nil, diskSource: "").shares(small).encoder - plain.encoder - 0.48) < 1e-9)
    }
}
