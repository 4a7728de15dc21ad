import Foundation
import Synchronization
import CALSA
import ReelCore

/// An ALSA capture device (`--audio default`, `--audio hw:1,0`) through libasound: opened and
/// negotiated (16-bit interleaved, the asked rate and channels or the nearest the device
/// gives) when created, so that a missing, busy or forbidden device is refused before
/// recording; read in periods of about 10 ms on the capture thread.
///
/// **Timing.** Samples are placed on CLOCK_MONOTONIC — the video frames' clock — from the
/// driver's own timestamps, never the wall clock: after each read, `snd_pcm_status` gives a
/// monotonic timestamp (`SND_PCM_TSTAMP_TYPE_MONOTONIC`) and the frames available then, so
/// the frame after the last captured was made at that time. The earliest such reading of the
/// stream's frame 0 is its origin.
public final class ALSACaptureSource: AudioSource, @unchecked Sendable {
    /// The format negotiated with the device.
    public let format: AudioFormat
    /// The ALSA device name (`default`, `hw:1,0`).
    public let name: String
    /// The PCM handle: opened in `init`, used by the capture thread only, closed in `deinit`
    /// (`@unchecked Sendable`: one thread uses it at a time).
    private let pcm: OpaquePointer
    private let periodFrames: Int
    private let stopAt = Mutex<Int64?>(nil)
    private let stopping = Atomic(false)

    /// Opens `device` for capture and negotiates `asking` (the nearest rate and channel count
    /// the device gives, in 16-bit samples).
    /// - Throws: ``AudioError`` — `noDevice`, `busy`, `permission`, `unsupported`.
    public init(device: String, asking: AudioFormat = .standard) throws(AudioError) {
        name = device
        CALSA_quiet()
        var handle: OpaquePointer? = nil
        let r = snd_pcm_open(&handle, device, CALSA_streamCapture, 0)
        guard r >= 0, let handle else { throw ALSACaptureSource.openError(device, r) }
        pcm = handle
        do {
            (format, periodFrames) = try ALSACaptureSource.negotiate(handle, device: device, asking: asking)
        } catch {
            snd_pcm_close(handle)
            throw error
        }
    }

    deinit { snd_pcm_close(pcm) }

    private static func text(_ r: Int32) -> String { String(cString: snd_strerror(r)) }

    private static func openError(_ device: String, _ r: Int32) -> AudioError {
        switch -r {
        case EBUSY: return .busy(device)
        case EACCES, EPERM: return .permission(device)
        default: return .noDevice(device, detail: text(r))
        }
    }

