import Foundation
import Synchronization
import Testing
import ReelCapacity
import ReelCore
import ReelMedia

/// A calibration with figures chosen by the test: every codec takes `secondsPerMegapixel`
/// CPU seconds per million pixels of a frame and `bytesPerPixel` bytes.
func fakeCalibration(secondsPerMegapixel: Double, bytesPerPixel: Double = 0.5, previewMs: Double = 4, cores: Int = 2) -> Calibration {
    var encoders: [String: [EncoderPoint]] = [:]
    for codec in Calibration.codecs {
        encoders[codec.description] = [(1280, 720), (1920, 1920)].map { w, h in
            let mp = Double(w * h) / 1e6
            return EncoderPoint(width: w, height: h, cpuSecondsPerFrame: secondsPerMegapixel * mp, framesPerSecond: 1 / (secondsPerMegapixel * mp),
                                bytesPerFrame: bytesPerPixel * Double(w * h))
        }
    }
    return Calibration(measuredAt: Date().timeIntervalSince1970, secondsTaken: 1, loadAverage: 0, encoders: encoders,
                       previewMillisecondsPerPicture: previewMs, cores: cores)
}

func scratch(_ tag: String) -> String {
    var template = Array("/tmp/reel-capacity-\(tag)-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: made!)
}

@Suite struct CalibrationCacheTests {
    @Test func sizesBetweenTheMeasuredPointsAreInterpolatedByPixelCount() throws {
        var c = fakeCalibration(secondsPerMegapixel: 0.01)
        // Measured points of ffv1: 1280×720 at 10 ms, 1920×1920 at 40 ms (not proportional).
        c.encoders["ffv1"] = [EncoderPoint(width: 1280, height: 720, cpuSecondsPerFrame: 0.01, framesPerSecond: 100, bytesPerFrame: 1000),
                              EncoderPoint(width: 1920, height: 1920, cpuSecondsPerFrame: 0.04, framesPerSecond: 25, bytesPerFrame: 4000)]
        let mid = Size(width: 1920, height: 1080)   // 2 073 600 px: between 921 600 and 3 686 400
        let t = try #require(c.cpuSecondsPerFrame(.ffv1, mid))
        let expected = 0.01 + (0.04 - 0.01) * (2_073_600.0 - 921_600) / (3_686_400 - 921_600)
        #expect(abs(t - expected) < 1e-12)
        // Beyond the largest point: extrapolated along the last segment.
        let big = try #require(c.cpuSecondsPerFrame(.ffv1, Size(width: 4032, height: 3024)))
        #expect(big > 0.04)
        #expect(abs((c.cpuSecondsPerFrame(.ffv1, Size(width: 1920, height: 1920)) ?? 0) - 0.04) < 1e-12)
    }

    @Test func aCorruptCacheIsMeasuredAgainAndReplaced() throws {
        let dir = scratch("cache")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/reel/capacity.json"
        try fakeCalibration(secondsPerMegapixel: 0.01).save(to: path)
        let (cached, _) = Calibration.cached(at: path)
        #expect(cached != nil)
        var measured = 0
        let (same, fresh) = try Calibration.load(at: path) { measured += 1; return fakeCalibration(secondsPerMegapixel: 0.02) }
        #expect(!fresh && measured == 0 && same.encoders == cached?.encoders)

        // Half a file, as a crash while writing it would have left with a plain write.
        let data = try #require(FileManager.default.contents(atPath: path))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: path))
        let (none, why) = Calibration.cached(at: path)
        #expect(none == nil && why.contains("damaged"))
        var notes: [String] = []
        let (again, remeasured) = try Calibration.load(at: path, note: { notes.append($0) }) {
            measured += 1; return fakeCalibration(secondsPerMegapixel: 0.02)
        }
        #expect(remeasured && measured == 1 && notes.count == 1 && notes[0].contains("damaged"))
        #expect(Calibration.cached(at: path).0?.encoders == again.encoders)
    }

    @Test func aStaleOrForeignCacheIsNotTrusted() throws {
        let dir = scratch("stale")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/capacity.json"
        var c = fakeCalibration(secondsPerMegapixel: 0.01)
        c.measuredAt -= 31 * 86_400
        try c.save(to: path)
        #expect(Calibration.cached(at: path).reason.contains("older than 30 days"))
        c = fakeCalibration(secondsPerMegapixel: 0.01)
        c.machine = "another machine"
        try c.save(to: path)
        #expect(Calibration.cached(at: path).reason.contains("another machine"))
        c = fakeCalibration(secondsPerMegapixel: 0.01)
        c.toolchain = "libavcodec 1.0.0"
        try c.save(to: path)
        #expect(Calibration.cached(at: path).reason.contains("another toolchain"))
        c = fakeCalibration(secondsPerMegapixel: 0.01)
        c.encoders["h264"]![0].cpuSecondsPerFrame = 0
        try c.save(to: path)
        #expect(Calibration.cached(at: path).reason.contains("not measurements"))
        try fakeCalibration(secondsPerMegapixel: 0.01).save(to: path)
        #expect(Calibration.cached(at: path).0 != nil)
    }
}

@Suite struct HardwareCostTests {
    /// The example: ffv1 1920×1920 at 30 fps taking 1.25 of the encoders.
    @Test func aCostAboveOneNamesTheBottleneckAndTheRateThatFits() throws {
        let c = fakeCalibration(secondsPerMegapixel: 1.25 * 2 / 30 / 3.6864)   // 2 cores
        let model = CostModel(calibration: c, diskBytesPerSecond: 150e6, diskSource: "150 MB/s")
        let demand = SessionDemand(outputs: [OutputDemand(codec: .ffv1, size: Size(width: 1920, height: 1920), framesPerSecond: 30)], preview: false)
        let cost = try model.cost(demand, others: [])
        #expect(abs(cost.cost - 1.25) < 1e-9)
        #expect(cost.bottleneck == "encoder")
        #expect(cost.fittingFramesPerSecond == 24)
        #expect(cost.refusal == "ffv1 1920×1920 at 30 fps needs 1.25 of this machine's encoder capacity; 24 fps fits")
        // Disk: 0.5 byte a pixel × 3.7 Mpx × 30 fps = 55 MB/s of 150.
        let disk = try #require(cost.resources.first { $0.name == "disk" })
        #expect(abs(disk.share - 0.5 * 3_686_400 * 30 / 150e6) < 1e-9)
        // The frame-rate override lowers the cost in proportion.
        let at15 = try model.cost(demand.at(framesPerSecond: 15), others: [])
        #expect(abs(at15.cost - 0.625) < 1e-9 && at15.refusal == nil)
    }

    @Test func otherSessionsCountAndTheDiskCanBeTheBottleneck() throws {
        let c = fakeCalibration(secondsPerMegapixel: 0.001, bytesPerPixel: 4)
        let model = CostModel(calibration: c, diskBytesPerSecond: 100e6, diskSource: "100 MB/s")
        let demand = SessionDemand(outputs: [OutputDemand(codec: .prores(.hq), size: Size(width: 1920, height: 1080), framesPerSecond: 30)], preview: true)
        let mine = try model.shares(demand)
        // 4 bytes × 2 073 600 px × 30 = 248.8 MB/s of 100.
        let cost = try model.cost(demand, others: [])
        #expect(cost.bottleneck == "disk" && abs(cost.cost - 2.48832) < 1e-6)
        #expect(cost.refusal?.contains("the pool's write bandwidth (100 MB/s)") == true)
        #expect(cost.refusal?.hasSuffix("; 12 fps fits") == true)
        // Preview: 30 × 4 ms of one core, of 2 cores.
        #expect(abs(mine.preview - 0.06) < 1e-9)
        let other = RegisteredSession(pid: 1, start: nil, boot: nil, shares: mine, registeredAt: 0)
        let noDisk = CostModel(calibration: c, diskBytesPerSecond: nil, diskSource: "not measured")
        let two = try noDisk.cost(demand, others: [other, other])
        #expect(two.bottleneck == "encoder")
        #expect(abs(two.cost - 3 * (mine.encoder + mine.preview)) < 1e-9)
        // CPU seconds per frame × fps ÷ cores.
        #expect(abs(mine.encoder - 0.001 * 2.0736 * 30 / 2) < 1e-12)
        #expect(two.resources.first { $0.name == "disk" }?.measured == false)
    }

    @Test func aCodecNeverCalibratedIsAnError() throws {
        var c = fakeCalibration(secondsPerMegapixel: 0.01)
        c.encoders["hevc"] = nil
        let model = CostModel(calibration: c, diskBytesPerSecond: nil, diskSource: "")
        let demand = SessionDemand(outputs: [OutputDemand(codec: .hevc, size: Size(width: 1280, height: 720), framesPerSecond: 30)], preview: false)
        #expect(throws: CapacityError.notCalibrated("hevc")) { try model.cost(demand, others: []) }
        #expect(CapacityError.notCalibrated("hevc").exitStatus == 69)
    }
}

@Suite struct SessionRegistryTests {
    static let shares = SessionShares(encoder: 0.3, preview: 0, diskBytesPerSecond: 1e6, description: "prores:hq 1920×1080 at 30 fps")

    func write(_ entry: RegisteredSession, to dir: String) throws {
        try JSONEncoder().encode(entry).write(to: URL(fileURLWithPath: "\(dir)/\(entry.pid).json"))
    }

    @Test func entriesOfAKilledProcessAreIgnoredAndRemoved() throws {
        let dir = scratch("registry")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["60"]
        try child.run()
        let pid = child.processIdentifier
        let id = try #require(RegisteredSession.identity(of: pid))
        try write(RegisteredSession(pid: pid, start: id.start, boot: id.boot, shares: Self.shares, registeredAt: 0), to: dir)
        // The same pid with another start time: a process that reused the pid is not the recorder.
        let registry = SessionRegistry(directory: dir)
        #expect(try registry.live().map(\.pid) == [pid])

        #expect(kill(pid, SIGKILL) == 0)
        child.waitUntilExit()
        #expect(try registry.live().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/\(pid).json"))
    }

    @Test func aReusedPidAndADamagedEntryOfADeadPidDoNotCount() throws {
        let dir = scratch("registry")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // pid 1 is alive, but not with this start time.
        try write(RegisteredSession(pid: 1, start: 1, boot: nil, shares: Self.shares, registeredAt: 0), to: dir)
        // A dead pid's half-written entry (pid_max is at most 2^22).
        try Data("{\"pid\":".utf8).write(to: URL(fileURLWithPath: "\(dir)/4194305.json"))
        let registry = SessionRegistry(directory: dir)
        #expect(try registry.live().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/4194305.json"))
    }

    @Test func admissionRegistersThisProcessAndReleaseRemovesIt() throws {
        let dir = scratch("registry")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let registry = SessionRegistry(directory: dir)
        let r = try #require(try registry.admit { others in #expect(others.isEmpty); return Self.shares })
        #expect(FileManager.default.fileExists(atPath: "\(dir)/\(getpid()).json"))
        // This process does not count itself.
        #expect(try registry.live().isEmpty)
        r.release()
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/\(getpid()).json"))
        // A refusal registers nothing.
        struct No: Error {}
        #expect(throws: No.self) { try registry.admit { _ in throw No() } }
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/\(getpid()).json"))
    }
}

@Suite struct SystemPressureTests {
    func sample(cpu: Double, io: Double = 0, memory: Double = 0, memoryFull: Double = 0) -> PressureSample {
        PressureSample(cpuSome: cpu, ioSome: io, ioFull: 0, memorySome: memory, memoryFull: memoryFull)
    }

    @Test func psiTextIsParsed() {
        let text = "some avg10=14.56 avg60=5.60 avg300=13.38 total=5106788094\nfull avg10=0.09 avg60=0.00 avg300=0.00 total=0\n"
        let (some, full) = PressureSample.parse(text)
        #expect(some == 14.56 && full == 0.09)
        #expect(PressureSample.parse("garbage").some == nil)
    }

    @Test func levelsFollowTheDocumentedThresholds() {
        let t = PressureThresholds.standard
        #expect(t.level(of: sample(cpu: 5)).0 == .nominal)
        #expect(t.level(of: sample(cpu: 20)).0 == .fair)
        #expect(t.level(of: sample(cpu: 50)).0 == .serious)
        #expect(t.level(of: sample(cpu: 80)).0 == .critical)
        #expect(t.level(of: sample(cpu: 0, memory: 7)).0 == .serious)   // lmkd's partial stall
        #expect(t.level(of: sample(cpu: 0, memoryFull: 60)).0 == .shutdown)   // systemd-oomd's limit
        #expect(t.level(of: sample(cpu: 0, io: 30)).1 == ["io.some 30.0%"])
        #expect(t.level(of: PressureSample()).0 == .unknown)
    }

    /// Figures hovering around a threshold do not make the level flap; it falls only after
    /// they stay below 75 % of the threshold for 5 s.
    @Test func hysteresisKeepsTheLevelFromFlapping() {
        var tracker = PressureLevelTracker()
        var changes: [PressureLevel] = []
        var time = 0.0
        func feed(_ cpu: Double, seconds: Int) {
            for _ in 0..<seconds {
                if let s = tracker.update(sample(cpu: cpu), at: time) { changes.append(s.level) }
                time += 1
            }
        }
        feed(5, seconds: 3)
        for _ in 0..<10 { feed(52, seconds: 1); feed(48, seconds: 1) }   // around serious (50)
        #expect(changes == [.nominal, .serious])
        feed(40, seconds: 20)   // below 50 but above 37.5: stays serious
        #expect(changes == [.nominal, .serious])
        feed(10, seconds: 4)    // below every exit threshold, but only 4 s
        #expect(changes == [.nominal, .serious])
        feed(10, seconds: 2)
        #expect(changes == [.nominal, .serious, .nominal])
        feed(90, seconds: 1)    // up at once
        #expect(changes.last == .critical)
    }

    @Test func theMonitorReportsChangesFromItsFiles() async throws {
        let dir = scratch("psi")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func set(cpu: Double) throws {
            for (name, v) in [("cpu", cpu), ("io", 0.0), ("memory", 0.0)] {
                try "some avg10=\(v) avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                    .write(toFile: "\(dir)/\(name)", atomically: true, encoding: .utf8)
            }
        }
        try set(cpu: 1)
        let seen = Mutex<[PressureLevel]>([])
        let monitor = PressureMonitor(directory: dir, interval: 0.02, onChange: { s in seen.withLock { $0.append(s.level) } })
        let stream = monitor.states()
        monitor.start()
        var levels: [PressureLevel] = []
        for await state in stream {
            levels.append(state.level)
            if state.level == .nominal { try set(cpu: 85) }
            if state.level == .critical { break }
        }
        monitor.stop()
        #expect(levels == [.nominal, .critical])
        #expect(seen.withLock { $0 } == [.nominal, .critical])
        #expect(monitor.timeline.map(\.level) == [.nominal, .critical])
        #expect(monitor.timeline.last?.factors == ["cpu.some 85.0%"])
    }

    @Test func withoutPSITheLevelIsUnknownSaidOnce() async throws {
        let notes = Mutex<[String]>([])
        let monitor = PressureMonitor(directory: "/nonexistent/pressure", interval: 0.01, note: { m in notes.withLock { $0.append(m) } })
        monitor.start()
        // Once it has said so (at most 60 s on a loaded machine), 0.2 s more (20 intervals) in
        // which it says nothing again.
        let deadline = Date().addingTimeInterval(60)
        while notes.withLock({ $0.isEmpty }) && Date() < deadline { try await Task.sleep(nanoseconds: 10_000_000) }
        try await Task.sleep(nanoseconds: 200_000_000)
        monitor.stop()
        #expect(monitor.level == .unknown)
        #expect(monitor.timeline.map(\.level) == [.unknown])
        #expect(notes.withLock { $0.count } == 1)
        #expect(notes.withLock { $0.first?.contains("unknown") } == true)
    }
}

@Suite struct PressurePolicyTests {
    @Test func theDefaultHandlerStepsTheFrameRateDownAndBack() {
        let policy = FrameRateStepPolicy()
        let nominal = PressureAction(framesPerSecond: 30)
        var now = nominal
        now = policy.action(for: .fair, current: now, nominal: nominal)
        #expect(now.framesPerSecond == 30)
        now = policy.action(for: .serious, current: now, nominal: nominal)
        #expect(now.framesPerSecond == 24)
        now = policy.action(for: .serious, current: now, nominal: nominal)
        #expect(now.framesPerSecond == 15)
        now = policy.action(for: .serious, current: now, nominal: nominal)
        #expect(now.framesPerSecond == 15)
        now = policy.action(for: .nominal, current: now, nominal: nominal)
        #expect(now == nominal)
        now = policy.action(for: .critical, current: now, nominal: nominal)
        #expect(now == PressureAction(framesPerSecond: 15, previewPaused: true))
        #expect(policy.action(for: .shutdown, current: now, nominal: nominal).stop)
        // A 20 fps recording steps to 15 only.
        #expect(policy.action(for: .serious, current: PressureAction(framesPerSecond: 20), nominal: PressureAction(framesPerSecond: 20)).framesPerSecond == 15)
        #expect(NoPressurePolicy().action(for: .critical, current: nominal, nominal: nominal) == nominal)
    }
}
