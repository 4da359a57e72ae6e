import DBus
import Foundation
import PrivateBus
import Synchronization
import Testing
import WidgetHostKit

/// WidgetHostKit end to end: apps and renderers written with the library, against the real daemon.
@Suite("WidgetHostKit", .timeLimit(.minutes(2)))
struct WidgetHostKitTests {
    static let bundle =
        #"{"widgets":[{"kind":"Hero","families":["systemSmall","accessoryInline"],"configuration":{"intent":"SelectHero","parameters":[{"name":"hero","dynamic":true}]}}]}"#

    /// What an app's handlers received.
    final class Received: @unchecked Sendable {
        private let items = Mutex<[String]>([])
        func add(_ item: String) { items.withLock { $0.append(item) } }
        var all: [String] { items.withLock { $0 } }
    }

    @Test("A delivery that arrives after its org.widgethost.deadline is dropped, never handed to the app's handler")
    func lateDeliveriesDropped() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let bus = BusAddress.address(fixture.bus.address)
        let received = Received()
        let app = WidgetHostApp(appID: "org.example.Kit", schemes: ["kit"], bundle: Self.bundle)
        app.onOpenURL { url, _ in received.add(url) }
        try await app.connect(bus)
        defer { app.close() }
        let caller = try await fixture.connect()
        defer { caller.close() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for (url, deadline) in [("kit://late", now - 1), ("kit://in-time", now + 60_000)] {
            _ = try? await caller.call(
                destination: "org.example.Kit", path: "/org/example/Kit", interface: "org.widgethost.App1", member: "OpenURL",
                [.string(url), .vardict(["org.widgethost.deadline": .int64(deadline)])])
        }
        #expect(received.all == ["kit://in-time"])
    }

