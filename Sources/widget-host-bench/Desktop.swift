import ArgumentParser
import DBus
import Foundation
import PrivateBus
import Synchronization
import VirtualDesktop
import WidgetHostInterfaces

/// What the desktop benchmarks (`shell`, `plasma`) take: the same for every renderer, so that
/// their figures compare.
struct DesktopBenchOptions: ParsableArguments {
    @Option(help: "Widgets in the first placed set (the memory target's).") var widgets = 20
    @Option(help: "Widgets in the second placed set.") var many = 200
    @Option(help: "SetContent → drawn updates measured at each set.") var updates = 200
    @Option(help: "Seconds of each idle window (CPU, wakeups); 3 are measured in each state.") var idle = 10.0
    @Option(help: "The widget-hostd to run (default: the one built beside this benchmark).") var daemon: String?

    func validate() throws {
        guard widgets >= 1, many >= widgets else {
            throw ValidationError("--widgets must be at least 1 and --many at least --widgets (given \(widgets) and \(many))")
        }
        guard updates >= 1, idle > 0 else { throw ValidationError("--updates must be at least 1 and --idle more than 0 seconds") }
    }
}

/// What a renderer's cost is measured in, the same for every renderer: the renderer's
/// process idle without WidgetHost's part (`without`), then with it and 0, 20 (and a Live
/// Activity) and 200 widgets, and the time from an app's SetContent to the new content on
/// the screen, seen in Xvfb's framebuffer. The renderer's own command starts the renderer
/// (docs/plasma.md#cost sets the figures side by side).
struct DesktopBench {
    let options: DesktopBenchOptions
    /// The subcommand: `shell`, `plasma`.
    let command: String
    /// How the rows name the renderer's process (`gnome-shell`) and WidgetHost's part in it (`extension`).
    let program: String, part: String
    /// The state measured first, without WidgetHost's part, in full and in short.
    let without: (name: String, short: String)
    /// Whether a line the renderer printed names WidgetHost's part.
    let names: @Sendable (Substring) -> Bool

    var widgets: Int { options.widgets }
    var many: Int { options.many }
    var updates: Int { options.updates }
    var idle: Double { options.idle }

    /// The folders, the private bus and the teardown of a run, which a renderer starts in.
    struct Desktop {
        let root: URL
        let runtime: URL
        let bus: PrivateBus
        /// The session bus's environment, with the XDG folders under `root`.
        let session: [String: String]
        let teardown: Teardown
    }

    /// Measures, when each of `tools` (a path and the package that installs it) is there;
    /// otherwise says which is missing and measures nothing. `title` is what runs (after
    /// `widget-host-bench COMMAND — `); `start` starts the renderer with WidgetHost's part and
    /// returns it with its idle figures without that part. Everything started is ended when
    /// the run finishes, fails or is interrupted.
    func run(
        tools: [(String, String)], title: () async throws -> String,
        start: (DesktopBench, Desktop) async throws -> (renderer: DesktopProgram, without: Idle)
    ) async throws {
        for (tool, package) in tools where !FileManager.default.isExecutableFile(atPath: tool) {
            say("widget-host-bench \(command): \(tool) is not installed (apt-get install \(package)); nothing measured")
            return
        }
        // The run's own steps come before the ending of what carries the run's
        // mark (see Bench.main), on an interrupt as at the end.
        let teardown = Teardown()
        Bench.teardown.add { teardown.run() }
        defer { teardown.run() }
        try await measure(teardown, title: title, start: start)
    }

    func measure(
        _ teardown: Teardown, title: () async throws -> String,
        start: (DesktopBench, Desktop) async throws -> (renderer: DesktopProgram, without: Idle)
    ) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("widget-host-bench-\(command)-\(getpid())")
        let runtime = root.appendingPathComponent("runtime")
        for folder in ["data", "sysdata", "config", "runtime"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: runtime.path)
        // The host's state in memory: what is measured is the bus, the renderer and its paint, not the disk.
        let stateDirectory = ScaleBench.scratch + "/widget-host-bench-\(command)-\(getpid())"
        teardown.add {
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(atPath: stateDirectory)
        }

        var base = ProcessInfo.processInfo.environment
        base["XDG_DATA_HOME"] = root.appendingPathComponent("data").path
        base["XDG_DATA_DIRS"] = root.appendingPathComponent("sysdata").path
        base["XDG_CONFIG_HOME"] = root.appendingPathComponent("config").path
        let bus = try PrivateBus(environment: base)
        teardown.add { bus.stop() }
        let session = bus.environment(base: base)

