import DBus
import Foundation
import Testing

/// Providers and timelines (docs/timelines.md) end to end: the Emoji Rangers
/// GApplication (examples/emoji-rangers) serves org.widgethost.Provider1 and
/// is started by D-Bus activation from its desktop entry and service file.
@Suite("Providers and timelines", .timeLimit(.minutes(2)))
struct TimelineServiceTests {
    static let app = "org.example.EmojiRangers"
    static let kind = "EmojiRangerWidget"

    @Test("Entries appear at their dates with PropertiesChanged, and the provider got the widget's kind, family and configuration")
    func entriesAppearAtTheirDates() async throws {
        // Entries a second apart: a loaded machine may take a few hundred milliseconds to
        // hand over the provider's reply, and an entry whose date passed meanwhile is skipped.
        let run = try await RangersRun.start(environment: { _ in ["EMOJI_RANGERS_STEP": "1", "EMOJI_RANGERS_START_HEALTH": "40"] })
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)

        let changes = SignalRecorder(
            try await renderer.signals(MatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")))
        let widget = try await renderer.addWidget(Self.app, Self.kind, "systemSmall", ["hero": .string("egghead")])
        let full = await eventually { (try? await renderer.content(widget))?.contains("100%") == true }
        let now = (try? await renderer.content(widget)) ?? "?"
        #expect(full, "content: \(now)\nlog:\n\(fixture.log)")

        // Each entry was shown in turn, in date order, through PropertiesChanged on the widget.
        func shown() -> [String] {
            changes.messages.filter { $0.path == widget }.compactMap { message -> String? in
                let changed = message.arguments()[1].stringKeyedEntries?["Content"]?.unwrapped.stringValue
                return changed.flatMap { content in ["40%", "60%", "80%", "100%"].first { content.contains($0) } }
            }
        }
        // The signals reach the recorder through its own task, so wait for the last one too.
        let allShown = await eventually { shown() == ["40%", "60%", "80%", "100%"] }
        #expect(allShown, "\(shown())")
        let content = try await renderer.content(widget)
        #expect(content.contains("🦄") && content.contains("emoji-rangers://hero/egghead"))

        let asked = fixture.records(record).filter { $0["call"] as? String == "timeline" }
        #expect(asked.count == 1)
        #expect(asked.first?["kind"] as? String == Self.kind && asked.first?["family"] as? String == "systemSmall")
        #expect((asked.first?["configuration"] as? [String: Any])?["hero"] as? String == "egghead")
        #expect((asked.first?["context"] as? [String: Any])?["reason"] as? String == "added")
        #expect((asked.first?["context"] as? [String: Any])?["widget_id"] as? String == widget.split(separator: "/").last.map(String.init))

        // widget-host timeline: the entries, the one shown, the next reload and why, the budget.
        let described = try await fixture.cli(["timeline", String(widget.split(separator: "/").last!)])
        #expect(described.succeeded, "\(described.stderr)")
        #expect(described.stdout.contains("policy:       at-end"))
        #expect(described.stdout.contains("entries:      4"))
        #expect(described.stdout.contains("▶") && described.stdout.contains("(policy)"))
        #expect(described.stdout.contains("budget:       69 of 70 left in 24 h"), "\(described.stdout)")
    }

    @Test("A button's action reaches the app without raising it and reloads the widget; Configure reloads with the new hero")
    func buttonReloads() async throws {
        let run = try await RangersRun.start(environment: { _ in ["EMOJI_RANGERS_STEP": "600", "EMOJI_RANGERS_START_HEALTH": "40"] })
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)
        let widget = try await renderer.addWidget(Self.app, Self.kind, "systemSmall", ["hero": .string("spouty")])
        #expect(await eventually { (try? await renderer.content(widget))?.contains("40%") == true })

        let (outcome, details) = try await renderer.tap(widget, "supercharge", ["activation_token": .string("tok-1")])
        #expect(outcome == "perform-action")
        #expect(details["action"] == .string("superCharge") && details["parameter"] == .string("spouty"))
        // The reload after the action shows the charged hero long before the next entry (10 minutes away).
        #expect(await eventually { (try? await renderer.content(widget))?.contains("100%") == true }, "log:\n\(fixture.log)")
        let calls = fixture.records(record).compactMap { r -> String? in
            switch r["call"] as? String {
            case "action": "action \(r["action"] ?? "") \(r["parameter"] ?? "")"
            case "timeline": "timeline \((r["context"] as? [String: Any])?["reason"] ?? "")"
            case "activate", "open": "raised"
            default: nil
            }
        }
        #expect(calls == ["timeline added", "action superCharge spouty", "timeline action"])

        try await renderer.configure(widget, ["hero": .string("spook")])
        #expect(await eventually { (try? await renderer.content(widget))?.contains("👻") == true })
        let last = fixture.records(record).last { $0["call"] as? String == "timeline" }
        #expect((last?["context"] as? [String: Any])?["reason"] as? String == "configured")
    }

