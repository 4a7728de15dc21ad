/// Where a muxer's bytes go: a plain file (`PlainFile`) or a storage-pool slot (`PoolSlotFile`).
///
/// A sink is used by one thread at a time. Offsets are bytes from the start of the clip;
/// muxers seek back to patch headers, so a sink must support overwriting what it wrote.
public protocol ByteSink: AnyObject {
    /// Writes all of `bytes` at the current position and advances it.
    /// - Throws: the storage's error (a ``SystemError`` for a failed write; out of space included).
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// Moves the position to `offset` (0 ≤ offset ≤ size).
    /// - Throws: a ``SystemError`` (`lseek`, EINVAL) for an offset the sink cannot seek to.
    func seek(to offset: Int64) throws
    /// The current position.
    var position: Int64 { get }
    /// The largest offset written so far.
    var size: Int64 { get }
    /// Bytes the sink can take now without making the caller wait for storage.
    var headroom: Int64 { get }
    /// The muxer finished writing a packet: a good moment to push buffered bytes toward the disk.
    func packetWritten()
    /// Everything written so far ends at a boundary the file is playable up to: the header, or
    /// the last complete fragment (MOV/MP4) or cluster (MKV); the next write starts a new one.
    /// A good moment to make the bytes durable.
    func fragmentCompleted()
}

extension ByteSink {
    /// Default: unlimited (a sink that never makes its caller wait).
    public var headroom: Int64 { .max }
    /// Default: nothing to do.
    public func packetWritten() {}
    /// Default: nothing to do.
    public func fragmentCompleted() {}
}
