// swift-tools-version:6.1
//
// screentime — Screen Time for Linux. The layers are described in DESIGN.md and README.md; each
// target is added when its first real code lands, and dependencies point down only.
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "screentime",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ScreenTimeCore", targets: ["ScreenTimeCore"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
    ],
    targets: [
        // The model and every decision: tokens, selections, stores and their merge, schedules,
        // events and the usage ledger. Pure Swift, no I/O, an injected clock and calendar.
        .target(
            name: "ScreenTimeCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSettings
        ),
        // `make bench`: figures beside baselines, printed, never asserted.
        .executableTarget(
            name: "ScreenTimeBenchmarks",
            dependencies: ["ScreenTimeCore", .product(name: "Crypto", package: "swift-crypto")],
            path: "Benchmarks/ScreenTimeBenchmarks",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ScreenTimeCoreTests",
            dependencies: [
                "ScreenTimeCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: strictSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
