import Foundation
import Testing

/// The emulated ALSA capture device (issue 28 item 2): `scripts/fake-alsa -- COMMAND` makes it
/// ALSA's `default` PCM, and standard tools record its signal through libasound — a 1 kHz tone
/// and a numbered click at every whole second of the device clock.
@Suite struct FakeALSATests {
    /// A click read back from a recording: its sample index and its number.
    struct Click: Equatable { var sample: Int; var number: UInt32 }

    /// The PCM of a WAV file: sample rate, channels, and the first channel as -1…1.
    struct WAV { var rate: Int; var channels: Int; var first: [Double] }

    static func readWAV(_ path: String) throws -> WAV {
        let d = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func u32(_ i: Int) -> Int { Int(d[i]) | Int(d[i + 1]) << 8 | Int(d[i + 2]) << 16 | Int(d[i + 3]) << 24 }
        func u16(_ i: Int) -> Int { Int(d[i]) | Int(d[i + 1]) << 8 }
        guard d.count >= 12, String(decoding: d[0..<4], as: UTF8.self) == "RIFF", String(decoding: d[8..<12], as: UTF8.self) == "WAVE" else {
            throw ProbeFailed(message: "\(path) is not a WAV file")
        }
        var i = 12, rate = 0, channels = 0, bits = 0, float = false
        while i + 8 <= d.count {
            let id = String(decoding: d[i..<i + 4], as: UTF8.self)
            var size = u32(i + 4)
            if id == "fmt " { float = u16(i + 8) == 3; channels = u16(i + 10); rate = u32(i + 12); bits = u16(i + 22) }
            if id == "data" {
                // A stream written to a pipe (ffmpeg) may leave the size unset.
                if size == 0 || size == 0xFFFF_FFFF || i + 8 + size > d.count { size = d.count - i - 8 }
                let width = bits / 8, frame = width * channels
                guard width == 2 || width == 4, frame > 0 else { throw ProbeFailed(message: "\(bits)-bit PCM") }
                var first: [Double] = []
                first.reserveCapacity(size / frame)
                var p = i + 8
                while p + frame <= i + 8 + size {
                    if width == 2 { first.append(Double(Int16(bitPattern: UInt16(u16(p)))) / 32767) }
                    else if float { first.append(Double(Float(bitPattern: UInt32(u32(p))))) }
                    else { first.append(Double(Int32(bitPattern: UInt32(u32(p)))) / 2147483647) }
                    p += frame
                }
                return WAV(rate: rate, channels: channels, first: first)
            }
            i += 8 + size + (size & 1)
        }
        throw ProbeFailed(message: "\(path) has no data chunk")
    }

    /// The clicks: a sample above 0.9, then 32 bits of 4 samples each (the sign of their sum).
    static func clicks(_ s: [Double]) -> [Click] {
        var out: [Click] = []
        var i = 0
        while i < s.count {
            if s[i] > 0.9 && i + 129 <= s.count {
                var k: UInt32 = 0
                for b in 0..<32 { k = k << 1 | (s[i + 1 + 4 * b ..< i + 5 + 4 * b].reduce(0, +) > 0 ? 1 : 0) }
                out.append(Click(sample: i, number: k))
                i += 129
            } else {
                i += 1
            }
        }
        return out
    }

    func fakeALSA(_ options: [String], _ command: [String]) throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: repositoryRoot + "/scripts/fake-alsa")
        p.arguments = options + ["--"] + command
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, text)
    }

    /// What the device delivered: every click `period` seconds of the device clock apart
    /// (48,000 samples for a second at 48 kHz), numbered one after another, the tone between them.
    func expectTheSignal(_ wav: WAV, seconds: Double, rate: Int = 48_000, channels: Int = 2, period: Double = 1) throws {
        #expect(wav.rate == rate && wav.channels == channels)
        let c = Self.clicks(wav.first)
        let expected = Int(seconds / period)
        #expect(c.count >= expected - 1 && c.count <= expected + 1, "\(c)")
        for (a, b) in zip(c, c.dropFirst()) {
            #expect(b.sample - a.sample == Int(Double(rate) * period) && b.number == a.number + 1, "\(a) then \(b)")
        }
        // Between clicks: the tone, never above a tenth of full scale.
        let quiet = wav.first.indices.filter { i in !c.contains { i >= $0.sample && i < $0.sample + 129 } }
        #expect(quiet.allSatisfy { abs(wav.first[$0]) <= 0.1001 })
        #expect(quiet.contains { abs(wav.first[$0]) > 0.09 })
    }

    @Test func arecordRecordsTheClicks() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try fakeALSA([], ["arecord", "-q", "-D", "default", "-d", "2", "-f", "S16_LE", "-r", "48000", "-c", "2", dir + "/out.wav"])
        #expect(run.status == 0, "\(run.stderr)")
        let wav = try Self.readWAV(dir + "/out.wav")
        #expect(wav.first.count == 96_000)
        try expectTheSignal(wav, seconds: 2)
    }

    @Test func ffmpegRecordsTheClicks() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try fakeALSA([], ["ffmpeg", "-nostdin", "-v", "error", "-f", "alsa", "-sample_rate", "48000", "-channels", "2",
                                    "-i", "default", "-t", "3", dir + "/out.wav"])
        #expect(run.status == 0, "\(run.stderr)")
        try expectTheSignal(try Self.readWAV(dir + "/out.wav"), seconds: 3)
    }

    /// A device clock 1,000 ppm fast still spaces its clicks a device second apart: it is the
    /// delivery, against CLOCK_MONOTONIC, that runs fast — 2 s of the device's samples in
    /// 1.998 s.
    @Test func aSkewedClockKeepsItsOwnSeconds() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try fakeALSA(["--ppm", "1000"], ["arecord", "-q", "-D", "default", "-d", "2", "-f", "S32_LE", "-r", "48000", "-c", "2", dir + "/out.wav"])
        #expect(run.status == 0, "\(run.stderr)")
        try expectTheSignal(try Self.readWAV(dir + "/out.wav"), seconds: 2)
    }

    /// One channel of 32-bit floats at 44.1 kHz, a click every half second: 22,050 samples apart.
    @Test func floatMonoAt44100WithAShorterClickPeriod() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try fakeALSA(["--click", "0.5"], ["arecord", "-q", "-D", "default", "-d", "2", "-f", "FLOAT_LE", "-r", "44100", "-c", "1", dir + "/out.wav"])
        #expect(run.status == 0, "\(run.stderr)")
        let wav = try Self.readWAV(dir + "/out.wav")
        #expect(wav.first.count == 88_200)
        try expectTheSignal(wav, seconds: 2, rate: 44_100, channels: 1, period: 0.5)
    }

    /// `--eio FRAMES`: the device fails once it has made FRAMES frames; arecord says so.
    @Test func aDeviceThatFailsMidRecordingIsAnIOError() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try fakeALSA(["--eio", "24000"], ["arecord", "-q", "-D", "default", "-d", "3", "-f", "S16_LE", "-r", "48000", "-c", "2", dir + "/out.wav"])
        #expect(run.status != 0 && run.stderr.contains("Input/output error"), "\(run.stderr)")
    }

    @Test func aBusyDeviceIsRefusedAtOpen() throws {
        let dir = temporaryDirectory()
        defer { removeTree(dir) }
        let run = try fakeALSA(["--busy"], ["arecord", "-q", "-D", "default", "-d", "1", dir + "/out.wav"])
        #expect(run.status != 0 && run.stderr.contains("Device or resource busy"), "\(run.stderr)")
    }
}
