// swift-tools-version:6.0
// A package outside Reel that records with the library alone: it depends on Reel by path
// and uses only the `Reel` library product. scripts/outside-package builds and runs it.
import PackageDescription

let package = Package(
    name: "OutsidePackage",
    dependencies: [
        .package(name: "Reel", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "outside-record",
            dependencies: [.product(name: "Reel", package: "Reel")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
