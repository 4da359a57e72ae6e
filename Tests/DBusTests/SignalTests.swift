import DBus
import Testing

let signalsInterface = "org.widgethost.Test.Signals"
let otherSignalsInterface = "org.widgethost.Test.OtherSignals"

/// Exports the signal interfaces at `paths` so the connection may emit from them.
func exportSignalInterfaces(on connection: Connection, at paths: [String]) throws {
    let xml = """
        <node>
          <interface name="\(signalsInterface)">
            <signal name="Ping"><arg name="label" type="s"/><arg name="seq" type="i"/></signal>
            <signal name="Pong"><arg name="label" type="s"/><arg name="seq" type="i"/></signal>
            <signal name="Bare"/>
          </interface>
          <interface name="\(otherSignalsInterface)">
            <signal name="Ping"><arg name="label" type="s"/><arg name="seq" type="i"/></signal>
          </interface>
        </node>
        """
    let parsed = try interfaces(xml)
    for path in paths { try connection.export(parsed.map { ExportedInterface($0) }, at: path) }
}

/// How many match rules the bus holds for a connection (org.freedesktop.DBus.Debug.Stats).
func matchRuleCount(of name: String, asking connection: Connection) async throws -> UInt32 {
    let reply = try await connection.call(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus.Debug.Stats",
        member: "GetConnectionStats", [.string(name)])
    guard case .uint32(let count)? = reply.first?.stringKeyedEntries?["MatchRules"]?.unwrapped else {
        throw DBusEncodingError("no MatchRules in \(reply)")
    }
    return count
}

@Suite("Signals")
struct SignalTests {
    /// One emitted signal, and what the test expects each rule to do with it.
    struct Emission: Sendable, Equatable, CustomStringConvertible {
        var fromOther: Bool
        var path: String
        var interface: String
        var member: String
        var label: String
        var seq: Int32
        var description: String { "\(fromOther ? "other" : "emitter") \(path) \(interface).\(member)(\(label), \(seq))" }
    }

    @Test("each subscription receives exactly the signals its rule matches")
    func filtering() async throws {
        try await withBus { fixture in
            let emitter = try await fixture.connect("emitter")
            let other = try await fixture.connect("other")
            let subscriber = try await fixture.connect("subscriber")
            try exportSignalInterfaces(on: emitter, at: ["/sig/a", "/sig/b", "/sig/b/deeper", "/sigx", "/elsewhere"])
            try exportSignalInterfaces(on: other, at: ["/sig/a"])
            #expect(try await emitter.requestName("org.widgethost.Test.Emitter") == .primaryOwner)
            let emitterName = try #require(emitter.uniqueName)

            // The rules, and the same rules written as predicates over the table below.
            let rules: [(MatchRule, (Emission) -> Bool)] = [
                (MatchRule(interface: signalsInterface, member: "Ping"), { $0.interface == signalsInterface && $0.member == "Ping" }),
                (MatchRule(path: "/sig/b"), { $0.path == "/sig/b" }),
                (MatchRule(interface: signalsInterface, arg0: "match"), { $0.interface == signalsInterface && $0.label == "match" }),
                (MatchRule(pathNamespace: "/sig"), { $0.path == "/sig" || $0.path.hasPrefix("/sig/") }),
                (MatchRule(sender: emitterName, member: "Pong"), { !$0.fromOther && $0.member == "Pong" }),
                (MatchRule(sender: "org.widgethost.Test.Emitter", interface: otherSignalsInterface), { !$0.fromOther && $0.interface == otherSignalsInterface }),
                (MatchRule(interface: signalsInterface, member: "Pong", path: "/sig/a", arg0: "match"),
                 { $0.interface == signalsInterface && $0.member == "Pong" && $0.path == "/sig/a" && $0.label == "match" }),
            ]
            var recorders: [Recorder<Message>] = []
            for (rule, _) in rules { recorders.append(Recorder(try await subscriber.signals(rule))) }

            func emit(_ e: Emission) throws {
                try (e.fromOther ? other : emitter).emit(
                    path: e.path, interface: e.interface, member: e.member, arguments: [.string(e.label), .int32(e.seq)])
            }
            var table: [Emission] = []
            func add(_ fromOther: Bool, _ path: String, _ interface: String, _ member: String, _ label: String) {
                table.append(Emission(fromOther: fromOther, path: path, interface: interface, member: member, label: label, seq: Int32(table.count)))
            }
            // The other connection goes first; the emitter waits until it has been seen (ordering holds per sender only).
            add(true, "/sig/a", signalsInterface, "Ping", "match")
            add(true, "/sig/a", signalsInterface, "Pong", "match")
            for e in table { try emit(e) }
            try await recorders[0].wait(count: 1)
            try await recorders[6].wait(count: 1)
            for path in ["/sig/a", "/sig/b", "/sig/b/deeper", "/sigx", "/elsewhere"] {
                for member in ["Ping", "Pong"] {
                    for label in ["match", "nomatch", "matchx"] { add(false, path, signalsInterface, member, label) }
                }
                add(false, path, otherSignalsInterface, "Ping", "match")
            }
            for e in table where !e.fromOther { try emit(e) }

            for (index, (rule, predicate)) in rules.enumerated() {
                let expected = table.filter(predicate)
                #expect(!expected.isEmpty)
                let got = try await recorders[index].wait(count: expected.count)
                let seen = got.map { message -> Emission in
                    let args = message.arguments()
                    return Emission(
                        fromOther: message.sender != emitterName, path: message.path ?? "", interface: message.interface ?? "",
                        member: message.member ?? "", label: args.first?.stringValue ?? "", seq: Int32(args.last?.integerValue ?? -1))
                }
                #expect(seen == expected, "rule \(rule)")
            }
            // Nothing more trickles in.
            try await Task.sleep(for: .milliseconds(150))
            for (index, (rule, predicate)) in rules.enumerated() {
                #expect(recorders[index].received.count == table.filter(predicate).count, "rule \(rule)")
            }
            // Signals from the bus itself are matched by sender too.
            #expect(recorders.allSatisfy { $0.received.allSatisfy { $0.sender != "org.freedesktop.DBus" } })
        }
    }