    @Test("close() cancels the handlers still running: a delivery the app is still handling does not outlive it")
    func closeCancelsHandlers() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let received = Received()
        let app = WidgetHostApp(appID: "org.example.Kit", schemes: ["kit"], bundle: Self.bundle)
        app.onOpenURL { url, _ in
            received.add("started \(url)")
            do { try await Task.sleep(for: .seconds(120)) } catch { received.add("cancelled \(url)") }
        }
        try await app.connect(.address(fixture.bus.address))
        defer { app.close() }
        let caller = try await fixture.connect()
        defer { caller.close() }
        let call = Task {
            try? await caller.call(
                destination: "org.example.Kit", path: "/org/example/Kit", interface: "org.widgethost.App1", member: "OpenURL",
                [.string("kit://slow"), .vardict([:])])
        }
        #expect(await eventually { received.all == ["started kit://slow"] })
        app.close()
        #expect(await eventually { received.all == ["started kit://slow", "cancelled kit://slow"] })
        _ = await call.value
    }

    @Test("An app's handlers get URLs, user activities and actions, typed, from a renderer's taps")
    func appAndRenderer() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let bus = BusAddress.address(fixture.bus.address)
        let received = Received()
        let app = WidgetHostApp(appID: "org.example.Kit", schemes: ["kit"], bundle: Self.bundle)
        app.onOpenURL { url, context in received.add("url \(url) token=\(context.activationToken ?? "-") widget=\(context.widgetID ?? "-") via=\(context.via?.rawValue ?? "-")") }
        app.onContinueUserActivity { activity, context in
            received.add("activity \(activity.activityType) family=\(context.family?.rawValue ?? "-") info=\(activity.userInfo["kind"]?.stringValue ?? "-")")
        }
        app.onPerformAction { action, parameter, context in
            received.add("action \(action) \(parameter?.stringValue ?? "-") surface=\(context.surface?.rawValue ?? "-") on=\(context.toggleIsOn.map(String.init) ?? "-")")
        }
        try await app.connect(bus)
        defer { app.close() }
        let renderer = try await WidgetHostRenderer.connect(bus)
        defer { renderer.close() }

        let offered = try await renderer.bundles()
        #expect(offered.map(\.appID) == ["org.example.Kit"] && offered.first?.bundle.kind("Hero")?.families.contains(.systemSmall) == true)
        let changes = try await renderer.changes()
        let widget = try await renderer.addWidget(appID: "org.example.Kit", kind: "Hero", family: .systemSmall, configuration: ["hero": .string("spouty")])
        #expect(widget.family == .systemSmall && widget.configuration["hero"] == .string("spouty") && widget.content == nil)
        let tree = ViewNode.vstack(widgetURL: "kit://hero/spouty", [
            .text("Spouty", id: "name"), .link("kit://leaderboard", id: "board", [.text("Board")]),
            .button(action: "heal", parameter: .string("spouty"), id: "heal", [.text("Heal")]),
            .toggle(action: "shield", isOn: true, parameter: .string("spouty"), id: "shield"),
        ])
        try await app.setContent(widget.id, tree)
        // The mirror sees the content change, typed.
        var iterator = changes.makeAsyncIterator()
        var mirrored: ViewNode?
        while mirrored == nil, let change = await iterator.next() {
            if case .widgetChanged(let changed) = change, changed.id == widget.id { mirrored = changed.content }
        }
        #expect(mirrored == tree)
        #expect(try await renderer.widgets().first?.content == tree)

        let taps = try await fixture.monitorTaps()
        defer { taps.stop() }
        let opened = try await renderer.tap(widget.id, element: "name", activationToken: "tok-9")
        #expect(opened.outcome == .openURL && opened.url == "kit://hero/spouty" && opened.via == .widgetURL)
        // The tap says when its call stops waiting, 30 s after it was sent (docs/delivery.md#the-renderers-deadline);
        // a loaded machine may take seconds between the two clocks read.
        let problem = await taps.deadlineProblem(seconds: 20...31)
        #expect(problem == nil, "\(problem ?? "")")
        let linked = try await renderer.tap(widget.id, element: "board")
        #expect(linked.outcome == .openURL && linked.url == "kit://leaderboard" && linked.via == .link)
        let acted = try await renderer.tap(widget.id, element: "heal", surface: .lockScreen)
        #expect(acted.outcome == .performAction && acted.action == "heal" && acted.parameter == .string("spouty") && acted.toggleIsOn == nil)
        let toggled = try await renderer.tap(widget.id, element: "shield")
        #expect(toggled.outcome == .performAction && toggled.parameter == .string("spouty") && toggled.toggleIsOn == false)
        let inline = try await renderer.addWidget(appID: "org.example.Kit", kind: "Hero", family: .accessoryInline)
        let continued = try await renderer.tap(inline.id)
        #expect(continued.outcome == .continueUserActivity && continued.activityType == "Hero")
        let dry = try await renderer.tap(widget.id, element: "name", deliver: false)
        #expect(dry.outcome == .openURL)
        #expect(received.all == [
            "url kit://hero/spouty token=tok-9 widget=\(widget.id) via=widget-url",
            "url kit://leaderboard token=- widget=\(widget.id) via=link",
            "action heal spouty surface=lock-screen on=-",
            "action shield spouty surface=desktop on=false",
            "activity Hero family=accessoryInline info=Hero",
        ])
        #expect(try await app.currentConfigurations().map(\.id) == [widget.id, inline.id])
    }

    struct Provider: WidgetTimelineProvider {
        func timeline(for request: TimelineRequest) async throws -> WidgetTimeline {
            let hero = request.configuration["hero"]?.stringValue ?? "?"
            return WidgetTimeline(
                entries: [
                    .init(date: Date(), content: .text("\(hero) now", id: "t")),
                    .init(date: Date().addingTimeInterval(0.5), content: .text("\(hero) later", id: "t")),
                ],
                policy: .never)
        }

        func options(kind: String, parameter: String, configuration: [String: OptionValue]) async throws -> [ConfigurationOption] {
            [ConfigurationOption(id: "spouty", display: "🐳 Spouty")]
        }
    }

    @Test("A provider written with the library serves timelines and options; the app registers again after the host restarts")
    func providerAndRestart() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let bus = BusAddress.address(fixture.bus.address)
        let app = WidgetHostApp(appID: "org.example.KitProvider", bundle: Self.bundle)
        app.provideTimelines(with: Provider())
        try await app.connect(bus)
        defer { app.close() }
        let renderer = try await WidgetHostRenderer.connect(bus)
        defer { renderer.close() }
        let widget = try await renderer.addWidget(
            appID: "org.example.KitProvider", kind: "Hero", family: .systemSmall, configuration: ["hero": .string("spook")])
        #expect(await eventually { (try? await renderer.widgets().first?.content) == .text("spook later", id: "t") })
        let options = try await renderer.connection.call(
            destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.widgethost.Host1.Widgets",
            member: "GetConfigurationOptions", [.string("org.example.KitProvider"), .string("Hero"), .string("hero"), .vardict([:])])
        #expect(options.first == .array(element: "(ss)", [.structure([.string("spouty"), .string("🐳 Spouty")])]))

        #expect(app.registrationCount == 1)
        await fixture.stopHost()
        try await fixture.startHost()
        #expect(await eventually { app.registrationCount == 2 }, "the app did not register again after the restart")
        try await app.setContent(widget.id, .text("after the restart", id: "t"))
        try await app.reloadAllTimelines()
        #expect(await eventually { (try? await renderer.widgets().first?.content) == .text("spook later", id: "t") })
    }

    @Test("A renderer reads what the host knows: apps, lint findings, a timeline, options and taps as they happen; no host is its own error")
    func inspecting() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let bus = BusAddress.address(fixture.bus.address)
        let early = try await WidgetHostRenderer.connect(bus)
        defer { early.close() }
        await #expect(throws: WidgetHostUnavailable.self) { try await early.apps() }
        await #expect(throws: WidgetHostUnavailable.self) { try await early.tap("w1") }

        try await fixture.startHost()
        let app = WidgetHostApp(appID: "org.example.KitInspect", schemes: ["kit"], bundle: Self.bundle)
        app.provideTimelines(with: Provider())
        app.onOpenURL { _, _ in }
        try await app.connect(bus)
        defer { app.close() }
        let renderer = try await WidgetHostRenderer.connect(bus)
        defer { renderer.close() }

        let known = try #require(try await renderer.apps().first { $0.appID == "org.example.KitInspect" })
        #expect(known.protocol == "widgethost" && known.source == "registration" && known.schemes == ["kit"])
        #expect(known.sandbox == "none" && known.registeredBy?.hasPrefix(":") == true && known.details["protocol"] == .string("widgethost"))

        let findings = try await renderer.lint(
            #"{"type":"vstack","children":[{"type":"t","id":"a","widgetURL":"other://x"},{"type":"t","id":"a"}]}"#,
            family: .systemSmall, appID: "org.example.KitInspect")
        #expect(findings.contains { $0.severity == .error && $0.severityName == "error" && $0.code == "duplicate-id" }, "\(findings)")
        #expect(findings.contains { $0.severity == .info && $0.code == "undeclared-scheme" && $0.message.contains("other://x") }, "\(findings)")

        let widget = try await renderer.addWidget(
            appID: "org.example.KitInspect", kind: "Hero", family: .systemSmall, configuration: ["hero": .string("spook")])
        #expect(await eventually { (try? await renderer.describeTimeline(widget.id).entries.count) == 2 })
        let timeline = try await renderer.describeTimeline(widget.path)
        #expect(timeline.tracked && timeline.policy == "never" && timeline.current != nil && timeline.budgetLimit > 0)
        #expect(timeline.entries.map { try? ViewNode.decode($0.contentJSON) } == [.text("spook now", id: "t"), .text("spook later", id: "t")])
        #expect(timeline.entries[0].date <= timeline.entries[1].date && timeline.details["policy"] == .string("never"))
        #expect(try await renderer.configurationOptions(appID: "org.example.KitInspect", kind: "Hero", parameter: "hero")
            == [ConfigurationOption(id: "spouty", display: "🐳 Spouty")])
        let reload = try await renderer.reloadTimeline(widget.id)
        #expect(["fetching", "queued"].contains(reload.state) && reload.runsAt == nil, "\(reload)")

        let taps = try await renderer.taps()
        let tapped = try await renderer.tap(widget.id, activationToken: "tok-5")
        var iterator = taps.makeAsyncIterator()
        let observed = await iterator.next()
        #expect(observed?.target == widget.path && observed?.result == tapped, "\(String(describing: observed))")
        await #expect(throws: DBusError.self) { try await renderer.describeTimeline("w99") }
    }

    @Test("Live Activities through the library: start, update, tap a presentation, end")
    func liveActivities() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let bus = BusAddress.address(fixture.bus.address)
        let received = Received()
        let app = WidgetHostApp(appID: "org.example.KitActivity", schemes: ["kit"])
        app.onOpenURL { url, context in received.add("\(url) \(context.presentation?.rawValue ?? "-") \(context.activityID ?? "-")") }
        try await app.connect(bus)
        defer { app.close() }
        let renderer = try await WidgetHostRenderer.connect(bus)
        defer { renderer.close() }
        let views = ActivityViews(
            widgetURL: "kit://order/1", lockScreen: .text("Order 1"), compactLeading: .text("🚚"), compactTrailing: .text("10 min"),
            minimal: .text("🚚"), expanded: .vstack([.link("kit://order/1/map", id: "map", [.text("Map")])]))
        let id = try await app.startActivity(attributesType: "Delivery", content: views, state: ["eta": .int(10)], relevance: 2)
        #expect(try await renderer.activities().map(\.id) == [id])
        let urgent = try await app.startActivity(attributesType: "Delivery", content: views, state: ["eta": .int(1)], relevance: 5)
        let ordered = try await renderer.activitiesByRelevance()
        #expect(ordered.map(\.id) == [urgent, id] && ordered[0].startDate != nil && ordered[0].staleDate == nil)
        #expect(ordered[0].properties["Relevance"] == .double(5))
        try await app.endActivity(urgent, dismissal: "immediate")
        try await app.updateActivity(id, state: ["eta": .int(5)])
        let tapped = try await renderer.tapActivity(id, presentation: .expanded, element: "map")
        #expect(tapped.outcome == .openURL && tapped.url == "kit://order/1/map")
        #expect(received.all == ["kit://order/1/map expanded \(id)"])
        try await app.endActivity(id, dismissal: "immediate")
        #expect(try await renderer.activities().isEmpty)
    }

    @Test("The Swift examples: Tap Me places its widgets and prints what a tap opens; widget-renderer lists, shows and taps")
    func examples() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try fixture.launch(buildDirectory + "/tap-me-swift", environment: ["TAP_ME_SECONDS": "30"])
        defer { app.stop() }
        let printed = app.printed
        #expect(await eventually { printed().contains("Tap Me is ready;") }, "\(printed())")
        let renderer = buildDirectory + "/widget-renderer"
        let list = try await runCommand(renderer, ["list"], environment: fixture.environment)
        #expect(list.stdout.split(separator: "\n").count == 5, "\(list.stdout)\(list.stderr)")
        let show = try await runCommand(renderer, ["show", "w5"], environment: fixture.environment)
        #expect(show.stdout.contains("link #show-red \"\"") || show.stdout.contains("link #show-red → tap-me-widget://show-red"), "\(show.stdout)")
        let tap = try await runCommand(renderer, ["tap", "w2", "label", "--token", "tok-2"], environment: fixture.environment)
        #expect(tap.stdout == "open-url tap-me-widget://show-green\n", "\(tap.stdout)\(tap.stderr)")
        #expect(await eventually { printed().contains("Tap Me opened tap-me-widget://show-green (activation token tok-2)") }, "\(printed())")
    }

    @Test("A renderer reads the most relevant activity's presentations in words: bound state and attributes filled in as the other renderers fill them, an icon's label, the text when a key is missing")
    func activityInWords() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let renderer = try await WidgetHostRenderer.connect(.address(fixture.bus.address))
        defer { renderer.close() }
        #expect(try await renderer.mostRelevantActivity() == nil)
        let app = try await AppPeer(fixture, appID: "org.example.Words")
        defer { app.close() }
        let icon = #"{"type":"image","icon":"package-x-generic-symbolic","label":"Parcel"}"#
        let content = """
            {"lockScreen":\(icon),"minimal":\(icon),"compactLeading":\(icon),
             "compactTrailing":{"type":"hstack","children":[{"type":"text","bind":"attributes.order","format":"#{}"},{"type":"text","bind":"state.eta","format":"{} min","text":"soon"}]},
             "expanded":{"type":"vstack","children":[{"type":"text","bind":"state.where","text":"?"},{"type":"text","bind":"state.missing","text":"no key"},{"type":"text","bind":"state.late","text":"-"}]}}
            """
        _ = try await app.startActivity("Words", content, [
            "attributes": .vardict(["order": .int32(1234)]),
            "state": .vardict(["eta": .double(9), "where": .vardict(["street": .string("Main"), "city": .string("Leeds")]), "late": .bool(false)]),
        ])
        let activity = try #require(try await renderer.mostRelevantActivity())
        #expect(activity.text(of: .compactLeading) == "Parcel", "an icon alone gives its label")
        #expect(activity.text(of: .compactTrailing) == "#1234 9 min", "a whole double without its fraction, as JavaScript and Python print it")
        #expect(activity.text(of: .expanded) == #"{"city":"Leeds","street":"Main"} no key false"#, "other values as JSON; a missing key shows the text")
    }
}

