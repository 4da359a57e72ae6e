import ArgumentParser
import DBus
import Foundation

import Histogram
import PrivateBus
import WidgetHostCore
import WidgetHostInterfaces
import WidgetHostService

// widget-host-bench: performance measured against its floor in the same run.
//
//   swift run -c release widget-host-bench binding
//
// The floor is a direct libdbus round trip (blocking client, plain filter
// echo server); the binding's figures are divided by it.

@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "widget-host-bench",
        abstract: "Measures WidgetHost against a direct libdbus floor on a private bus.",
        subcommands: [
            BindingBench.self, TapsBench.self, UpdatesBench.self, ScaleBench.self, ShellBench.self, PlasmaBench.self, RelayCommand.self,
        ])

    /// A run ends what it started however it ends: its buses, hosts, relays
    /// and desktops carry its mark, which an interrupt (Ctrl-C, SIGTERM,
    /// SIGHUP) ends before the run exits; and an output nobody reads any
    /// more (`| head`) fails the writes, not the run, whose own ends then run.
    static func main() async {
        guard getenv(Teardown.markVariable) == nil else { return await main(nil) }  // a relay this run started
        signal(SIGPIPE, SIG_IGN)
        let mark = "\(getpid())-\(UUID().uuidString.prefix(8))"
        setenv(Teardown.markVariable, mark, 1)
        teardown.add { Teardown.killMarked(mark) }
        let interrupts = teardown.onSignals([SIGINT, SIGTERM, SIGHUP])
        // Also when a run fails: the parser ends the process with exit(3).
        atexit { Bench.teardown.run() }
        await main(nil)
        interrupts.forEach { $0.cancel() }
    }

    /// The run's teardown: last, what still carries its mark; before it, the
    /// steps a benchmark adds (its folders, its bus, its renderer).
    static let teardown = Teardown()
}

struct Stats {
    var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    mutating func record(_ nanoseconds: UInt64) { _ = histogram.record(nanoseconds) }
    var p50: Double { Double(histogram.valueAtPercentile(50)) / 1000 }
    var p99: Double { Double(histogram.valueAtPercentile(99)) / 1000 }
}

/// A name and its value, in a column from the 51st character on; a longer
/// name is printed whole (padding would cut it), then its value.
func row(_ name: String, _ value: String) {
    say(name.padding(toLength: max(50, name.count + 1), withPad: " ", startingAt: 0) + value)
}

func us(_ v: Double) -> String { String(format: "%8.1f µs", v) }

/// Runs blocking work on a fresh thread, off the cooperative pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

let echoXML = """
    <node><interface name="\(DirectLibdbus.echoInterface)">
      <method name="Echo"><arg name="text" type="s" direction="in"/><arg name="text" type="s" direction="out"/></method>
    </interface></node>
    """