    @Test("dropping or cancelling a subscription stops delivery and removes its match rule from the bus")
    func droppingStopsDelivery() async throws {
        try await withBus { fixture in
            let emitter = try await fixture.connect("emitter")
            let subscriber = try await fixture.connect("subscriber")
            try exportSignalInterfaces(on: emitter, at: ["/sig/a"])
            let name = try #require(subscriber.uniqueName)
            let baseline = try await matchRuleCount(of: name, asking: subscriber)
            let rule = MatchRule(interface: signalsInterface, member: "Ping")

            // A stream that is iterated once and then dropped.
            func receiveOneAndDrop() async throws -> Message? {
                let stream = try await subscriber.signals(rule)
                #expect(try await matchRuleCount(of: name, asking: subscriber) == baseline + 1)
                try emitter.emit(path: "/sig/a", interface: signalsInterface, member: "Ping", arguments: [.string("first"), .int32(1)])
                var iterator = stream.makeAsyncIterator()
                return await iterator.next()
            }
            let first = try await receiveOneAndDrop()
            #expect(first?.arguments() == [.string("first"), .int32(1)])
            try await eventuallyAsync(5, "the dropped stream's match rule to go") {
                try await matchRuleCount(of: name, asking: subscriber) == baseline
            }

            // A consumer that is cancelled, next to one that keeps listening.
            let cancelled = Recorder(try await subscriber.signals(rule))
            let control = Recorder(try await subscriber.signals(rule))
            #expect(try await matchRuleCount(of: name, asking: subscriber) == baseline + 2)
            try emitter.emit(path: "/sig/a", interface: signalsInterface, member: "Ping", arguments: [.string("both"), .int32(2)])
            try await cancelled.wait(count: 1)
            try await control.wait(count: 1)
            cancelled.cancel()
            #expect(await cancelled.finished())
            for seq in 3...5 {
                try emitter.emit(path: "/sig/a", interface: signalsInterface, member: "Ping", arguments: [.string("later"), .int32(Int32(seq))])
            }
            let later = try await control.wait(count: 4)
            #expect(later.map { $0.arguments().last } == [.int32(2), .int32(3), .int32(4), .int32(5)])
            #expect(cancelled.received.count == 1)
            try await eventuallyAsync(5, "the cancelled stream's match rule to go") {
                try await matchRuleCount(of: name, asking: subscriber) == baseline + 1
            }
        }
    }

