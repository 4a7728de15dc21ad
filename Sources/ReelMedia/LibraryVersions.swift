import CFFmpeg

/// The libav* libraries this process runs on, for caches of measurements that depend on them
/// (the capacity calibration).
public enum MediaLibraries {
    /// `libavcodec 59.37.100, libswscale 6.7.100` — from `avcodec_version()` and `swscale_version()`.
    public static var versions: String {
        func dotted(_ v: UInt32) -> String { "\(v >> 16).\((v >> 8) & 0xff).\(v & 0xff)" }
        return "libavcodec \(dotted(avcodec_version())), libswscale \(dotted(swscale_version()))"
    }
}
