import DBus
import Foundation
import Synchronization
import Testing
import WidgetHostService

func exampleFile(_ path: String) throws -> String {
    try String(contentsOf: repositoryRoot.appendingPathComponent("examples/\(path)"), encoding: .utf8)
}

/// An app on its own connection: registers, publishes a bundle, and (for the
/// widgethost protocol) serves org.widgethost.App1 from dbus/, recording calls.
final class AppPeer: @unchecked Sendable {
    enum Behaviour: Sendable { case answer, hang, fail }
    let connection: Connection
    let appID: String
    private let received = Mutex<[(member: String, args: [DBusValue])]>([])
    private let held = Mutex<[Reply]>([])

    init(
        _ fixture: HostFixture, appID: String, protocol: String = "widgethost", schemes: [String] = [], behaviour: Behaviour = .answer,
        options: [String: DBusValue] = [:]
    ) async throws {
        connection = try await fixture.connect()
        self.appID = appID
        if `protocol` == "widgethost" {
            let xml = try String(contentsOf: repositoryRoot.appendingPathComponent("dbus/org.widgethost.App1.xml"), encoding: .utf8)
            var app1 = ExportedInterface(try InterfaceDescription.parse(xml: xml)[0])
            for member in ["OpenURL", "ContinueUserActivity", "PerformAction"] {
                app1.method(member, .deferred { [weak self] call, reply in
                    guard let self else { return }
                    self.record(member, call.arguments)
                    switch behaviour {
                    case .answer: reply.succeed()
                    case .fail: reply.fail(DBusError(name: "org.example.Error.Broken", message: "the app is broken"))
                    case .hang: self.hold(reply)
                    }
                })
            }
            let path = "/" + appID.replacingOccurrences(of: ".", with: "/").replacingOccurrences(of: "-", with: "_")
            try connection.export([app1], at: path)
        }
        if `protocol` == "widgethost" {
            // Taps go to this connection, so it must own the app's name, as the app itself would.
            // A peer of the same app closed just before may still hold it for a moment: the bus
            // reads its disconnect and this request from different sockets, in either order.
            var answer = try await connection.requestName(appID)
            for _ in 0..<250 where answer == .exists {
                try await Task.sleep(for: .milliseconds(20))
                answer = try await connection.requestName(appID)
            }
            #expect(answer == .primaryOwner)
        }
        let registration = options.merging(["protocol": .string(`protocol`), "schemes": .strings(schemes)]) { mine, _ in mine }
        _ = try await connection.host("RegisterApp", [.string(appID), .vardict(registration)])
    }

    private func record(_ member: String, _ args: [DBusValue]) {
        received.withLock { $0.append((member, args)) }
    }

    private func hold(_ reply: Reply) {
        held.withLock { $0.append(reply) }
    }

    var calls: [(member: String, args: [DBusValue])] {
        received.withLock { $0 }
    }

    func registerWidgets(_ bundle: String) async throws {
        _ = try await connection.host("RegisterWidgets", [.string(appID), .string(bundle)], interface: "org.widgethost.Host1.Widgets")
    }

    func setContent(_ widget: String, _ json: String) async throws {
        _ = try await connection.call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "SetContent",
            [.string(json)])
    }

    /// StartActivity from this app's registration; returns the activity's path.
    func startActivity(_ type: String, _ content: String, _ options: [String: DBusValue] = [:]) async throws -> String {
        let reply = try await connection.host(
            "StartActivity", [.string(appID), .string(type), .string(content), .vardict(options)], interface: "org.widgethost.Host1.LiveActivities")
        return reply.first?.stringValue ?? ""
    }

    func close() { connection.close() }
}

extension Connection {
    func addWidget(_ app: String, _ kind: String, _ family: String, _ configuration: [String: DBusValue] = [:]) async throws -> String {
        let reply = try await host(
            "AddWidget", [.string(app), .string(kind), .string(family), .vardict(configuration)],
            interface: "org.widgethost.Host1.Widgets")
        return reply.first?.stringValue ?? ""
    }

    func tap(_ widget: String, _ element: String = "", _ options: [String: DBusValue] = [:], method: String = "Tap") async throws
        -> (String, [String: DBusValue])
    {
        let reply = try await call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: method,
            [.string(element), .vardict(options)])
        return (reply[0].stringValue ?? "", (reply[1].stringKeyedEntries ?? [:]).mapValues(\.unwrapped))
    }
}

