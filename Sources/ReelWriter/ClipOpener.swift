import Foundation
import ReelCapture
import ReelCore
import ReelMedia

/// The opening end of the clip lifecycle: clips opened ahead of the frames that start them,
/// so a seam or a segment boundary waits for nothing.
///
/// - The first clip is opened before capture (`AssetWriter.prepare`) or at Deferred Start.
/// - Each later clip the session announced (`expect`) is opened on an opener thread while the
///   current clip records, one clip ahead at most.
/// - Encoders of finished clips that can start another (FFV1, whose every new encoder zeroes
///   a 300–545 MB buffer) are kept for a later clip of their size, the two most recent.
///
/// The encode thread takes what fits at each new clip (`take`); what does not fit is thrown
/// away off the encode thread.
///
/// Thread safety: its state is guarded by its own `lock`. The writer may call it while
/// holding the writer's lock; it never calls the writer, and it never holds its lock while it
/// calls the finaliser.
final class ClipOpener: @unchecked Sendable {
    /// The threads that open clips ahead and throw unused ones away: parked between clips.
    private static let openers = ThreadReuse(name: "reel.open", stackSize: 4 << 20)
    private static let discarders = ThreadReuse(name: "reel.discard")
    /// The longest a segment's continuation waits for the clips closing to let go.
    static let settleSeconds = 5.0
    private let settings: WriterSettings
    private let rate: FrameRate
    private let finaliser: Finaliser

    // Guarded by `lock`.
    private let lock = NSCondition()
    /// False once the writer finishes or fails: nothing more is opened ahead.
    private var accepting = true
    /// Ratios the session said it will switch to, in order (`expect`), not yet prepared.
    /// `afterSettled`: a segment's continuation, opened once the clips closing have let go
    /// of their files and threads (`Finaliser.waitUntilSettled`).
    private var upcoming: [(AspectRatio, Size, Int32, afterSettled: Bool)] = []
    /// The first clip, opened before capture.
    private var first: PreparedClip?
    /// The next clip, being opened ahead on the opener thread (`preparing`) or ready.
    private var preparing = false
    /// What the opener is opening: clip number, ratio, size.
    private var preparingFor: (Int, AspectRatio, Size)?
    private var next: PreparedClip?
    /// The highest clip number the encode thread has opened.
    private var openedClips = 0
    /// The highest clip number the encode thread has asked for (`take`), opened or not yet.
    private var takenClips = 0
    private var openedAhead = 0
    private var idleEncoders: [VideoEncoder] = []
    private var encodersReused = 0
    /// Throw-aways still running on background threads.
    private var discarding = 0

    init(settings: WriterSettings, rate: FrameRate, finaliser: Finaliser) {
        self.settings = settings
        self.rate = rate
        self.finaliser = finaliser
        ClipOpener.openers.prestart(1)
    }

    /// Clips started from a clip opened ahead, and clips started on a kept encoder.
    var counts: (openedAhead: Int, encodersReused: Int) {
        lock.lock(); defer { lock.unlock() }
        return (openedAhead, encodersReused)
    }

    // MARK: The first clip

    /// Whether a first clip is held.
    var hasFirst: Bool {
        lock.lock(); defer { lock.unlock() }
        return first != nil
    }

    /// Opens the first clip now (storage, encoder; FFV1's first-frame allocation); nil when
    /// it cannot be opened (the first frame opens it again and reports why).
    func openFirst(ratio: AspectRatio, size: Size, timescale: Int32) -> PreparedClip? {
        try? PreparedClip(number: 1, ratio: ratio, size: size, timescale: timescale, settings: settings, rate: rate)
    }

