// swift-tools-version:6.1
//
// screentime — Screen Time for Linux. The layers are described in DESIGN.md and README.md; each
// target is added when its first real code lands, and dependencies point down only.
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// `make test` tests the release build, the one `make install` and `make deb` install: the modules
// the tests `@testable import` are compiled for testing in release builds too, which changes no
// code the programs run. (Not the client API's modules and what they use: a package that depends
// on those may not carry unsafe flags.)
let testableSettings: [SwiftSetting] =
    strictSettings + [.unsafeFlags(["-enable-testing"], .when(configuration: .release))]

// The tests themselves are not optimised, in a release build as in a debug one: they compile in
// half the time.
let testSettings: [SwiftSetting] = strictSettings + [.unsafeFlags(["-Onone"], .when(configuration: .release))]

// How the installed programs are linked (release builds): they export no symbol. Swift's
// static runtime links every executable with `--export-dynamic`, which makes each symbol of the
// package's own code and of its dependencies (41,599 in screentime-web) a dynamic symbol the
// loader must relocate and `--gc-sections` must keep, used or not. A version script that makes
// them all local lets the linker drop unused code; see `make deb` and `make bench` for the sizes
// and memory this gives. They are linked by lld with packed relative relocations (DT_RELR, glibc
// 2.36): screentime-web's 56,000 relative relocations take 11 KB instead of the 1.35 MB
// that the loader reads, and keeps resident, at every start.
let programLinking: [LinkerSetting] = [
    .unsafeFlags(
        [
            "-Xlinker", "--version-script=\(Context.packageDirectory)/Sources/programs.map", "-use-ld=lld",
            "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
        ],
        .when(configuration: .release))
]

