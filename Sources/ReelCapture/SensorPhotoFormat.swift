import ReelCore

/// A sensor's still-photo format (Apple's `maxPhotoDimensions` with the ratios it allows):
/// the full sensor size and the ratios a photo may be cropped to.
///
/// The synthetic square sensor's photo format is 4032×4032 and, as on the real camera, keeps
/// only 4x3 and 3x4: asking another ratio is a usage error.
public struct SensorPhotoFormat: Sendable, Hashable {
    public let size: Size
    public let supportedRatios: [AspectRatio]

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
