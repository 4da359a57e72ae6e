import DBus
import Foundation
import Testing

/// NaN and infinities from any connection, on every method that takes a{sv}.
@Suite("Non-finite numbers", .timeLimit(.minutes(2)))
struct NonFiniteTests {
    @Test("NaN and infinities are InvalidArgument on every method that takes a{sv}, from any connection; the host stays up")
    func everyPath() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await DurabilityTests.registeredApp(fixture)
        defer { app.close() }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let widget = try await renderer.addWidget(DurabilityTests.app, "Hero", "systemSmall")
        let activity = try await app.startActivity("T", DurabilityTests.activityContent)
        let nan = DBusValue.double(.nan)
        let inf = DBusValue.double(.infinity)
        func widgetCall(_ member: String, _ args: [DBusValue], on path: String, _ interface: String) -> (Connection) async throws -> Void {
            { connection in _ = try await connection.call(destination: "org.widgethost.Host1", path: path, interface: interface, member: member, args) }
        }
        let calls: [(String, Connection, (Connection) async throws -> Void)] = [
            ("AddWidget", renderer, { _ = try await $0.addWidget(DurabilityTests.app, "Hero", "systemSmall", ["n": nan]) }),
            ("AddWidget nested", renderer, { _ = try await $0.addWidget(DurabilityTests.app, "Hero", "systemSmall", ["n": .vardict(["a": .array(element: "d", [.double(1), .double(-.infinity)])])]) }),
            ("Configure", renderer, { try await $0.configure(widget, ["n": inf]) }),
            ("StartActivity state", app.connection, { _ = try await $0.host("StartActivity", [.string(DurabilityTests.app), .string("T"), .string(DurabilityTests.activityContent), .vardict(["state": .vardict(["speed": nan])])], interface: "org.widgethost.Host1.LiveActivities") }),
            ("StartActivity attributes", app.connection, { _ = try await $0.host("StartActivity", [.string(DurabilityTests.app), .string("T"), .string(DurabilityTests.activityContent), .vardict(["attributes": .vardict(["x": inf])])], interface: "org.widgethost.Host1.LiveActivities") }),
            ("StartActivity relevance", app.connection, { _ = try await $0.host("StartActivity", [.string(DurabilityTests.app), .string("T"), .string(DurabilityTests.activityContent), .vardict(["relevance": nan])], interface: "org.widgethost.Host1.LiveActivities") }),
            ("Update", app.connection, widgetCall("Update", [.string(""), .vardict(["state": .vardict(["x": nan])])], on: activity, "org.widgethost.Host1.LiveActivity")),
            ("End", app.connection, widgetCall("End", [.vardict(["state": .vardict(["x": inf])])], on: activity, "org.widgethost.Host1.LiveActivity")),
            ("RegisterApp", renderer, { _ = try await $0.host("RegisterApp", [.string("org.example.Other"), .vardict(["protocol": nan])]) }),
            ("OpenURL", renderer, { _ = try await $0.host("OpenURL", [.string("x-durable://a"), .vardict(["activation_token": nan])]) }),
            ("Tap", renderer, { _ = try await $0.tap(widget, "", ["surface": nan]) }),
            ("Resolve", renderer, { _ = try await $0.tap(widget, "", ["surface": inf], method: "Resolve") }),
            ("Activity Tap", renderer, widgetCall("Tap", [.string("minimal"), .string(""), .vardict(["surface": nan])], on: activity, "org.widgethost.Host1.LiveActivity")),
            ("GetConfigurationOptions", renderer, { _ = try await $0.host("GetConfigurationOptions", [.string(DurabilityTests.app), .string("Hero"), .string("n"), .vardict(["n": nan])], interface: "org.widgethost.Host1.Widgets") }),
        ]
        for (name, connection, call) in calls {
            do {
                try await call(connection)
                Issue.record("\(name) took a non-finite number")
            } catch let error as DBusError {
                #expect(error.name.hasPrefix("org.widgethost.Host1.Error."), "\(name): \(error)")
            }
        }
        #expect(fixture.hostProcess?.isRunning == true)
        let objects = try await renderer.managedObjects()
        #expect(objects.count == 2, "no widget or activity was added: \(objects.keys)")
        #expect(objects[widget]?["Configuration"] == .vardict([:]))
        // The message says where the number is.
        await expectHostError("InvalidArgument", mentioning: "'n.a[1]' is not a finite number") {
            _ = try await renderer.addWidget(DurabilityTests.app, "Hero", "systemSmall", ["n": .vardict(["a": .array(element: "d", [.double(1), .double(-.infinity)])])])
        }
        await expectHostError("InvalidArgument", mentioning: "state value 'speed' is not a finite number") {
            _ = try await app.startActivity("T", DurabilityTests.activityContent, ["state": .vardict(["speed": nan])])
        }
        // The host answers and stores as before.
        try await app.setContent(widget, #"{"type":"text"}"#)
        await fixture.stopHost(signal: SIGKILL)
        try await fixture.startHost()
        #expect(try await renderer.content(widget) == #"{"type":"text"}"#)
    }
}

