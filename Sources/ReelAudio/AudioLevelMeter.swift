import Foundation
import ReelCore
import Synchronization

/// A level meter any number of readers can look at without taking from one another (the page,
/// the progress line): the largest sample of the sound that arrived in the last 300–400 ms,
/// kept as the peaks of 100 ms buckets of arrival time. When none arrived that recently (a
/// device delivering late, a loaded machine), the newest bucket of the last second stands in,
/// so a late delivery does not read as silence; after a second without sound it reads 0. The
/// capture thread `record`s each chunk's peak; readers ask for `peak` or `decibels`.
public final class AudioLevelMeter: Sendable {
    /// One bucket: its index (arrival time / `bucketNanoseconds`) and the largest sample in it.
    private struct Bucket { var index: Int64 = .min; var peak = 0 }
    /// A bucket's span of arrival time.
    public static let bucketNanoseconds: Int64 = 100_000_000
    /// Buckets kept: a second's worth.
    private static let buckets = 10
    /// Buckets the level is the peak of: the current one and the three before it.
    private static let window: Int64 = 4
    /// The level a meter shows for silence (a 16-bit sample's floor), dBFS.
    public static let floorDecibels = -96.0

    private let state = Mutex<(buckets: [Bucket], heard: Bool)>(([Bucket](repeating: Bucket(), count: AudioLevelMeter.buckets), false))

    /// A meter that has heard nothing.
    public init() {}

    /// A chunk whose largest sample (absolute, of 32,768) is `peak` arrived at `now` (ns, CLOCK_MONOTONIC).
    public func record(peak: Int, now: UInt64 = MonotonicClock.now()) {
        let index = Int64(now / UInt64(Self.bucketNanoseconds))
        state.withLock { s in
            let i = Int(index % Int64(Self.buckets))
            if s.buckets[i].index != index { s.buckets[i] = Bucket(index: index, peak: 0) }
            s.buckets[i].peak = max(s.buckets[i].peak, peak)
            s.heard = true
        }
    }

    /// The largest sample that arrived in the current bucket and the three before it; when
    /// none did, that of the newest bucket in the last second; 0 when none did (the device went
    /// quiet); nil before the first chunk.
    public func peak(now: UInt64 = MonotonicClock.now()) -> Int? {
        let index = Int64(now / UInt64(Self.bucketNanoseconds))
        return state.withLock { s in
            guard s.heard else { return nil }
            let recent = s.buckets.filter { $0.index > index - Int64(Self.buckets) && $0.index <= index }
            if let p = recent.filter({ $0.index > index - Self.window }).map(\.peak).max() { return p }
            return recent.max { $0.index < $1.index }?.peak ?? 0
        }
    }

    /// `peak` in dBFS (0: full scale), never below `floorDecibels`; nil before the first chunk.
    public func decibels(now: UInt64 = MonotonicClock.now()) -> Double? {
        peak(now: now).map { Self.decibels(peak: $0) }
    }

    /// A 16-bit peak in dBFS, `floorDecibels` for 0.
    public static func decibels(peak: Int) -> Double {
        peak <= 0 ? floorDecibels : max(floorDecibels, 20 * log10(Double(peak) / 32768))
    }
}
