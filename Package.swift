// swift-tools-version:6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "WidgetHost",
    products: [
        .executable(name: "widget-hostd", targets: ["widget-hostd"]),
        .library(name: "WidgetHostKit", targets: ["WidgetHostKit"]),
        .executable(name: "widget-host", targets: ["widget-host"]),
        .executable(name: "widget-host-bench", targets: ["widget-host-bench"]),
        .library(name: "DBus", targets: ["DBus"]),
        .executable(name: "tap-me-swift", targets: ["tap-me-swift"]),
        .executable(name: "emoji-rangers-swift", targets: ["emoji-rangers-swift"]),
        .executable(name: "widget-renderer", targets: ["widget-renderer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", exact: "0.2.0"),
    ],
    targets: [
        // libdbus-1, and nothing else. Only the DBus module imports it, and the
        // benchmark's floor, which measures libdbus without the binding.
        // glibc's malloc.h (malloc_trim), for WidgetHostSystem's Allocator.
        .systemLibrary(name: "CAllocator"),
        .systemLibrary(
            name: "CDBus",
            pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]
        ),
        // The binding: connections, messages, typed values, exported objects.
        // Knows nothing of widgets.
        .target(
            name: "DBus",
            dependencies: ["CDBus"],
            swiftSettings: strict
        ),
        // Starts a private dbus-daemon from a temporary config, for tests,
        // benchmarks and the demo. Never touches the machine's buses.
        .target(
            name: "PrivateBus",
            swiftSettings: strict
        ),
        // Xvfb, its screen read in memory, and a real gnome-shell on it with
        // the extension, for the tests and the benchmark.
        .target(
            name: "VirtualDesktop",
            dependencies: ["PrivateBus"],
            swiftSettings: strict
        ),
        // The model: registry, desktop entries, rules. Plain Swift, no D-Bus.
        // The lint's tables of the rendering vocabulary are generated from
        // vocabulary/vocabulary.json, its one declaration; the methods' a{sv}
        // options from the annotations in dbus/*.xml, theirs.
        .target(
            name: "WidgetHostCore",
            swiftSettings: strict,
            plugins: ["VocabularyCodegen", "DBusCodegen"]
        ),
        // What the model needs of the system, behind the model's protocols:
        // the state directory's files, the journal writer's thread, a
        // process's /proc files, the desktop entries on disk, the allocator.
        .target(
            name: "WidgetHostSystem",
            dependencies: ["CAllocator", "DBus", "WidgetHostCore"],
            swiftSettings: strict
        ),
        .executableTarget(name: "vocabulary-codegen", swiftSettings: strict),
        .plugin(name: "VocabularyCodegen", capability: .buildTool(), dependencies: ["vocabulary-codegen"]),
        // Build-time generator and plugin: the Swift of every interface
        // (names, typed server protocols and binders, signals, properties,
        // client proxies) derived from its XML, the one declaration.
        .executableTarget(
            name: "dbus-codegen",
            dependencies: ["DBus"],
            swiftSettings: strict
        ),
        .plugin(
            name: "DBusCodegen",
            capability: .buildTool(),
            dependencies: ["dbus-codegen"]
        ),
        // The generated code of dbus/*.xml, and of the peers' interfaces the
        // host calls (the XML files in this target's folder).
        .target(
            name: "WidgetHostInterfaces",
            dependencies: ["DBus"],
            exclude: ["org.freedesktop.Application.xml"],
            swiftSettings: strict,
            plugins: ["DBusCodegen"]
        ),
        // The Swift library for apps and renderers.
        .target(
            name: "WidgetHostKit",
            dependencies: ["DBus", "WidgetHostCore", "WidgetHostWire", "WidgetHostInterfaces"],
            swiftSettings: strict
        ),
        // Example apps and a renderer on the library.
        .executableTarget(name: "tap-me-swift", dependencies: ["WidgetHostKit"], path: "examples/swift/TapMe", swiftSettings: strict),
        .executableTarget(
            name: "emoji-rangers-swift", dependencies: ["WidgetHostKit"], path: "examples/swift/EmojiRangers", swiftSettings: strict),
        .executableTarget(name: "widget-renderer", dependencies: ["WidgetHostKit"], path: "examples/swift/Renderer", swiftSettings: strict),
        // The model's values as D-Bus values, for the service and the library.
        .target(name: "WidgetHostWire", dependencies: ["DBus", "WidgetHostCore"], swiftSettings: strict),
        // Adapts the model to the bus.
        .target(
            name: "WidgetHostService",
            dependencies: [
                "DBus",
                "WidgetHostCore",
                "WidgetHostSystem",
                "WidgetHostWire",
                "WidgetHostInterfaces",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // The daemon's command, run by widget-hostd and by widget-host when called
        // by that name: the package ships one binary under both names.
        .target(
            name: "WidgetHostDaemon",
            dependencies: [
                "WidgetHostCore",
                "WidgetHostSystem",
                "WidgetHostService",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(name: "widget-hostd", dependencies: ["WidgetHostDaemon"], swiftSettings: strict),
        .executableTarget(
            name: "widget-host",
            dependencies: [
                "WidgetHostKit",
                "WidgetHostDaemon",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "widget-host-bench",
            dependencies: [
                "CDBus",
                "DBus",
                "PrivateBus",
                "VirtualDesktop",
                "WidgetHostCore",
                "WidgetHostInterfaces",
                "WidgetHostService",
                "WidgetHostSystem",
                // Built with the benchmark, which runs it as its own process.
                "widget-hostd",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DBusTests",
            dependencies: ["DBus", "PrivateBus"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WidgetHostCoreTests",
            dependencies: ["WidgetHostCore", "WidgetHostSystem", "WidgetHostWire", "PrivateBus"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "WidgetHostServiceTests",
            dependencies: [
                "DBus", "PrivateBus", "VirtualDesktop", "WidgetHostService", "WidgetHostInterfaces", "WidgetHostKit", "widget-hostd", "widget-host", "tap-me-swift",
                "emoji-rangers-swift", "widget-renderer",
            ],
            swiftSettings: strict
        ),
    ]
)

// Coverage-guided fuzz targets (libFuzzer), one for each parser of outside
// input, declared only when WIDGETHOST_FUZZ is set: the normal build never
// sees them. scripts/fuzz builds them with `-sanitize=fuzzer` and runs them
// (docs/daemon.md#fuzzing).
if Context.environment["WIDGETHOST_FUZZ"] != nil {
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("fuzz-viewtree", ["WidgetHostCore"]),
        ("fuzz-bundle", ["WidgetHostCore"]),
        ("fuzz-desktop-entry", ["WidgetHostCore"]),
        ("fuzz-mimeapps", ["WidgetHostCore"]),
        ("fuzz-flatpak-info", ["WidgetHostCore"]),
        ("fuzz-cgroup", ["WidgetHostCore"]),
        ("fuzz-snapshot", ["WidgetHostCore"]),
        ("fuzz-journal", ["WidgetHostCore"]),
        ("fuzz-dbus", ["DBus", "WidgetHostCore", "WidgetHostWire", "WidgetHostService"]),
    ]
    package.targets += [
        .systemLibrary(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer", "WidgetHostCore"], path: "Fuzz/FuzzSupport", swiftSettings: strict),
    ]
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name, dependencies: ["FuzzSupport"] + target.dependencies, path: "Fuzz/\(target.name)",
                swiftSettings: strict))
        package.products.append(.executable(name: target.name, targets: [target.name]))
    }
}