@Suite("Widgets and taps", .timeLimit(.minutes(2)))
struct WidgetTests {
    @Test("Tap Me through a real GApplication started by D-Bus activation: every colour, the link, the token")
    func tapMeGApplication() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installTapMe()
        try await fixture.startHost()
        // The bundle comes from the app's registration, which then ends: deliveries go to the desktop entry.
        let publisher = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
        try await publisher.registerWidgets(try exampleFile("tap-me/bundle.json"))
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        var widgets: [String: String] = [:]
        for colour in ["red", "green", "blue", "yellow"] {
            let path = try await renderer.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
            try await publisher.setContent(path, try exampleFile("tap-me/\(colour).json"))
            widgets[colour] = path
        }
        let linked = try await renderer.addWidget("org.example.TapMe", "TapMeWidget", "systemMedium")
        try await publisher.setContent(linked, try exampleFile("tap-me/show-red-link.json"))
        publisher.close()
        let discovered = await eventually { (try? await listApps(renderer)["org.example.TapMe"]?["source"]) == .string("desktop-entry") }
        #expect(discovered)
        #expect(try await renderer.nameOwner("org.example.TapMe") == nil, "the app must not be running before the first tap")

        let tapped = SignalRecorder(try await renderer.signals(MatchRule(interface: "org.widgethost.Host1.Widgets", member: "Tapped")))
        for colour in ["red", "green", "blue", "yellow"] {
            let (outcome, details) = try await renderer.tap(widgets[colour]!, "label", ["activation_token": .string("token-\(colour)")])
            #expect(outcome == "open-url")
            #expect(details["url"] == .string("tap-me-widget://show-\(colour)"))
            #expect(details["via"] == .string("widget-url"))
        }
        let (outcome, details) = try await renderer.tap(linked, "show-red")
        #expect(outcome == "open-url" && details["via"] == .string("link") && details["url"] == .string("tap-me-widget://show-red"))

