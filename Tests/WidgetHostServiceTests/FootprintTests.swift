import DBus
import Foundation
import PrivateBus
import Testing

/// Budgets on what each app and the whole host hold, measured as it travels on
/// the bus, keep GetManagedObjects and every signal within D-Bus's limits.
@Suite("Budgets keep what the host sends within D-Bus's limits", .timeLimit(.minutes(5)))
struct FootprintTests {
    static let bundle = #"{"widgets":[{"kind":"K","families":["systemSmall"],"configuration":{"intent":"I","parameters":[{"name":"n"}]}}]}"#

    /// Content of about `bytes` bytes.
    static func text(_ bytes: Int) -> String { #"{"type":"text","id":"t","text":""# + String(repeating: "x", count: bytes) + #""}"# }

    /// Live Activity content whose lock screen presentation is about `bytes` bytes.
    static func activity(_ bytes: Int) -> String {
        #"{"lockScreen":"# + text(bytes) + ","
            + ["compactLeading", "compactTrailing", "minimal", "expanded"].map { #""\#($0)":{"type":"text"}"# }.joined(separator: ",") + "}"
    }

    /// Places widgets of `app` with `content` until the host refuses; returns
    /// the widgets that show it and the refusal.
    static func fill(_ app: AppPeer, from renderer: Connection, with content: String) async throws -> (filled: [String], refusal: DBusError?) {
        var filled: [String] = []
        while filled.count < 2000 {
            do {
                let widget = try await renderer.addWidget(app.appID, "K", "systemSmall", ["n": .string(String(repeating: "c", count: 60_000))])
                try await app.setContent(widget, content)
                filled.append(widget)
            } catch let error as DBusError {
                return (filled, error)
            }
        }
        return (filled, nil)
    }

    /// GetManagedObjects of the host, as it came, and its size on the wire.
    static func managedObjectsBytes(_ connection: Connection) async throws -> Int {
        let reply = try await connection.call(
            destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.freedesktop.DBus.ObjectManager",
            member: "GetManagedObjects")
        return try DBusValue.wireSize(of: reply)
    }

    @Test("two apps fill the default budgets; GetManagedObjects is answered within them and the host stays up; a restart with smaller budgets serves everything and refuses growth")
    func twoAppsAtTheDefaults() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        var apps: [AppPeer] = []
        defer { for app in apps { app.close() } }
        var filled: [String: [String]] = [:]
        for appID in ["org.example.FullOne", "org.example.FullTwo"] {
            let app = try await AppPeer(fixture, appID: appID)
            apps.append(app)
            try await app.registerWidgets(Self.bundle)
            let (widgets, refusal) = try await Self.fill(app, from: renderer, with: Self.text(250_000))
            #expect(refusal?.name == "org.widgethost.Host1.Error.LimitExceeded", "\(String(describing: refusal))")
            #expect(refusal?.message.contains("an app may have at most 16777216 bytes (the limit max-app-bytes)") == true, "\(String(describing: refusal))")
            // 16 MiB of widgets of about 310 KB each (content and configuration).
            #expect((50...54).contains(widgets.count), "\(widgets.count) widgets")
            filled[appID] = widgets
            // A full app cannot grow by a Live Activity either; a small one fits what is left.
            await expectHostError("LimitExceeded", mentioning: "max-app-bytes") {
                _ = try await app.startActivity("T", Self.activity(250_000))
            }
        }
        let bytes = try await Self.managedObjectsBytes(renderer)
        #expect(bytes > 32_000_000 && bytes <= 2 * 16_777_216 + 4096, "GetManagedObjects took \(bytes) bytes")
        #expect(try await listApps(renderer).count == 2, "the host is up")
        let listed = try await renderer.managedObjects()
        #expect(filled.values.allSatisfy { $0.allSatisfy { listed[$0]?["Content"] == .string(Self.text(250_000)) } }, "every widget is listed")

        // Removing a widget frees its bytes for the app.
        let one = apps[0]
        let spare = try await renderer.addWidget(one.appID, "K", "systemSmall")
        await expectHostError("LimitExceeded", mentioning: "max-app-bytes") { try await one.setContent(spare, Self.text(250_000)) }
        _ = try await renderer.call(
            destination: "org.widgethost.Host1", path: filled[one.appID]![0], interface: "org.widgethost.Host1.Widget", member: "Remove")
        try await one.setContent(spare, Self.text(250_000))

        // Restarted with budgets below what it holds, the host serves all of it,
        // refuses growth and takes what shrinks.
        let stored = try await renderer.managedObjects()
        for app in apps { app.close() }
        await fixture.stopHost()
        try await fixture.startHost(["--max-app-bytes", "1048576", "--max-host-bytes", "2097152"])
        let reader = try await fixture.connect()
        defer { reader.close() }
        #expect(try await reader.managedObjects() == stored, "everything stored is served")
        let two = try await AppPeer(fixture, appID: "org.example.FullTwo")
        apps.append(two)
        let widget = filled[two.appID]![0]
        await expectHostError("LimitExceeded", mentioning: "an app may have at most 1048576 bytes (the limit max-app-bytes)") {
            try await two.setContent(widget, Self.text(250_100))
        }
        try await two.setContent(widget, Self.text(10))
        #expect(try await reader.managedObjects()[widget]?["Content"] == .string(Self.text(10)))
    }

    @Test("the host-wide budget refuses widgets and Live Activities of any app once all apps' hold it")
    func hostWide() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--max-app-bytes", "4194304", "--max-host-bytes", "6291456"])
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let first = try await AppPeer(fixture, appID: "org.example.First")
        defer { first.close() }
        let second = try await AppPeer(fixture, appID: "org.example.Second")
        defer { second.close() }
        for app in [first, second] { try await app.registerWidgets(Self.bundle) }
        let (_, firstRefusal) = try await Self.fill(first, from: renderer, with: Self.text(200_000))
        #expect(firstRefusal?.message.contains("(the limit max-app-bytes)") == true, "\(String(describing: firstRefusal))")
        let (_, secondRefusal) = try await Self.fill(second, from: renderer, with: Self.text(200_000))
        #expect(
            secondRefusal?.message.contains("the host holds at most 6291456 bytes (the limit max-host-bytes)") == true,
            "\(String(describing: secondRefusal))")
        let third = try await AppPeer(fixture, appID: "org.example.Third")
        defer { third.close() }
        await expectHostError("LimitExceeded", mentioning: "max-host-bytes") {
            _ = try await third.startActivity("T", Self.activity(200_000))
        }
        #expect(try await Self.managedObjectsBytes(renderer) <= 6_291_456 + 4096)
    }

    @Test("a Live Activity change over the budget changes nothing: a refused Update leaves what the activity shows, a refused Start takes no id")
    func activityOverBudget() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--max-app-bytes", "150000", "--max-host-bytes", "300000"])
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let app = try await AppPeer(fixture, appID: "org.example.Growing")
        defer { app.close() }
        let first = try await app.startActivity("T", Self.activity(1000))
        await expectHostError("LimitExceeded", mentioning: "max-app-bytes") {
            _ = try await app.connection.call(
                destination: "org.widgethost.Host1", path: first, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
                [.string(Self.activity(200_000)), .vardict(["relevance": .double(5)])])
        }
        let shown = try await renderer.managedObjects()[first]
        #expect(shown?["Content"] == .string(Self.activity(1000)) && shown?["Relevance"] == .double(0), "\(String(describing: shown))")
        await expectHostError("LimitExceeded", mentioning: "max-app-bytes") {
            _ = try await app.startActivity("T", Self.activity(200_000))
        }
        #expect(try await app.startActivity("T", Self.activity(1000)) == "/org/widgethost/Host1/activities/a2", "a refused start mints no id")
        #expect(try await renderer.managedObjects().keys.filter { $0.contains("/activities/") }.sorted() == [first, "/org/widgethost/Host1/activities/a2"])
    }

    @Test("budgets that could not fit one message are refused at start")
    func daemonOptions() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        for (arguments, complaint) in [
            (["--max-host-bytes", "67108864"], "--max-host-bytes must be at most 58720256"),
            (["--max-app-bytes", "2000", "--max-host-bytes", "1000"], "--max-app-bytes (2000) must be at most --max-host-bytes (1000)"),
            (["--max-app-bytes", "0"], "--max-app-bytes must be at least 1"),
            (["--max-content-depth", "256"], "--max-content-depth must be at most 255"),
        ] {
            let result = try await runCommand(buildDirectory + "/widget-hostd", arguments, environment: fixture.environment)
            #expect(result.status != 0 && result.stderr.contains(complaint), "\(arguments): \(result)")
        }
    }
}

