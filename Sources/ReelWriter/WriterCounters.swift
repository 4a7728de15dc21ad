import ReelCore

/// What the writer counts as frames go through it: frames taken in and written, drops,
/// bytes, the queue's high water, seam waits and the first frame's latency. A value the
/// writer keeps under its lock.
struct WriterCounters {
    /// Frames taken into the queue (a frame dropped on the encode thread is taken back).
    var framesAccepted = 0
    /// Frames encoded and muxed.
    var framesWritten = 0
    var drops = DropCounts()
    /// Bytes of the clips handed to the finaliser, and of the clip being written.
    var bytesFinished: Int64 = 0
    var bytesCurrent: Int64 = 0
    /// Bytes of every packet the encoders made (what the bit rate is reckoned from: the
    /// muxer's bytes reach the file a fragment at a time).
    var packetBytes: Int64 = 0
    var queueHighWater = 0
    /// The ratio of the newest frame offered; a change opens the seam window, in which the
    /// longest wait for room is counted, until the next clip opens.
    private var lastOfferedRatio: AspectRatio?
    private(set) var seamWindowOpen = false
    private(set) var longestSeamWait: UInt64 = 0
    /// How long the first frame took from its hand-over to the ready writer until it was
    /// encoded and muxed, and when that was (monotonic ns).
    private(set) var firstFrameLatency: UInt64?
    private(set) var firstFrameWrittenAt: UInt64?

    /// A frame of `ratio` was offered.
    mutating func noteRatio(_ ratio: AspectRatio) {
        if let last = lastOfferedRatio, last != ratio { seamWindowOpen = true }
        lastOfferedRatio = ratio
    }

    /// A frame offered waited `ns` for room.
    mutating func waited(_ ns: UInt64) {
        if seamWindowOpen { longestSeamWait = max(longestSeamWait, ns) }
    }

    /// A new clip opened: the seam is behind.
    mutating func clipOpened() { seamWindowOpen = false }

    /// The clip being written went to the finaliser.
    mutating func clipHandedOver() {
        bytesFinished += bytesCurrent
        bytesCurrent = 0
    }

    /// A frame handed over at `handedOver` was written at `now`.
    mutating func written(handedOver: UInt64, now: UInt64) {
        if firstFrameLatency == nil {
            firstFrameLatency = now - min(now, handedOver)
            firstFrameWrittenAt = now
        }
        framesWritten += 1
    }
}

/// Deferred Start's hold: until the writer is ready, offered frames wait in its queue (the
/// hold ring). A value the writer keeps under its lock.
struct DeferredStartHold {
    /// The writer initialises after the first preview frame (`runDeferredStart`).
    var enabled = false
    /// The writer can encode: it was not deferred, or its deferred start has run.
    var ready = true
    /// `runDeferredStart` is opening the first clip now.
    var running = false
    private(set) var readyAt: UInt64?
    /// Frames held before the writer was ready, and the longest any of them waited (ns).
    var framesHeld = 0
    private(set) var longestHold: UInt64 = 0

    /// Deferred or not, before anything was offered.
    mutating func setEnabled(_ on: Bool) {
        enabled = on
        ready = !on
    }

    /// The writer is ready from `now`.
    mutating func markReady(at now: UInt64) {
        guard !ready else { return }
        ready = true
        readyAt = now
    }

    /// When a frame offered at `offeredAt` reached the ready writer (`held`: it waited in
    /// the hold ring), counting its wait.
    mutating func handedOver(offeredAt: UInt64, held: Bool) -> UInt64 {
        guard held else { return offeredAt }
        let at = max(offeredAt, readyAt ?? offeredAt)
        longestHold = max(longestHold, at - offeredAt)
        return at
    }
}