let package = Package(
    name: "screentime",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ScreenTimeCore", targets: ["ScreenTimeCore"]),
        .library(name: "ScreenTimeIPC", targets: ["ScreenTimeIPC"]),
        .library(name: "ScreenTimeClient", targets: ["ScreenTimeClient"]),
        .executable(name: "screentimed", targets: ["screentimed"]),
        .executable(name: "screentime", targets: ["screentime"]),
        .executable(name: "screentime-shield", targets: ["screentime-shield"]),
        .executable(name: "screentime-web", targets: ["screentime-web"]),
        // The client API, with Apple's names: guardian apps and their extensions import these.
        .library(name: "FamilyControls", targets: ["FamilyControls"]),
        .library(name: "ManagedSettings", targets: ["ManagedSettings"]),
        .library(name: "ManagedSettingsUI", targets: ["ManagedSettingsUI"]),
        .library(name: "DeviceActivity", targets: ["DeviceActivity"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        // The dashboard (screentime-web) alone: HTTP, TLS, its self-signed certificate.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
    ],
    targets: [
        // The model and every decision: tokens, selections, stores and their merge, schedules,
        // events and the usage ledger. Pure Swift, no I/O, an injected clock and calendar.
        .target(
            name: "ScreenTimeCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSettings
        ),
        // The control socket's protocol: length-framed, versioned JSON messages, shared by the
        // agent, the CLI and the client modules.
        .target(
            name: "ScreenTimeIPC",
            dependencies: ["ScreenTimeCore"],
            swiftSettings: strictSettings
        ),
        // What Swift cannot reach through Glibc: SO_PEERCRED's struct ucred (needs _GNU_SOURCE),
        // descriptors passed over a socket (CMSG macros), recvmmsg. Links nothing beyond libc:
        // the client library uses it too.
        .target(
            name: "CLinuxShim",
            cSettings: [.define("_GNU_SOURCE")]
        ),
        // A PAM conversation (a C callback with an app-data pointer), for the agent alone.
        .target(
            name: "CPAM",
            linkerSettings: [.linkedLibrary("pam")]
        ),
        // libnetfilter_queue, for the children's DNS packets (Debian's libnetfilter-queue-dev).
        .systemLibrary(
            name: "CNetfilterQueue",
            pkgConfig: "libnetfilter_queue",
            providers: [.apt(["libnetfilter-queue-dev"])]
        ),
        // libnl-3 and libnl-route-3 (Debian's libnl-3-dev, libnl-route-3-dev): every netlink
        // socket the agent opens (the proc connector, an extension's loopback). libnl-route-3.0
        // requires libnl-3.0: pkg-config gives both.
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev"])]
        ),
        // The launcher's fork-to-exec code: async-signal-safe C, and the extension's loopback
        // brought up through libnl-route-3 (so not in CLinuxShim, which links only libc).
        .target(name: "CLauncher", dependencies: ["CNetlink"]),
        // libxcb with X-Resource, SYNC and XInput 2 (Debian's libxcb1-dev, libxcb-res0-dev,
        // libxcb-sync-dev, libxcb-xinput-dev): the agent's own reading of an X11 session's focus,
        // clicks and idle time. Plain C with a small
        // interface, because SYNC's alarms and X-Resource's replies are variable-length structures.
        .target(
            name: "CXCB",
            linkerSettings: [
                .linkedLibrary("xcb"), .linkedLibrary("xcb-res"), .linkedLibrary("xcb-sync"),
                .linkedLibrary("xcb-xinput"),
            ]
        ),
        // libsystemd's sd-bus (Debian's libsystemd-dev): logind's sessions, and their idle and
        // locked hints, as signals. Plain C: reading a D-Bus message takes variadic calls.
        .target(name: "CLogind", linkerSettings: [.linkedLibrary("systemd")]),
        // GTK 4 (Debian's libgtk-4-dev), for the shield window alone.
        .systemLibrary(
            name: "CGTK",
            pkgConfig: "gtk4",
            providers: [.apt(["libgtk-4-dev"])]
        ),
        // libqrencode (Debian's libqrencode-dev), for the pairing QR code of `screentime web pair`.
        .systemLibrary(
            name: "CQRencode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]
        ),
        // libcap (Debian's libcap-dev), for dropping the agent's capabilities after setup.
        .systemLibrary(
            name: "CCapability",
            pkgConfig: "libcap",
            providers: [.apt(["libcap-dev"])]
        ),
        // libbpf (Debian's libbpf-dev), for the DNS fast path's kernel programs: their source in
        // bpf/ (compiled by `make bpf`, not by SwiftPM), the compiled object in a header.
        .target(
            name: "CDNSFastPath",
            exclude: ["bpf"],
            linkerSettings: [.linkedLibrary("bpf")]
        ),
        // The kernel and the desktop: sockets, users and groups, PAM, files, desktop entries,
        // the netfilter queue and the firewall.
        .target(
            name: "LinuxSupport",
            dependencies: [
                "CCapability", "CDNSFastPath", "CLauncher", "CLinuxShim", "CNetfilterQueue", "CNetlink", "CPAM", "CXCB",
                "CLogind",
                "ScreenTimeCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testableSettings
        ),
        // The typed client of the control socket: the CLI, guardian apps, the shield window and
        // extensions. None of the agent's C libraries (`ldd screentime` shows no libpam, libcap,
        // libnetfilter_queue).
        .target(
            name: "ScreenTimeClient",
            dependencies: ["CLinuxShim", "ScreenTimeIPC"],
            swiftSettings: strictSettings
        ),
        // The client API (Apple's FamilyControls, ManagedSettings, ManagedSettingsUI, DeviceActivity),
        // over the typed client: what a Swift guardian app and its extensions import.
        .target(
            name: "FamilyControls",
            dependencies: ["CLinuxShim", "ScreenTimeCore", "ScreenTimeIPC", "ScreenTimeClient"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ManagedSettings",
            dependencies: ["ScreenTimeCore", "ScreenTimeIPC", "ScreenTimeClient"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ManagedSettingsUI",
            dependencies: ["ManagedSettings", "ScreenTimeIPC", "ScreenTimeClient"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "DeviceActivity",
            dependencies: ["ScreenTimeCore", "ScreenTimeIPC", "ScreenTimeClient"],
            swiftSettings: strictSettings
        ),
        // SQLite (Debian's libsqlite3-dev), for the agent's state.
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // The agent's state database: one connection, read and written in transactions, its
        // migrations, and Swift values in columns (dates as GRDB stored them). FoundationEssentials
        // only: GRDB, which it replaces, brought Foundation and ICU into the agent.
        .target(
            name: "ScreenTimeSQLite",
            dependencies: ["CSQLite", "ScreenTimeCore"],
            swiftSettings: strictSettings
        ),
        // The agent's services: policy and persistence, the control server.
        .target(
            name: "ScreenTimeAgent",
            dependencies: [
                "ScreenTimeCore", "ScreenTimeIPC", "LinuxSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                "ScreenTimeSQLite",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: testableSettings
        ),
        .executableTarget(
            name: "screentimed",
            dependencies: [
                "ScreenTimeAgent", "LinuxSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["link-order.txt"],
            swiftSettings: strictSettings,
            // The agent runs all day: the Swift runtime linked into it, only what it uses, costs it
            // fewer resident pages than the shared libraries' (25.5 against 30.1 MB with a child's
            // session open; see docs/developer-guide.md). FoundationEssentials' static library
            // needs the two below, which the modules compiled for the shared runtime do not name.
            // The functions it runs are laid out together, in the order of link-order.txt (`make
            // link-order`, scripts/link-order): the kernel keeps 64 kB of code resident around each
            // page touched, so scattered among the rest they kept 11.9 MB of its code in memory, and
            // together 7.8 MB. SwiftPM does not relink when only the list changes.
            linkerSettings: programLinking + [
                .unsafeFlags(
                    [
                        "-static-stdlib", "-l_FoundationCollections", "-l_FoundationCShims",
                        "-Xlinker",
                        "--symbol-ordering-file=\(Context.packageDirectory)/Sources/screentimed/link-order.txt",
                        "-Xlinker", "--no-warn-symbol-ordering",
                    ],
                    .when(configuration: .release))
            ]
        ),
        // What the report page and the dashboard both draw: durations, limits, charts as SVG.
        .target(
            name: "ScreenTimeReports",
            dependencies: ["ScreenTimeIPC"],
            swiftSettings: strictSettings
        ),
        // The guardian's dashboard: routes, pages, sessions and CSRF, the certificate; over the
        // control socket, with no authority of its own.
        .target(
            name: "ScreenTimeWeb",
            dependencies: [
                "ScreenTimeCore", "ScreenTimeIPC", "ScreenTimeClient", "ScreenTimeReports",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            swiftSettings: testableSettings
        ),
        .executableTarget(
            name: "screentime-web",
            dependencies: [
                "ScreenTimeWeb", "ScreenTimeClient",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strictSettings,
            linkerSettings: programLinking
        ),
        .executableTarget(
            name: "screentime",
            dependencies: [
                "ScreenTimeCore", "ScreenTimeIPC", "ScreenTimeClient", "FamilyControls", "ScreenTimeReports",
                "CQRencode", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: testableSettings,
            linkerSettings: programLinking
        ),
        // (The PAM module, Sources/pam_screentime, is plain C built by the Makefile: SwiftPM would
        // link the Swift runtime into every program that logs anyone in.)
        // The shield window the child sees (GTK 4), started by the agent in the child's session.
        .executableTarget(
            name: "screentime-shield",
            dependencies: ["CGTK", "ScreenTimeCore", "ScreenTimeIPC"],
            swiftSettings: strictSettings,
            linkerSettings: programLinking
        ),
        // The seeds' apps, ported (Examples/): each an app and its extensions, built on the client API.
        .executableTarget(
            name: "homework",
            dependencies: ["FamilyControls", "ManagedSettings", "ManagedSettingsUI", "DeviceActivity"],
            path: "Examples/Homework/Homework"
        ),
        .executableTarget(
            name: "homework-monitor", dependencies: ["DeviceActivity", "FamilyControls", "ManagedSettings"],
            path: "Examples/Homework/Monitor"
        ),
        .executableTarget(
            name: "homework-shield", dependencies: ["ManagedSettings", "ManagedSettingsUI"],
            path: "Examples/Homework/ShieldConfiguration"
        ),
        .executableTarget(
            name: "homework-action", dependencies: ["ManagedSettings"], path: "Examples/Homework/ShieldAction"
        ),
        .executableTarget(
            name: "worklog", dependencies: ["FamilyControls", "ManagedSettings", "DeviceActivity"],
            path: "Examples/Worklog/Worklog"
        ),
        .executableTarget(
            name: "worklog-monitor", dependencies: ["DeviceActivity", "ManagedSettings"],
            path: "Examples/Worklog/Monitor"
        ),
        .executableTarget(name: "worklog-report", dependencies: ["DeviceActivity"], path: "Examples/Worklog/Report"),
        // `make bench`: figures beside baselines, printed, never asserted.
        .executableTarget(
            name: "ScreenTimeBenchmarks",
            dependencies: [
                "LinuxSupport", "ProcConnectorBaseline", "ScreenTimeCore",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/ScreenTimeBenchmarks",
            swiftSettings: strictSettings
        ),
        // The proc connector's reader before libnl-3, the baseline of the fork-storm figure only.
        .target(
            name: "ProcConnectorBaseline",
            path: "Benchmarks/ProcConnectorBaseline",
            cSettings: [.define("_GNU_SOURCE")]
        ),
        // Tests that block (on real processes, sockets, semaphores) run each on a thread of its
        // own (`.threadsOfTheirOwn`). A target of its own, with no dependency: the suites that need
        // nothing else of the kit (the root integration tests) compile beside the agent, not
        // after it.
        .target(
            name: "ScreenTimeTestThreads",
            path: "Tests/ScreenTimeTestThreads",
            swiftSettings: testSettings
        ),
        // What the in-process tests share: a table of accounts, a manual clock, a temporary
        // directory, and the agent's policy service, scheduler and control server in the test's
        // own process (no root, no kernel edges); with `.threadsOfTheirOwn`.
        .target(
            name: "ScreenTimeTestKit",
            dependencies: [
                "ScreenTimeAgent", "ScreenTimeClient", "ScreenTimeCore", "ScreenTimeIPC", "LinuxSupport",
                "ScreenTimeTestThreads", .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/ScreenTimeTestKit",
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "ScreenTimeCoreTests",
            dependencies: [
                "ScreenTimeCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "ScreenTimeIPCTests",
            dependencies: ["ScreenTimeIPC"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "LinuxSupportTests",
            dependencies: ["LinuxSupport", "ScreenTimeTestThreads"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "ScreenTimeAgentTests",
            dependencies: [
                "ScreenTimeAgent", "ScreenTimeIPC", "ScreenTimeSQLite", "LinuxSupport", "ScreenTimeTestKit",
            ],
            exclude: ["Fixtures"],
            swiftSettings: testSettings
        ),
        // The client API against the real agent's services in the test's own process (no root), and
        // a file written as for Apple's frameworks that must build unchanged.
        .testTarget(
            name: "ClientAPITests",
            dependencies: [
                "FamilyControls", "ManagedSettings", "ManagedSettingsUI", "DeviceActivity", "ScreenTimeAgent",
                "ScreenTimeClient", "ScreenTimeIPC", "ScreenTimeCore", "LinuxSupport", "ScreenTimeTestKit",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testSettings
        ),
        // The dashboard's routes over HTTP on loopback, against the real agent's router in this
        // process (no root): sessions, CSRF, refusals, the pages' numbers.
        .testTarget(
            name: "ScreenTimeWebTests",
            dependencies: [
                "ScreenTimeWeb", "ScreenTimeAgent", "ScreenTimeIPC", "ScreenTimeCore", "LinuxSupport",
                "ScreenTimeTestKit", .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: testSettings
        ),
        // The command line's own pieces (what it prints), without an agent.
        .testTarget(
            name: "ScreenTimeCLITests",
            dependencies: ["screentime", "ScreenTimeReports", "ScreenTimeTestThreads"],
            swiftSettings: testSettings
        ),
        // Real binaries, real users, real sockets; needs root (CI is root; `make test` fails if
        // these are skipped).
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "ScreenTimeIPC", "ScreenTimeCore", "ScreenTimeClient", "LinuxSupport", "ScreenTimeTestThreads",
            ],
            exclude: ["Fixtures"],
            swiftSettings: testSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
