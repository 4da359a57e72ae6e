import DBus
import Foundation
import PrivateBus
import Testing

/// The Python library (python/widgethost, docs/python.md): small apps written
/// with it run against a private host, and what they print is what they
/// received — taps as URLs, user activities and actions, the timelines and
/// options they served, the content they keep, the host's errors by name.
@Suite("The Python library", .timeLimit(.minutes(2)))
struct PythonLibraryTests {
    /// Where the apps find the library: the repository's python/.
    static let path = ["PYTHONPATH": repositoryRoot.appendingPathComponent("python").path]

    /// Starts `script` with /usr/bin/python3 on the fixture's bus and waits until it prints `ready`.
    static func launch(_ fixture: HostFixture, _ script: String, _ arguments: [String] = [], ready: String) async throws -> Launched {
        let app = try fixture.launch("/usr/bin/python3", [script] + arguments, environment: path)
        let printed = app.printed
        guard await eventually(timeout: 20, { printed().contains(ready) }) else {
            app.stop()
            Issue.record("the app did not print '\(ready)': \(printed())\nhost log:\n\(fixture.log)")
            throw PrivateBusError("the app did not start")
        }
        return app
    }

    /// The JSON lines clock_app.py printed, each a dictionary.
    static func records(_ app: Launched) -> [[String: Any]] {
        app.printed().split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// The widget's Content as JSON, once it passes `test` (within 10 s); nil if it never does.
    static func content(_ connection: Connection, _ widget: String, _ test: @escaping ([String: Any]) -> Bool) async -> [String: Any]? {
        var tree: [String: Any]?
        _ = await eventually {
            let text = (try? await connection.content(widget)) ?? ""
            tree = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            return tree.map(test) ?? false
        }
        return tree.flatMap { test($0) ? $0 : nil }
    }

    static func text(_ tree: [String: Any]) -> String? {
        tree["text"] as? String ?? ((tree["children"] as? [[String: Any]])?.first?["text"] as? String)
    }

    @Test("docs/python.md's complete app, run as written: content kept from each widget's configuration and family, options, and taps as an action, a URL and a user activity with their tokens")
    func documentedApp() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let page = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/python.md"), encoding: .utf8)
        let code = try #require(page.components(separatedBy: "```python\n").dropFirst().first?.components(separatedBy: "```\n").first)
        let script = fixture.root.appendingPathComponent("notes.py")
        try code.write(to: script, atomically: true, encoding: .utf8)
        let app = try await Self.launch(fixture, script.path, ready: "Notes is ready")
        defer { app.stop() }
        let printed = app.printed
        let connection = try await fixture.connect()
        defer { connection.close() }

        let options = try await connection.host(
            "GetConfigurationOptions", [.string("org.example.Notes"), .string("Note"), .string("note"), .vardict([:])],
            interface: "org.widgethost.Host1.Widgets")
        #expect("\(options)".contains("milk") && "\(options)".contains("Call Sam"), "\(options)")
        let note = try await connection.addWidget("org.example.Notes", "Note", "systemSmall", ["note": .string("call")])
        let kept = await Self.content(connection, note) { $0["widgetURL"] as? String == "notes://call" }
        #expect(kept.flatMap(Self.text) == "Call Sam", "the app set the placed widget's content from its configuration: \(String(describing: kept))")

        let (acted, details) = try await connection.tap(note, "done", ["activation_token": .string("T1")])
        #expect(acted == "perform-action" && details["parameter"]?.unwrapped == .string("call"), "\(details)")
        #expect(await eventually { printed().contains("done call on \(note.split(separator: "/").last!)") }, "\(printed())")
        #expect(await Self.content(connection, note) { Self.text($0) == "✓ Call Sam" } != nil, "the action changed what the app keeps")
        _ = try await connection.tap(note, "text", ["activation_token": .string("T2")])
        #expect(await eventually { printed().contains("open notes://call (activation token T2)") }, "\(printed())")
        try await connection.configure(note, ["note": .string("milk")])
        #expect(await Self.content(connection, note) { Self.text($0) == "Buy milk" } != nil, "a new configuration, new content")

        let inline = try await connection.addWidget("org.example.Notes", "Note", "accessoryInline", ["note": .string("call")])
        #expect(await Self.content(connection, inline) { $0["type"] as? String == "text" && $0["widgetURL"] == nil } != nil)
        let (continued, _) = try await connection.tap(inline, "", ["activation_token": .string("T3")])
        #expect(continued == "continue-user-activity")
        #expect(await eventually { printed().contains("continue Note on \(inline.split(separator: "/").last!)") }, "\(printed())")

        // A delivery past its deadline (the app was stopped, its tap answered long ago) is dropped unseen.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for (url, deadline) in [("notes://late", now - 1), ("notes://in-time", now + 60_000)] {
            _ = try await connection.call(
                destination: "org.example.Notes", path: "/org/example/Notes", interface: "org.freedesktop.Application", member: "Open",
                [.strings([url]), .vardict(["org.widgethost.deadline": .int64(deadline)])])
        }
        #expect(await eventually { printed().contains("open notes://in-time") })
        #expect(!printed().contains("notes://late"), "\(printed())")
    }

    @Test("An App with protocol widgethost: taps through App1 reach its handlers, its timeline and options are served, a handler's error and the host's are named")
    func app1() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await Self.launch(fixture, repositoryRoot.appendingPathComponent("Tests/Fixtures/python/clock_app.py").path, ready: "\"started\"")
        defer { app.stop() }
        let connection = try await fixture.connect()
        defer { connection.close() }
        // It took its bus name, as protocol widgethost needs, and registered with it.
        let listed = try #require(try await listApps(connection)["org.example.Clock"])
        let owner = try await connection.nameOwner("org.example.Clock")
        #expect(listed["protocol"] == .string("widgethost") && listed["registered_by"] == owner.map(DBusValue.string), "\(listed)")
        #expect(listed["provider_path"] == .objectPath("/org/example/Clock/Provider"))
        // The host's error, with the host's name and message.
        #expect(await eventually { Self.records(app).contains { $0["call"] as? String == "error" } }, "\(app.printed())")
        let error = Self.records(app).first { $0["call"] as? String == "error" } ?? [:]
        #expect(error["name"] as? String == "org.widgethost.Host1.Error.UnknownKind" && (error["message"] as? String)?.contains("Nope") == true, "\(error)")

        let clock = try await connection.addWidget("org.example.Clock", "Clock", "systemSmall", ["zone": .string("cet")])
        #expect(await Self.content(connection, clock) { Self.text($0) == "now in cet" } != nil, "the timeline's first entry")
        #expect(await Self.content(connection, clock) { Self.text($0) == "later in cet" } != nil, "its second entry, a second later")
        let asked = Self.records(app).first { $0["call"] as? String == "timeline" }
        #expect(asked?["reason"] as? String == "added" && (asked?["configuration"] as? [String: Any])?["zone"] as? String == "cet", "\(String(describing: asked))")

        _ = try await connection.tap(clock, "zone", ["activation_token": .string("T1")])
        _ = try await connection.tap(clock, "tick", ["surface": .string("lock-screen")])
        _ = try await connection.tap(clock, "chime")
        let inline = try await connection.addWidget("org.example.Clock", "Clock", "accessoryInline", ["zone": .string("utc")])
        _ = await Self.content(connection, inline) { Self.text($0) == "utc" }
        _ = try await connection.tap(inline, "t", ["activation_token": .string("T3")])
        let id = { (path: String) in String(path.split(separator: "/").last!) }
        let received = Self.records(app).filter { ["open", "action", "activity"].contains($0["call"] as? String) }.map { record in
            record.keys.sorted().filter { $0 != "info" }.map { "\($0)=\(record[$0] ?? "-")" }.joined(separator: " ")
        }
        #expect(received == [
            "call=open token=T1 url=clock://zone/cet via=link widget_id=\(id(clock))",
            "call=action parameter=3 surface=lock-screen widget_id=\(id(clock))",
            "call=action parameter=3 surface=desktop toggle=off widget_id=\(id(clock))",
            "call=activity family=accessoryInline token=T3 type=Clock",
        ], "\(app.printed())")

        let options = try await connection.host(
            "GetConfigurationOptions", [.string("org.example.Clock"), .string("Clock"), .string("zone"), .vardict([:])],
            interface: "org.widgethost.Host1.Widgets")
        #expect("\(options)".contains("Central European"), "\(options)")
        await expectHostError("ActivationFailed", mentioning: "org.example.Clock.Error.Broken") {
            _ = try await connection.host(
                "GetConfigurationOptions", [.string("org.example.Clock"), .string("Clock"), .string("zone"), .vardict(["style": .string("broken")])],
                interface: "org.widgethost.Host1.Widgets")
        }
        // A late App1 delivery gets an error and reaches no handler.
        do {
            _ = try await connection.call(
                destination: "org.example.Clock", path: "/org/example/Clock", interface: "org.widgethost.App1", member: "OpenURL",
                [.string("clock://late"), .vardict(["org.widgethost.deadline": .int64(1)])])
            Issue.record("a delivery past its deadline was answered as handled")
        } catch let error as DBusError {
            #expect(error.message.contains("deadline"), "\(error)")
        }
        #expect(!app.printed().contains("clock://late"))
    }

    @Test("After the host restarts, an app on the library registers again and publishes its bundle; a taken bus name is a named error")
    func restartAndName() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let script = repositoryRoot.appendingPathComponent("Tests/Fixtures/python/clock_app.py").path
        let app = try await Self.launch(fixture, script, ready: "\"started\"")
        defer { app.stop() }
        await fixture.stopHost()
        try await fixture.startHost()
        let connection = try await fixture.connect()
        defer { connection.close() }
        #expect(await eventually { (try? await listApps(connection)["org.example.Clock"]?["source"]) == .string("registration") })
        let bundles = try await connection.host("ListBundles", interface: "org.widgethost.Host1.Widgets")
        #expect("\(bundles)".contains("PickZone"), "\(bundles)")

        // Protocol widgethost delivers to the connection that owns the app's name: another owner stops it.
        #expect(try await connection.requestName("org.example.Taken") == .primaryOwner)
        let second = try await Self.launch(fixture, script, ["org.example.Taken"], ready: "start-failed")
        defer { second.stop() }
        #expect(second.printed().contains("\"name\": \"org.widgethost.Error.NameTaken\""), "\(second.printed())")
    }

    @Test("The library's pieces on their own: values, timelines, contexts, errors, coroutines and interface files")
    func units() async throws {
        let result = try await runCommand(
            "/usr/bin/python3", [repositoryRoot.appendingPathComponent("Tests/Fixtures/python/units.py").path], adding: Self.path)
        #expect(result.succeeded && result.stdout.hasPrefix("ok "), "\(result)")
    }
}