struct BindingBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "binding",
        abstract: "Echo round trip: direct libdbus vs the DBus binding (p50, p99, pipelined calls/s).")

    @Option(help: "Round trips measured for latency.") var count = 20_000
    @Option(help: "Calls for the pipelined throughput run.") var pipelined = 200_000
    @Option(help: "Calls in flight in the pipelined run.") var window = 64
    @Option(help: "Echo payload size in bytes.") var payload = 64

    func run() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let text = String(repeating: "x", count: payload)
        let count = self.count, total = self.pipelined, window = self.window
        say("widget-host-bench binding — private bus, payload \(payload) B, \(count) round trips, \(total) pipelined (window \(window))")
        say("cores: \(ProcessInfo.processInfo.activeProcessorCount)")

        // Floor: direct libdbus both ends.
        let echo = try DirectLibdbus.EchoServer(address: bus.address)
        echo.start()
        defer { echo.stop() }
        let direct = try DirectLibdbus.Client(address: bus.address)
        let echoName = echo.uniqueName

        // The binding both ends.
        let server = try await Connection.connect(.address(bus.address), label: "bench-server")
        var exported = ExportedInterface(try InterfaceDescription.parse(xml: echoXML)[0])
        exported.method("Echo", .immediate { call in call.arguments })
        try server.export([exported], at: DirectLibdbus.echoPath)
        let client = try await Connection.connect(.address(bus.address), label: "bench-client")
        let serverName = server.uniqueName!
        let message: @Sendable () throws -> Message = { try Message.methodCall(
            destination: serverName, path: DirectLibdbus.echoPath, interface: DirectLibdbus.echoInterface,
            member: "Echo", arguments: [.string(text)]) }

        // Round trips in alternating blocks of 100, floor then binding, so a
        // machine busy with something else slows both alike. The binding's
        // caller runs on the connection's executor, as the host's actor does.
        _ = try await onThread { for _ in 0..<2000 { _ = try direct.roundTrip(to: echoName, payload: text) } }
        var floor = Stats(), binding = Stats()
        try await withTaskExecutorPreference(client.executor) {
            for _ in 0..<2000 { _ = try await client.call(message()) }
            var done = 0
            while done < count {
                let block = min(100, count - done)
                let samples = try await onThread { try (0..<block).map { _ in try direct.roundTrip(to: echoName, payload: text) } }
                for sample in samples { floor.record(sample) }
                for _ in 0..<block {
                    let m = try message()
                    let start = monotonicNanoseconds()
                    _ = try await client.call(m)
                    binding.record(monotonicNanoseconds() - start)
                }
                done += block
            }
        }
        // Pipelined: three rounds, each the floor then the binding.
        var floorSeconds = 0.0, bindingSeconds = 0.0
        let rounds = 3
        for round in 0..<rounds {
            let share = total / rounds + (round < total % rounds ? 1 : 0)
            let rate = try await onThread { direct.pipelined(to: echoName, payload: text, total: share, window: window) }
            floorSeconds += Double(share) / rate
            let started = monotonicNanoseconds()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<window {
                    let laneShare = share / window + (lane < share % window ? 1 : 0)
                    group.addTask {
                        for _ in 0..<laneShare { _ = try await client.call(message()) }
                    }
                }
                try await group.waitForAll()
            }
            bindingSeconds += Double(monotonicNanoseconds() - started) / 1e9
        }
        let floorRate = Double(total) / floorSeconds, bindingRate = Double(total) / bindingSeconds
        client.close()
        server.close()

        say("")
        row("direct libdbus round trip p50 / p99", us(floor.p50) + " / " + us(floor.p99))
        row("binding round trip p50 / p99", us(binding.p50) + " / " + us(binding.p99))
        row("direct libdbus pipelined", String(format: "%8.0f calls/s", floorRate))
        row("binding pipelined", String(format: "%8.0f calls/s", bindingRate))
        say("")
        row("ratio p50 binding / direct (target ≤ 1.15)", String(format: "%8.3f", binding.p50 / floor.p50))
        row("ratio p99 binding / direct", String(format: "%8.3f", binding.p99 / floor.p99))
        row("ratio pipelined binding / direct", String(format: "%8.3f", bindingRate / floorRate))
    }
}

/// Prints a line and flushes at once, so progress shows when piped.
func say(_ line: String) {
    print(line)
    fflush(nil)
}

/// This executable, which runs parts of a benchmark as processes of their own.
let benchExecutable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]

/// Where the package's executables are: next to this one.
let binDirectory = URL(fileURLWithPath: benchExecutable).deletingLastPathComponent().path

/// The widget-hostd a benchmark starts: `option` (such as the installed
/// /usr/bin/widget-hostd, to measure what the package ships), else the one
/// built beside the benchmark.
func daemonPath(_ option: String?) -> String { option ?? binDirectory + "/widget-hostd" }

/// Connects to `bus` once widget-hostd owns its name there (it was just started).
func connectOnceHostIsUp(_ bus: PrivateBus, label: String) async throws -> Connection {
    let client = try await Connection.connect(.address(bus.address), label: label)
    for _ in 0..<500 {
        if try await client.nameOwner(Host1Apps.busName) != nil { return client }
        try await Task.sleep(for: .milliseconds(10))
    }
    client.close()
    throw PrivateBusError("widget-hostd did not start (looked in \(binDirectory))")
}