    /// `snd_pcm_hw_params_*` and `snd_pcm_sw_params_*`: interleaved S16_LE, the nearest rate
    /// and channels, a period near 10 ms and a buffer near 500 ms; monotonic timestamps.
    private static func negotiate(_ pcm: OpaquePointer, device: String, asking: AudioFormat) throws(AudioError) -> (AudioFormat, Int) {
        var hw: OpaquePointer? = nil
        guard snd_pcm_hw_params_malloc(&hw) >= 0, let hw else { throw .unsupported(device, detail: "out of memory") }
        defer { snd_pcm_hw_params_free(hw) }
        func step(_ what: String, _ r: Int32) throws(AudioError) {
            if r < 0 { throw .unsupported(device, detail: "\(what): \(text(r))") }
        }
        try step("snd_pcm_hw_params_any", snd_pcm_hw_params_any(pcm, hw))
        try step("interleaved access", snd_pcm_hw_params_set_access(pcm, hw, CALSA_accessRWInterleaved))
        try step("16-bit samples", snd_pcm_hw_params_set_format(pcm, hw, CALSA_formatS16LE))
        var channels = UInt32(asking.channels)
        try step("channels", snd_pcm_hw_params_set_channels_near(pcm, hw, &channels))
        var rate = UInt32(asking.sampleRate)
        var dir: Int32 = 0
        try step("rate", snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &dir))
        guard rate == 44_100 || rate == 48_000, channels == 1 || channels == 2 else {
            throw .unsupported(device, detail: "it offers \(rate) Hz, \(channels) channels")
        }
        var period = snd_pcm_uframes_t(rate / 100)
        try step("period size", snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &dir))
        var buffer = snd_pcm_uframes_t(rate / 2)
        try step("buffer size", snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer))
        try step("snd_pcm_hw_params", snd_pcm_hw_params(pcm, hw))
        var sw: OpaquePointer? = nil
        guard snd_pcm_sw_params_malloc(&sw) >= 0, let sw else { throw .unsupported(device, detail: "out of memory") }
        defer { snd_pcm_sw_params_free(sw) }
        try step("snd_pcm_sw_params_current", snd_pcm_sw_params_current(pcm, sw))
        try step("timestamps", snd_pcm_sw_params_set_tstamp_mode(pcm, sw, CALSA_tstampEnable))
        try step("monotonic timestamps", snd_pcm_sw_params_set_tstamp_type(pcm, sw, CALSA_tstampMonotonic))
        try step("snd_pcm_sw_params", snd_pcm_sw_params(pcm, sw))
        return (AudioFormat(sampleRate: Int(rate), channels: Int(channels)), Int(period))
    }

    /// Reads the device (`snd_pcm_start`, `snd_pcm_readi`, `snd_pcm_status`) until `stop`; an
    /// overrun is recovered (`snd_pcm_recover`), a failure goes to the delegate.
    /// - Throws: ``AudioError/failed(_:detail:)`` when the device cannot start.
    public func capture(sessionZeroNs: UInt64, delegate: any AudioSourceDelegate) throws(AudioError) {
        let channels = format.channels, rate = format.sampleRate
        var status: OpaquePointer? = nil
        guard snd_pcm_status_malloc(&status) >= 0, let status else { throw .failed(name, detail: "out of memory") }
        defer { snd_pcm_status_free(status) }
        let r = snd_pcm_start(pcm)
        guard r >= 0 else { throw .failed(name, detail: "snd_pcm_start: \(ALSACaptureSource.text(r))") }
        defer { snd_pcm_drop(pcm) }
        var buffer = [Int16](repeating: 0, count: periodFrames * channels)
        var position: Int64 = 0
        var estimator = DeviceClockEstimator(sampleRate: rate)
        var reported: AudioClock? = nil
        while true {
            if stopping.load(ordering: .acquiring) {
                let limit = stopAt.withLock { $0 }
                guard let limit, let clock = reported, clock.seconds(ofFrame: position) * 1e9 < Double(limit) else { return }
            }
            // Waits at most 100 ms for a period, so that a device that stalls without failing
            // (a frozen sound server) cannot hold `stop` up.
            let ready = snd_pcm_wait(pcm, 100)
            if ready == 0 {
                if stopping.load(ordering: .acquiring) { return }
                continue
            }
            let n = buffer.withUnsafeMutableBytes { snd_pcm_readi(pcm, $0.baseAddress, snd_pcm_uframes_t(periodFrames)) }
            if n == -Int(EPIPE) || n == -Int(ESTRPIPE) {
                // An overrun: the device's buffer filled while nothing read it. Samples are
                // lost; how many shows in the timestamps (the next chunk's `firstFrame` jumps).
                let before = MonotonicClock.now()
                let rr = snd_pcm_recover(pcm, Int32(n), 1)
                guard rr >= 0 else { delegate.audio(didFail: .failed(name, detail: ALSACaptureSource.text(rr))); return }
                if let clock = reported {
                    let now = Int64(before) - Int64(sessionZeroNs)
                    let reached = clock.firstFrame(atOrAfter: now, timescale: 1_000_000_000)
                    position = max(position, reached)
                }
                _ = snd_pcm_start(pcm)
                continue
            }
            if n == -Int(EAGAIN) || n == -Int(EINTR) { continue }
            guard n >= 0 else {
                delegate.audio(didFail: .failed(name, detail: ALSACaptureSource.text(Int32(n))))
                return
            }
            if n == 0 { continue }
            let chunk = AudioChunk(firstFrame: position, samples: Array(buffer[0..<(n * channels)]), channels: channels)
            position += Int64(n)
            // Where the frames read sit on the monotonic clock: at the status's timestamp the
            // device had made `position + avail` frames.
            if snd_pcm_status(pcm, status) >= 0 {
                var ts = timespec()
                snd_pcm_status_get_htstamp(status, &ts)
                let avail = Int64(snd_pcm_status_get_avail(status))
                let at = Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
                if at > 0 { estimator.add(frames: position + avail, atMonotonicNs: at) }
            }
            if let c = estimator.newClock(sessionZeroNs: Int64(sessionZeroNs)) {
                reported = c
                delegate.audio(clock: c)
            }
            delegate.audio(didCapture: chunk)
        }
    }

    /// Ends `capture` once the samples up to session time `ns` are read (nil: after the period in progress).
    public func stop(afterSessionNs ns: Int64?) {
        stopAt.withLock { $0 = ns }
        stopping.store(true, ordering: .releasing)
    }
}

