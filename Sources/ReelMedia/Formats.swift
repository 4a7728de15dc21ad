import CFFmpeg
import ReelCore

/// Pixel layouts Reel moves between sources, converters and encoders.
public enum PixelFormat: String, Sendable, Hashable, CaseIterable {
    /// FFmpeg's pixel formats of the same names (`AV_PIX_FMT_YUV420P`, …).
    case yuv420p, nv12, yuyv422, yuv422p, yuv422p10, yuv444p10, yuvj420p

    var av: AVPixelFormat {
        switch self {
        case .yuv420p: return AV_PIX_FMT_YUV420P
        case .nv12: return AV_PIX_FMT_NV12
        case .yuyv422: return AV_PIX_FMT_YUYV422
        case .yuv422p: return AV_PIX_FMT_YUV422P
        case .yuv422p10: return AV_PIX_FMT_YUV422P10LE
        case .yuv444p10: return AV_PIX_FMT_YUV444P10LE
        case .yuvj420p: return AV_PIX_FMT_YUVJ420P
        }
    }
}

/// ProRes flavours, named as Apple names them.
public enum ProResProfile: String, Sendable, CaseIterable {
    /// ProRes 422 Proxy, LT, 422 and 422 HQ.
    case proxy, lt, standard, hq
    /// ProRes 4444.
    case p4444 = "4444"

    /// `FF_PROFILE_PRORES_*`.
    var ffmpegProfile: Int32 {
        switch self {
        case .proxy: return FF_PROFILE_PRORES_PROXY
        case .lt: return FF_PROFILE_PRORES_LT
        case .standard: return FF_PROFILE_PRORES_STANDARD
        case .hq: return FF_PROFILE_PRORES_HQ
        case .p4444: return FF_PROFILE_PRORES_4444
        }
    }
}

/// The encoders Reel records with.
public enum VideoCodec: Sendable, Hashable, CustomStringConvertible {
    /// ProRes through FFmpeg's `prores` encoder (prores_aw): measured 6× faster than
    /// prores_ks on this kind of machine, the only one that keeps up with 1080p30.
    case prores(ProResProfile)
    /// H.264 through libx264, preset `veryfast` (measured to keep up with 1080p30 on 2 cores).
    case h264
    /// HEVC through libx265, preset `ultrafast`.
    case hevc
    /// Lossless FFV1 version 3 with slices.
    case ffv1

    /// The default ProRes flavour is 422 HQ, as on Apple's cameras.
    public static let defaultProRes = VideoCodec.prores(.hq)

    /// Parses `prores`, `prores:hq`, `h264`, `hevc`, `ffv1` (also `h265`, `x264`).
    public init?(parsing text: String) {
        let parts = text.lowercased().split(separator: ":", maxSplits: 1).map(String.init)
        if parts.first == "prores" {
            if parts.count == 1 { self = VideoCodec.defaultProRes; return }
            guard let p = ProResProfile(rawValue: parts[1]) else { return nil }
            self = .prores(p)
            return
        }
        guard parts.count == 1 else { return nil }
        switch parts[0] {
        case "h264", "x264", "avc": self = .h264
        case "hevc", "h265", "x265": self = .hevc
        case "ffv1": self = .ffv1
        default: return nil
        }
    }

    /// The codec's short name, as ffprobe prints it (`prores`, `h264`, `hevc`, `ffv1`).
    public var name: String {
        switch self {
        case .prores: return "prores"
        case .h264: return "h264"
        case .hevc: return "hevc"
        case .ffv1: return "ffv1"
        }
    }

    /// The spelling `--codec` accepts for this codec (`prores:hq`).
    public var description: String {
        if case .prores(let p) = self { return "prores:\(p.rawValue)" }
        return name
    }

    /// libavcodec's encoder name.
    public var encoderName: String {
        switch self {
        case .prores: return "prores"
        case .h264: return "libx264"
        case .hevc: return "libx265"
        case .ffv1: return "ffv1"
        }
    }

    /// The pixel format the encoder is fed.
    public var inputFormat: PixelFormat {
        switch self {
        case .prores(.p4444): return .yuv444p10
        case .prores: return .yuv422p10
        case .h264, .hevc, .ffv1: return .yuv420p
        }
    }

    /// Every frame is a keyframe.
    public var isIntraOnly: Bool {
        if case .prores = self { return true }
        return false
    }

    var codecID: AVCodecID {
        switch self {
        case .prores: return AV_CODEC_ID_PRORES
        case .h264: return AV_CODEC_ID_H264
        case .hevc: return AV_CODEC_ID_HEVC
        case .ffv1: return AV_CODEC_ID_FFV1
        }
    }

    /// The encoder is built into this libavcodec.
    public var isAvailable: Bool { avcodec_find_encoder_by_name(encoderName) != nil }
}

/// The file formats Reel muxes into.
public enum Container: String, Sendable, Hashable, CaseIterable {
    /// QuickTime (`.mov`), MPEG-4 (`.mp4`) and Matroska (`.mkv`).
    case mov, mp4, mkv

    var formatName: String { self == .mkv ? "matroska" : rawValue }
    /// The file name extension: the case's name.
    public var fileExtension: String { rawValue }

    /// The container can carry the codec: libavformat's own table (`avformat_query_codec`),
    /// so ProRes in MP4 and FFV1 in MP4 are refused as libavformat refuses them.
    public func supports(_ codec: VideoCodec) -> Bool {
        guard let fmt = av_guess_format(formatName, nil, nil) else { return false }
        return avformat_query_codec(fmt, codec.codecID, FF_COMPLIANCE_NORMAL) == 1
    }

    /// Fragmented while recording, so the file is playable up to its last fragment at any
    /// moment (MOV and MP4; Matroska is cluster-based and needs nothing).
    public var isFragmented: Bool { self != .mkv }

    /// The container keeps a video's display matrix (rotation): MOV and MP4 in the track
    /// header. libavformat 5.1's Matroska muxer writes none (Matroska's ProjectionPoseRoll is
    /// written from a display matrix only since FFmpeg 6.1), so a turned clip needs MOV or MP4.
    public var carriesDisplayMatrix: Bool { self != .mkv }
}