        let host = Process()
        host.executableURL = URL(fileURLWithPath: daemonPath(options.daemon))
        host.arguments = ["--address", bus.address, "--log-level", "warning", "--state-dir", stateDirectory]
        host.environment = session
        try PrivateBus.withCleanSignalMask { try host.run() }
        teardown.add { endProcess(host) }
        let app = try await connectOnceHostIsUp(bus, label: "bench-\(command)-app")
        teardown.add { app.close() }
        _ = try await app.requestName(Self.appID)
        try await Host1Apps.Proxy(app).registerApp(appID: Self.appID, options: ["schemes": .strings(["bench"])])
        try await Host1Widgets.Proxy(app).registerWidgets(
            appID: Self.appID, bundleJSON: #"{"widgets":[{"kind":"K","families":["systemSmall"],"displayName":"Bench"}]}"#)

        say("widget-host-bench \(command) — \(try await title())")
        say("cores: \(ProcessInfo.processInfo.activeProcessorCount), load average \(Self.load()) (1 min)")
        say("\(Self.windows) idle windows of \(idle) s a state, wakeups their median; drawn = seen in Xvfb's framebuffer")
        let (renderer, without) = try await start(
            self, Desktop(root: root, runtime: runtime, bus: bus, session: session, teardown: teardown))
        let pid = renderer.process.processIdentifier
        let screen = try Framebuffer(path: renderer.display.framebuffer)
        say("")
        report(self.without.name, without)
        let none = try await quiet(renderer)
        report("0 widgets", none)

        // The measured widget is placed first, so it is drawn first, top left.
        var placing = cpuSeconds(pid)
        let probeWidget = try await place(content: Self.probe(0, colour: Self.colours.0))
        for n in 1..<widgets { _ = try await place(content: Self.content(n)) }
        _ = try await find(on: screen, timeout: 30) { Self.widgetPoint(screen, colour: Self.colours.0) }
        let few = try await quiet(renderer)
        row("\(widgets) widgets: CPU placing and drawing them", String(format: "%8.2f s", few.cpuBefore - placing))
        report("\(widgets) widgets", few)

        _ = try await Host1LiveActivities.Proxy(app).startActivity(
            appID: Self.appID, attributesType: "BenchAttributes", contentJSON: Self.activity, options: [:])
        _ = try await find(on: screen, timeout: 10) { Self.pillPoint(screen) }
        // Found again: where the Live Activity shows above the widgets, they move down to make room.
        let probe = try await find(on: screen, timeout: 10) { Self.widgetPoint(screen, colour: Self.colours.0) }
        let withActivity = try await quiet(renderer)
        report("\(widgets) widgets + 1 Live Activity", withActivity)
        let measured = Host1Widget.Proxy(app, path: probeWidget)
        let fewLatency = try await latency(of: measured, at: probe, on: screen, pid: pid)
        report(widgets, fewLatency, rss: residentKiB(pid))

        placing = cpuSeconds(pid)
        for n in widgets..<many { _ = try await place(content: Self.content(n)) }
        let lots = try await quiet(renderer)
        row("\(many) widgets: CPU placing and drawing them", String(format: "%8.2f s", lots.cpuBefore - placing))
        report("\(many) widgets", lots)
        let manyLatency = try await latency(of: measured, at: probe, on: screen, pid: pid)
        report(many, manyLatency, rss: residentKiB(pid))
        // A tail far above the median is the machine's other work: the renderer waiting for a core.
        row("load average (1 min) now", "    " + Self.load())

        say("")
        let added = Double(few.rss - none.rss) * 1024 / 1e6
        verdict("RSS added by \(widgets) widgets (target ≤ 15 MB)", String(format: "%8.1f MB", added), met: added <= 15)
        let addedByMany = Double(lots.rss - none.rss) * 1024 / 1e6
        row("RSS added by \(many) widgets", String(format: "%8.1f MB  %6.1f kB a widget", addedByMany, addedByMany * 1000 / Double(many)))
        // To the hundredth printed, and never "-0.00" for two equal medians measured over windows a millisecond apart.
        let extra = ((withActivity.wakeups - without.wakeups) * 100).rounded() / 100 + 0
        row(
            "idle wakeups: \(self.without.short), \(widgets) widgets + activity",
            String(format: "%8.2f /s  %.2f /s", without.wakeups, withActivity.wakeups))
        verdict(
            "wakeups the \(part) adds (target ≤ \(Self.wakeupNoise) /s)", String(format: "%+8.2f /s", extra), met: extra <= Self.wakeupNoise)
        verdict(
            "SetContent → drawn p50 at \(widgets) (target ≤ 50 ms)", String(format: "%8.1f ms", fewLatency.drawn.p50 / 1000),
            met: fewLatency.drawn.p50 <= 50_000)
        let logged = renderer.printed().split(separator: "\n").filter(names)
        if !logged.isEmpty { say("\(program)'s output names the \(part):\n" + logged.suffix(20).joined(separator: "\n")) }

        /// Places a widget of the app with `content`; returns its path.
        func place(content: String) async throws -> String {
            let path = try await Host1Widgets.Proxy(app).addWidget(appID: Self.appID, kind: "K", family: "systemSmall", configuration: [:])
            try await Host1Widget.Proxy(app, path: path).setContent(contentJSON: content)
            return path
        }
    }

