import DBus
import Foundation
import Testing

/// These two tests measure the whole process, so each holds the test gate
/// alone: no other test runs while they do.
@Suite("Resource use")
struct ResourceTests {
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

    /// The bound: a leak of one libdbus message (a few hundred bytes) or one
    /// Swift object graph per call would grow RSS by well over 90,000 × 100 B
    /// ≈ 8.6 MB between the two measurements; allocator noise, dispatch's
    /// thread caches and libdbus's message cache stay far below it once warm.
    static let growthBound = 8 << 20

    @Test("100,000 pipelined echo calls all succeed and RSS stays flat after warm-up")
    func memory() async throws {
        try await withBus(exclusive: true) { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let echo = try EchoObject(on: server)
            let destination = try #require(server.uniqueName)
            let lanes = 32

            let start = ContinuousClock.now
            let warm = try await Self.echo(client, destination, total: 10_000, lanes: lanes, offset: 0)
            let afterWarmUp = residentBytes()
            let rest = try await Self.echo(client, destination, total: 90_000, lanes: lanes, offset: 10_000)
            let afterAll = residentBytes()
            let elapsed = ContinuousClock.now - start

            #expect(warm == 10_000)
            #expect(rest == 90_000)
            #expect(echo.calls.count == 100_000)
            let growth = afterAll - afterWarmUp
            print("memory: RSS \(afterWarmUp >> 10) KiB after 10,000 calls, \(afterAll >> 10) KiB after 100,000 (\(growth >> 10) KiB growth); \(elapsed)")
            #expect(growth < Self.growthBound, "RSS grew by \(growth >> 10) KiB over 90,000 calls")
            #expect(client.isConnected && server.isConnected)
        }
    }

    @Test("an idle connection with an exported object uses almost no CPU")
    func idle() async throws {
        try await withBus(exclusive: true) { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            _ = try EchoObject(on: server)
            let destination = try #require(server.uniqueName)
            // Some traffic first, and a live subscription, so every part of the loop has been used.
            let subscription = Recorder(try await client.signals(MatchRule(interface: signalsInterface)))
            for i in 0..<50 { _ = try await client.test(destination, "EchoString", [.string("\(i)")]) }
            try await Task.sleep(for: .milliseconds(200))

            let cpuBefore = processCPUMicroseconds()
            let wallBefore = ContinuousClock.now
            try await Task.sleep(for: .seconds(2))
            let cpu = processCPUMicroseconds() - cpuBefore
            let wall = ContinuousClock.now - wallBefore
            print("idle: \(cpu) µs of CPU in \(wall)")
            #expect(cpu < 50_000, "\(cpu) µs of CPU while idle for \(wall)")

            // Still alive after the idle period.
            #expect(try await client.test(destination, "EchoString", [.string("awake")]) == [.string("awake")])
            #expect(subscription.received.isEmpty)
        }
    }
}