    /// Holds `clip` as the first clip; false (and the caller throws it away) when one is held
    /// already or the writer no longer takes frames.
    func keepFirst(_ clip: PreparedClip) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard accepting, first == nil else { return false }
        first = clip
        return true
    }

    // MARK: Clips ahead

    /// The session will switch to `ratio` (frames cropped to `size`) after the ratios it
    /// announced before: that clip is opened ahead.
    func expect(ratio: AspectRatio, size: Size, timescale: Int32) {
        lock.lock()
        upcoming.append((ratio, size, timescale, false))
        lock.unlock()
        prepareAhead()
    }

    /// `expect`, unless a ratio was announced already (which then comes first): the next clip
    /// most likely continues at this ratio (after a stop request, or at a segment boundary).
    /// `afterSettled` (a segment boundary, far off): it is opened once the clips closing have
    /// let go of their files and threads (for at most `settleSeconds`), so that the recording
    /// holds as many descriptors and threads across boundaries as between them. After a stop
    /// it is opened at once: the next start may come with the next frame.
    func expectUnlessAnnounced(ratio: AspectRatio, size: Size, timescale: Int32, afterSettled: Bool) {
        lock.lock()
        if upcoming.isEmpty { upcoming.append((ratio, size, timescale, afterSettled)) }
        lock.unlock()
        prepareAhead()
    }

    /// The encode thread opened clip `number`: the next one announced is opened ahead now.
    func opened(clip number: Int) {
        lock.lock()
        openedClips = number
        lock.unlock()
        prepareAhead()
    }

    /// Starts opening the next announced clip on an opener thread, unless one is open or
    /// opening already.
    private func prepareAhead() {
        lock.lock()
        guard accepting, openedClips > 0, !preparing, next == nil, !upcoming.isEmpty else {
            lock.unlock(); return
        }
        let (ratio, size, timescale, afterSettled) = upcoming.removeFirst()
        preparing = true
        // The clip this opens: the one after the last the encode thread has opened or asked for.
        let number = max(openedClips, takenClips) + 1
        if !afterSettled { preparingFor = (number, ratio, size) }
        lock.unlock()
        ClipOpener.openers.run { [self] in
            // Not marked as being prepared while it waits: a seam that comes meanwhile opens
            // its clip itself rather than wait for this.
            if afterSettled {
                _ = finaliser.waitUntilSettled(seconds: Self.settleSeconds) { [self] in
                    lock.lock(); defer { lock.unlock() }
                    return !accepting || !upcoming.isEmpty
                }
            }
            lock.lock()
            guard accepting, !afterSettled || (upcoming.isEmpty && max(openedClips, takenClips) + 1 == number) else {
                // Finishing: nothing more is opened. Or a ratio change was announced meanwhile
                // (its clip comes first, and is opened instead of this one), or the encode
                // thread went on to this clip without it (the next is announced again).
                preparing = false
                lock.broadcast()
                lock.unlock()
                prepareAhead()
                return
            }
            preparingFor = (number, ratio, size)
            lock.unlock()
            // The clip's storage (a pool slot claim: a locked manifest update with its syncs,
            // or a wait for a slot) is claimed here too, ahead of the seam, so that the encode
            // thread only opens the muxer there. Should the claim fail, the encoder alone is
            // opened ahead and the seam claims the storage (and reports the failure) itself.
            let idle = takeIdleEncoder(size, timescale, patience: 0.3)
            let p: PreparedClip?
            do {
                p = try PreparedClip(number: number, ratio: ratio, size: size, timescale: timescale, settings: settings, rate: rate,
                                     withFile: true, reusing: idle)
            } catch {
                p = try? PreparedClip(number: number, ratio: ratio, size: size, timescale: timescale, settings: settings, rate: rate,
                                      withFile: false, reusing: idle)
            }
            lock.lock()
            // The encode thread went past this clip (it did not fit): it goes, and the next opens.
            // An encoder that can start another clip is kept before the seam is woken: the seam
            // may be waiting for exactly this encoder (a later clip of its size).
            let stale = number <= openedClips
            if stale {
                discarding += 1
                if let p, p.encoder.canRestart { keepIdle(p.encoder) }
            } else { next = p }
            preparing = false
            preparingFor = nil
            lock.broadcast()
            lock.unlock()
            if stale {
                if let p { p.discard() }
                lock.lock(); discarding -= 1; lock.broadcast(); lock.unlock()
                prepareAhead()
            }
        }
    }

    /// The clip opened ahead for clip `number` starting at `frame`, if there is one that fits
    /// (waiting for the opener when it is at work), else a kept encoder of its size if there
    /// is one; clips opened ahead that do not fit are thrown away (their restartable encoders
    /// kept, after this clip took its own: keeping them first could push out the very
    /// encoder this clip needs).
    func take(number: Int, for frame: CapturedFrame) -> (prepared: PreparedClip?, idle: VideoEncoder?) {
        lock.lock()
        takenClips = max(takenClips, number)
        // Waiting for the opener is worth it only when it opens this very clip, or an FFV1
        // clip of this size that is already stale (its encoder will start this clip: opening
        // another here would take at least as long, and zero its buffer again).
        while preparing, let (n, r, z) = preparingFor, z == frame.crop.size,
              (n == number && r == frame.ratio) || (n < number && settings.codec == .ffv1) { lock.wait() }
        var candidates: [PreparedClip] = []
        if let p = first { candidates.append(p); first = nil }
        if let p = next { candidates.append(p); next = nil }
        var chosen: PreparedClip? = nil
        var unused: [PreparedClip] = []
        for p in candidates {
            if chosen == nil && p.number == number && p.fits(frame) { chosen = p } else { unused.append(p) }
        }
        var idle: VideoEncoder? = nil
        if chosen != nil {
            openedAhead += 1
        } else {
            idle = takeIdleLocked(frame.crop.size, frame.pts.timescale)
        }
        lock.unlock()
        discardInBackground(unused)
        return (chosen, idle)
    }

    // MARK: Kept encoders

    /// Keeps the encoder of a finished clip for a later clip of its size.
    func recycle(_ encoder: VideoEncoder) {
        lock.lock()
        keepIdle(encoder)
        lock.unlock()
    }

    /// `recycle` with the lock held.
    private func keepIdle(_ encoder: VideoEncoder) {
        idleEncoders.append(encoder)
        if idleEncoders.count > 2 { idleEncoders.removeFirst() }
    }

    /// An idle encoder of `size` on `timescale`, if one is kept. `patience`: seconds to wait
    /// for one that a clip still closing will give back (the opener has time; the encode
    /// thread does not).
    private func takeIdleEncoder(_ size: Size, _ timescale: Int32, patience: Double) -> VideoEncoder? {
        let deadline = MonotonicClock.now() + UInt64(patience * 1e9)
        while true {
            lock.lock()
            if let e = takeIdleLocked(size, timescale) { lock.unlock(); return e }
            lock.unlock()
            guard MonotonicClock.now() < deadline, finaliser.isClosing(size: size) else { return nil }
            usleep(2_000)
        }
    }

    /// `takeIdleEncoder` without waiting, with the lock held.
    private func takeIdleLocked(_ size: Size, _ timescale: Int32) -> VideoEncoder? {
        guard let i = idleEncoders.lastIndex(where: { $0.settings.size == size && $0.settings.timescale == timescale }) else { return nil }
        encodersReused += 1
        return idleEncoders.remove(at: i)
    }

    // MARK: Throwing away

    /// Throws prepared clips away: their storage goes (a pool slot back to the pool), and an
    /// encoder that can start another clip (FFV1) is kept for a later clip of its size, as
    /// the encoder of a finished clip is — it holds no frame, and a new one would zero its
    /// 300–545 MB buffer again.
    func discard(_ clips: [PreparedClip]) {
        for c in clips {
            c.discard()
            if c.encoder.canRestart { recycle(c.encoder) }
        }
    }

    /// Throws prepared clips away off the encode thread (an encoder's memory, a pool slot).
    /// An encoder that can start another clip is kept at once — a later clip of its size may
    /// start on the next frame, before a background thread would have got to it.
    private func discardInBackground(_ clips: [PreparedClip]) {
        guard !clips.isEmpty else { return }
        for c in clips where c.encoder.canRestart { recycle(c.encoder) }
        lock.lock(); discarding += 1; lock.unlock()
        ClipOpener.discarders.run { [self] in
            // The storage goes here; the other encoders' memory when `clips` is released.
            for c in clips { c.discard() }
            lock.lock(); discarding -= 1; lock.broadcast(); lock.unlock()
        }
    }

    /// The writer takes no more frames (finishing or failed): nothing more is opened ahead.
    func stopOpening() {
        lock.lock(); accepting = false; lock.unlock()
    }

    /// A writer that never started is finishing: the first clip, if one was opened, goes (its
    /// storage back to the pool).
    func discardFirst() {
        lock.lock()
        accepting = false
        let f = first
        first = nil
        lock.unlock()
        f?.discard()
    }

    /// At the end of the encode thread: waits for the opener, throws away what was opened
    /// ahead and not used, waits for every throw-away, and lets the kept encoders go.
    func closeAndDiscardUnused() {
        lock.lock()
        accepting = false
        while preparing { lock.wait() }
        let unused = [first, next].compactMap { $0 }
        first = nil
        next = nil
        upcoming = []
        lock.unlock()
        discard(unused)
        lock.lock()
        while discarding > 0 { lock.wait() }
        lock.unlock()
    }

    /// Lets the kept encoders go (once every clip is closed).
    func releaseIdleEncoders() {
        lock.lock(); idleEncoders = []; lock.unlock()
    }
}