    @Test("A reload after a button's action counts against the widget's daily budget: with the budget spent it waits for a slot")
    func actionReloadsAreBudgeted() async throws {
        let run = try await RangersRun.start(
            environment: { _ in ["EMOJI_RANGERS_STEP": "600", "EMOJI_RANGERS_START_HEALTH": "40"] }, host: ["--daily-reload-budget", "2"])
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)
        let widget = try await renderer.addWidget(Self.app, Self.kind, "systemSmall", ["hero": .string("spouty")])
        #expect(await eventually { (try? await renderer.content(widget))?.contains("40%") == true })
        func reasons() -> [String] {
            fixture.records(record).compactMap { ($0["context"] as? [String: Any])?["reason"] as? String }
        }

        // "added" took the first slot, the first action's reload the second.
        #expect(try await renderer.tap(widget, "supercharge").0 == "perform-action")
        #expect(await eventually { reasons() == ["added", "action"] }, "\(reasons())")
        #expect(await eventually { (try? await renderer.describeTimeline(widget))?["fetching"] == nil })
        // The second action reaches the app, but its reload waits for a slot instead of asking the provider.
        #expect(try await renderer.tap(widget, "supercharge").0 == "perform-action")
        #expect(await eventually { fixture.records(record).count { $0["call"] as? String == "action" } == 2 })
        // The reload is asked for once the delivery has ended, just after the tap's reply.
        #expect(await eventually { (try? await renderer.describeTimeline(widget))?["waits_for_budget"] == .bool(true) })
        let described = try await renderer.describeTimeline(widget)
        #expect(described["budget_left"] == .uint32(0) && described["next_reload_reason"] == .string("action"), "\(described)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(reasons() == ["added", "action"], "no reload beyond the budget: \(reasons())")
    }

    @Test("Dynamic options reach the caller from an app started by D-Bus activation; bad parameters are named errors")
    func dynamicOptions() async throws {
        let run = try await RangersRun.start(environment: { _ in ["EMOJI_RANGERS_LINGER": "1"] })
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)
        // The app quits; its desktop entry names the provider, so the bus starts it again for the call.
        // (Its registration ends with its connection, which closes after GApplication released the name.)
        #expect(await eventually(timeout: 15) { (try? await listApps(renderer)[Self.app]?["registered"]) == .bool(false) })
        let options = try await fixture.callHost(
            "org.widgethost.Host1.Widgets.GetConfigurationOptions", [Self.app, Self.kind, "hero", "{}"])
        #expect(options.succeeded, "\(options.stderr)")
        #expect(options.stdout.contains("('spouty', '🐳 Spouty')") && options.stdout.contains("('egghead', '🦄 Egghead')"), "\(options.stdout)")
        let pids = Set(fixture.records(record).compactMap { $0["pid"] as? Int })
        #expect(pids.count == 2, "the second call must come from a process started by activation")

        let cli = try await fixture.cli(["options", Self.app, Self.kind, "hero"])
        #expect(cli.succeeded && cli.stdout.contains("IDENTIFIER") && cli.stdout.contains("spook"), "\(cli.stdout)\(cli.stderr)")

        let notDynamic = try await fixture.callHost(
            "org.widgethost.Host1.Widgets.GetConfigurationOptions", [Self.app, "LeaderboardWidget", "hero", "{}"])
        #expect(notDynamic.stderr.contains("org.widgethost.Host1.Error.InvalidArgument"))
        let unknownKind = try await fixture.callHost(
            "org.widgethost.Host1.Widgets.GetConfigurationOptions", [Self.app, "Villains", "hero", "{}"])
        #expect(unknownKind.stderr.contains("org.widgethost.Host1.Error.UnknownKind"))

        // CurrentConfigurations: the app's placed widgets, in placement order.
        let a = try await renderer.addWidget(Self.app, Self.kind, "systemSmall", ["hero": .string("spook")])
        let b = try await renderer.addWidget(Self.app, "LeaderboardWidget", "systemMedium")
        let current = try await fixture.busctl(
            ["call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.widgethost.Host1.Widgets", "CurrentConfigurations", "s", Self.app])
        #expect(current.succeeded, "\(current.stderr)")
        #expect(current.stdout.hasPrefix("a(osssa{sv}) 2 \"\(a)\" \"EmojiRangerWidget\" \"systemSmall\""), "\(current.stdout)")
        #expect(current.stdout.contains("\"hero\" s \"spook\" \"\(b)\" \"LeaderboardWidget\""), "\(current.stdout)")

        // ListBundles: every bundle as the app sent it, for a gallery — also of an app that is not running.
        let listed = try await fixture.busctl(
            ["--json=short", "call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.widgethost.Host1.Widgets", "ListBundles"])
        #expect(listed.succeeded, "\(listed.stderr)")
        let reply = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any]
        let rows = try #require((reply?["data"] as? [Any])?.first as? [[String]], "\(listed.stdout)")
        #expect(rows.map(\.first) == [Self.app])
        let sent = try String(contentsOf: repositoryRoot.appendingPathComponent("examples/emoji-rangers/bundle.json"), encoding: .utf8)
        #expect(rows.first?.last == sent, "the bundle comes back byte for byte, keys the host does not read included")

        // The command line's gallery: the kinds, then a widget placed with a configuration.
        let kinds = try await fixture.cli(["bundles"])
        #expect(kinds.succeeded && kinds.stdout.contains("EmojiRangerWidget") && kinds.stdout.contains("hero*"), "\(kinds)")
        #expect(kinds.stdout.contains("systemSmall,systemMedium,systemLarge") && kinds.stdout.contains("Ranger Detail"), "\(kinds.stdout)")
        let added = try await fixture.cli(["add", Self.app, Self.kind, "systemSmall", "--set", "hero=egghead"])
        #expect(added.succeeded, "\(added)")
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let placed = try await renderer.call(
            destination: "org.widgethost.Host1", path: "/org/widgethost/Host1/widgets/\(id)", interface: "org.freedesktop.DBus.Properties",
            member: "Get", [.string("org.widgethost.Host1.Widget"), .string("Configuration")])
        #expect(placed.first?.unwrapped.stringKeyedEntries?["hero"]?.unwrapped == .string("egghead"), "\(placed)")
        let bad = try await fixture.cli(["add", Self.app, Self.kind, "systemSmall", "--set", "hero"])
        #expect(!bad.succeeded && bad.stderr.contains("--set takes name=value"), "\(bad)")
    }

    @Test("Only the app's live registration reloads outside the budget; anyone may Reload a widget within it")
    func reloadOwnership() async throws {
        let run = try await RangersRun.start(environment: { _ in ["EMOJI_RANGERS_STEP": "600"] }, host: ["--daily-reload-budget", "2"])
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)
        let widget = try await renderer.addWidget(Self.app, Self.kind, "systemSmall")
        #expect(await eventually { (try? await renderer.content(widget))?.isEmpty == false })

        for method in ["ReloadTimelines", "ReloadAllTimelines"] {
            let refused = try await fixture.callHost(
                "org.widgethost.Host1.Widgets.\(method)", method == "ReloadTimelines" ? [Self.app, Self.kind] : [Self.app])
            #expect(refused.stderr.contains("org.widgethost.Host1.Error.AccessDenied"), "\(method): \(refused.stderr)")
        }
        // The app asks, on its own registered connection (its reloadAll action calls ReloadAllTimelines): no budget is used.
        for _ in 0..<3 {
            let before = fixture.records(record).count { $0["call"] as? String == "timeline" }
            let asked = try await fixture.gdbus([
                "call", "--session", "--dest", Self.app, "--object-path", "/org/example/EmojiRangers", "--method",
                "org.freedesktop.Application.ActivateAction", "reloadAll", "[]", "{}",
            ])
            #expect(asked.succeeded, "\(asked.stderr)")
            #expect(await eventually { fixture.records(record).count { $0["call"] as? String == "timeline" } == before + 1 })
        }
        let reasons = fixture.records(record).compactMap { ($0["context"] as? [String: Any])?["reason"] as? String }
        #expect(reasons == ["added", "app-requested", "app-requested", "app-requested"])

        // widget-host reload: a budgeted Reload; the budget of 2 has one slot left after "added".
        let id = String(widget.split(separator: "/").last!)
        let first = try await fixture.cli(["reload", Self.app])
        #expect(first.succeeded && first.stdout == "\(id) fetching\n", "\(first.stdout)\(first.stderr)")
        #expect(await eventually { (try? await renderer.describeTimeline(widget))?["fetching"] == nil })
        let second = try await fixture.cli(["reload", Self.app, Self.kind])
        #expect(second.stdout.hasPrefix("\(id) budget-exhausted until "), "\(second.stdout)\(second.stderr)")
        let described = try await renderer.describeTimeline(widget)
        #expect(described["budget_left"] == .uint32(0) && described["waits_for_budget"] == .bool(true))
        #expect(described["next_reload_reason"] == .string("requested"))
    }

    @Test("A provider that crashes mid-call fails at once, keeps the content, and is retried after the backoff")
    func providerCrashes() async throws {
        let run = try await RangersRun.start(
            environment: { ["EMOJI_RANGERS_CRASH_ONCE": $0.root.appendingPathComponent("crashed").path, "EMOJI_RANGERS_STEP": "600"] },
            host: ["--provider-timeout", "60", "--reload-retry-delay", "1"])
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)
        let started = Date()
        let widget = try await renderer.addWidget(Self.app, Self.kind, "systemSmall")
        // The crash is noticed when the app's connection closes, not at the 60 s provider timeout.
        let failed = await eventually(timeout: 20) {
            ((try? await renderer.describeTimeline(widget))?["failures"]?.integerValue ?? 0) >= 1
        }
        #expect(failed, "log:\n\(fixture.log)")
        #expect(Date().timeIntervalSince(started) < 30)
        let described = try await renderer.describeTimeline(widget)
        #expect(described["last_failure"]?.stringValue?.contains("GetTimeline") == true, "\(described)")
        // The retry starts the app again by D-Bus activation and the content arrives.
        #expect(await eventually(timeout: 20) { (try? await renderer.content(widget))?.isEmpty == false }, "log:\n\(fixture.log)")
        let reasons = fixture.records(record).compactMap { ($0["context"] as? [String: Any])?["reason"] as? String }
        #expect(reasons.first == "added" && reasons.last == "retry", "\(reasons)")
        #expect(try await renderer.describeTimeline(widget)["failures"] == .uint32(0))
    }

    @Test("A stranger's AddWidget/Remove loop on another app's kind reaches its hung provider with at most max-provider-calls-per-app GetTimeline calls")
    func providerCallsBounded() async throws {
        let run = try await RangersRun.start(
            environment: { _ in ["EMOJI_RANGERS_HANG": "timeline"] }, host: ["--provider-timeout", "30", "--max-provider-calls-per-app", "3"])
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)
        for _ in 0..<150 {
            let widget = try await renderer.addWidget(Self.app, Self.kind, "systemSmall")
            _ = try await renderer.call(
                destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Remove", [])
        }
        let kept = try await renderer.addWidget(Self.app, Self.kind, "systemSmall")
        #expect(await eventually { fixture.records(record).filter { $0["call"] as? String == "timeline" }.count >= 3 })
        try await Task.sleep(for: .seconds(1))
        // Three calls hang; the rest waited their turn and were dropped with their widgets.
        #expect(fixture.records(record).filter { $0["call"] as? String == "timeline" }.count == 3)
        // The widget still placed waits its turn.
        #expect(try await renderer.describeTimeline(kept)["fetching"] == .string("added"))
    }

    @Test("A provider that hangs blocks neither taps nor other calls, and fails at the provider timeout")
    func providerHangs() async throws {
        let run = try await RangersRun.start(
            environment: { _ in ["EMOJI_RANGERS_HANG": "timeline"] }, host: ["--provider-timeout", "15", "--reload-retry-delay", "600"])
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)
        let widget = try await renderer.addWidget(Self.app, Self.kind, "systemSmall")
        #expect(await eventually { fixture.records(record).contains { $0["call"] as? String == "timeline" } })
        // While GetTimeline waits, the host answers at once.
        let clock = ContinuousClock()
        let elapsed = try await clock.measure {
            for _ in 0..<20 {
                _ = try await renderer.tap(widget, "", method: "Resolve")
                _ = try await renderer.describeTimeline(widget)
            }
        }
        // 40 calls, against the 15 s the provider call waits: none of them waited on it.
        #expect(elapsed < .seconds(8), "calls waited on the hung provider: \(elapsed)")
        #expect(try await renderer.describeTimeline(widget)["fetching"] == .string("added"))
        let timedOut = await eventually(timeout: 30) {
            (try? await renderer.describeTimeline(widget))?["last_failure"]?.stringValue?.contains("provider timeout") == true
        }
        #expect(timedOut, "log:\n\(fixture.log)")
        #expect(try await renderer.content(widget) == "")
    }
}

