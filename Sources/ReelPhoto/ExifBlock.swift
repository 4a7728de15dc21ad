import CExif
import Foundation
import ReelCore

/// The EXIF fields Reel writes into every photo, built into one block with libexif
/// (`exif_data_new`, entries, `exif_data_save_data`).
///
/// - `Make`, `Model` (IFD0): the camera; for the synthetic sensor `Reel` and `Synthetic 4032x4032 sensor`.
/// - `Orientation` (IFD0): 1 (upright) unless orientation compensation is off.
/// - `DateTimeOriginal` + `SubSecTimeOriginal`: the wall-clock time of the frame (UTC), milliseconds.
/// - `PixelXDimension`, `PixelYDimension`: the stored picture's size.
/// - `ImageUniqueID`: 32 hex digits: the frame index (8), the frame's session time in
///   microseconds (16), the session's id (8).
/// - `UserComment`: `reel frame=INDEX sessionTime=SECONDS press=SECONDS quality=LEVEL`.
public struct ExifFields: Sendable, Hashable, Codable {
    /// `Make`: the camera's maker.
    public var make: String
    /// `Model`: the camera's model.
    public var model: String
    /// `Orientation`: 1 (upright) to 8.
    public var orientation: Int
    /// When the frame was captured (`DateTimeOriginal`, `SubSecTimeOriginal`, written in UTC).
    public var capturedAt: Date
    /// `PixelXDimension`: the stored picture's width.
    public var width: Int
    /// `PixelYDimension`: the stored picture's height.
    public var height: Int
    /// The frame's index (in `ImageUniqueID` and `UserComment`).
    public var frameIndex: Int
    /// The frame's time on the session clock, in seconds (in `ImageUniqueID` and `UserComment`).
    public var sessionTime: Double
    /// The press's time on the session clock, in seconds (in `UserComment`).
    public var pressTime: Double
    /// The session's id (the last 8 hex digits of `ImageUniqueID`).
    public var sessionID: UInt32
    /// The quality level the photo got (in `UserComment`).
    public var quality: PhotoQuality

    /// The fields of one photo.
    public init(make: String, model: String, orientation: Int, capturedAt: Date, width: Int, height: Int,
                frameIndex: Int, sessionTime: Double, pressTime: Double, sessionID: UInt32, quality: PhotoQuality) {
        self.make = make; self.model = model; self.orientation = orientation; self.capturedAt = capturedAt
        self.width = width; self.height = height; self.frameIndex = frameIndex; self.sessionTime = sessionTime
        self.pressTime = pressTime; self.sessionID = sessionID; self.quality = quality
    }

    /// `ImageUniqueID` as written.
    public var imageUniqueID: String {
        let micros = UInt64(max(0, (sessionTime * 1e6).rounded()))
        return String(format: "%08X%016llX%08X", UInt32(truncatingIfNeeded: frameIndex), micros, sessionID)
    }

    /// `UserComment` as written.
    public var userComment: String {
        "reel frame=\(frameIndex) sessionTime=\(String(format: "%.6f", sessionTime)) press=\(String(format: "%.6f", pressTime)) quality=\(quality.rawValue)"
    }

    /// The block, starting `Exif\0\0` then the TIFF header (JPEG APP1 and HEIC take it so;
    /// PNG's eXIf chunk takes it from the TIFF header: `dropFirst(6)`).
    /// - Throws: `PhotoError.encoder` when libexif runs out of memory.
    public func block() throws(PhotoError) -> [UInt8] {
        var gmt = tm()
        var seconds = time_t(capturedAt.timeIntervalSince1970.rounded(.down))
        let millis = Int((capturedAt.timeIntervalSince1970 - Double(seconds)) * 1000)
        guard gmtime_r(&seconds, &gmt) != nil else { throw PhotoError.encoder("gmtime_r failed") }
        let date = String(format: "%04d:%02d:%02d %02d:%02d:%02d", Int(gmt.tm_year) + 1900, Int(gmt.tm_mon) + 1,
                          Int(gmt.tm_mday), Int(gmt.tm_hour), Int(gmt.tm_min), Int(gmt.tm_sec))
        let subsec = String(format: "%03d", min(max(millis, 0), 999))
        var out: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt32 = 0
        let status = CExif_build(make, model, UInt16(clamping: orientation), date, subsec, UInt32(width), UInt32(height),
                                 imageUniqueID, userComment, &out, &size)
        defer { free(out) }
        guard status == 0, let out else { throw PhotoError.encoder("libexif could not build the EXIF block (out of memory)") }
        return Array(UnsafeBufferPointer(start: out, count: Int(size)))
    }
}
