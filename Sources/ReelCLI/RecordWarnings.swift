import ReelCore
import ReelStorage
import ReelWriter

/// The `reel: warning:` lines a recording ends with (README, "Exit status"): frames dropped,
/// and bytes that went beyond the storage pool. One line each, after the summary.
enum RecordWarnings {
    /// `N of M frames dropped (reasons: outOfBuffers K, late L); WHAT WOULD HELP`, or nil when
    /// none was dropped.
    static func drops(_ s: RecordingSummary) -> String? {
        guard s.framesDropped > 0 else { return nil }
        let reasons = s.dropReasons.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        var help: [String] = []
        if (s.dropReasons["outOfBuffers"] ?? 0) > 0 {
            help.append("outOfBuffers: the writer or storage fell behind — a lighter --codec (prores:lt, h264), a lower --fps, or --no-realtime for the synthetic sensor")
        }
        if (s.dropReasons["late"] ?? 0) > 0 {
            help.append("late: capture could not keep its rate — a lower --fps or a smaller --source, or fewer programs running")
        }
        if (s.dropReasons["discontinuity"] ?? 0) > 0 { help.append("discontinuity: the camera skipped frames — a lower resolution or frame rate, another USB port") }
        if (s.dropReasons["corrupt"] ?? 0) > 0 { help.append("corrupt: the camera sent frames that could not be used — check its cable and format") }
        return "\(s.framesDropped) of \(s.framesCaptured) frames dropped (reasons: \(reasons.map { "\($0.key) \($0.value)" }.joined(separator: ", "))); " + help.joined(separator: "; ")
    }

    /// `the storage pool at P had no room from T s: B in N clips went to the filesystem
    /// beyond it; …`, or nil when everything went into the pool — or the recording made the
    /// pool and only plain clips went outside it (the pool's announcement said they would).
    static func leftPool(_ s: RecordingSummary) -> String? {
        guard let left = s.storage.leftPool, let pool = s.storage.pool else { return nil }
        let beyond = s.clips.reduce(Int64(0)) { $0 + $1.bytesBeyondPool }
        if s.storage.poolCreated && beyond == 0 { return nil }
        return "the storage pool at \(pool) had no free slot from \(formatted(left.atSeconds)) s: \(formatBytes(left.bytes)) in \(left.clips) clip\(left.clips == 1 ? "" : "s") went to the filesystem beyond it (the recording went on); `reel pool resize \(pool) --capacity SIZE` makes room"
    }

    /// `sound: the device failed …; N of M samples lost (reasons: …)`, or nil when the clips
    /// hold every sample of their time.
    static func audio(_ s: RecordingSummary) -> String? {
        guard let a = s.audio, a.samplesDropped > 0 || a.error != nil else { return nil }
        let reasons = a.dropReasons.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        var line = "sound: \(a.samplesDropped) of \(a.samplesCaptured) samples lost"
        if !reasons.isEmpty { line += " (reasons: \(reasons.joined(separator: ", ")))" }
        if let e = a.error { line += "; \(e)" }
        return line
    }

    private static func formatted(_ x: Double) -> String {
        let r = (x * 10).rounded() / 10
        return r == r.rounded() ? String(Int(r)) : String(r)
    }
}

/// Prints the recording's warnings: the pool's, then (with `dropsToo`) the drops'.
func printWarnings(_ s: RecordingSummary, dropsToo: Bool) {
    if let line = RecordWarnings.leftPool(s) { printWarning(line) }
    if dropsToo, let line = RecordWarnings.drops(s) { printWarning(line) }
    if let line = RecordWarnings.audio(s) { printWarning(line) }
}