@Suite("Interactive widgets", .timeLimit(.minutes(2)))
struct InteractiveWidgetTests {
    @Test("A toggle gives a GApplication's action its parameter as is, or none, and its new state in the platform data, without raising it")
    func toggleReachesGApplication() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        // GLib refuses an action a parameter of another type, or one it takes none of: each action records only what fits it.
        let record = try fixture.installTapMe(environment: ["WIDGETHOST_TEST_ACTIONS": "toggle-light,dim:a{sv}"])
        try await fixture.startHost()
        let publisher = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop")
        try await publisher.registerWidgets(#"{"widgets":[{"kind":"Lights","families":["systemSmall"]}]}"#)
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let widget = try await renderer.addWidget("org.example.TapMe", "Lights", "systemSmall")
        try await publisher.setContent(
            widget,
            #"{"type":"vstack","children":[{"type":"toggle","id":"light","action":"toggle-light","isOn":true},"#
                + #"{"type":"toggle","id":"dim","action":"dim","parameter":{"room":"hall"}}]}"#)
        publisher.close()
        #expect(await eventually { (try? await listApps(renderer)["org.example.TapMe"]?["source"]) == .string("desktop-entry") })

        let (outcome, details) = try await renderer.tap(widget, "light")
        #expect(outcome == "perform-action" && details["parameter"] == nil && details["toggle_is_on"] == .bool(false), "\(details)")
        let (_, dimmed) = try await renderer.tap(widget, "dim")
        #expect(dimmed["parameter"]?.unwrapped.stringKeyedEntries?.keys.sorted() == ["room"] && dimmed["toggle_is_on"] == .bool(true), "\(dimmed)")
        let actions = fixture.records(record).filter { $0["call"] as? String == "action" }
        #expect(actions.map { "\($0["action"] ?? "") \(toggleDelivery($0))" } == [
            "toggle-light parameter none, is on false", "dim parameter {'room': <'hall'>}, is on true",
        ])
        #expect(!fixture.records(record).contains { $0["call"] as? String == "activate" })
    }
}

