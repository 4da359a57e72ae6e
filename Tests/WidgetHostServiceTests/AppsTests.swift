import DBus
import Foundation
import Testing

/// org.widgethost.Host1.Apps end to end: a real dbus-daemon, the real
/// widget-hostd process, and gdbus/busctl/GApplication as peers.
@Suite("Apps interface", .timeLimit(.minutes(2)))
struct AppsTests {
    @Test("RegisterApp from gdbus lasts only as long as gdbus's connection")
    func registrationEndsWithGdbusConnection() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let observer = try await fixture.connect()
        defer { observer.close() }
        let recorder = SignalRecorder(try await observer.signals(MatchRule(interface: "org.widgethost.Host1.Apps")))

        let result = try await fixture.callHost(
            "org.widgethost.Host1.Apps.RegisterApp", ["org.example.Shortlived", "{'protocol': <'freedesktop'>, 'schemes': <['short']>}"])
        #expect(result.succeeded, "\(result.stderr)")
        // gdbus exits after the call, so its registration ends with it.
        let both = await eventually { recorder.events == ["AppRegistered org.example.Shortlived", "AppUnregistered org.example.Shortlived"] }
        #expect(both, "signals: \(recorder.events)")
        #expect(try await listApps(observer)["org.example.Shortlived"] == nil)
    }

    @Test("A live registration: options listed, second connection denied, gone when the connection closes")
    func liveRegistration() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await fixture.connect()
        let other = try await fixture.connect()
        defer { other.close() }
        let recorder = SignalRecorder(try await other.signals(MatchRule(interface: "org.widgethost.Host1.Apps")))
        #expect(try await app.requestName("org.example.Tap-Me") == .primaryOwner)

        _ = try await app.host(
            "RegisterApp",
            [
                .string("org.example.Tap-Me"),
                .vardict([
                    "schemes": .strings(["Tap-Me-Widget", "tapme"]), "surfaces": .strings(["car", "desktop"]),
                    "live_activity_launch_types": .strings([]), "provider_path": .objectPath("/org/example/Provider"),
                ]),
            ])
        let listed = try #require(try await listApps(other)["org.example.Tap-Me"])
        #expect(listed["schemes"] == .strings(["tap-me-widget", "tapme"]))
        #expect(listed["protocol"] == .string("widgethost"))
        #expect(listed["object_path"] == .objectPath("/org/example/Tap_Me"))
        #expect(listed["surfaces"] == .strings(["desktop", "car"]))
        #expect(listed["live_activity_launch_types"] == .strings([]))
        #expect(listed["provider_path"] == .objectPath("/org/example/Provider"))
        #expect(listed["registered"] == .bool(true))
        #expect(listed["source"] == .string("registration"))
        #expect(listed["user_activity_action"] == nil)

        // Another connection can neither take the app nor unregister it.
        await expectHostError("AccessDenied", mentioning: "org.example.Tap-Me") {
            _ = try await other.host("RegisterApp", [.string("org.example.Tap-Me"), .vardict([:])])
        }
        await expectHostError("AccessDenied", mentioning: "org.example.Tap-Me") {
            _ = try await other.host("UnregisterApp", [.string("org.example.Tap-Me")])
        }
        // Re-registering from the same connection updates the options.
        _ = try await app.host("RegisterApp", [.string("org.example.Tap-Me"), .vardict(["protocol": .string("freedesktop")])])
        #expect(try await listApps(other)["org.example.Tap-Me"]?["protocol"] == .string("freedesktop"))

        app.close()
        let gone = await eventually { (try? await listApps(other)["org.example.Tap-Me"]) == nil }
        #expect(gone)
        // The signals reach the recorder through its own task: wait for them rather than race the ListApps reply.
        let signalled = await eventually { recorder.events == ["AppRegistered org.example.Tap-Me", "AppUnregistered org.example.Tap-Me"] }
        #expect(signalled, "signals: \(recorder.events)")
    }

    @Test("UnregisterApp by the owner emits AppUnregistered; unknown apps get UnknownApp")
    func unregister() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await fixture.connect()
        defer { app.close() }
        #expect(try await app.requestName("org.example.Owner") == .primaryOwner)
        _ = try await app.host("RegisterApp", [.string("org.example.Owner"), .vardict([:])])
        _ = try await app.host("UnregisterApp", [.string("org.example.Owner")])
        #expect(try await listApps(app)["org.example.Owner"] == nil)
        await expectHostError("UnknownApp", mentioning: "org.example.Owner") {
            _ = try await app.host("UnregisterApp", [.string("org.example.Owner")])
        }
    }

    /// Each malformed call, sent with busctl, gets the named error and changes nothing.
    @Test(
        "Malformed arguments get named errors and change nothing",
        arguments: [
            (["RegisterApp", "sa{sv}", "not an id", "0"], "InvalidArgument", "not an id"),
            (["RegisterApp", "sa{sv}", "", "0"], "InvalidArgument", "app id"),
            (["RegisterApp", "sa{sv}", "org.1example.App", "0"], "InvalidArgument", "digit"),
            (["RegisterApp", "sa{sv}", "org.example.App", "1", "colour", "s", "red"], "InvalidArgument", "colour"),
            (["RegisterApp", "sa{sv}", "org.example.App", "1", "schemes", "s", "tap"], "InvalidArgument", "schemes"),
            (["RegisterApp", "sa{sv}", "org.example.App", "1", "schemes", "as", "1", "no scheme"], "InvalidArgument", "no scheme"),
            (["RegisterApp", "sa{sv}", "org.example.App", "1", "protocol", "s", "http"], "InvalidArgument", "http"),
            (["RegisterApp", "sa{sv}", "org.example.App", "2", "object_path", "o", "/ok", "protocol", "s", "freedesktop"], nil, ""),
            // busctl's connection does not own org.example.App, and widgethost would deliver taps to it.
            (["RegisterApp", "sa{sv}", "org.example.App", "0"], "AccessDenied", "request the name first"),
            (["RegisterApp", "sa{sv}", "org.example.App", "1", "object_path", "s", "bad path"], "InvalidArgument", "object_path"),
            (["RegisterApp", "sa{sv}", "org.example.App", "1", "surfaces", "as", "1", "fridge"], "InvalidArgument", "fridge"),
            (["RegisterApp", "sa{sv}", "org.example.App", "1", "user_activity_action", "s", "continue"], "InvalidArgument", "freedesktop"),
            (["RegisterApp", "s", "org.example.App"], "org.freedesktop.DBus.Error.InvalidArgs", "sa{sv}"),
            (["UnregisterApp", "s", "org.example.Nobody"], "UnknownApp", "org.example.Nobody"),
            (["UnregisterApp", "s", "bad."], "InvalidArgument", "bad."),
            (["ListApps", "s", "extra"], "org.freedesktop.DBus.Error.InvalidArgs", "takes no arguments"),
        ] as [([String], String?, String)])
    func malformed(call: [String], error: String?, mentioning: String) async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let result = try await fixture.busctl(
            ["call", "--verbose", "org.widgethost.Host1", "/org/widgethost/Host1", "org.widgethost.Host1.Apps"] + call)
        guard let error else {
            #expect(result.succeeded, "\(result.stderr)")
            return
        }
        #expect(!result.succeeded)
        // busctl prints the message; gdbus (below) also shows the error's name.
        #expect(result.stderr.contains(mentioning), "stderr: \(result.stderr)")
        let connection = try await fixture.connect()
        defer { connection.close() }
        #expect(try await listApps(connection).isEmpty, "a rejected call changed the registry")
        // The same call through gdbus shows the error name.
        // (gdbus checks signatures itself, so only host errors are re-sent with it.)
        if !error.contains("."), let gdbusArgs = try gdbusArguments(call) {
            let viaGdbus = try await fixture.callHost("org.widgethost.Host1.Apps." + call[0], gdbusArgs)
            let expectedName = error.contains(".") ? error : "org.widgethost.Host1.Error." + error
            #expect(viaGdbus.stderr.contains(expectedName), "gdbus stderr: \(viaGdbus.stderr)")
        }
    }

    @Test("A GApplication's desktop entry is discovered, and Reload picks up new entries")
    func discovery() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let script = repositoryRoot.appendingPathComponent("Tests/Fixtures/gapp/tapme_gapp.py").path
        let record = fixture.root.appendingPathComponent("tapme.jsonl").path
        var entry = try String(
            contentsOf: repositoryRoot.appendingPathComponent("Tests/Fixtures/gapp/org.example.TapMe.desktop"), encoding: .utf8)
        entry = entry.replacingOccurrences(of: "Exec=/usr/bin/python3 tapme_gapp.py", with: "Exec=/usr/bin/python3 \(script)")
        let entryPath = fixture.dataDir.appendingPathComponent("applications/org.example.TapMe.desktop")
        try entry.write(to: entryPath, atomically: true, encoding: .utf8)
        // A non-activatable entry is not an app for the host.
        try "[Desktop Entry]\nType=Application\nName=Plain\nExec=true\n".write(
            to: fixture.dataHome.appendingPathComponent("applications/org.example.Plain.desktop"), atomically: true, encoding: .utf8)
        try fixture.bus.installService(
            name: "org.example.TapMe",
            exec: "/usr/bin/env WIDGETHOST_TEST_RECORD=\(record) WIDGETHOST_TEST_LINGER=5 /usr/bin/python3 \(script) org.example.TapMe --gapplication-service")
        try await fixture.startHost()
        let connection = try await fixture.connect()
        defer { connection.close() }

        let apps = try await listApps(connection)
        #expect(apps.keys.sorted() == ["org.example.TapMe"])
        let tapMe = try #require(apps["org.example.TapMe"])
        #expect(tapMe["protocol"] == .string("freedesktop"))
        #expect(tapMe["schemes"] == .strings(["tap-me-widget"]))
        #expect(tapMe["surfaces"] == .strings(["desktop", "lock-screen", "car"]))
        #expect(tapMe["source"] == .string("desktop-entry"))
        #expect(tapMe["registered"] == .bool(false))
        #expect(tapMe["name"] == .string("Tap Me"))
        #expect(tapMe["desktop_file"] == .string(entryPath.path))
        #expect(tapMe["object_path"] == .objectPath("/org/example/TapMe"))

        // The entry names a real GApplication the bus can start by activation.
        let activated = try await fixture.gdbus([
            "call", "--session", "--dest", "org.example.TapMe", "--object-path", "/org/example/TapMe", "--method",
            "org.freedesktop.Application.Activate", "{}",
        ])
        #expect(activated.succeeded, "\(activated.stderr)")
        let recorded = await eventually { ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").contains("\"activate\"") }
        #expect(recorded)

        // A new entry in XDG_DATA_HOME shows up after Reload, with its X-WidgetHost keys.
        try """
        [Desktop Entry]
        Type=Application
        Name=Rangers
        DBusActivatable=true
        MimeType=x-scheme-handler/emoji-rangers;text/plain;
        X-WidgetHost-LiveActivityLaunchTypes=
        X-WidgetHost-UserActivityAction=continue-activity
        """.write(
            to: fixture.dataHome.appendingPathComponent("applications/org.example.EmojiRangers.desktop"), atomically: true,
            encoding: .utf8)
        #expect(try await listApps(connection)["org.example.EmojiRangers"] == nil)
        let reload = try await fixture.callHost("org.widgethost.Host1.Apps.Reload")
        #expect(reload.succeeded, "\(reload.stderr)")
        let rangers = try #require(try await listApps(connection)["org.example.EmojiRangers"])
        #expect(rangers["schemes"] == .strings(["emoji-rangers"]))
        #expect(rangers["live_activity_launch_types"] == .strings([]))
        #expect(rangers["user_activity_action"] == .string("continue-activity"))
        #expect(rangers["surfaces"] == .strings(["desktop", "lock-screen"]))

        // A live registration takes precedence over the entry, and the entry returns when it ends.
        let live = try await fixture.connect()
        // The GApplication owns org.example.TapMe, so another connection registers it as an extension would: freedesktop.
        _ = try await live.host(
            "RegisterApp", [.string("org.example.TapMe"), .vardict(["protocol": .string("freedesktop"), "schemes": .strings(["other"])])])
        #expect(try await listApps(connection)["org.example.TapMe"]?["source"] == .string("registration"))
        #expect(try await listApps(connection)["org.example.TapMe"]?["desktop_file"] == .string(entryPath.path))
        live.close()
        let back = await eventually { (try? await listApps(connection)["org.example.TapMe"]?["source"]) == .string("desktop-entry") }
        #expect(back)
    }
}

/// gdbus argument texts for a busctl-style call description, or nil when not expressible simply.
func gdbusArguments(_ call: [String]) throws -> [String]? {
    let signature = call[1]
    let values = Array(call.dropFirst(2))
    switch signature {
    case "s": return ["'\(values[0])'"]
    case "sa{sv}":
        if values.count == 2 { return ["'\(values[0])'", "{}"] }
        let key = values[2], type = values[3]
        let value: String
        switch type {
        case "s": value = "<'\(values[4])'>"
        case "o": value = "<objectpath '\(values[4])'>"
        case "as": value = "<['\(values[5])']>"
        default: return nil
        }
        return ["'\(values[0])'", "{'\(key)': \(value)}"]
    default: return nil
    }
}

/// Expects a D-Bus error named `org.widgethost.Host1.Error.<name>` whose message mentions `text`.
func expectHostError(
    _ name: String, mentioning text: String = "", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async {
    do {
        try await body()
        Issue.record("expected \(name), but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as DBusError {
        #expect(error.name == "org.widgethost.Host1.Error." + name, "\(error)", sourceLocation: sourceLocation)
        if !text.isEmpty { #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation) }
    } catch {
        Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}
