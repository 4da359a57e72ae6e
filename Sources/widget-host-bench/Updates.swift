import ArgumentParser
import DBus
import Foundation
import PrivateBus
import WidgetHostInterfaces

/// Durable updates, and taps while one app streams them, on the state
/// directory's real disk and with every sync made to take `--slow-sync-ms`.
struct UpdatesBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "updates",
        abstract: "Durable SetContent and LiveActivity.Update through widget-hostd, and taps alone and while one app streams updates.",
        discussion: """
            Runs twice: with the host's state directory on a real disk (--state-parent, by default \
            $XDG_STATE_HOME or ~/.local/state, where the host keeps it), then with every fsync and \
            fdatasync of the host made to take --slow-sync-ms longer, by an LD_PRELOAD shim the benchmark \
            compiles with the system C compiler.
            """)

    @Option(help: "Round trips measured for latency (a tenth of them with slow syncs).") var count = 2_000
    @Option(help: "Calls in the pipelined runs (a tenth of them with slow syncs).") var pipelined = 10_000
    @Option(help: "Calls in flight in the pipelined runs.") var window = 64
    @Option(help: "Updates the streaming app keeps in flight while taps are measured.") var streamWindow = 16
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
        if slowSyncMs > 0 {
            let shim = try await SlowSync.build(milliseconds: slowSyncMs)
            defer { shim.remove() }
            say("")
            say("with every fsync/fdatasync of the host \(slowSyncMs) ms slower (LD_PRELOAD shim)")
            try await measure(parent: parent, preload: shim.path, scale: 10, diskSync: syncP50 + Double(slowSyncMs) * 1000, extraSync: UInt32(slowSyncMs) * 1000)
        }
    }

    static func defaultStateParent() -> String {
        let environment = ProcessInfo.processInfo.environment
        let stateHome = environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? (NSHomeDirectory() + "/.local/state")
        return stateHome
    }

    /// One run: a fresh bus and host, the floor, the durable relay (`extraSync`
    /// µs slower per sync, as the shim makes the host), the updates, then taps
    /// alone and while an app streams.
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
        let host = Process()
        host.executableURL = URL(fileURLWithPath: binDirectory + "/widget-hostd")
        host.arguments = ["--address", bus.address, "--log-level", "warning", "--state-dir", stateDirectory]
        var environment = bus.environment()
        if let preload { environment["LD_PRELOAD"] = preload }
        host.environment = environment
        try PrivateBus.withCleanSignalMask { try host.run() }
        defer {
            if host.isRunning {
                host.terminate()
                host.waitUntilExit()
            }
        }
        let client = try await connectOnceHostIsUp(bus, label: "bench-updates")
        defer { client.close() }

        // The tapped app answers every delivery at once; the writing app is another app, as on a desktop.
        let app = try DirectLibdbus.EchoServer(address: bus.address, answeringEveryCall: true)
        let tapped = try await registerBenchApp("org.example.Tapped", on: { try app.call($0) }, client)
        _ = try app.call(Host1Widget.Proxy(client, path: tapped).setContentMessage(contentJSON: #"{"type":"text","id":"t","widgetURL":"bench://open"}"#))
        app.start()
        defer { app.stop() }
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
        let relayCall: @Sendable () throws -> Message = {
            try Message.methodCall(
                destination: relayName, path: DirectLibdbus.echoPath, interface: DirectLibdbus.echoInterface, member: "Echo", arguments: [.string("x")])
        }
        let sequence = Locked(0)
        let set: @Sendable () throws -> Message = {
            let n = sequence.withLock { $0 += 1; return $0 }
            return try Host1Widget.Proxy(client, path: written).setContentMessage(contentJSON: #"{"type":"text","id":"t","text":"\#(n)"}"#)
        }
        let update: @Sendable () throws -> Message = {
            let n = sequence.withLock { $0 += 1; return $0 }
            return try Host1LiveActivity.Proxy(client, path: activity).updateMessage(contentJSON: Self.activityContent(n), options: [:])
        }
        let tap: @Sendable () throws -> Message = { try Host1Widget.Proxy(client, path: tapped).tapMessage(elementID: "t", options: [:]) }

        // Latency: the floor and taps from the renderer, the writes from the writing app, in alternating blocks.
        let (floor, durable, sets, updates, taps) = try await onThread {
            var floor = Stats(), durable = Stats(), sets = Stats(), updates = Stats(), taps = Stats()
            for _ in 0..<min(200, count) {
                _ = try renderer.roundTrip(floorCall())
                _ = try writer.roundTrip(relayCall())
                _ = try writer.roundTrip(set())
                _ = try renderer.roundTrip(tap())
            }
            var done = 0
            while done < count {
                let block = min(50, count - done)
                for _ in 0..<block { floor.record(try renderer.roundTrip(floorCall())) }
                for _ in 0..<block { durable.record(try writer.roundTrip(relayCall())) }
                for _ in 0..<block { sets.record(try writer.roundTrip(set())) }
                for _ in 0..<block { updates.record(try writer.roundTrip(update())) }
                for _ in 0..<block { taps.record(try renderer.roundTrip(tap())) }
                done += block
            }
            return (floor, durable, sets, updates, taps)
        }
        // Pipelined: the floor, the durable relay, SetContent and Update in turn, three rounds.
        var seconds = [0.0, 0.0, 0.0, 0.0]
        for round in 0..<3 {
            let share = total / 3 + (round < total % 3 ? 1 : 0)
            seconds[0] += Double(share) / (try await onThread { try renderer.pipelined(total: share, window: window, make: floorCall) })
            seconds[3] += Double(share) / (try await onThread { try writer.pipelined(total: share, window: window, make: relayCall) })
            seconds[1] += Double(share) / (try await onThread { try writer.pipelined(total: share, window: window, make: set) })
            seconds[2] += Double(share) / (try await onThread { try writer.pipelined(total: share, window: window, make: update) })
        }
        let floorRate = Double(total) / seconds[0], setRate = Double(total) / seconds[1], updateRate = Double(total) / seconds[2]
        let relayRate = Double(total) / seconds[3]

        // Taps while the writing app streams SetContent as fast as the host acknowledges it.
        let stop = Locked(false)
        let streamWindow = self.streamWindow
        let streamed = Task.detached { try await onThread { writer.stream(window: streamWindow, until: stop, make: set) } }
        try await Task.sleep(for: .milliseconds(200))
        let started = monotonicNanoseconds()
        let loaded = try await onThread {
            var stats = Stats()
            for _ in 0..<max(50, count / 2) { stats.record(try renderer.roundTrip(tap())) }
            return stats
        }
        let loadedSeconds = Double(monotonicNanoseconds() - started) / 1e9
        stop.withLock { $0 = true }
        let stream = try await streamed.value
        if let error = stream.error { throw PrivateBusError("a streamed SetContent failed: \(error)") }

        say("")
        row("direct libdbus round trip p50 / p99", us(floor.p50) + " / " + us(floor.p99))
        row("direct libdbus pipelined", String(format: "%8.0f calls/s", floorRate))
        row("durable relay (zero work) p50 / p99", us(durable.p50) + " / " + us(durable.p99))
        row("durable relay pipelined (\(window) in flight)", String(format: "%8.0f calls/s", relayRate))
        row("durable SetContent p50 / p99", us(sets.p50) + " / " + us(sets.p99))
        row("durable SetContent pipelined (\(window) in flight)", String(format: "%8.0f sets/s", setRate))
        row("durable LiveActivity.Update p50 / p99", us(updates.p50) + " / " + us(updates.p99))
        row("durable Update pipelined", String(format: "%8.0f updates/s", updateRate))
        row("tap p50 / p99 alone", us(taps.p50) + " / " + us(taps.p99))
        row("tap p50 / p99 while an app streams sets", us(loaded.p50) + " / " + us(loaded.p99))
        row("  SetContent acknowledged meanwhile", String(format: "%8.0f sets/s", Double(stream.answered) / loadedSeconds))
        row("ratio tap p99 streaming / alone (target ≤ 2)", String(format: "%8.2f", loaded.p99 / taps.p99))
        row("ratio sets/s / floor calls/s (target ≥ 0.3)", String(format: "%8.3f", setRate / floorRate))
        row("ratio updates/s / floor calls/s (target ≥ 0.3)", String(format: "%8.3f", updateRate / floorRate))
        // The relay does nothing but hand each call to a writer and back: no host can beat it.
        row("ceiling: relay calls/s / floor calls/s", String(format: "%8.3f", relayRate / floorRate))
        row("SetContent p50 − floor − sync (target ≤ 100)", us(sets.p50 - floor.p50 - diskSync))
        row("Update p50 − floor − sync (target ≤ 100)", us(updates.p50 - floor.p50 - diskSync))
        row("ceiling: relay p50 − floor − sync", us(durable.p50 - floor.p50 - diskSync))
        // Against the relay, measured in the same run: what the host's own work adds to a durable write.
        row("SetContent p50 − durable relay p50 (target ≤ 50 µs)", us(sets.p50 - durable.p50))
        row("Update p50 − durable relay p50 (target ≤ 50 µs)", us(updates.p50 - durable.p50))
        row("SetContent pipelined / durable relay pipelined (target ≥ 0.9)", String(format: "%8.3f", setRate / relayRate))
        row("Update pipelined / durable relay pipelined (target ≥ 0.9)", String(format: "%8.3f", updateRate / relayRate))
        host.terminate()
        host.waitUntilExit()
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