@Suite("Emoji Rangers on WidgetHostKit", .timeLimit(.minutes(2)))
struct EmojiRangersSwiftTests {
    @Test("The Swift Emoji Rangers: dynamic hero options, a timeline that recovers by itself, a button that reloads it, a Live Activity")
    func emojiRangers() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        // A provider call that goes unanswered is failed after 5 s and retried after 1 s, so one lost
        // message on a loaded machine cannot stall the test; the failure message shows the logs if it does.
        try await fixture.startHost(["--provider-timeout", "5", "--reload-retry-delay", "1"])
        let app = try fixture.launch(
            buildDirectory + "/emoji-rangers-swift", environment: ["EMOJI_RANGERS_STEP": "0.5", "EMOJI_RANGERS_SECONDS": "60"])
        defer { app.stop() }
        let printed = app.printed
        #expect(await eventually { printed().contains("quest a1 started") }, "\(printed())")

        let renderer = try await WidgetHostRenderer.connect(.address(fixture.bus.address))
        defer { renderer.close() }
        let options = try await fixture.cli(["options", "org.example.EmojiRangersSwift", "EmojiRangerWidget", "hero"])
        #expect(options.stdout.contains("egghead     🦄 Egghead"), "\(options.stdout)")
        #expect(try await renderer.activities().map(\.attributesType) == ["QuestAttributes"])

