import DBus
import Testing

@Suite("Disconnection")
struct DisconnectTests {
    @Test("stopping the bus fails in-flight calls with Disconnected and wakes waitUntilDisconnected")
    func busGoesAway() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)
            let subscription = Recorder(try await client.signals(MatchRule(interface: signalsInterface)))
            let disconnectHandlers = Counter()
            client.onDisconnect { disconnectHandlers.increment() }
            server.onDisconnect { disconnectHandlers.increment() }

            let inFlight = Task { try await client.test(destination, "Hang") }
            let waiter = Task {
                await client.waitUntilDisconnected()
                return ContinuousClock.now
            }
            try await eventually(5, "the call to arrive") { object.hangs.count == 1 }
            #expect(client.isConnected && server.isConnected)

            let stopped = ContinuousClock.now
            await fixture.stopBus()
            let error = await expectDBusError(DBusError.disconnectedName) {
                _ = try await withTimeout(5, "the in-flight call to fail") { try await inFlight.value }
            }
            #expect(error != nil)
            let woke = try await withTimeout(5, "waitUntilDisconnected") { await waiter.value }
            #expect(woke - stopped < .seconds(10))
            #expect(!client.isConnected)
            try await eventually(5, "the server to notice") { !server.isConnected }
            #expect(disconnectHandlers.count == 2)
            #expect(await subscription.finished())

            // Everything afterwards fails at once, and waiting returns at once.
            await expectDBusError(DBusError.disconnectedName) { _ = try await client.test(destination, "Fast", [.int32(1)]) }
            await expectDBusError(DBusError.disconnectedName) { _ = try await client.signals(MatchRule(member: "X")) }
            await expectDBusError(DBusError.disconnectedName) { _ = try await client.requestName("org.widgethost.Test.Late") }
            #expect(throws: DBusError.self) {
                try client.send(Message.signal(path: "/x", interface: signalsInterface, member: "Ping"))
            }
            try await withTimeout(1, "a second waitUntilDisconnected") { await client.waitUntilDisconnected() }
            let late = Counter()
            client.onDisconnect { late.increment() }
            #expect(late.count == 1)
        }
    }

    @Test("close() fails in-flight calls with Disconnected; other connections are unaffected")
    func closeFailsCalls() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try SlowObject(on: server)
            let destination = try #require(server.uniqueName)

            let calls = (0..<5).map { _ in Task { try await client.test(destination, "Hang") } }
            try await eventually(5, "the calls to arrive") { object.hangs.count == 5 }
            let waiter = Task { await client.waitUntilDisconnected() }
            let start = ContinuousClock.now
            client.close()
            #expect(!client.isConnected)
            for call in calls {
                await expectDBusError(DBusError.disconnectedName) {
                    _ = try await withTimeout(5, "a call to fail") { try await call.value }
                }
            }
            try await withTimeout(5, "waitUntilDisconnected") { await waiter.value }
            #expect(ContinuousClock.now - start < .seconds(20), "close() must fail calls at once, not at their 25 s timeout")
            client.close()  // twice is harmless
            await expectDBusError(DBusError.disconnectedName) { _ = try await client.test(destination, "Fast", [.int32(1)]) }

            // The server and a new client carry on.
            let other = try await fixture.connect("other")
            #expect(try await other.test(destination, "Fast", [.int32(5)]) == [.int32(5)])
            #expect(server.isConnected)
            // The bus noticed the closed client.
            #expect(try await other.nameOwner(try #require(client.uniqueName)) == nil)
        }
    }
}
