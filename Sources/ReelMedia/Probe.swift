import CFFmpeg
public func libavcodecVersion() -> UInt32 { avcodec_version() }
