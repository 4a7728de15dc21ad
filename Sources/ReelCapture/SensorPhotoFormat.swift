import ReelCore

/// A sensor's still-photo format (Apple's `maxPhotoDimensions` with the ratios it allows):
/// the full sensor size and the ratios a photo may be cropped to.
///
/// The synthetic square sensor's photo format is 4032×4032 and, as on the real camera, keeps
/// only 4x3 and 3x4: asking another ratio is a usage error.
public struct SensorPhotoFormat: Sendable, Hashable {
    /// Writes one block of `count` bytes through the arm's write path.
    /// - Throws: `JitterError.io` (plain files), or the pool file's storage error, when the write
    ///   fails.
    public let size: Size
    /// The ratios a photo may be cropped to (4x3 and 3x4 for the synthetic sensor).
    public let supportedRatios: [AspectRatio]

    /// A photo format of `size` that keeps `supportedRatios`.
    public init(size: Size, supportedRatios: [AspectRatio]) {
        self.size = size; self.supportedRatios = supportedRatios
    }

    /// The synthetic sensor's photo format: 4032×4032, 4x3 and 3x4 only.
    public static let synthetic = SensorPhotoFormat(size: Size(width: 4032, height: 4032),
                                                    supportedRatios: [.landscape4x3, .portrait3x4])

    /// The photo's rectangle inside the sensor for `ratio`.
    /// - Throws: `CaptureError.unsupportedRatio` (exit 64) when the format lacks `ratio`.
    public func crop(for ratio: AspectRatio) throws(CaptureError) -> CropRect {
        guard supportedRatios.contains(ratio) else {
            throw CaptureError.unsupportedRatio(ratio, supported: supportedRatios, format: "the \(size) photo format")
        }
        return ratio.crop(in: size)
    }
}

/// How a sensor is mounted relative to the device (`--sensor-orientation`): the rotation its
/// read-out has against the scene. Center Stage's square sensor is mounted `portrait`.
public enum SensorOrientation: String, Sendable, Hashable, Codable, CaseIterable {
    /// Upright: read-out and scene agree.
    case landscape
    /// Mounted a quarter turn: the read-out is the scene turned 90° counter-clockwise; shown
    /// upright after a 90° clockwise turn (EXIF Orientation 6).
    case portrait
    /// Mounted upside down: the read-out is the scene turned 180° (EXIF Orientation 3).
    case landscapeLeft

    /// Quarter turns clockwise the read-out is from the scene (portrait: -1, i.e. 3).
    public var readoutQuarterTurns: Int {
        switch self { case .landscape: 0; case .portrait: 3; case .landscapeLeft: 2 }
    }

    /// The EXIF Orientation a viewer needs to show the read-out upright.
    public var exifOrientation: Int {
        switch self { case .landscape: 1; case .portrait: 6; case .landscapeLeft: 3 }
    }
}