@Suite("A timeline counts against its app's budget", .timeLimit(.minutes(2)))
struct TimelineFootprintTests {
    @Test("a timeline over the app's budget is a failed fetch naming the limit; the widget keeps what it shows")
    func timelineOverBudget() async throws {
        // Room for the widget, not for its four entries.
        let run = try await RangersRun.start(host: ["--max-app-bytes", "1500"])
        defer { run.stop() }
        let widget = try await run.renderer.addWidget(TimelineServiceTests.app, TimelineServiceTests.kind, "systemSmall", ["hero": .string("egghead")])
        let failed = await eventually { (try? await run.renderer.describeTimeline(widget))?["failures"] != .uint32(0) }
        let described = try await run.renderer.describeTimeline(widget)
        #expect(failed, "\(described)")
        #expect(
            described["last_failure"]?.stringValue?.contains("an app may have at most 1500 bytes (the limit max-app-bytes)") == true,
            "\(described)")
        #expect(described["entries"] == .array(element: "(xs)", []))
        #expect(try await run.renderer.content(widget) == "")
    }
}

@Suite("Bundles of apps that are gone are forgotten", .timeLimit(.minutes(2)))
struct GoneAppBundleTests {
    static let bundle = FootprintTests.bundle

    @Test("a bundle is forgotten once its app has no registration, no desktop entry and no placed widget — and stays forgotten after a restart")
    func forgotten() async throws {
        let fixture = try await HostFixture.make(desktopEntries: [
            "org.example.Installed.desktop": "[Desktop Entry]\nType=Application\nName=Installed\nExec=true\nDBusActivatable=true\n"
        ])
        defer { fixture.stop() }
        try await fixture.startHost()
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        // Three apps publish a bundle: one installed, one that will keep a placed widget, one with neither.
        for appID in ["org.example.Installed", "org.example.Placed", "org.example.Passing"] {
            let app = try await AppPeer(fixture, appID: appID, protocol: "freedesktop")
            try await app.registerWidgets(Self.bundle)
            if appID == "org.example.Placed" { _ = try await renderer.addWidget(appID, "K", "systemSmall") }
            app.close()
        }
        // The host hears of the closed connections from the bus.
        let ended = await eventually { (try? await listApps(renderer).keys.sorted()) == ["org.example.Installed"] }
        #expect(ended)
        // An app with no kinds may just be starting: the message says how to wait for it.
        await expectHostError(
            "UnknownKind",
            mentioning: "org.example.Passing has registered no widget kinds yet, so it has no 'K': if the app is starting, wait until it has (widget-host wait org.example.Passing --kinds)"
        ) {
            _ = try await renderer.addWidget("org.example.Passing", "K", "systemSmall")
        }
        // The installed app keeps its bundle; so does the app with a placed widget, until that widget goes.
        let installed = try await renderer.addWidget("org.example.Installed", "K", "systemSmall")
        _ = try await renderer.addWidget("org.example.Placed", "K", "systemSmall")
        for widget in try await renderer.managedObjects().keys where widget.contains("/widgets/") && widget != installed {
            _ = try await renderer.call(
                destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Remove")
        }
        await expectHostError("UnknownKind", mentioning: "org.example.Placed has registered no widget kinds") {
            _ = try await renderer.addWidget("org.example.Placed", "K", "systemSmall")
        }
        // Forgetting was stored: a restart does not bring the bundles back.
        await fixture.stopHost()
        try await fixture.startHost()
        let after = try await fixture.connect()
        defer { after.close() }
        for appID in ["org.example.Placed", "org.example.Passing"] {
            await expectHostError("UnknownKind", mentioning: "\(appID) has registered no widget kinds") {
                _ = try await after.addWidget(appID, "K", "systemSmall")
            }
        }
        _ = try await after.addWidget("org.example.Installed", "K", "systemSmall")
    }
}