        let opens = fixture.records(record).filter { $0["call"] as? String == "open" }
        #expect(opens.map { ($0["uris"] as? [String])?.first ?? "" } == [
            "tap-me-widget://show-red", "tap-me-widget://show-green", "tap-me-widget://show-blue", "tap-me-widget://show-yellow",
            "tap-me-widget://show-red",
        ])
        let platform = opens.first?["platform_data"] as? [String: String]
        #expect(platform?["activation-token"] == "'token-red'")
        #expect(platform?["desktop-startup-id"] == "'token-red'")
        #expect(platform?["org.widgethost.source"]?.contains("'widget_id': <'\(widgets["red"]!.split(separator: "/").last!)'>") == true)
        #expect(platform?["org.widgethost.source"]?.contains("'element_id': <'label'>") == true, "the app learns which element was tapped: \(platform ?? [:])")
        let signalled = await eventually { tapped.messages.count == 5 }
        #expect(signalled, "Tapped signals: \(tapped.events)")
    }

    @Test("A widget without URLs continues the user activity in the GApplication (Activate with platform data)")
    func userActivityGApplication() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installTapMe()
        try await fixture.startHost()
        let publisher = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop")
        try await publisher.registerWidgets(
            #"{"widgets":[{"kind":"Hero","families":["systemSmall"],"configuration":{"intent":"SelectHero","parameters":[{"name":"hero","dynamic":true}]}}]}"#)
        let path = try await publisher.connection.addWidget("org.example.TapMe", "Hero", "systemSmall", ["hero": .string("spouty")])
        try await publisher.setContent(path, #"{"type":"text","id":"t"}"#)
        publisher.close()
        _ = await eventually { (try? await listApps(fixture.connect())["org.example.TapMe"]?["source"]) == .string("desktop-entry") }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let (outcome, details) = try await renderer.tap(path, "t")
        #expect(outcome == "continue-user-activity")
        #expect(details["activity_type"] == .string("Hero"))
        let activate = fixture.records(record).first { $0["call"] as? String == "activate" }
        let activity = (activate?["platform_data"] as? [String: String])?["org.widgethost.user-activity"] ?? ""
        #expect(activity.contains("'activity_type': <'Hero'>"), "\(activity)")
        #expect(activity.contains("'intent': <'SelectHero'>") && activity.contains("'hero': <'spouty'>"), "\(activity)")
    }

    @Test("An org.widgethost.App1 app gets OpenURL, ContinueUserActivity and PerformAction with context")
    func app1Protocol() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.EmojiRangers", schemes: ["emoji-rangers"])
        defer { app.close() }
        try await app.registerWidgets(try exampleFile("emoji-rangers/bundle.json"))
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let board = try await renderer.addWidget("org.example.EmojiRangers", "LeaderboardWidget", "systemMedium")
        try await app.setContent(board, try exampleFile("emoji-rangers/leaderboard.json"))
        let (outcome, details) = try await renderer.tap(board, "egghead", ["activation_token": .string("t1")])
        #expect(outcome == "open-url" && details["url"] == .string("emoji-rangers://hero/egghead"))
        let background = try await renderer.tap(board, "")
        #expect(background.0 == "continue-user-activity")

        let button = try await renderer.addWidget("org.example.EmojiRangers", "LeaderboardWidget", "systemLarge")
        try await app.setContent(button, #"{"type":"button","id":"heal","action":"heal","parameter":{"hero":"spouty","amount":5}}"#)
        let performed = try await renderer.tap(button, "heal", ["activation_token": .string("t2")])
        #expect(performed.0 == "perform-action" && performed.1["action"] == .string("heal"))

        let calls = app.calls
        #expect(calls.map(\.member) == ["OpenURL", "ContinueUserActivity", "PerformAction"])
        #expect(calls[0].args[0] == .string("emoji-rangers://hero/egghead"))
        let context = calls[0].args[1].stringKeyedEntries?.mapValues(\.unwrapped) ?? [:]
        #expect(context["activation-token"] == .string("t1") && context["desktop-startup-id"] == .string("t1"))
        #expect(calls[1].args[0] == .string("LeaderboardWidget"))
        #expect(calls[2].args[0] == .string("heal"))
        #expect(calls[2].args[1].unwrapped.stringKeyedEntries?["amount"]?.unwrapped == .int64(5))
        // docs/delivery.md: the context carries the tap's token for every delivery.
        #expect(calls[2].args[2].stringKeyedEntries?["activation-token"]?.unwrapped == .string("t2"))
    }

    @Test("Errors: app errors and hangs become ActivationFailed while other apps' taps complete; ownership; unknown elements")
    func faults() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--delivery-timeout", "4"])
        let bundle = #"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#
        let content = #"{"type":"text","id":"t","widgetURL":"x-app://open"}"#
        let hung = try await AppPeer(fixture, appID: "org.example.Hung", behaviour: .hang)
        let broken = try await AppPeer(fixture, appID: "org.example.Broken", behaviour: .fail)
        let fine = try await AppPeer(fixture, appID: "org.example.Fine")
        defer { [hung, broken, fine].forEach { $0.close() } }
        var paths: [String: String] = [:]
        for app in [hung, broken, fine] {
            try await app.registerWidgets(bundle)
            let path = try await app.connection.addWidget(app.appID, "K", "systemSmall")
            try await app.setContent(path, content)
            paths[app.appID] = path
        }
        let renderer = try await fixture.connect()
        defer { renderer.close() }

        let started = Date()
        let hungPath = paths["org.example.Hung"]!
        async let hungTap: Void = {
            await expectHostError("ActivationFailed", mentioning: "did not answer") {
                _ = try await renderer.tap(hungPath)
            }
        }()
        // While the hung delivery waits, another app's taps complete.
        for _ in 0..<20 { _ = try await renderer.tap(paths["org.example.Fine"]!) }
        let fineDone = Date().timeIntervalSince(started)
        await hungTap
        #expect(fineDone < 3.5, "taps to a responsive app waited \(fineDone) s behind a hung one")
        #expect(fine.calls.count == 20)

        await expectHostError("ActivationFailed", mentioning: "org.example.Error.Broken") {
            _ = try await renderer.tap(paths["org.example.Broken"]!)
        }
        await expectHostError("UnknownElement", mentioning: "ghost") {
            _ = try await renderer.tap(paths["org.example.Fine"]!, "ghost")
        }
        await expectHostError("AccessDenied", mentioning: "org.example.Fine") {
            _ = try await renderer.call(
                destination: "org.widgethost.Host1", path: paths["org.example.Fine"]!, interface: "org.widgethost.Host1.Widget",
                member: "SetContent", [.string(content)])
        }
        await expectHostError("UnsupportedFamily", mentioning: "systemSmall") {
            _ = try await renderer.addWidget("org.example.Fine", "K", "systemLarge")
        }
        await expectHostError("UnknownKind", mentioning: "Nope") {
            _ = try await renderer.addWidget("org.example.Fine", "Nope", "systemSmall")
        }
        await expectHostError("InvalidContent", mentioning: "twice") {
            try await fine.setContent(paths["org.example.Fine"]!, #"{"type":"v","children":[{"type":"a","id":"x"},{"type":"b","id":"x"}]}"#)
        }
        // Resolve delivers nothing.
        let before = fine.calls.count
        let resolved = try await renderer.tap(paths["org.example.Fine"]!, method: "Resolve")
        #expect(resolved.0 == "open-url")
        #expect(fine.calls.count == before)
    }

    @Test("LintContent reports every code through busctl")
    func lint() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let tree = #"{"type":"v","widgetURL":"a://1","children":[{"type":"link","url":"a://2"},{"type":"button","action":"go"},{"type":"t","widgetURL":"a://3"}]}"#
        let result = try await fixture.busctl([
            "call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.widgethost.Host1.Widgets", "LintContent", "ss",
            "accessoryInline", tree,
        ])
        #expect(result.succeeded, "\(result.stderr)")
        for code in ["multiple-widget-urls", "link-ignored-in-family", "control-ignored-in-family", "link-without-id", "control-without-id"] {
            #expect(result.stdout.contains(code), "\(code) missing in \(result.stdout)")
        }
        // The rendering vocabulary (docs/vocabulary.md): warnings, so SetContent still takes the tree.
        let styled = #"{"type":"vstak","children":[{"type":"text","text":"x","colour":"red","fontSize":"big"},{"type":"text","bind":"eta"}]}"#
        let vocabulary = try await fixture.busctl([
            "--json=short", "call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.widgethost.Host1.Widgets", "LintContent", "ss",
            "systemSmall", styled,
        ])
        let findings = vocabulary.stdout.components(separatedBy: "\"").filter { ["warning", "error", "info"].contains($0) || $0.contains("-") && !$0.contains(" ") }
        #expect(
            findings == ["warning", "unknown-type", "warning", "unknown-key", "warning", "invalid-value", "warning", "invalid-binding", "warning", "invalid-binding"],
            "\(vocabulary.stdout)")
        #expect(vocabulary.stdout.contains("did you mean 'vstack'?") && vocabulary.stdout.contains("did you mean 'color'?"), "\(vocabulary.stdout)")
        // Every duplicate id and every bad URL, not just the first problem.
        let broken = #"{"type":"v","children":[{"type":"a","id":"x"},{"type":"b","id":"x"},{"type":"c","id":"y"},{"type":"d","id":"y","widgetURL":"nota url"},{"type":"link","id":"l","url":"/relative"}]}"#
        let all = try await fixture.busctl([
            "--json=short", "call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.widgethost.Host1.Widgets", "LintContent", "ss",
            "systemSmall", broken,
        ])
        let codes = all.stdout.components(separatedBy: "\"").filter { ["duplicate-id", "invalid-url"].contains($0) }
        #expect(codes == ["duplicate-id", "duplicate-id", "invalid-url", "invalid-url"], "\(all.stdout)")

        // A key given twice: the host would keep one value and renderers the other.
        let twice = #"{"type":"v","id":"v","widgetURL":"faults://good","children":[{"type":"t","id":"t","widgetURL":"a://1","\u0077idgetURL":"a://2"}],"widgetURL":"https://evil.example/a"}"#
        let duplicate = try await fixture.busctl([
            "call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.widgethost.Host1.Widgets", "LintContent", "ss", "systemSmall", twice,
        ])
        #expect(duplicate.stdout.components(separatedBy: "duplicate-key").count == 3, "both duplicates: \(duplicate.stdout)")
        #expect(duplicate.stdout.contains("$.children[0] has the key") && duplicate.stdout.contains("content: $ has the key"), "\(duplicate.stdout)")
        let placed = try await AppPeer(fixture, appID: "org.example.Twice")
        defer { placed.close() }
        try await placed.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        let widget = try await placed.connection.addWidget("org.example.Twice", "K", "systemSmall")
        await expectHostError("InvalidContent", mentioning: "$.children[0] has the key 'widgetURL' more than once") { try await placed.setContent(widget, twice) }
        await expectHostError("InvalidContent", mentioning: "has the key 'kind' more than once") {
            try await placed.registerWidgets(#"{"widgets":[{"kind":"K","kind":"L","families":["systemSmall"]}]}"#)
        }

        // With an app, undeclared schemes too; the CLI exits 1 on errors and 0 on warnings and infos.
        let app = try await AppPeer(fixture, appID: "org.example.Lint", schemes: ["lint-app"])
        defer { app.close() }
        let withApp = try await fixture.gdbus([
            "call", "--session", "--dest", "org.widgethost.Host1", "--object-path", "/org/widgethost/Host1",
            "--method", "org.widgethost.Host1.Widgets.LintAppContent", "org.example.Lint", "systemSmall",
            #"{"type":"link","id":"l","url":"other://x","children":[{"type":"t","widgetURL":"lint-app://fine"}]}"#,
        ])
        #expect(withApp.stdout.contains("'undeclared-scheme'") && withApp.stdout.contains("other://x"), "\(withApp)")
        #expect(!withApp.stdout.contains("lint-app://fine"), "\(withApp.stdout)")
        let file = fixture.root.appendingPathComponent("tree.json")
        try #"{"type":"t","id":"t","widgetURL":"other://x"}"#.write(to: file, atomically: true, encoding: .utf8)
        let cli = try await fixture.cli(["lint", file.path, "--family", "systemSmall", "--app", "org.example.Lint"])
        #expect(cli.status == 0 && cli.stdout.contains("info: undeclared-scheme"), "\(cli)")
        try broken.write(to: file, atomically: true, encoding: .utf8)
        let failing = try await fixture.cli(["lint", file.path, "--family", "systemSmall"])
        #expect(failing.status == 1 && failing.stdout.contains("error: duplicate-id"), "\(failing)")
        await expectHostError("UnknownApp", mentioning: "org.example.Nobody") {
            _ = try await app.connection.call(
                destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.widgethost.Host1.Widgets",
                member: "LintAppContent", [.string("org.example.Nobody"), .string("systemSmall"), .string(#"{"type":"t"}"#)])
        }
    }
}

extension HostFixture {
    /// The Tap Me GApplication, installed as a DBusActivatable desktop entry with
    /// its service file. `environment` adds settings of tapme_gapp.py. Returns
    /// the file the app records its calls in.
    func installTapMe(environment extra: [String: String] = [:]) throws -> String {
        try installActivatable(
            "org.example.TapMe", script: "Tests/Fixtures/gapp/tapme_gapp.py", entry: "Tests/Fixtures/gapp/org.example.TapMe.desktop",
            extraKeys: "X-WidgetHost-UserActivityAction=\n", recordVariable: "WIDGETHOST_TEST_RECORD",
            settings: ["WIDGETHOST_TEST_LINGER": "20", "WIDGETHOST_TEST_ACTIONS": "refresh"].merging(extra) { _, new in new })
    }

    /// A python GApplication of the repository installed as a DBusActivatable
    /// desktop entry (its `Exec=/usr/bin/python3 NAME.py` made absolute, an
    /// example's `@EXAMPLES@` filled in) with
    /// its D-Bus service file, which passes `settings` and the record file in
    /// `recordVariable` through the environment. Returns the record file.
    func installActivatable(
        _ appID: String, script: String, entry: String, extraKeys: String = "", recordVariable: String, settings: [String: String]
    ) throws -> String {
        let scriptPath = repositoryRoot.appendingPathComponent(script).path
        let record = root.appendingPathComponent("\(appID).jsonl").path
        var text = try String(contentsOf: repositoryRoot.appendingPathComponent(entry), encoding: .utf8)
        let name = (script as NSString).lastPathComponent
        text = text.replacingOccurrences(of: "Exec=/usr/bin/python3 \(name)", with: "Exec=/usr/bin/python3 \(scriptPath)")
            .replacingOccurrences(of: "@EXAMPLES@", with: repositoryRoot.appendingPathComponent("examples").path) + extraKeys
        try text.write(to: dataDir.appendingPathComponent("applications/\(appID).desktop"), atomically: true, encoding: .utf8)
        let environment = settings.merging([recordVariable: record]) { _, new in new }
            .sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        try bus.installService(name: appID, exec: "/usr/bin/env \(environment) /usr/bin/python3 \(scriptPath) \(appID) --gapplication-service")
        return record
    }

    /// The calls a tapme_gapp.py app recorded.
    func records(_ path: String) -> [[String: Any]] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}

/// What a tapme_gapp.py app recorded of a toggle's action: its parameter and
/// the new state beside it in the platform data (`org.widgethost.toggle-is-on`),
/// each as GLib prints it, "none" when absent (docs/delivery.md#platform-data-and-context).
func toggleDelivery(_ record: [String: Any]) -> String {
    let state = (record["platform_data"] as? [String: Any])?["org.widgethost.toggle-is-on"] as? String
    return "parameter \(record["parameter"] as? String ?? "none"), is on \(state ?? "none")"
}
