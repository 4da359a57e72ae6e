import ArgumentParser
import DBus
import Foundation

import Histogram
import PrivateBus

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
        subcommands: [BindingBench.self])
}

struct Stats {
    var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
    mutating func record(_ nanoseconds: UInt64) { _ = histogram.record(nanoseconds) }
    var p50: Double { Double(histogram.valueAtPercentile(50)) / 1000 }
    var p99: Double { Double(histogram.valueAtPercentile(99)) / 1000 }
}

func row(_ name: String, _ value: String) {
    say(name.padding(toLength: 46, withPad: " ", startingAt: 0) + value)
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
        let directServer = try DirectLibdbus.EchoServer(address: bus.address)
        let serverThread = Thread { directServer.run() }
        serverThread.start()
        let direct = try DirectLibdbus.Client(address: bus.address)
        let destination = directServer.uniqueName
        let floor: Stats = try await onThread {
            var stats = Stats()
            for _ in 0..<2000 { _ = try direct.roundTrip(to: destination, payload: text) }
            for _ in 0..<count { stats.record(try direct.roundTrip(to: destination, payload: text)) }
            return stats
        }
        let floorRate = try await onThread { direct.pipelined(to: destination, payload: text, total: total, window: window) }
        directServer.stop()

        // The binding both ends.
        let server = try await Connection.connect(.address(bus.address), label: "bench-server")
        var echo = ExportedInterface(try InterfaceDescription.parse(xml: echoXML)[0])
        echo.method("Echo", .immediate { call in call.arguments })
        try server.export([echo], at: DirectLibdbus.echoPath)
        let client = try await Connection.connect(.address(bus.address), label: "bench-client")
        let serverName = server.uniqueName!
        let message: @Sendable () throws -> Message = { try Message.methodCall(
            destination: serverName, path: DirectLibdbus.echoPath, interface: DirectLibdbus.echoInterface,
            member: "Echo", arguments: [.string(text)]) }
        for _ in 0..<2000 { _ = try await client.call(message()) }
        var binding = Stats()
        for _ in 0..<count {
            let m = try message()
            let start = DirectLibdbus.monotonicNanoseconds()
            _ = try await client.call(m)
            binding.record(DirectLibdbus.monotonicNanoseconds() - start)
        }
        let started = DirectLibdbus.monotonicNanoseconds()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<window {
                let share = total / window + (lane < total % window ? 1 : 0)
                group.addTask {
                    for _ in 0..<share { _ = try await client.call(message()) }
                }
            }
            try await group.waitForAll()
        }
        let bindingRate = Double(total) / (Double(DirectLibdbus.monotonicNanoseconds() - started) / 1e9)
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
