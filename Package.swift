// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Reel",
    products: [
        .executable(name: "reel", targets: ["reel"]),
        // Everything a package needs to build a camera with the library alone (Fixtures/OutsidePackage
        // does): the camera, the writer and capture APIs beneath it, and the types they expose.
        .library(name: "Reel", targets: ["ReelCore", "ReelMetrics", "ReelMedia", "ReelStorage", "ReelCapture", "ReelAudio", "ReelWriter",
                                         "ReelControl", "ReelPreview", "ReelPhoto", "ReelCapacity", "ReelFraming", "ReelCamera"]),
        .library(name: "ReelWriter", targets: ["ReelWriter"]),
        .library(name: "ReelCapture", targets: ["ReelCapture"]),
        .library(name: "ReelAudio", targets: ["ReelAudio"]),
        .library(name: "ReelStorage", targets: ["ReelStorage"]),
        .library(name: "ReelMedia", targets: ["ReelMedia"]),
        .library(name: "ReelMetrics", targets: ["ReelMetrics"]),
        .library(name: "ReelCore", targets: ["ReelCore"]),
        .library(name: "ReelCapacity", targets: ["ReelCapacity"]),
        .library(name: "ReelPreview", targets: ["ReelPreview"]),
        .library(name: "ReelPhoto", targets: ["ReelPhoto"]),
        .library(name: "ReelControl", targets: ["ReelControl"]),
        .library(name: "ReelCamera", targets: ["ReelCamera"]),
        .library(name: "ReelFraming", targets: ["ReelFraming"]),
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
        // libevdev from Debian's -dev package: evdev input devices (camera, volume, headset keys).
        .systemLibrary(name: "CEvdev", pkgConfig: "libevdev", providers: [.apt(["libevdev-dev"])]),
        // libheif from Debian's -dev package (HEVC through its x265 plugin): HEIC photos.
        .systemLibrary(name: "CHeif", pkgConfig: "libheif", providers: [.apt(["libheif-dev"])]),
        // libexif from Debian's -dev package: the photos' EXIF blocks.
        .systemLibrary(name: "CExif", pkgConfig: "libexif", providers: [.apt(["libexif-dev"])]),
        // libpng from Debian's -dev package: 16-bit PNG photos.
        .systemLibrary(name: "CPNG", pkgConfig: "libpng16", providers: [.apt(["libpng-dev"])]),
        // libasound from Debian's -dev package: ALSA capture for the audio sources.
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        // Linux constants and calls Swift cannot import directly (O_DIRECT, renameat2, V4L2 codes).
        .target(name: "CLinux"),
        // The people scene's portraits (Fixtures/people, as C arrays made by scripts/make-people).
        .target(name: "CPeople"),
        // OpenCV's cascade face detectors (Debian's libopencv-objdetect-dev; the cascades from
        // opencv-data) behind a small C API: Swift cannot call OpenCV's C++. Debian ships no
        // opencv4.pc without the whole libopencv-dev, hence the include path.
        .target(name: "CFaceDetect",
                cxxSettings: [.unsafeFlags(["-I/usr/include/opencv4"])],
                linkerSettings: [.linkedLibrary("opencv_objdetect"), .linkedLibrary("opencv_imgproc"), .linkedLibrary("opencv_core")]),
        // Global motion between frames (stabilisation): OpenCV's phase correlation behind a small C API.
        .target(name: "CMotion",
                cxxSettings: [.unsafeFlags(["-I/usr/include/opencv4"])],
                linkerSettings: [.linkedLibrary("opencv_imgproc"), .linkedLibrary("opencv_core")]),
        // Shared vocabulary: timestamps, ratios, the frame-index barcode, byte sinks, drop reasons.
        .target(name: "ReelCore", dependencies: ["CLinux"], linkerSettings: [.linkedLibrary("m")]),
        // The only Swift code that touches libav*.
        .target(name: "ReelMedia", dependencies: ["CFFmpeg", "ReelCore"]),
        // Latency histograms: the storage layer's write times, the jitter report's figures.
        .target(name: "ReelMetrics", linkerSettings: [.linkedLibrary("m")]),
        // Where bytes go: plain files (FileStorage) and the preallocated storage pool.
        .target(name: "ReelStorage", dependencies: ["CLinux", "ReelCore", "ReelMetrics"]),
        // Sources and the capture session.
        .target(name: "ReelCapture", dependencies: ["CLinux", "CPeople", "ReelCore", "ReelMedia"]),
        // Microphones: the synthetic test signal and ALSA capture, placed on the session clock.
        .target(name: "ReelAudio", dependencies: ["CALSA", "ReelCore"]),
        // AssetWriter, clip splitting, probe and verify.
        .target(name: "ReelWriter", dependencies: ["ReelCore", "ReelMedia", "ReelStorage", "ReelCapture", "ReelMetrics", "ReelAudio"]),
        // Measurements: `reel jitter`, its contention loads and its report (also `reel record
        // --report`). Above the product: only the CLI depends on it (ArchitectureTests.onlyTheCommandLineDependsOnTheBenchmarks checks it).
        .target(name: "ReelBench", dependencies: ["CLinux", "ReelCore", "ReelMetrics", "ReelStorage"]),
        // The live preview: newest-frame JPEG output and its HTTP server (MJPEG, snapshot, status).
        .target(name: "ReelPreview", dependencies: ["CLinux", "CMicroHTTPD", "CTurboJPEG", "ReelCore", "ReelMedia", "ReelCapture"],
                // The page, embedded in the binary (`PackageResources.index_html`, …): a copied `reel` still serves it.
                resources: [.embedInCode("Web/index.html"), .embedInCode("Web/app.css"), .embedInCode("Web/app.js")]),
        // Capture events (began/cancelled/ended presses from evdev keys, the terminal, the control
        // socket, the page), the event dispatcher and the controls (zoom, exposure bias, ratio).
        .target(name: "ReelControl", dependencies: ["CEvdev", "CLinux", "ReelCore"]),
        // Hardware cost and system pressure: the calibration cache, the cost model, the
        // registry of live sessions, the PSI pressure monitor and the pressure policy.
        .target(name: "ReelCapacity", dependencies: ["ReelCore", "ReelMedia", "ReelStorage"]),
        // Still photos: the zero-shutter-lag frame ring, the shutter, JPEG/HEIC/PNG encoding with EXIF.
        .target(name: "ReelPhoto", dependencies: ["CHeif", "CExif", "CPNG", "CTurboJPEG", "CLinux", "ReelCore", "ReelMedia", "ReelCapture"]),
        // The camera: a session with its movie output, and the outputs, controls and policies
        // around it (preview, photos, capture events, picture controls, secondary action, cost
        // admission, pressure handler). The one place the camera's behaviour lives.
        .target(name: "ReelCamera", dependencies: ["ReelAudio", "ReelFraming", "ReelControl", "ReelPreview", "ReelPhoto", "ReelWriter", "ReelCapture", "ReelCore", "ReelStorage", "ReelMedia", "ReelCapacity"]),
        // Smart framing: faces found (CFaceDetect), framings recommended and applied, Center Stage;
        // stabilisation (global motion from CMotion).
        .target(name: "ReelFraming", dependencies: ["CFaceDetect", "CMotion", "CLinux", "ReelCore", "ReelMedia", "ReelCapture"]),
        // The command line: the option tables, parsing (no side effects), the commands, printing.
        .target(name: "ReelCLI", dependencies: ["ReelAudio", "ReelFraming", "ReelCamera", "ReelControl", "ReelPreview", "ReelPhoto", "ReelWriter", "ReelCapture", "ReelCore", "ReelStorage", "ReelBench", "ReelMedia", "ReelCapacity"]),
        // `reel` itself: a thin entry into ReelCLI.
        .executableTarget(name: "reel", dependencies: ["ReelCLI"]),
        .testTarget(name: "ReelCoreTests", dependencies: ["ReelCore"]),
        .testTarget(name: "ReelMediaTests", dependencies: ["ReelMedia", "ReelCore"]),
        .testTarget(name: "ReelMetricsTests", dependencies: ["ReelMetrics", "ReelBench"]),
        .testTarget(name: "ReelStorageTests", dependencies: ["ReelStorage"]),
        .testTarget(name: "ReelWriterTests", dependencies: ["ReelWriter", "ReelCapture", "ReelMedia", "ReelCore", "ReelAudio"]),
        .testTarget(name: "ReelPreviewTests", dependencies: ["ReelPreview", "ReelCapture", "ReelMedia", "ReelCore"]),
        .testTarget(name: "ReelControlTests", dependencies: ["ReelControl", "ReelCore"]),
        .testTarget(name: "ReelCLITests", dependencies: ["ReelAudio", "ReelFraming", "ReelCLI", "ReelCamera", "ReelWriter", "ReelCore", "ReelStorage", "ReelBench", "ReelCapacity"], swiftSettings: [.unsafeFlags(["-Onone"])]),
        .testTarget(name: "ReelCapacityTests", dependencies: ["ReelCapacity", "ReelCore", "ReelMedia"]),
        .testTarget(name: "ReelCameraTests", dependencies: ["ReelCamera", "ReelFraming", "ReelCapacity", "ReelCapture", "ReelControl", "ReelCore", "ReelPhoto", "ReelPreview", "ReelWriter"]),
        .testTarget(name: "ReelFramingTests", dependencies: ["ReelFraming", "ReelCapture", "ReelCore", "ReelMedia"]),
        .testTarget(name: "ReelPhotoTests", dependencies: ["ReelPhoto", "ReelCapture", "ReelCore", "ReelMedia"]),
    ],
    swiftLanguageModes: [.v6]
)