/// The device's clock against CLOCK_MONOTONIC, from (frames made, monotonic time) readings.
///
/// Each reading gives a time for the device's frame 0 — its time less the frames made at the
/// nominal rate — that is late, never early, by the time between the device counting and the
/// timestamp. The least late reading of each quarter second is kept; a straight line through
/// those (least squares) has slope s = 1 − true rate / nominal rate, so the device's true rate
/// is nominal × (1 − s) and frame 0 is where the line meets the time it gives. Until half a
/// second of readings is in, frame 0 is the least late reading and the rate nominal.
struct DeviceClockEstimator {
    let sampleRate: Int
    /// Times relative to the first reading (ns), as Doubles.
    private var base: Int64?
    private var windowStart = 0.0
    private var windowBest: (t: Double, zero: Double)?
    private var n = 0.0, st = 0.0, sz = 0.0, stt = 0.0, stz = 0.0
    private var earliest: Double?
    private var reported: AudioClock?
    /// Readings kept (one a quarter second).
    private(set) var points = 0

    init(sampleRate: Int) { self.sampleRate = sampleRate }

    mutating func add(frames: Int64, atMonotonicNs at: Int64) {
        if base == nil { base = at }
        let t = Double(at - base!)
        let zero = t - Double(frames) * 1e9 / Double(sampleRate)
        if t - windowStart >= 250e6, let b = windowBest {
            n += 1; st += b.t; sz += b.zero; stt += b.t * b.t; stz += b.t * b.zero
            points += 1
            windowStart = t
            windowBest = nil
        }
        if windowBest == nil || zero < windowBest!.zero { windowBest = (t, zero) }
        if t < 2e9 { earliest = min(earliest ?? zero, zero) }
    }

    /// The device's clock on the session clock (0 at monotonic `sessionZeroNs`).
    func clock(sessionZeroNs: Int64) -> AudioClock? {
        guard let base, let earliest else { return nil }
        guard n >= 2 else {
            return AudioClock(originNs: base + Int64(earliest.rounded()) - sessionZeroNs, sampleRate: sampleRate, deviceRate: Double(sampleRate))
        }
        let slope = (n * stz - st * sz) / (n * stt - st * st)
        let intercept = (sz - slope * st) / n
        // Frame 0's time t0 satisfies zero(t0) = t0.
        let t0 = intercept / (1 - slope)
        return AudioClock(originNs: base + Int64(t0.rounded()) - sessionZeroNs, sampleRate: sampleRate,
                          deviceRate: Double(sampleRate) * (1 - slope))
    }

    /// The clock when it changed enough to tell the writer (the first; then every quarter
    /// second once the rate is fitted); nil otherwise.
    mutating func newClock(sessionZeroNs: Int64) -> AudioClock? {
        guard let c = clock(sessionZeroNs: sessionZeroNs) else { return nil }
        if let r = reported, r.originNs == c.originNs, r.deviceRate == c.deviceRate { return nil }
        if reported != nil && n < 2 && c.originNs == reported!.originNs { return nil }
        reported = c
        return c
    }
}
