import CFFmpeg
import ReelCore

/// A libav call that failed: the call's name, its negative error code and `av_strerror` text.
public struct MediaError: Error, Sendable, CustomStringConvertible {
    /// The libav call (or the step, such as `open PATH`) that failed.
    public let call: String
    /// The negative `AVERROR` code (`AVERROR(EINVAL)` for errors not from libav).
    public let code: Int32
    /// What went wrong: `av_strerror` of `code`, or the message.
    public let text: String

    /// A failure of `call` with libav error `code`; `text` comes from `av_strerror`.
    public init(_ call: String, code: Int32) {
        self.call = call
        self.code = code
        self.text = MediaError.describe(code)
    }

    /// An error that did not come from a libav return code.
    public init(_ call: String, message: String) {
        self.call = call
        self.code = reel_averror(EINVAL)
        self.text = message
    }

    /// `CALL: TEXT`.
    public var description: String { "\(call): \(text)" }

    /// `av_strerror` of a libav error code.
    public static func describe(_ code: Int32) -> String {
        var buf = [CChar](repeating: 0, count: Int(reel_error_max_string_size()))
        av_strerror(code, &buf, buf.count)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Throws a `MediaError` for a negative libav return code and passes other values through.
@discardableResult
func check(_ ret: Int32, _ call: @autoclosure () -> String) throws(MediaError) -> Int32 {
    if ret < 0 { throw MediaError(call(), code: ret) }
    return ret
}

let averrorEAGAIN = reel_averror_eagain()
let averrorEOF = reel_averror_eof()

/// Lowers libav's log level to errors (`av_log_set_level(AV_LOG_ERROR)`): libav's warnings and
/// notes stop reaching stderr, since Reel reports failures itself.
public func quietLibav() {
    av_log_set_level(AV_LOG_ERROR)
}