    static let appID = "org.example.Bench"
    /// The measured widget's two colours, which each update swaps: unlike anything else on the screen.
    static let colours: (UInt32, UInt32) = (0xd7_0a_53, 0x0a_84_d7)
    /// The Live Activity's trailing side, found on the screen by this colour.
    static let pillColour: UInt32 = 0x00_c7_be

    /// Below this many more wakeups a second, a difference between two idle
    /// windows of the same renderer is within what separates two windows of an
    /// unchanged one (docs/gnome-shell.md#benchmark).
    static let wakeupNoise = 0.5

    /// The repository (the renderers and their install scripts), from where this file was built.
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    // MARK: Idle

    struct Idle {
        var rss: Int
        /// Percent of one core.
        var cpu: Double
        /// The median window's wakeups a second.
        var wakeups: Double
        /// The threads that woke most in the median window, and how often.
        var woke: String
        /// Each window's wakeups a second.
        var windows: String
        /// The renderer's CPU time when the window began, in seconds.
        var cpuBefore: Double
    }

    /// Idle windows in a row once the renderer is idle, each after fewer than
    /// 12 context switches in the 12 s before it, so the garbage collection gjs
    /// runs in gnome-shell 10 s after any activity is behind it. As the minute
    /// changes the top bar's clock redraws itself, and gjs collects the garbage
    /// that leaves some 10 s later, with or without the extension, so a window
    /// lies in the rest of a minute, from its 15th second to its 58th (the same
    /// for every renderer, so that their figures compare). gjs also collects
    /// garbage now and then by itself, 20 to 30 s apart, which one window in
    /// three may catch: the wakeups are the median window's. After 3 minutes it
    /// measures whatever the renderer does.
    func quiet(_ renderer: DesktopProgram) async throws -> Idle {
        let pid = renderer.process.processIdentifier
        var previous = Activity(pid), total = 0
        var recent: [(time: UInt64, total: Int)] = [(previous.time, 0)]
        let (waiting, from, to) = (previous.time, 15.0, 58.0)
        var windows: [(wakeups: Double, woke: String)] = []
        var cpu = 0.0, seconds = 0.0, cpuBefore: Double?
        func sample(_ now: Activity) {
            total += now.switches(since: previous)
            previous = now
            recent.append((now.time, total))
            recent.removeAll { now.time - $0.time > 12_000_000_000 }
        }
        while windows.count < Self.windows {
            guard renderer.process.isRunning else {
                throw PrivateBusError("\(program) exited; it printed:\n\(renderer.printed().suffix(4000))")
            }
            let second = Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 60)
            let calm = recent.first.map { previous.time - $0.time >= 11_500_000_000 && total - $0.total < 12 } ?? false
            guard (calm && (idle > to - from || (second >= from && second + idle <= to))) || previous.time - waiting > 180_000_000_000 else {
                try await Task.sleep(for: .milliseconds(500))
                sample(Activity(pid))
                continue
            }
            let before = Activity(pid)
            try await Task.sleep(for: .seconds(idle))
            let after = Activity(pid)
            let span = Double(after.time - before.time) / 1e9
            // Which threads woke, by name, most first.
            let woke = Dictionary(
                after.threads.map { ($0.value.name, $0.value.switches - (before.threads[$0.key]?.switches ?? 0)) }, uniquingKeysWith: +
            ).filter { $0.value > 0 }.sorted { $0.value > $1.value }.prefix(3).map { "\($0.key) \($0.value)" }
            windows.append((Double(after.switches(since: before)) / span, woke.isEmpty ? "no thread woke" : woke.joined(separator: ", ")))
            cpu += after.cpu - before.cpu
            seconds += span
            cpuBefore = cpuBefore ?? before.cpu
            sample(after)
        }
        let median = windows.sorted { $0.wakeups < $1.wakeups }[windows.count / 2]
        return Idle(
            rss: residentKiB(pid), cpu: cpu / seconds * 100, wakeups: median.wakeups, woke: median.woke,
            windows: windows.map { String(format: "%.1f", $0.wakeups) }.joined(separator: ", "), cpuBefore: cpuBefore ?? 0)
    }

    /// The machine's load average over the last minute.
    static func load() -> String {
        String(((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?").prefix { $0 != " " })
    }

    /// Idle windows measured in each state.
    static let windows = 3

    /// The CPU time and the context switches of every thread of a process at one moment.
    struct Activity {
        let time = monotonicNanoseconds()
        let cpu: Double
        /// Each thread's name and its voluntary and involuntary context switches (each one the
        /// thread going to sleep, or being put aside), by thread id.
        let threads: [String: (name: String, switches: Int)]

        init(_ pid: Int32) {
            cpu = cpuSeconds(pid)
            var threads: [String: (String, Int)] = [:]
            for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
                let lines = ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? "").split(separator: "\n")
                let value = { (line: Substring) in line.split(separator: "\t", maxSplits: 1).last.map(String.init) ?? "" }
                threads[task] = (
                    lines.first { $0.hasPrefix("Name:") }.map(value) ?? "?",
                    lines.filter { $0.contains("ctxt_switches:") }.reduce(0) { $0 + (Int(value($1)) ?? 0) }
                )
            }
            self.threads = threads
        }

        /// Switches since `earlier`; a thread that started meanwhile counts all of its own.
        func switches(since earlier: Activity) -> Int {
            threads.reduce(0) { $0 + $1.value.switches - (earlier.threads[$1.key]?.switches ?? 0) }
        }
    }

    func report(_ name: String, _ point: Idle) {
        row(
            "\(name): RSS, CPU, wakeups",
            String(format: "%8.1f MiB  %5.2f %%  %6.2f /s", Double(point.rss) / 1024, point.cpu, point.wakeups)
                + "  (\(point.woke); windows \(point.windows))")
    }

    // MARK: SetContent → drawn

    struct Latency {
        var drawn = Stats()
        /// The renderer's CPU time per update, in seconds.
        var cpu = 0.0
    }

    /// `updates` SetContent calls of the measured widget, each swapping its
    /// colour; each timed from just before the call to the first moment the
    /// screen shows the new colour at `point`, then a pause of 20–70 ms (so
    /// the updates fall at every phase of the renderer's frame clock).
    func latency(of widget: Host1Widget.Proxy, at point: (x: Int, y: Int), on screen: Framebuffer, pid: Int32) async throws -> Latency {
        guard var shown = screen.pixel(x: point.x, y: point.y), [Self.colours.0, Self.colours.1].contains(shown) else {
            throw PrivateBusError("the measured widget is no longer at \(point.x), \(point.y)")
        }
        var result = Latency()
        let warmUp = 10
        var cpuBefore = cpuSeconds(pid)
        for n in 0..<(warmUp + updates) {
            if n == warmUp { cpuBefore = cpuSeconds(pid) }
            let next = shown == Self.colours.0 ? Self.colours.1 : Self.colours.0
            let json = Self.probe(n + 1, colour: next)
            let started = monotonicNanoseconds()
            let call = Task { try await widget.setContent(contentJSON: json) }
            let seen = try await onThread { () -> UInt64? in
                while monotonicNanoseconds() - started < 5_000_000_000 {
                    if screen.pixel(x: point.x, y: point.y) == next { return monotonicNanoseconds() }
                    usleep(250)
                }
                return nil
            }
            try await call.value
            guard let seen else { throw PrivateBusError("the measured widget was not redrawn within 5 s of its SetContent (update \(n))") }
            if n >= warmUp { result.drawn.record(seen - started) }
            shown = next
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...70)))
        }
        result.cpu = (cpuSeconds(pid) - cpuBefore) / Double(updates)
        return result
    }

    func report(_ widgets: Int, _ latency: Latency, rss: Int) {
        row("\(widgets) widgets: SetContent → drawn p50 / p99", String(format: "%8.1f ms / %.1f ms", latency.drawn.p50 / 1000, latency.drawn.p99 / 1000))
        row("\(widgets) widgets: CPU per update, RSS after", String(format: "%8.2f ms  %8.1f MiB", latency.cpu * 1000, Double(rss) / 1024))
    }

    // MARK: The screen

    /// Polls `find` every 50 ms until it finds a point; throws after `timeout` seconds.
    func find(on screen: Framebuffer, timeout: Double, _ find: () -> (x: Int, y: Int)?) async throws -> (x: Int, y: Int) {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let point = find() { return point }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw PrivateBusError("\(program) drew nothing of the expected colour within \(timeout) s")
    }

    /// A point well inside the widget filled with `colour`: left of its content, halfway down.
    static func widgetPoint(_ screen: Framebuffer, colour: UInt32) -> (x: Int, y: Int)? {
        for y in 0..<screen.height {
            var run = 0
            for x in 0..<screen.width {
                run = screen.pixel(x: x, y: y) == colour ? run + 1 : 0
                if run == 120 { return (x - run + 8, y + 80) }
            }
        }
        return nil
    }

    /// A point of the Live Activity's trailing side: in GNOME Shell's top bar, on the applet's board.
    static func pillPoint(_ screen: Framebuffer) -> (x: Int, y: Int)? {
        for y in 0..<screen.height {
            for x in 0..<screen.width where screen.pixel(x: x, y: y) == pillColour { return (x, y) }
        }
        return nil
    }

    // MARK: Content

    /// A widget's tree, as the examples' are: a tinted tile with an icon, a title and a progress bar.
    static func content(_ n: Int) -> String {
        tile(n, colour: "#d6ebff", title: "Widget \(n)")
    }

    /// The measured widget's tree at its `n`th update.
    static func probe(_ n: Int, colour: UInt32) -> String {
        tile(n, colour: Framebuffer.hex(colour), title: "Update \(n)")
    }

    static func tile(_ n: Int, colour: String, title: String) -> String {
        #"{"type":"color","color":"\#(colour)","widgetURL":"bench://w/\#(n)","children":[{"type":"vstack","spacing":4,"padding":10,"children":["#
            + #"{"type":"image","icon":"weather-clear-symbolic","size":28},"#
            + #"{"type":"text","id":"title","text":"\#(title)","fontSize":16,"fontWeight":"bold"},"#
            + #"{"type":"progress","id":"level","value":\#(Double(n % 100) / 100)}]}]}"#
    }

    /// A Live Activity like the delivery example's.
    static let activity = ##"{"widgetURL":"bench://activity","##
        + ##""lockScreen":{"type":"text","text":"Arriving in 12 min"},"##
        + ##""compactLeading":{"type":"image","icon":"package-x-generic-symbolic","foreground":"#ff9f0a","label":"Delivery"},"##
        + ##""compactTrailing":{"type":"text","text":"12 min","background":"\##(Framebuffer.hex(pillColour))","padding":2},"##
        + ##""minimal":{"type":"text","text":"12"},"expanded":{"type":"text","text":"Arriving in 12 min"}}"##
}