/// A host on a private bus with Emoji Rangers installed and launched, and a renderer connection.
struct RangersRun {
    let fixture: HostFixture
    let renderer: Connection
    let record: String

    static func start(
        environment: (HostFixture) -> [String: String] = { _ in [:] }, host arguments: [String] = []
    ) async throws -> RangersRun {
        let fixture = try await HostFixture.make()
        do {
            let record = try fixture.installEmojiRangers(environment(fixture))
            try await fixture.startHost(arguments)
            let renderer = try await fixture.connect()
            try await fixture.launchEmojiRangers(renderer, record: record)
            return RangersRun(fixture: fixture, renderer: renderer, record: record)
        } catch {
            fixture.stop()
            throw error
        }
    }

    func stop() {
        renderer.close()
        fixture.stop()
    }
}

extension HostFixture {
    /// Emoji Rangers as a DBusActivatable desktop entry with its service file;
    /// `environment` adds settings of emoji_rangers_app.py. Returns the file
    /// the app records its calls in.
    func installEmojiRangers(_ extra: [String: String] = [:]) throws -> String {
        try installActivatable(
            "org.example.EmojiRangers", script: "examples/emoji-rangers/emoji_rangers_app.py",
            entry: "examples/emoji-rangers/org.example.EmojiRangers.desktop.in", recordVariable: "EMOJI_RANGERS_RECORD",
            settings: ["EMOJI_RANGERS_LINGER": "30"].merging(extra) { _, new in new })
    }