    @Test("emit checks the signal against the exported interface")
    func emitChecks() async throws {
        try await withBus { fixture in
            let emitter = try await fixture.connect("emitter")
            let subscriber = try await fixture.connect("subscriber")
            try exportSignalInterfaces(on: emitter, at: ["/sig/a"])
            let recorder = Recorder(try await subscriber.signals(MatchRule(pathNamespace: "/sig")))

            let wrong: [(String, String, String, [DBusValue])] = [
                ("/sig/a", signalsInterface, "Ping", [.string("no seq")]),
                ("/sig/a", signalsInterface, "Ping", [.int32(1), .string("swapped")]),
                ("/sig/a", signalsInterface, "Ping", [.string("extra"), .int32(1), .int32(2)]),
                ("/sig/a", signalsInterface, "Ping", [.string("wide"), .int64(1)]),
                ("/sig/a", signalsInterface, "Bare", [.string("none expected")]),
                ("/sig/a", signalsInterface, "Undeclared", []),
                ("/sig/b", signalsInterface, "Ping", [.string("not exported here"), .int32(1)]),
                ("/sig/a", "org.widgethost.Test.NotThere", "Ping", [.string("x"), .int32(1)]),
                ("/sig/a", "org.freedesktop.DBus.Properties", "PropertiesChanged", [.string("x")]),
            ]
            for (path, interface, member, args) in wrong {
                #expect(throws: DBusEncodingError.self, "\(path) \(interface).\(member) \(args)") {
                    try emitter.emit(path: path, interface: interface, member: member, arguments: args)
                }
            }
            try emitter.emit(path: "/sig/a", interface: signalsInterface, member: "Bare")
            try emitter.emit(path: "/sig/a", interface: signalsInterface, member: "Ping", arguments: [.string("right"), .int32(1)])
            let received = try await recorder.wait(count: 2)
            #expect(received.map(\.member) == ["Bare", "Ping"])
            #expect(received[1].arguments() == [.string("right"), .int32(1)])
            try await Task.sleep(for: .milliseconds(100))
            #expect(recorder.received.count == 2)
        }
    }

    @Test("a signal emitted from another thread goes out before the reply to a call made after it, every time")
    func emissionOrderAgainstLaterCalls() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let path = "/org/widgethost/Test/Order", name = "org.widgethost.Test.Order"
            var exported = ExportedInterface(
                try interface(
                    """
                    <node><interface name="\(name)">
                      <method name="Poke"><arg name="seq" type="i" direction="in"/></method>
                      <signal name="Seen"><arg name="from" type="s"/><arg name="seq" type="i"/></signal>
                    </interface></node>
                    """))
            // The handler emits on the connection's thread; the test emits from its own task.
            exported.method("Poke", .immediate { [weak server] call in
                try server?.emit(path: path, interface: name, member: "Seen", arguments: [.string("handler"), call.arguments[0]])
                return []
            })
            try server.export([exported], at: path)
            let destination = try #require(server.uniqueName)
            let recorder = Recorder(try await client.signals(MatchRule(interface: name, member: "Seen")))
            let rounds = 300
            for seq in 0..<Int32(rounds) {
                try server.emit(path: path, interface: name, member: "Seen", arguments: [.string("task"), .int32(seq)])
                _ = try await client.call(destination: destination, path: path, interface: name, member: "Poke", [.int32(seq)])
            }
            let received = try await recorder.wait(count: 2 * rounds).map { $0.arguments() }
            let expected = (0..<Int32(rounds)).flatMap { seq -> [[DBusValue]] in
                [[.string("task"), .int32(seq)], [.string("handler"), .int32(seq)]]
            }
            let firstWrong = received.indices.first { received[$0] != expected[$0] }
            #expect(firstWrong == nil, "out of order at \(firstWrong ?? -1): \(received[max(0, (firstWrong ?? 0) - 1)...].prefix(3))")
        }
    }
}
