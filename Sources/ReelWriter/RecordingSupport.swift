import Foundation
import Synchronization
import ReelCapture
import ReelCore
import ReelMedia
import ReelStorage
import ReelMetrics

/// A source that failed mid-recording (a camera unplugged), with what was kept.
struct SourceFailure: UserFacingError {
    let description: String
    let exitStatus: Int32
}

/// A flag set once, read from any thread.
final class SetOnceFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// Bytes written over the last `seconds` of media, sampled: the recording's current bit rate.
final class BitrateWindow: Sendable {
    private let seconds: Double
    private let samples = Mutex<[(at: UInt64, bytes: Int64)]>([])

    init(seconds: Double) { self.seconds = seconds }

    /// Adds a sample (bytes written in all, at `at` ns of media); samples older than the
    /// window go, but for the one just before it (the window's start).
    func add(bytes: Int64, at: UInt64) {
        let span = UInt64(seconds * 1e9)
        samples.withLock { s in
            if let last = s.last, at < last.at || (last.bytes == bytes && last.at == at) { return }
            s.append((at, bytes))
            while s.count > 2 && at - s[1].at >= span { s.removeFirst() }
        }
    }

    /// Bits a second between the window's first sample and its last; nil under 0.5 s or no bytes.
    var bitsPerSecond: Double? {
        samples.withLock { s -> Double? in
            guard let first = s.first, let last = s.last, last.at > first.at + 500_000_000, last.bytes > first.bytes else { return nil }
            return Double(last.bytes - first.bytes) * 8 / (Double(last.at - first.at) / 1e9)
        }
    }
}