/// Takes `appID`'s name on the connection `call` sends from (protocol widgethost
/// is delivered to the registering connection, which must own the name), registers
/// the app there with a one-kind bundle, places one widget and returns its path.
func registerBenchApp(_ appID: String, on call: (Message) throws -> Message, _ client: Connection) async throws -> String {
    _ = try call(Message.methodCall(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "RequestName",
        arguments: [.string(appID), .uint32(4)]))
    _ = try call(Host1Apps.Proxy(client).registerAppMessage(appID: appID, options: ["schemes": .strings(["bench"])]))
    _ = try call(Host1Widgets.Proxy(client).registerWidgetsMessage(appID: appID, bundleJSON: #"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#))
    return try await Host1Widgets.Proxy(client).addWidget(appID: appID, kind: "K", family: "systemSmall", configuration: [:])
}

/// User plus system CPU time of a process, in seconds (from /proc, in clock ticks).
func cpuSeconds(_ pid: Int32) -> Double { cpuSeconds(stat: "/proc/\(pid)/stat") }

/// The CPU time of one of this process's threads (`pthread_getcpuclockid`), in seconds.
func threadCPUSeconds(_ clock: clockid_t) -> Double {
    var now = timespec()
    guard clock_gettime(clock, &now) == 0 else { return 0 }
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// CPU time the whole machine spent busy (every process and the kernel, all
/// cores: what /proc/stat counts as neither idle nor waiting for I/O), and
/// the time its cores were there to spend, in seconds.
func machineCPUSeconds() -> (busy: Double, all: Double) {
    let stat = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? ""
    // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"
    guard let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ") else { return (0, 0) }
    let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
    guard ticks.count == 8 else { return (0, 0) }
    let perSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
    return ((ticks.reduce(0, +) - ticks[3] - ticks[4]) / perSecond, ticks.reduce(0, +) / perSecond)
}

private func cpuSeconds(stat path: String) -> Double {
    let stat = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// Round trips of each kind from `client`, after a warm-up, in alternating
/// blocks of 100, so that a machine busy with something else slows all alike.
func alternatingLatency(_ client: DirectLibdbus.Client, _ n: Int, _ kinds: [@Sendable () throws -> Message]) async throws -> [Stats] {
    try await onThread {
        var stats = [Stats](repeating: Stats(), count: kinds.count)
        for make in kinds { for _ in 0..<min(500, n) { _ = try client.roundTrip(make()) } }
        var done = 0
        while done < n {
            let block = min(100, n - done)
            for (index, make) in kinds.enumerated() {
                for _ in 0..<block { stats[index].record(try client.roundTrip(make())) }
            }
            done += block
        }
        return stats
    }
}

func residentKiB(_ pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}


struct TapsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taps",
        abstract: "Tap → app handler → reply through widget-hostd (its own process) vs a direct libdbus echo round trip.")

    @Option(help: "Taps measured for latency.") var count = 5_000
    @Option(help: "Taps in the pipelined run.") var pipelined = 120_000
    @Option(help: "Taps in flight in the pipelined run.") var window = 64
    @Option(help: "Placed-widget counts to measure at.") var scales: [Int] = [100, 10_000, 100_000]
    @Option(help: "The widget-hostd to measure, such as the installed /usr/bin/widget-hostd (default: the one built beside this benchmark).")
    var daemon: String?

    func run() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let count = self.count, total = self.pipelined, window = self.window
        say("widget-host-bench taps — private bus, widget-hostd as its own process; renderer and org.widgethost.App1 app in plain libdbus")
        say("daemon: \(daemonPath(daemon))")
        say("cores: \(ProcessInfo.processInfo.activeProcessorCount)")

        // Floor: a direct libdbus echo server, up for the whole run so that
        // its round trips interleave with the taps'.
        let echo = try DirectLibdbus.EchoServer(address: bus.address)
        let echoName = echo.uniqueName
        echo.start()
        defer { echo.stop() }

        // Each call into the allocator of the host and of the relay is counted
        // by a shim preloaded into both (see AllocationCounter), when a C
        // compiler is at hand to build it.
        let counter: AllocationCounter?
        do { counter = try await AllocationCounter.build() } catch {
            say("allocations are not counted: \(error)")
            counter = nil
        }
        defer { counter?.remove() }
        let hostAllocations = try counter?.count("host"), relayAllocations = try counter?.count("relay")

        // The host as its own process.
        let host = Process()
        host.executableURL = URL(fileURLWithPath: daemonPath(daemon))
        // Its state goes to a fresh directory, in memory when /dev/shm exists: the
        // benchmark measures taps, not the disk that placing 100,000 widgets syncs to.
        let shm = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let stateDirectory = shm + "/widget-host-bench-\(getpid())"
        host.arguments = [
            "--address", bus.address, "--log-level", "warning", "--state-dir", stateDirectory, "--max-widgets-per-app", "1000000",
            // 100,000 placed widgets take about 17 MB on the bus: the largest budgets hold them.
            "--max-app-bytes", "\(Footprint.Budgets.largestTotal)", "--max-host-bytes", "\(Footprint.Budgets.largestTotal)",
        ]
        host.environment = bus.environment().merging(hostAllocations?.environment ?? [:]) { $1 }
        try PrivateBus.withCleanSignalMask { try host.run() }
        defer {
            // Normally already done below, once the host has written its state and exited.
            if host.isRunning { host.terminate() }
        }
        let client = try await connectOnceHostIsUp(bus, label: "bench-renderer")

        // The app and the renderer are plain libdbus, like the floor's two ends,
        // so what the figures add to the floor is the host's own cost. The app
        // answers every delivery at once.
        let app = try DirectLibdbus.EchoServer(address: bus.address, answeringEveryCall: true)
        let widget = try await registerBenchApp("org.example.Bench", on: { try app.call($0) }, client)
        _ = try app.call(Host1Widget.Proxy(client, path: widget).setContentMessage(contentJSON: #"{"type":"text","id":"t","widgetURL":"bench://open"}"#))
        @Sendable func add() async throws -> String {
            try await Host1Widgets.Proxy(client).addWidget(appID: "org.example.Bench", kind: "K", family: "systemSmall", configuration: [:])
        }
        app.start()
        defer { app.stop() }

        // The ceiling: a plain libdbus relay in place of the host, sending and
        // reading the same five messages per tap and doing nothing else, a
        // process of its own as the host is.
        let appName = app.uniqueName
        let relay = try await onThread { try RelayProcess(address: bus.address, app: appName, widget: widget, adding: relayAllocations?.environment ?? [:]) }
        let relayName = relay.uniqueName
        defer { relay.stop() }

        // One renderer connection makes every call: the floor's, the host's and the relay's.
        let renderer = try DirectLibdbus.Client(address: bus.address)
        let floorCall: @Sendable () throws -> Message = {
            try Message.methodCall(destination: echoName, path: DirectLibdbus.echoPath, interface: DirectLibdbus.echoInterface,
                                   member: "Echo", arguments: [.string("x")])
        }
        let tap: @Sendable () throws -> Message = {
            try Host1Widget.Proxy(client, path: widget).tapMessage(elementID: "t", options: [:])
        }
        let relayTap: @Sendable () throws -> Message = {
            try Host1Widget.Proxy(client, destination: relayName, path: widget).tapMessage(elementID: "t", options: [:])
        }
        func latency(_ n: Int, _ kinds: [@Sendable () throws -> Message]) async throws -> [Stats] {
            try await alternatingLatency(renderer, n, kinds)
        }
        // The relay writes what the host writes: the sizes of a delivery and a reply, each's.
        let sizes = try await onThread {
            try [tap, relayTap].map { make in
                var reply = 0
                let delivery = try app.bytesOfNextCall { reply = try renderer.replyBytes(make()) }
                return (delivery: delivery, reply: reply)
            }
        }
        let latencies = try await latency(count, [floorCall, tap, relayTap])
        let (floor, taps, relayLatency) = (latencies[0], latencies[1], latencies[2])

        // Pipelined: six rounds, each running the floor, the host and the relay in turn: on two
        // cores shared with the bus, turns of under a second measured the scheduler as much as the host.
        var seconds = [0.0, 0.0, 0.0]
        var hostCPU = 0.0, relayCPU = 0.0
        var hostAllocated: UInt64 = 0, relayAllocated: UInt64 = 0
        let rounds = 6
        for round in 0..<rounds {
            let share = total / rounds + (round < total % rounds ? 1 : 0)
            for (index, make) in [floorCall, tap, relayTap].enumerated() {
                let cpuBefore = cpuSeconds(host.processIdentifier), relayBefore = cpuSeconds(relay.processIdentifier)
                let hostAllocatedBefore = hostAllocations?.value ?? 0, relayAllocatedBefore = relayAllocations?.value ?? 0
                let rate = try await onThread { try renderer.pipelined(total: share, window: window, make: make) }
                seconds[index] += Double(share) / rate
                if index == 1 {
                    hostCPU += cpuSeconds(host.processIdentifier) - cpuBefore
                    hostAllocated += (hostAllocations?.value ?? 0) - hostAllocatedBefore
                }
                if index == 2 {
                    relayCPU += cpuSeconds(relay.processIdentifier) - relayBefore
                    relayAllocated += (relayAllocations?.value ?? 0) - relayAllocatedBefore
                }
            }
        }
        let floorRate = Double(total) / seconds[0], tapRate = Double(total) / seconds[1], relayRate = Double(total) / seconds[2]
        let hostCPUPerTap = hostCPU / Double(total) * 1e6, relayCPUPerTap = relayCPU / Double(total) * 1e6
        let hostAllocationsPerTap = Double(hostAllocated) / Double(total), relayAllocationsPerTap = Double(relayAllocated) / Double(total)

        say("")
        row("direct libdbus round trip p50 / p99", us(floor.p50) + " / " + us(floor.p99))
        row("tap → app → reply p50 / p99", us(taps.p50) + " / " + us(taps.p99))
        row("direct libdbus pipelined", String(format: "%8.0f calls/s", floorRate))
        row("taps pipelined (\(window) in flight)", String(format: "%8.0f taps/s", tapRate))
        row("host CPU per pipelined tap", us(hostCPUPerTap))
        row("ratio tap p50 / floor p50", String(format: "%8.3f", taps.p50 / floor.p50))
        row("ratio taps/s / floor calls/s", String(format: "%8.3f", tapRate / floorRate))
        say("")
        say("ceiling: a plain libdbus relay with the same five messages per tap, no work of its own")
        row("relay → app → reply p50 / p99", us(relayLatency.p50) + " / " + us(relayLatency.p99))
        row("relay pipelined (\(window) in flight)", String(format: "%8.0f taps/s", relayRate))
        row("ratio relay p50 / floor p50", String(format: "%8.3f", relayLatency.p50 / floor.p50))
        row("ratio relay taps/s / floor calls/s", String(format: "%8.3f", relayRate / floorRate))
        row("ratio tap p50 / relay p50 (target ≤ 1.1)", String(format: "%8.3f", taps.p50 / relayLatency.p50))
        row("ratio host taps/s / relay taps/s (target ≥ 0.9)", String(format: "%8.3f", tapRate / relayRate))
        row("relay CPU per pipelined tap", us(relayCPUPerTap))
        row("bytes of a delivery, a reply: host / relay", "\(sizes[0].delivery), \(sizes[0].reply) / \(sizes[1].delivery), \(sizes[1].reply)")
        row("ratio host CPU / relay CPU per tap (target ≤ 1.3)", String(format: "%8.3f", hostCPUPerTap / relayCPUPerTap))
        if counter != nil {
            row("host allocations per pipelined tap", String(format: "%8.1f", hostAllocationsPerTap))
            row("relay allocations per pipelined tap", String(format: "%8.1f", relayAllocationsPerTap))
            row("ratio host / relay allocations per tap", String(format: "%8.3f", hostAllocationsPerTap / relayAllocationsPerTap))
        }

        say("")
        var placed = 1
        var first: (tap: Double, floor: Double)?
        var last: (tap: Double, floor: Double)?
        for scale in scales.sorted() {
            while placed < scale {
                let batch = min(scale - placed, 2_000)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for lane in 0..<32 {
                        let share = batch / 32 + (lane < batch % 32 ? 1 : 0)
                        group.addTask { for _ in 0..<share { _ = try await add() } }
                    }
                    try await group.waitForAll()
                }
                placed += batch
            }
            let measured = try await latency(min(count, 2_000), [floorCall, tap])
            let rss = residentKiB(host.processIdentifier)
            let point = (tap: measured[1].p50, floor: measured[0].p50)
            if first == nil { first = point }
            last = point
            row("\(scale) widgets: tap p50 / p99, host RSS",
                us(measured[1].p50) + " / " + us(measured[1].p99) + String(format: "  %7.1f MiB", Double(rss) / 1024))
        }
        if let first, let last, scales.count > 1 {
            let (low, high) = (scales.min()!, scales.max()!)
            row("ratio tap p50 at \(high) / at \(low) (target ≤ 1.10)", String(format: "%8.3f", last.tap / first.tap))
            row("the same, each over its floor p50", String(format: "%8.3f", (last.tap / last.floor) / (first.tap / first.floor)))
        }
        client.close()
        // A clean stop compacts the state directory; remove it only after that.
        host.terminate()
        while host.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        try? FileManager.default.removeItem(atPath: stateDirectory)
    }
}

extension DirectLibdbus.EchoServer {
    /// Runs ``run()`` on a thread of its own.
    func start() { Thread { self.run() }.start() }
}
