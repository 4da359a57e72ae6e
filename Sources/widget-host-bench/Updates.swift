import ArgumentParser
import DBus
import Foundation
import PrivateBus
import WidgetHostInterfaces

/// Durable updates, and taps while apps stream them, on the state
/// directory's real disk and with every sync made to take `--slow-sync-ms`.
struct UpdatesBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "updates",
        abstract: "Durable SetContent and LiveActivity.Update through widget-hostd, and taps alone, while ten apps stream updates and while one app floods them.",
        discussion: """
            Runs twice: with the host's state directory on a real disk (--state-parent, by default \
            $XDG_STATE_HOME or ~/.local/state, where the host keeps it), then with every fsync and \
            fdatasync of the host made to take --slow-sync-ms longer, by an LD_PRELOAD shim the benchmark \
            compiles with the system C compiler. The durable rows measure the write path itself, on a host \
            whose update budget is lifted; the taps are measured on a host with its default budget \
            (docs/daemon.md#updates), alone, while --apps apps each send --app-rate updates a second, and \
            while one app sends them as fast as the host answers, in --rounds alternating rounds.
            """)

    @Option(help: "Round trips measured for latency (of durable writes, a tenth of them with slow syncs).") var count = 2_000
    @Option(help: "Calls in the pipelined runs (a tenth of them with slow syncs).") var pipelined = 60_000
    @Option(help: "Calls in flight in the pipelined runs.") var window = 64
    @Option(help: "Updates the flooding app keeps in flight while taps are measured.") var streamWindow = 16
    @Option(help: "Apps streaming updates at a steady rate while taps are measured.") var apps = 10
    @Option(help: "Updates a second each of those apps sends.") var appRate = 100
    @Option(help: "Rounds of taps alone, while the apps stream and while one floods, in turn.") var rounds = 6
    @Option(help: "Where the host's state directory is made (a real disk, not tmpfs).") var stateParent: String?
    @Option(help: "How much longer each sync takes in the second run, in milliseconds; 0 skips that run.") var slowSyncMs = 20

    func run() async throws {
        let parent = stateParent ?? Self.defaultStateParent()
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        say("widget-host-bench updates — private bus, widget-hostd as its own process, state in \(parent)")
        say("cores: \(ProcessInfo.processInfo.activeProcessorCount)")
        let syncP50 = try Self.fdatasyncP50(in: parent)
        row("this disk's fdatasync p50", us(syncP50))
        try await measure(parent: parent, preload: nil, scale: 1, diskSync: syncP50, extraSync: 0)
        try await tapsWhileUpdating(parent: parent, preload: nil, extraSync: 0)
        if slowSyncMs > 0 {
            let shim = try await SlowSync.build(milliseconds: slowSyncMs)
            defer { shim.remove() }
            say("")
            say("with every fsync/fdatasync of the host \(slowSyncMs) ms slower (LD_PRELOAD shim)")
            try await measure(parent: parent, preload: shim.path, scale: 10, diskSync: syncP50 + Double(slowSyncMs) * 1000, extraSync: UInt32(slowSyncMs) * 1000)
            try await tapsWhileUpdating(parent: parent, preload: shim.path, extraSync: UInt32(slowSyncMs) * 1000)
        }
    }

    static func defaultStateParent() -> String {
        let environment = ProcessInfo.processInfo.environment
        let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (NSHomeDirectory() + "/.local/state")
        return stateHome
    }

    /// One run: a fresh bus and host (its update budget lifted: this
    /// measures the write path, not the budget), the floor, the durable relay
    /// (`extraSync` µs slower per sync, as the shim makes the host), the updates.
    func measure(parent: String, preload: String?, scale: Int, diskSync: Double, extraSync: UInt32) async throws {
        let count = max(50, self.count / scale), total = max(200, pipelined / scale), window = self.window
        let bus = try PrivateBus()
        defer { bus.stop() }
        let echo = try DirectLibdbus.EchoServer(address: bus.address)
        let echoName = echo.uniqueName
        echo.start()
        defer { echo.stop() }

        let stateDirectory = parent + "/widget-host-bench-\(getpid())-\(scale)"
        defer { try? FileManager.default.removeItem(atPath: stateDirectory) }
        let relayJournal = stateDirectory + "-relay"
        defer { try? FileManager.default.removeItem(atPath: relayJournal) }
        let relay = try DirectLibdbus.DurableRelay(address: bus.address, path: relayJournal, extraSyncDelay: extraSync)
        let relayName = relay.uniqueName
        Thread { relay.run() }.start()
        defer { relay.stop() }
        let lifted = "1000000000"
        let host = try Self.startHost(
            on: bus, stateDirectory: stateDirectory, preload: preload,
            ["--update-rate", lifted, "--update-burst", lifted, "--max-update-rate", lifted])
        defer { Self.stop(host) }
        let client = try await connectOnceHostIsUp(bus, label: "bench-updates")
        defer { client.close() }

        let writer = try DirectLibdbus.Client(address: bus.address)
        let written = try await registerBenchApp("org.example.Writer", on: { try writer.call($0) }, client)
        let activity = try writer.call(
            Host1LiveActivities.Proxy(client).startActivityMessage(
                appID: "org.example.Writer", attributesType: "Bench", contentJSON: Self.activityContent(0), options: [:]))
            .arguments().first?.stringValue ?? ""

        let renderer = try DirectLibdbus.Client(address: bus.address)
        let floorCall: @Sendable () throws -> Message = {
            try Message.methodCall(
                destination: echoName, path: DirectLibdbus.echoPath, interface: DirectLibdbus.echoInterface, member: "Echo", arguments: [.string("x")])
        }
        // The relay is sent the very calls the host is, addressed to it.
        let set = Self.setContent(client, written), relaySet = Self.setContent(client, written, to: relayName)
        let update = Self.update(client, activity), relayUpdate = Self.update(client, activity, to: relayName)
        let kinds = [floorCall, relaySet, set, relayUpdate, update]

        // Latency: the floor from the renderer, the writes from the writing app, in alternating blocks.
        let latencies = try await onThread {
            var stats = Array(repeating: Stats(), count: kinds.count)
            for _ in 0..<min(200, count) {
                for (index, make) in kinds.enumerated() { _ = try (index == 0 ? renderer : writer).roundTrip(make()) }
            }
            var done = 0
            while done < count {
                let block = min(50, count - done)
                for (index, make) in kinds.enumerated() {
                    for _ in 0..<block { stats[index].record(try (index == 0 ? renderer : writer).roundTrip(make())) }
                }
                done += block
            }
            return stats
        }
        let (floor, durableSet, sets, durableUpdate, updates) = (latencies[0], latencies[1], latencies[2], latencies[3], latencies[4])
        // Pipelined: the floor, then each write through the relay and through the host, in turn, six rounds:
        // a disk's syncs slow down and speed up by the second, and short turns see all kinds alike.
        // Each kind's CPU: the host's, the relay's, and the whole machine's.
        let zeros = Array(repeating: 0.0, count: kinds.count)
        var seconds = zeros, hostCPU = zeros, relayCPU = zeros, machineBusy = zeros, machineAll = zeros
        let rounds = 6
        for round in 0..<rounds {
            let share = total / rounds + (round < total % rounds ? 1 : 0)
            for (index, make) in kinds.enumerated() {
                let client = index == 0 ? renderer : writer
                let before = (host: cpuSeconds(host.processIdentifier), relay: relay.cpuSeconds, machine: machineCPUSeconds())
                seconds[index] += Double(share) / (try await onThread { try client.pipelined(total: share, window: window, make: make) })
                let machine = machineCPUSeconds()
                hostCPU[index] += cpuSeconds(host.processIdentifier) - before.host
                relayCPU[index] += relay.cpuSeconds - before.relay
                machineBusy[index] += machine.busy - before.machine.busy
                machineAll[index] += machine.all - before.machine.all
            }
        }
        func perWrite(_ cpu: [Double], _ index: Int) -> Double { cpu[index] / Double(total) * 1e6 }
        let rates = seconds.map { Double(total) / $0 }
        let (floorRate, relaySetRate, setRate, relayUpdateRate, updateRate) = (rates[0], rates[1], rates[2], rates[3], rates[4])

        say("")
        say("durable writes, the host's update budget lifted (--update-rate, --update-burst, --max-update-rate \(lifted))")
        row("direct libdbus round trip p50 / p99", us(floor.p50) + " / " + us(floor.p99))
        row("direct libdbus pipelined", String(format: "%8.0f calls/s", floorRate))
        row("durable relay (zero work), SetContent p50 / p99", us(durableSet.p50) + " / " + us(durableSet.p99))
        row("durable relay, SetContent pipelined (\(window) in flight)", String(format: "%8.0f calls/s", relaySetRate))
        row("durable SetContent p50 / p99", us(sets.p50) + " / " + us(sets.p99))
        row("durable SetContent pipelined (\(window) in flight)", String(format: "%8.0f sets/s", setRate))
        row("durable relay, Update p50 / p99", us(durableUpdate.p50) + " / " + us(durableUpdate.p99))
        row("durable relay, Update pipelined", String(format: "%8.0f calls/s", relayUpdateRate))
        row("durable LiveActivity.Update p50 / p99", us(updates.p50) + " / " + us(updates.p99))
        row("durable Update pipelined", String(format: "%8.0f updates/s", updateRate))
        row("host CPU per pipelined SetContent, Update", us(perWrite(hostCPU, 2)) + " " + us(perWrite(hostCPU, 4)))
        row("relay CPU per pipelined SetContent, Update", us(perWrite(relayCPU, 1)) + " " + us(perWrite(relayCPU, 3)))
        row("ratio host CPU / relay CPU per SetContent, Update", String(format: "%8.2f  %.2f", hostCPU[2] / relayCPU[1], hostCPU[4] / relayCPU[3]))
        // What bounds the pipelined rate: the machine's two cores, which the
        // bus daemon, the writing app, the server and the kernel's disk work share.
        row(
            "machine busy, relay / host run: SetContent, Update",
            String(format: "%5.0f %% / %.0f %%   %.0f %% / %.0f %%", 100 * machineBusy[1] / machineAll[1], 100 * machineBusy[2] / machineAll[2],
                100 * machineBusy[3] / machineAll[3], 100 * machineBusy[4] / machineAll[4]))
        row(
            "machine CPU per write, relay / host: SetContent",
            us(perWrite(machineBusy, 1)) + " / " + us(perWrite(machineBusy, 2)).trimmingCharacters(in: .whitespaces))
        row(
            "machine CPU per write, relay / host: Update",
            us(perWrite(machineBusy, 3)) + " / " + us(perWrite(machineBusy, 4)).trimmingCharacters(in: .whitespaces))
        // At 0.9 of the relay's rate, on a machine no busier than in the
        // relay's run, each write may cost the machine 1/0.9 of what it cost
        // there; all but the server's share is the same work (the same calls,
        // the same app, the same bus), so the server's CPU per write may grow
        // by a ninth of the machine's.
        // Only where the relay's run kept the cores busy: with slow syncs the
        // sync bounds the rate, and the machine's CPU says nothing of it.
        let allowance = (1 / 0.9 - 1)
        if machineBusy[1] / machineAll[1] >= 0.5 {
            row(
                "host CPU per write that 0.9× the relay leaves: SetContent, Update",
                us(perWrite(relayCPU, 1) + allowance * perWrite(machineBusy, 1)) + " " + us(perWrite(relayCPU, 3) + allowance * perWrite(machineBusy, 3)))
        } else {
            row("host CPU per write that 0.9× the relay leaves", "   none: the sync, not the cores, bounds the rate")
        }
        // Against the floor: a target on the real disk; with slow syncs the relay
        // itself is held far below it, so only the figures are printed.
        let onFloor = [("sets/s", setRate), ("updates/s", updateRate)]
        for (what, rate) in onFloor {
            if extraSync == 0 {
                verdict("ratio \(what) / floor calls/s (target ≥ 0.3)", String(format: "%8.3f", rate / floorRate), met: rate / floorRate >= 0.3)
            } else {
                row("ratio \(what) / floor calls/s", String(format: "%8.3f", rate / floorRate))
            }
        }
        // The relay does nothing but hand each call to a writer and back: no host can beat it.
        row("ceiling: relay calls/s / floor calls/s", String(format: "%8.3f", relaySetRate / floorRate) + String(format: "  %.3f", relayUpdateRate / floorRate))
        row("SetContent, Update p50 − floor − sync", us(sets.p50 - floor.p50 - diskSync) + " " + us(updates.p50 - floor.p50 - diskSync))
        // Against the relay, measured in the same run: what the host's own work adds to a durable write.
        let setOwn = sets.p50 - durableSet.p50, updateOwn = updates.p50 - durableUpdate.p50
        verdict("SetContent p50 − durable relay p50 (target ≤ 50 µs)", us(setOwn), met: setOwn <= 50)
        verdict("Update p50 − durable relay p50 (target ≤ 50 µs)", us(updateOwn), met: updateOwn <= 50)
        verdict(
            "SetContent pipelined / durable relay pipelined (target ≥ 0.9)", String(format: "%8.3f", setRate / relaySetRate),
            met: setRate / relaySetRate >= 0.9)
        verdict(
            "Update pipelined / durable relay pipelined (target ≥ 0.9)", String(format: "%8.3f", updateRate / relayUpdateRate),
            met: updateRate / relayUpdateRate >= 0.9)
    }

    /// Taps on a host with its default update budget: alone, while `apps`
    /// apps each stream `appRate` SetContent a second to a widget of their
    /// own, and while one app floods SetContent with `streamWindow` in
    /// flight. `rounds` rounds of the three, so that a machine busy with
    /// something else slows all alike.
    /// Taps take no sync, so as many are measured with slow syncs as on the
    /// real disk: a p99 needs them.
    func tapsWhileUpdating(parent: String, preload: String?, extraSync: UInt32) async throws {
        let rounds = self.rounds, perRound = max(50, count / rounds)
        let bus = try PrivateBus()
        defer { bus.stop() }
        let stateDirectory = parent + "/widget-host-bench-taps-\(getpid())\(preload == nil ? "" : "-slow")"
        defer { try? FileManager.default.removeItem(atPath: stateDirectory) }
        let host = try Self.startHost(on: bus, stateDirectory: stateDirectory, preload: preload, [])
        defer { Self.stop(host) }
        let client = try await connectOnceHostIsUp(bus, label: "bench-taps")
        defer { client.close() }

        // The tapped app answers every delivery at once; the writing apps are other apps, as on a desktop.
        let app = try DirectLibdbus.EchoServer(address: bus.address, answeringEveryCall: true)
        let tapped = try await registerBenchApp("org.example.Tapped", on: { try app.call($0) }, client)
        _ = try app.call(Host1Widget.Proxy(client, path: tapped).setContentMessage(contentJSON: #"{"type":"text","id":"t","widgetURL":"bench://open"}"#))
        app.start()
        defer { app.stop() }
        var streams: [(DirectLibdbus.Client, @Sendable () throws -> Message)] = [], writtenWidgets: [String] = []
        for n in 0..<apps {
            let writer = try DirectLibdbus.Client(address: bus.address)
            let widget = try await registerBenchApp("org.example.Writer\(n)", on: { try writer.call($0) }, client)
            streams.append((writer, Self.setContent(client, widget)))
            writtenWidgets.append(widget)
        }
        let flooder = try DirectLibdbus.Client(address: bus.address)
        let flooded = Self.setContent(client, try await registerBenchApp("org.example.Flood", on: { try flooder.call($0) }, client))
        let renderer = try DirectLibdbus.Client(address: bus.address)
        let tap: @Sendable () throws -> Message = { try Host1Widget.Proxy(client, path: tapped).tapMessage(elementID: "t", options: [:]) }
        _ = try await onThread { for _ in 0..<200 { _ = try renderer.roundTrip(tap()) } }

        // The ceiling: the taps relay, tapped alone and while the same apps stream
        // the same SetContent calls at the same rate to the durable relay, which
        // syncs them as the host does. What the relays' taps lose to the
        // streaming is the machine's share; the rest is the host's.
        let durable = try DirectLibdbus.DurableRelay(address: bus.address, path: stateDirectory + "-relay", extraSyncDelay: extraSync)
        let durableName = durable.uniqueName
        Thread { durable.run() }.start()
        defer {
            durable.stop()
            try? FileManager.default.removeItem(atPath: stateDirectory + "-relay")
        }
        let appName = app.uniqueName
        let relay = try await onThread { try RelayProcess(address: bus.address, app: appName, widget: tapped, adding: [:]) }
        defer { relay.stop() }
        let relayName = relay.uniqueName
        let relayTap: @Sendable () throws -> Message = {
            try Host1Widget.Proxy(client, destination: relayName, path: tapped).tapMessage(elementID: "t", options: [:])
        }
        _ = try await onThread { for _ in 0..<200 { _ = try renderer.roundTrip(relayTap()) } }
        let relayStreams = zip(streams, writtenWidgets).map { stream, widget in (stream.0, Self.setContent(client, widget, to: durableName)) }

        /// Taps while `load` runs on threads of its own; what the load got,
        /// for how long it ran, and the host's CPU time meanwhile.
        let hostID = host.processIdentifier
        func whileLoaded(
            _ load: [@Sendable (Locked<Bool>) -> DirectLibdbus.Client.Streamed], tapping make: @escaping @Sendable () throws -> Message = tap
        ) async throws -> (taps: Stats, streamed: DirectLibdbus.Client.Streamed, seconds: Double, cpu: Double) {
            let stop = Locked(false)
            let started = monotonicNanoseconds(), cpu = cpuSeconds(hostID)
            let running = load.map { body in Task.detached { try await onThread { body(stop) } } }
            try await Task.sleep(for: .milliseconds(200))
            let measured = try await onThread {
                var stats = Stats()
                for _ in 0..<perRound { stats.record(try renderer.roundTrip(make())) }
                return stats
            }
            stop.withLock { $0 = true }
            let seconds = Double(monotonicNanoseconds() - started) / 1e9, used = cpuSeconds(hostID) - cpu
            var total = DirectLibdbus.Client.Streamed()
            for task in running {
                let streamed = try await task.value
                total.answered += streamed.answered
                total.refused += streamed.refused
                total.error = total.error ?? streamed.error
            }
            if let error = total.error { throw PrivateBusError("a streamed SetContent failed: \(error)") }
            return (measured, total, seconds, used)
        }

        let appRate = self.appRate, streamWindow = self.streamWindow, apps = self.apps
        /// Each app streaming at `appRate`; apps are not in step: each starts at a phase of its own.
        func paced(_ streams: [(DirectLibdbus.Client, @Sendable () throws -> Message)]) -> [@Sendable (Locked<Bool>) -> DirectLibdbus.Client.Streamed] {
            streams.enumerated().map { n, stream in
                let phase = Double(n) / Double(apps)
                return { stop in stream.0.paced(perSecond: appRate, phase: phase, until: stop, make: stream.1) }
            }
        }
        var alone = Stats(), steady = Stats(), flood = Stats(), relayAlone = Stats(), relaySteady = Stats()
        var steadyGot = DirectLibdbus.Client.Streamed(), floodGot = DirectLibdbus.Client.Streamed()
        var aloneSeconds = 0.0, steadySeconds = 0.0, floodSeconds = 0.0
        var aloneCPU = 0.0, steadyCPU = 0.0, floodCPU = 0.0
        for _ in 0..<rounds {
            let (aloneTaps, _, aloneTime, aloneUsed) = try await whileLoaded([])
            alone.histogram.add(aloneTaps.histogram)
            aloneSeconds += aloneTime
            aloneCPU += aloneUsed
            let (steadyTaps, streamed, seconds, steadyUsed) = try await whileLoaded(paced(streams))
            steady.histogram.add(steadyTaps.histogram)
            steadyGot.answered += streamed.answered
            steadyGot.refused += streamed.refused
            steadySeconds += seconds
            steadyCPU += steadyUsed
            relayAlone.histogram.add(try await whileLoaded([], tapping: relayTap).taps.histogram)
            relaySteady.histogram.add(try await whileLoaded(paced(relayStreams), tapping: relayTap).taps.histogram)
            let (floodTaps, flooding, floodTime, floodUsed) = try await whileLoaded([{ stop in flooder.stream(window: streamWindow, until: stop, make: flooded) }])
            flood.histogram.add(floodTaps.histogram)
            floodGot.answered += flooding.answered
            floodGot.refused += flooding.refused
            floodSeconds += floodTime
            floodCPU += floodUsed
        }
        func share(_ cpu: Double, _ seconds: Double) -> String { String(format: "%8.0f %% of a core", 100 * cpu / seconds) }

        say("")
        say("taps, the host's update budget at its defaults (docs/daemon.md#updates), \(perRound * rounds) of each in \(rounds) rounds")
        row("tap p50 / p99 alone", us(alone.p50) + " / " + us(alone.p99))
        row("  host CPU meanwhile", share(aloneCPU, aloneSeconds))
        row("tap p50 / p99 while \(apps) apps stream \(appRate)/s each", us(steady.p50) + " / " + us(steady.p99))
        row(
            "  SetContent acknowledged / refused meanwhile",
            String(format: "%8.0f / %.0f sets/s", Double(steadyGot.acknowledged) / steadySeconds, Double(steadyGot.refused) / steadySeconds))
        row("  host CPU meanwhile", share(steadyCPU, steadySeconds))
        row("tap p50 / p99 while one app floods", us(flood.p50) + " / " + us(flood.p99))
        row(
            "  SetContent acknowledged / refused meanwhile",
            String(format: "%8.0f / %.0f sets/s", Double(floodGot.acknowledged) / floodSeconds, Double(floodGot.refused) / floodSeconds))
        row("  host CPU meanwhile", share(floodCPU, floodSeconds))
        let steadyRatio = steady.p99 / alone.p99, floodRatio = flood.p99 / alone.p99
        verdict(
            "tap p99 while \(apps) apps each stream \(appRate) updates/s / alone (target ≤ 1.3)",
            String(format: "%8.2f", steadyRatio), met: steadyRatio <= 1.3)
        verdict("tap p99 while one app floods as fast as it can / alone (target ≤ 2)", String(format: "%8.2f", floodRatio), met: floodRatio <= 2)
        row("ceiling: relay tap p50 / p99 alone", us(relayAlone.p50) + " / " + us(relayAlone.p99))
        row("ceiling: relay tap p50 / p99, \(apps) apps streaming to the durable relay", us(relaySteady.p50) + " / " + us(relaySteady.p99))
        row("ceiling: relay tap p99 while they stream / alone", String(format: "%8.2f", relaySteady.p99 / relayAlone.p99))
    }

    /// Starts widget-hostd on `bus` with its state in `stateDirectory`, its
    /// syncs slowed by `preload` when given, and `arguments` besides.
    static func startHost(on bus: PrivateBus, stateDirectory: String, preload: String?, _ arguments: [String]) throws -> Process {
        let host = Process()
        host.executableURL = URL(fileURLWithPath: binDirectory + "/widget-hostd")
        host.arguments = ["--address", bus.address, "--log-level", "warning", "--state-dir", stateDirectory] + arguments
        var environment = bus.environment()
        if let preload { environment["LD_PRELOAD"] = preload }
        host.environment = environment
        try PrivateBus.withCleanSignalMask { try host.run() }
        return host
    }

    static func stop(_ host: Process) {
        guard host.isRunning else { return }
        host.terminate()
        host.waitUntilExit()
    }

    /// SetContent calls to `widget`, each with new content; to the host, or to `destination`.
    static func setContent(_ client: Connection, _ widget: String, to destination: String? = nil) -> @Sendable () throws -> Message {
        let sequence = Locked(0)
        let proxy = destination.map { Host1Widget.Proxy(client, destination: $0, path: widget) } ?? Host1Widget.Proxy(client, path: widget)
        return {
            let n = sequence.withLock { $0 += 1; return $0 }
            return try proxy.setContentMessage(contentJSON: #"{"type":"text","id":"t","text":"\#(n)"}"#)
        }
    }

    /// Update calls to `activity`, each with new content; to the host, or to `destination`.
    static func update(_ client: Connection, _ activity: String, to destination: String? = nil) -> @Sendable () throws -> Message {
        let sequence = Locked(0)
        let proxy =
            destination.map { Host1LiveActivity.Proxy(client, destination: $0, path: activity) } ?? Host1LiveActivity.Proxy(client, path: activity)
        return {
            let n = sequence.withLock { $0 += 1; return $0 }
            return try proxy.updateMessage(contentJSON: Self.activityContent(n), options: [:])
        }
    }

    static func activityContent(_ n: Int) -> String {
        let tree = #"{"type":"text","text":"\#(n) min"}"#
        return #"{"lockScreen":\#(tree),"compactLeading":\#(tree),"compactTrailing":\#(tree),"minimal":\#(tree),"expanded":\#(tree)}"#
    }

    /// The p50 of 200 appends of 100 bytes, each followed by `fdatasync`, in `directory`, in µs.
    static func fdatasyncP50(in directory: String) throws -> Double {
        let path = directory + "/widget-host-bench-sync-\(getpid())"
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw PrivateBusError("cannot open \(path): errno \(errno)") }
        defer {
            close(fd)
            unlink(path)
        }
        var stats = Stats()
        let line = [UInt8](repeating: 0x78, count: 99) + [0x0A]
        for _ in 0..<200 {
            let start = monotonicNanoseconds()
            guard line.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == line.count, fdatasync(fd) == 0 else {
                throw PrivateBusError("cannot write and sync \(path): errno \(errno)")
            }
            stats.record(monotonicNanoseconds() - start)
        }
        return stats.p50
    }
}