@Suite("Bounded input", .timeLimit(.minutes(2)))
struct BoundedInputTests {
    @Test("100,000 kinds are refused at once while another caller is served; bundles are bounded; hostile values are quoted short")
    func bounded() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Big")
        defer { app.close() }
        let other = try await fixture.connect()
        defer { other.close() }
        func kinds(_ count: Int) -> String {
            #"{"widgets":["# + (0..<count).map { #"{"kind":"k\#($0)","families":["systemSmall"]}"# }.joined(separator: ",") + "]}"
        }
        async let huge: Void = expectHostError("LimitExceeded", mentioning: "at most 65536 bytes") { try await app.registerWidgets(kinds(100_000)) }
        #expect(try await listApps(other)["org.example.Big"] != nil, "another caller is served meanwhile")
        await huge
        await expectHostError("LimitExceeded", mentioning: "at most 32") { try await app.registerWidgets(kinds(33)) }
        try await app.registerWidgets(kinds(32))
        // A megabyte of app id comes back as a short quote, not a megabyte.
        let hostile = "org.example." + String(repeating: "a", count: 1 << 20) + "!"
        do {
            _ = try await other.host("RegisterApp", [.string(hostile), .vardict([:])])
            Issue.record("a 1 MiB app id was taken")
        } catch let error as DBusError {
            #expect(error.name == "org.widgethost.Host1.Error.InvalidArgument" && error.message.utf8.count < 400, "\(error.message.utf8.count) bytes")
        }
        // A 4 MiB configuration value: refused with a short message, before anything is
        // stored — while the call is read, by the limit on any a{sv} in a call.
        try await app.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"],"configuration":{"intent":"I","parameters":[{"name":"n"}]}}]}"#)
        let widget = try await other.addWidget("org.example.Big", "K", "systemSmall")
        do {
            try await other.configure(widget, ["n": .string(String(repeating: "x", count: 4 << 20))])
            Issue.record("a 4 MiB configuration value was taken")
        } catch let error as DBusError {
            #expect(error.name == "org.widgethost.Host1.Error.LimitExceeded" && error.message.contains("max-dict-bytes"), "\(error)")
            #expect(error.message.utf8.count < 400)
        }
        await expectHostError("LimitExceeded", mentioning: "max-configuration-bytes is 65536") {
            _ = try await other.addWidget("org.example.Big", "K", "systemSmall", ["n": .string(String(repeating: "x", count: 70_000))])
        }
        #expect(try await other.managedObjects()[widget]?["Configuration"] == .vardict([:]))
        await expectHostError("UnknownKind", mentioning: "…") {
            _ = try await other.addWidget("org.example.Big", String(repeating: "k", count: 100_000), "systemSmall")
        }
    }

    @Test("LintContent applies the daemon's content limits, as SetContent does")
    func lintUsesTheDaemonsLimits() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--max-content-bytes", "1000"])
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        await expectHostError("LimitExceeded", mentioning: "the limit max-content-bytes is 1000 bytes") {
            _ = try await renderer.host(
                "LintContent", [.string("systemSmall"), .string(FootprintTests.text(2000))], interface: "org.widgethost.Host1.Widgets")
        }
        _ = try await renderer.host(
            "LintContent", [.string("systemSmall"), .string(FootprintTests.text(500))], interface: "org.widgethost.Host1.Widgets")
    }
}

