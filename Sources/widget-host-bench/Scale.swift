import ArgumentParser
import DBus
import Foundation
import PrivateBus
import WidgetHostCore
import WidgetHostInterfaces
import WidgetHostService
import WidgetHostSystem

/// What a desktop service costs at rest and at scale: widget-hostd restored
/// from a state directory holding N widgets, measured from exec to owning its
/// name, then its resident memory, a tap against the floor, and one
/// GetManagedObjects (docs/daemon.md#footprint).
struct ScaleBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "Idle memory; memory, bytes per widget, start-up time and tap p50 over the floor at 100, 10,000 and 100,000 widgets.")

    @Option(help: "Placed-widget counts to measure at (besides none).") var scales: [Int] = [100, 10_000, 100_000]
    @Option(help: "Taps (and floor round trips) measured at each count.") var count = 1_000
    @Option(help: "Seconds to let the host settle before reading its memory.") var settle = 1.0
    @Option(help: "The widget-hostd to measure, such as the installed /usr/bin/widget-hostd (default: the one built beside this benchmark).")
    var daemon: String?

    func run() async throws {
        say("widget-host-bench scale — widget-hostd as its own process, restored from a state directory in \(Self.scratch)")
        say("daemon: \(daemonPath(daemon))")
        say("cores: \(ProcessInfo.processInfo.activeProcessorCount)")
        say("")
        var idle = 0
        var results: [Int: Point] = [:]
        for scale in [0] + scales.sorted() {
            let point = try await measure(scale)
            results[scale] = point
            if scale == 0 { idle = point.rss }
            let perWidget = scale > 0 ? String(format: "  %6.0f B/widget", Double(point.rss - idle) * 1024 / Double(scale)) : ""
            row("\(scale) widgets: start (exec → name owned)", String(format: "%8.3f s", point.start))
            row("\(scale) widgets: idle RSS", mib(point.rss) + perWidget)
            row("\(scale) widgets: tap p50 / floor p50", us(point.tap) + " / " + us(point.floor) + String(format: "  = %.3f", point.tap / point.floor))
            row("\(scale) widgets: GetManagedObjects, RSS after", String(format: "%8.1f ms", point.managedObjects * 1000) + "  " + mib(point.rssAfter))
        }
        say("")
        row("idle RSS, no widgets (target ≤ 10 MiB)", mib(idle))
        if let largest = scales.max(), let point = results[largest] {
            row("RSS at \(largest) widgets (target ≤ 64 MiB)", mib(point.rss))
            row("start at \(largest) widgets (target ≤ 1.5 s)", String(format: "%8.3f s", point.start))
            row(
                "RSS after one GetManagedObjects at \(largest) widgets / before (target ≤ 1.2)",
                String(format: "%8.2f", Double(point.rssAfter) / Double(point.rss)) + "  (" + mib(point.rssAfter) + " / " + mib(point.rss) + ")")
            if let smallest = scales.min(), let low = results[smallest], smallest != largest {
                row("tap p50 over floor at \(largest) / at \(smallest)", String(format: "%8.3f", (point.tap / point.floor) / (low.tap / low.floor)))
            }
        }
    }

    struct Point {
        var start: Double
        var rss: Int
        var tap: Double
        var floor: Double
        var managedObjects: Double
        var rssAfter: Int
    }

    static let scratch = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()

    func mib(_ kib: Int) -> String { String(format: "%8.1f MiB", Double(kib) / 1024) }

    /// A state directory with `scale` widgets of one app (as a host leaves it), then the host started on it.
    func measure(_ scale: Int) async throws -> Point {
        let stateDirectory = Self.scratch + "/widget-host-bench-scale-\(getpid())-\(scale)"
        try? FileManager.default.removeItem(atPath: stateDirectory)
        defer { try? FileManager.default.removeItem(atPath: stateDirectory) }
        try Self.writeState(widgets: scale, to: stateDirectory)

        let bus = try PrivateBus()
        defer { bus.stop() }
        let echo = try DirectLibdbus.EchoServer(address: bus.address)
        let echoName = echo.uniqueName
        echo.start()
        defer { echo.stop() }
        let watcher = try await Connection.connect(.address(bus.address), label: "bench-scale")
        defer { watcher.close() }

        let host = Process()
        host.executableURL = URL(fileURLWithPath: daemonPath(daemon))
        host.arguments = [
            "--address", bus.address, "--log-level", "warning", "--state-dir", stateDirectory, "--max-widgets-per-app", "1000000",
            "--max-app-bytes", "\(Footprint.Budgets.largestTotal)", "--max-host-bytes", "\(Footprint.Budgets.largestTotal)",
        ]
        host.environment = bus.environment()
        let started = monotonicNanoseconds()
        try PrivateBus.withCleanSignalMask { try host.run() }
        defer {
            if host.isRunning {
                host.terminate()
                host.waitUntilExit()
            }
        }
        while try await watcher.nameOwner(Host1Apps.busName) == nil {
            guard host.isRunning, monotonicNanoseconds() - started < 120_000_000_000 else {
                throw PrivateBusError("widget-hostd did not take its name with \(scale) widgets")
            }
            try await Task.sleep(for: .milliseconds(1))
        }
        let start = Double(monotonicNanoseconds() - started) / 1e9
        try await Task.sleep(for: .seconds(settle))
        let rss = residentKiB(host.processIdentifier)

        // A tap on one more widget, whose app answers at once, against the floor.
        let app = try DirectLibdbus.EchoServer(address: bus.address, answeringEveryCall: true)
        let widget = try await registerBenchApp("org.example.Tapped", on: { try app.call($0) }, watcher)
        _ = try app.call(Host1Widget.Proxy(watcher, path: widget).setContentMessage(contentJSON: #"{"type":"text","id":"t","widgetURL":"bench://open"}"#))
        app.start()
        defer { app.stop() }
        let renderer = try DirectLibdbus.Client(address: bus.address)
        let floorCall: @Sendable () throws -> Message = {
            try Message.methodCall(destination: echoName, path: DirectLibdbus.echoPath, interface: DirectLibdbus.echoInterface,
                                   member: "Echo", arguments: [.string("x")])
        }
        let tap: @Sendable () throws -> Message = { try Host1Widget.Proxy(watcher, path: widget).tapMessage(elementID: "t", options: [:]) }
        let measured = try await alternatingLatency(renderer, count, [floorCall, tap])
        let (floor, taps) = (measured[0], measured[1])
        let managed = try Message.methodCall(
            destination: Host1Apps.busName, path: Host1Apps.objectPath, interface: StandardInterfaces.objectManager,
            member: StandardInterfaces.getManagedObjects, arguments: [])
        let managedNanoseconds = try await onThread { try renderer.roundTrip(managed) }
        try await Task.sleep(for: .seconds(settle))
        let rssAfter = residentKiB(host.processIdentifier)
        host.terminate()
        host.waitUntilExit()
        return Point(
            start: start, rss: rss, tap: taps.p50, floor: floor.p50, managedObjects: Double(managedNanoseconds) / 1e9, rssAfter: rssAfter)
    }

    /// The state a host that placed `widgets` widgets of one app (each with a
    /// small view tree) leaves: a snapshot, as a clean stop writes it.
    static func writeState(widgets: Int, to directory: String) throws {
        var state = DurableState()
        let appID = "org.example.Scale"
        state.bundles[appID] = #"{"widgets":[{"kind":"K","families":["systemSmall","systemMedium"],"displayName":"Scale"}]}"#
        for n in stride(from: 1, through: widgets, by: 1) {
            let id = "w\(n)"
            state.widgets[id] = StoredWidget(
                id: id, appID: appID, kind: "K", family: .systemSmall, configuration: ["n": .int(Int64(n))],
                content: #"{"type":"vstack","widgetURL":"scale://w/\#(n)","children":[{"type":"text","id":"t","text":"Widget \#(n)"}]}"#)
        }
        state.nextWidgetNumber = UInt64(widgets + 1)
        let (stateDirectory, _) = try StateDirectory.open(directory: directory)
        try stateDirectory.compact(state)
    }
}