func verdict(_ name: String, _ value: String, met: Bool) {
    row(name, value + (met ? "  met" : "  NOT MET"))
}

/// What a run started, ended once, newest first: when the run ends, fails, or
/// is interrupted (Ctrl-C, SIGTERM, SIGHUP).
final class Teardown: @unchecked Sendable {
    private let steps = Mutex<[@Sendable () -> Void]>([])
    /// Held while the steps run: a second caller (the run failing as its
    /// processes are ended, and exiting) waits until they are done instead of
    /// ending the process halfway through them.
    private let running = NSRecursiveLock()

    func add(_ step: @escaping @Sendable () -> Void) { steps.withLock { $0.append(step) } }

    func run() {
        running.lock()
        defer { running.unlock() }
        let steps = self.steps.withLock { steps in
            defer { steps = [] }
            return steps
        }
        for step in steps.reversed() { step() }
    }

    /// Runs the teardown and exits on any of `signals` (the terminal's Ctrl-C).
    func onSignals(_ signals: [Int32]) -> [any DispatchSourceSignal] {
        signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                say("\ninterrupted: ending what was started")
                // What the run goes on printing from a renderer being ended is no measurement.
                let null = open("/dev/null", O_WRONLY)
                dup2(null, STDOUT_FILENO)
                dup2(null, STDERR_FILENO)
                self.run()
                exit(128 + number)
            }
            source.resume()
            return source
        }
    }

    /// The variable whose value marks every process a run started, and what those started.
    static let markVariable = "WIDGETHOST_BENCH_RUN"

    /// Ends what still carries the run's mark (what the processes it started
    /// started in turn): SIGTERM, then SIGKILL to what is left after 2 s.
    static func killMarked(_ mark: String) {
        func marked() -> [pid_t] {
            processesMarked(markVariable, mark).compactMap { pid_t($0.prefix { $0.isNumber }) }.filter { $0 != getpid() }
        }
        marked().forEach { kill($0, SIGTERM) }
        for _ in 0..<40 where !marked().isEmpty { usleep(50_000) }
        marked().forEach { kill($0, SIGKILL) }
    }
}