        let widget = try await renderer.addWidget(
            appID: "org.example.EmojiRangersSwift", kind: "EmojiRangerWidget", family: .systemSmall, configuration: ["hero": .string("egghead")])
        func health() async -> String? {
            func find(_ node: ViewNode) -> ViewNode? { node.id == "health-label" ? node : node.children.lazy.compactMap(find).first }
            return (try? await renderer.widgets().first { $0.id == widget.id }?.content)?.flatMap(find)?.fields["text"]?.stringValue
        }
        // Content changes by itself, entry by entry, up to full health.
        #expect(await eventually { await health() == "100%" })
        // A button's action reaches the app, and the host then reloads that widget's timeline.
        let spook = try await renderer.addWidget(
            appID: "org.example.EmojiRangersSwift", kind: "EmojiRangerWidget", family: .systemSmall, configuration: ["hero": .string("spook")])
        let spookShown = await eventually(timeout: 20) { (try? await renderer.widgets().first { $0.id == spook.id }?.content) != nil }
        #expect(spookShown, "app:\n\(printed())\nhost log:\n\(fixture.log)")
        let result = try await renderer.tap(spook.id, element: "supercharge")
        #expect(result.outcome == .performAction && result.parameter == .string("spook"))
        #expect(await eventually { printed().contains("super charged spook\ntimeline for spook (action)") }, "\(printed())")
        // The leaderboard: each hero a link, opened in the app.
        let board = try await renderer.addWidget(appID: "org.example.EmojiRangersSwift", kind: "LeaderboardWidget", family: .systemMedium)
        // A heading, a divider and a link for each of the three heroes.
        #expect(await eventually {
            (try? await renderer.widgets().first { $0.id == board.id }?.content)??.children.filter { $0.type == "link" }.count == 3
        })
        let opened = try await renderer.tap(board.id, element: "egghead")
        #expect(opened.outcome == .openURL && opened.via == .link && opened.url == "emoji-rangers://hero/egghead")
        #expect(await eventually { printed().contains("showing emoji-rangers://hero/egghead") })
    }
}
