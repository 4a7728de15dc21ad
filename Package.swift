// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Reel",
    products: [
        .executable(name: "reel", targets: ["reel"]),
        // Everything a package needs to record with the library alone (Fixtures/OutsidePackage
        // does): the writer and capture APIs and the types they expose.
        .library(name: "Reel", targets: ["ReelCore", "ReelMetrics", "ReelMedia", "ReelStorage", "ReelCapture", "ReelWriter"]),
        .library(name: "ReelWriter", targets: ["ReelWriter"]),
        .library(name: "ReelCapture", targets: ["ReelCapture"]),
        .library(name: "ReelStorage", targets: ["ReelStorage"]),
        .library(name: "ReelMedia", targets: ["ReelMedia"]),
        .library(name: "ReelMetrics", targets: ["ReelMetrics"]),
        .library(name: "ReelCore", targets: ["ReelCore"]),
    ],
    targets: [
        // libavformat, libavcodec, libavutil and libswscale from Debian's -dev packages.
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libavutil libswscale",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev"])]
        ),
        // libmicrohttpd from Debian's -dev package: the preview's HTTP server.
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // libjpeg-turbo's TurboJPEG from Debian's -dev package: the preview's JPEG frames.
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        // Linux constants and calls Swift cannot import directly (O_DIRECT, renameat2, V4L2 codes).
        .target(name: "CLinux"),
        // Shared vocabulary: timestamps, ratios, the frame-index barcode, byte sinks, drop reasons.
        .target(name: "ReelCore", linkerSettings: [.linkedLibrary("m")]),
        // The only Swift code that touches libav*.
        .target(name: "ReelMedia", dependencies: ["CFFmpeg", "ReelCore"]),
        // Latency histograms: the storage layer's write times, the jitter report's figures.
        .target(name: "ReelMetrics", linkerSettings: [.linkedLibrary("m")]),
        // Where bytes go: plain files (FileStorage) and the preallocated storage pool.
        .target(name: "ReelStorage", dependencies: ["CLinux", "ReelCore", "ReelMetrics"]),
        // Sources and the capture session.
        .target(name: "ReelCapture", dependencies: ["CLinux", "ReelCore", "ReelMedia"]),
        // AssetWriter, clip splitting, probe and verify.
        .target(name: "ReelWriter", dependencies: ["ReelCore", "ReelMedia", "ReelStorage", "ReelCapture", "ReelMetrics"]),
        // Measurements: `reel jitter`, its contention loads and its report (also `reel record
        // --report`). Above the product: only the CLI depends on it (scripts/check-architecture).
        .target(name: "ReelBench", dependencies: ["CLinux", "ReelCore", "ReelMetrics", "ReelStorage"]),
        // The live preview: newest-frame JPEG output and its HTTP server (MJPEG, snapshot, status).
        .target(name: "ReelPreview", dependencies: ["CLinux", "CMicroHTTPD", "CTurboJPEG", "ReelCore", "ReelMedia", "ReelCapture"]),
        // The command line: the option tables, parsing (no side effects), the commands, printing.
        .target(name: "ReelCLI", dependencies: ["ReelPreview", "ReelWriter", "ReelCapture", "ReelCore", "ReelStorage", "ReelBench", "ReelMedia"]),
        // `reel` itself: a thin entry into ReelCLI.
        .executableTarget(name: "reel", dependencies: ["ReelCLI"]),
        .testTarget(name: "ReelCoreTests", dependencies: ["ReelCore"]),
        .testTarget(name: "ReelMediaTests", dependencies: ["ReelMedia", "ReelCore"]),
        .testTarget(name: "ReelMetricsTests", dependencies: ["ReelMetrics", "ReelBench"]),
        .testTarget(name: "ReelStorageTests", dependencies: ["ReelStorage"]),
        .testTarget(name: "ReelWriterTests", dependencies: ["ReelWriter", "ReelCapture", "ReelMedia", "ReelCore"]),
        .testTarget(name: "ReelPreviewTests", dependencies: ["ReelPreview", "ReelCapture", "ReelMedia", "ReelCore"]),
        .testTarget(name: "ReelCLITests", dependencies: ["ReelCLI", "ReelWriter", "ReelCore", "ReelStorage", "ReelBench"]),
    ],
    swiftLanguageModes: [.v6]
)
