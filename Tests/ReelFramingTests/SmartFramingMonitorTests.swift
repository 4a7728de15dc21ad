import ReelCore
import Testing
import ReelFraming

/// The smart-framing monitor's rules, fed with faces directly (the detector is tested apart).
@Suite struct SmartFramingMonitorTests {
    static let sensor = Size(width: 4032, height: 4032)
    static func monitor(side: Int = 4032) -> SmartFramingMonitor {
        SmartFramingMonitor(sensor: Size(width: side, height: side),
                            photoFormat: (Size(width: side, height: side), [.landscape4x3, .portrait3x4]))
    }
    /// A frontal face of side `s` centred at (`x`, `y`) (shares of the sensor's side).
    static func face(_ x: Double, _ y: Double, _ s: Double = 0.09) -> DetectedFace {
        let side = Double(sensor.width)
        return DetectedFace(box: CropRect(x: Int((x - s / 2) * side), y: Int((y - s / 2) * side), width: Int(s * side), height: Int(s * side)),
                            profile: false, evidence: 10)
    }

    @Test func onlyWithThe4032PhotoFormat() throws {
        let m = Self.monitor(side: 1920)
        #expect(m.supportedFramings.isEmpty)
        #expect(m.inactiveReason?.contains("4032×4032 photo format") == true)
        #expect(throws: FramingError.self) { try m.startMonitoring() }
        #expect(m.update(faces: [Self.face(0.5, 0.4)], frame: 0, time: 0, current: Framing(ratio: .landscape4x3, zoom: 1)) == nil)
        let ok = Self.monitor()
        #expect(ok.inactiveReason == nil)
        #expect(ok.supportedFramings.count == 8)   // 4x3 and 3x4 at 1, 1.25, 1.5, 2
    }

    @Test func nothingUntilFramingsAreEnabled() throws {
        let m = Self.monitor()
        try m.startMonitoring()
        for i in 0..<10 { #expect(m.update(faces: [Self.face(0.5, 0.4)], frame: i, time: Double(i), current: Framing(ratio: .landscape4x3, zoom: 1)) == nil) }
        #expect(m.recommendations.isEmpty)
        #expect(throws: FramingError.self) { try m.setEnabledFramings([Framing(ratio: .landscape16x9, zoom: 1)]) }
    }

    @Test func nothingWhileStopped() throws {
        let m = Self.monitor()
        try m.setEnabledFramings(m.supportedFramings)
        for i in 0..<5 { m.update(faces: [Self.face(0.5, 0.4)], frame: i, time: 0, current: Framing(ratio: .landscape4x3, zoom: 1)) }
        #expect(m.recommendations.isEmpty)
        try m.startMonitoring()
        for i in 5..<10 { m.update(faces: [Self.face(0.5, 0.4)], frame: i, time: 0, current: Framing(ratio: .landscape4x3, zoom: 1)) }
        #expect(m.recommendations.count == 1)
        m.stopMonitoring()
        for i in 10..<15 { m.update(faces: [Self.face(0.3, 0.4), Self.face(0.7, 0.4)], frame: i, time: 0, current: Framing(ratio: .portrait3x4, zoom: 2)) }
        #expect(m.recommendations.count == 1)
    }

    /// One person: portrait, zoomed in; two side by side: landscape, zoomed out to hold both;
    /// each after `settle` detections; a still subject gets nothing more (no breathing).
    @Test func autoRotateAndAutoZoom() throws {
        let m = Self.monitor()
        try m.startMonitoring()
        try m.setEnabledFramings(m.supportedFramings)
        var current = Framing(ratio: .landscape4x3, zoom: 1)
        var made: [FramingRecommendation] = []
        func feed(_ faces: [DetectedFace], _ n: Int) {
            for _ in 0..<n {
                if let r = m.update(faces: faces, frame: made.count, time: 0, current: current) {
                    made.append(r)
                    current = r.framing!
                }
            }
        }
        feed([Self.face(0.5, 0.4)], 2)
        #expect(made.isEmpty, "not before it has won \(m.settle) detections")
        feed([Self.face(0.5, 0.4)], 1)
        #expect(made.map(\.ratio) == ["3x4"])
        #expect(made.last!.zoom >= 1.5)
        feed([Self.face(0.5, 0.4)], 300)
        #expect(made.count == 1, "a still subject: no more recommendations")
        // Jitter of a few pixels in the box does not make the zoom breathe.
        for i in 0..<300 { feed([Self.face(0.5 + Double(i % 3) * 0.002, 0.4, 0.09 + Double(i % 2) * 0.003)], 1) }
        #expect(made.count == 1)
        feed([Self.face(0.3, 0.4), Self.face(0.7, 0.4)], 3)
        #expect(made.count == 2)
        #expect(made.last!.ratio == "4x3")
        let policy = FramingPolicy(sensor: Self.sensor)
        let box = try #require(policy.subjects([Self.face(0.3, 0.4), Self.face(0.7, 0.4)]))
        #expect(policy.holds(current, box), "the framing holds both people")
    }

    /// Zoom only (Auto Zoom): the ratio in force stays.
    @Test func zoomOnlyKeepsTheRatio() throws {
        let m = Self.monitor()
        try m.startMonitoring()
        try m.setEnabledFramings(m.supportedFramings.filter { $0.ratio == .landscape4x3 })
        for i in 0..<3 { m.update(faces: [Self.face(0.5, 0.4)], frame: i, time: 0, current: Framing(ratio: .landscape4x3, zoom: 1)) }
        #expect(m.recommendations.map(\.ratio) == ["4x3"])
        #expect(m.recommendations[0].zoom > 1)
    }
}