    /// Starts Emoji Rangers by D-Bus activation and waits until it has published its widget bundle.
    func launchEmojiRangers(_ connection: Connection, record: String) async throws {
        _ = try await connection.call(
            destination: "org.example.EmojiRangers", path: "/org/example/EmojiRangers", interface: "org.freedesktop.DBus.Peer",
            member: "Ping")
        let registered = await eventually(timeout: 20) { self.records(record).contains { $0["call"] as? String == "registered" } }
        if !registered { Issue.record("Emoji Rangers did not register. Host log:\n\(log)") }
    }
}

extension Connection {
    /// A widget's Content property.
    func content(_ widget: String) async throws -> String {
        let reply = try await call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.freedesktop.DBus.Properties", member: "Get",
            [.string("org.widgethost.Host1.Widget"), .string("Content")])
        return reply.first?.unwrapped.stringValue ?? ""
    }

    func configure(_ widget: String, _ configuration: [String: DBusValue]) async throws {
        _ = try await call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Configure",
            [.vardict(configuration)])
    }

    /// The widget's DescribeTimeline, variants unwrapped.
    func describeTimeline(_ widget: String) async throws -> [String: DBusValue] {
        let reply = try await call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "DescribeTimeline")
        return (reply.first?.stringKeyedEntries ?? [:]).mapValues(\.unwrapped)
    }
}
