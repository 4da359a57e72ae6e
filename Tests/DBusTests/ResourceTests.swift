import DBus
import Foundation
import PrivateBus
import Testing

/// Which measurement this process was started to run alone (see `ResourceTests`).
let measurementScenario = ProcessInfo.processInfo.environment["WIDGETHOST_DBUS_MEASURE"]

/// RSS and CPU time belong to the whole process, and the test process runs
/// every suite of every test target at once. So each measurement runs in a
/// child: this same test binary, started with a filter that selects only the
/// scenario and an environment variable that enables it. The child prints
/// `MEASURE key=value` lines; the parent test checks them. Run on their own,
/// the scenario tests are skipped.
@Suite("Resource use")
struct ResourceTests {
    /// Runs one scenario test in a child process; returns its MEASURE values.
    static func measureInChild(_ scenario: String, timeout: Double = 120) async throws -> [String: Double] {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let result = try await runCommand(
            executable, ["--testing-library", "swift-testing", "--filter", "DBusTests.ResourceTests/\(scenario)"],
            adding: ["WIDGETHOST_DBUS_MEASURE": scenario], timeout: timeout)
        #expect(result.succeeded, "the \(scenario) child failed: \(result)")
        var values: [String: Double] = [:]
        for line in result.stdout.split(separator: "\n") where line.hasPrefix("MEASURE ") {
            let pair = line.dropFirst("MEASURE ".count).split(separator: "=", maxSplits: 1)
            if pair.count == 2, let value = Double(pair[1]) { values[String(pair[0])] = value }
        }
        #expect(!values.isEmpty, "the \(scenario) child reported nothing: \(result)")
        return values
    }

    static func report(_ key: String, _ value: some BinaryInteger) {
        print("MEASURE \(key)=\(value)")
        fflush(nil)
    }

    /// Runs `total` EchoString calls over `lanes` concurrent lanes; returns how many answered correctly.
    static func echo(_ client: Connection, _ destination: String, total: Int, lanes: Int, offset: Int) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    var ok = 0
                    var i = lane
                    while i < total {
                        let text = "lane \(lane) call \(offset + i)"
                        let reply = try await client.test(destination, "EchoString", [.string(text)])
                        if reply == [.string(text)] { ok += 1 }
                        i += lanes
                    }
                    return ok
                }
            }
            return try await group.reduce(0, +)
        }
    }

    // MARK: Memory

    /// The bound: a leak of one libdbus message (a few hundred bytes) or of
    /// one small Swift object graph per call grows RSS by 90,000 × ≥ 100 B ≈
    /// 8.6 MB or more between the two measurements (the PendingCall cycle
    /// this suite found leaked ~260 B a call: 23 MB). Allocator noise and
    /// libdbus's caches stay far below it once warm (a few hundred KiB).
    static let growthBound = 8 << 20

    @Test("100,000 pipelined echo calls all succeed and RSS stays flat after warm-up (measured in a child process)")
    func memory() async throws {
        let values = try await Self.measureInChild("memoryScenario")
        let (warm, rest) = (values["rss-after-10k"] ?? 0, values["rss-after-100k"] ?? 0)
        print("memory: RSS \(Int(warm) >> 10) KiB after 10,000 calls, \(Int(rest) >> 10) KiB after 100,000; \(values["seconds"] ?? 0) s")
        #expect(values["answered"] == 100_000)
        #expect(values["handled"] == 100_000)
        #expect(warm > 0 && rest > 0)
        #expect(rest - warm < Double(Self.growthBound), "RSS grew by \(Int(rest - warm) >> 10) KiB over 90,000 calls")
    }

    @Test(.enabled(if: measurementScenario == "memoryScenario"))
    func memoryScenario() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let echo = try EchoObject(on: server)
            let destination = try #require(server.uniqueName)
            let start = ContinuousClock.now
            var answered = try await Self.echo(client, destination, total: 10_000, lanes: 32, offset: 0)
            Self.report("rss-after-10k", residentBytes())
            answered += try await Self.echo(client, destination, total: 90_000, lanes: 32, offset: 10_000)
            Self.report("rss-after-100k", residentBytes())
            Self.report("answered", answered)
            Self.report("handled", echo.calls.count)
            Self.report("seconds", (ContinuousClock.now - start).components.seconds)
            #expect(client.isConnected && server.isConnected)
        }
    }

    // MARK: Idle

    @Test("an idle connection with an exported object uses almost no CPU (measured in a child process)")
    func idle() async throws {
        let values = try await Self.measureInChild("idleScenario")
        let cpu = values["idle-cpu-us"] ?? .infinity
        print("idle: \(Int(cpu)) µs of CPU in \(values["idle-wall-ms"] ?? 0) ms")
        #expect((values["idle-wall-ms"] ?? 0) >= 1900)
        #expect(cpu < 50_000, "\(cpu) µs of CPU while idle for 2 s")
        #expect(values["awake"] == 1)
    }

    @Test(.enabled(if: measurementScenario == "idleScenario"))
    func idleScenario() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            _ = try EchoObject(on: server)
            let destination = try #require(server.uniqueName)
            // Some traffic first, and a live subscription, so every part of the loop has been used.
            let subscription = Recorder(try await client.signals(MatchRule(interface: signalsInterface)))
            for i in 0..<50 { _ = try await client.test(destination, "EchoString", [.string("\(i)")]) }
            try await Task.sleep(for: .milliseconds(300))

            let cpuBefore = processCPUMicroseconds()
            let wallBefore = ContinuousClock.now
            try await Task.sleep(for: .seconds(2))
            Self.report("idle-cpu-us", processCPUMicroseconds() - cpuBefore)
            let wall = ContinuousClock.now - wallBefore
            Self.report("idle-wall-ms", wall.components.seconds * 1000 + wall.components.attoseconds / 1_000_000_000_000_000)

            // Still alive after the idle period.
            let awake = try await client.test(destination, "EchoString", [.string("awake")]) == [.string("awake")]
            Self.report("awake", awake ? 1 : 0)
            #expect(subscription.received.isEmpty)
        }
    }
}