/// Every numeric option of every method, at the ends of its type.
@Suite("Numbers at the ends of their types", .timeLimit(.minutes(2)))
struct NumericExtremesTests {
    static let extremes: [DBusValue] = [
        .int64(.min), .int64(.max), .uint64(.max), .int32(.min), .int32(.max), .uint32(.max), .int16(.min), .uint16(.max), .byte(.max),
        .double(.nan), .double(.infinity), .double(-.infinity), .double(-0.0), .double(.greatestFiniteMagnitude),
        .double(-.greatestFiniteMagnitude), .double(.leastNonzeroMagnitude),
    ]

    @Test("stale_date, dismissal_date and relevance at min, max, ±inf, NaN and −0: taken or InvalidArgument naming the key; the host stays up and restores")
    func everyNumericOption() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await DurabilityTests.registeredApp(fixture)
        defer { app.close() }
        let content = DurabilityTests.activityContent
        func update(_ path: String, _ options: [String: DBusValue]) async throws {
            _ = try await app.connection.call(
                destination: "org.widgethost.Host1", path: path, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
                [.string(""), .vardict(options)])
        }
        func end(_ path: String, _ options: [String: DBusValue]) async throws {
            _ = try await app.connection.call(
                destination: "org.widgethost.Host1", path: path, interface: "org.widgethost.Host1.LiveActivity", member: "End",
                [.vardict(options)])
        }
        let updated = try await app.startActivity("T", content)
        var refusedDates = 0
        for value in Self.extremes {
            let calls: [(key: String, call: () async throws -> Void)] = [
                ("stale_date", { _ = try await app.startActivity("T", content, ["stale_date": value]) }),
                ("relevance", { _ = try await app.startActivity("T", content, ["relevance": value]) }),
                ("stale_date", { try await update(updated, ["stale_date": value]) }),
                ("relevance", { try await update(updated, ["relevance": value]) }),
                ("dismissal_date", { try await end(try await app.startActivity("T", content), ["dismissal": .string("after"), "dismissal_date": value]) }),
            ]
            for (key, call) in calls {
                do {
                    try await call()
                } catch let error as DBusError {
                    #expect(error.name == "org.widgethost.Host1.Error.InvalidArgument", "\(key) = \(value): \(error)")
                    #expect(error.message.contains("'\(key)'"), "\(key) = \(value): \(error.message)")
                    if key != "relevance", error.message.contains("out of range; give Unix seconds from 0 to 253402300799") { refusedDates += 1 }
                }
                #expect(fixture.hostProcess?.isRunning == true, "\(key) = \(value)")
            }
        }
        // Int64.min and .max, UInt64.max and Int16.min / Int32.min (before 1970), for each of the three date options.
        #expect(refusedDates == 5 * 3, "dates out of range refused with the range: \(refusedDates)")
        await expectHostError("InvalidArgument", mentioning: "option 'stale_date' is 9223372036854775807, which is out of range; give Unix seconds from 0 to 253402300799") {
            _ = try await app.startActivity("T", content, ["stale_date": .int64(.max)])
        }
        // What was taken is kept and read back.
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let before = try await renderer.managedObjects()
        await fixture.stopHost(signal: SIGKILL)
        try await fixture.startHost()
        #expect(try await renderer.managedObjects() == before)
    }
}
