import DBus
import Foundation
import Testing

/// The resolution rules (docs/widgets.md#resolution-rules) end to end: a renderer taps through the
/// bus, the host resolves with the daemon's link policy, and the test checks
/// both the reply and what the app actually received.
@Suite("Resolution rules end to end", .timeLimit(.minutes(2)))
struct RulesTests {
    /// A tree with every rule in reach: a widgetURL on the root and another
    /// deeper (so two), a link around a text, and a button.
    static let tree = """
        {"type":"vstack","id":"root","widgetURL":"x-app://first","children":[
          {"type":"link","id":"l","url":"x-app://link","children":[{"type":"text","id":"inner"}]},
          {"type":"button","id":"b","action":"refresh","parameter":7},
          {"type":"text","id":"t","widgetURL":"x-app://second"}]}
        """

    @Test("Controls, links, several widgetURLs and the user activity, in every family kind, under each link policy",
          arguments: ["current", "legacy"])
    func rules(policy: String) async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--link-policy", policy])
        let app = try await AppPeer(fixture, appID: "org.example.Rules", schemes: ["x-app"])
        defer { app.close() }
        let families = ["systemSmall", "systemMedium", "accessoryRectangular", "accessoryInline"]
        try await app.registerWidgets(
            #"{"widgets":[{"kind":"K","families":["# + families.map { "\"\($0)\"" }.joined(separator: ",") + "]}]}")
        let renderer = try await fixture.connect()
        defer { renderer.close() }

        // The families where links count under each policy (docs/widgets.md#resolution-rules).
        let linkFamilies: Set<String> =
            policy == "current" ? ["systemSmall", "systemMedium", "accessoryRectangular"] : ["systemMedium"]
        var expectedURLs: [String] = []
        for family in families {
            let widget = try await renderer.addWidget("org.example.Rules", "K", family)
            try await app.setContent(widget, Self.tree)

            // Inside the link: rule 2 where the family honours links, else rule 3.
            let (linkOutcome, linkDetails) = try await renderer.tap(widget, "inner")
            #expect(linkOutcome == "open-url", "\(family)")
            if linkFamilies.contains(family) {
                #expect(linkDetails["via"] == .string("link") && linkDetails["url"] == .string("x-app://link"), "\(family): \(linkDetails)")
                expectedURLs.append("x-app://link")
            } else {
                #expect(linkDetails["via"] == .string("widget-url") && linkDetails["url"] == .string("x-app://first"), "\(family): \(linkDetails)")
                #expect(linkDetails["diagnostics"] == .strings(["multiple-widget-urls"]), "\(family): \(linkDetails)")
                expectedURLs.append("x-app://first")
            }

            // The button: rule 1 in families with interactive controls.
            let (buttonOutcome, buttonDetails) = try await renderer.tap(widget, "b")
            if family == "accessoryInline" {
                #expect(buttonOutcome == "open-url" && buttonDetails["url"] == .string("x-app://first"), "\(buttonDetails)")
                expectedURLs.append("x-app://first")
            } else {
                #expect(buttonOutcome == "perform-action" && buttonDetails["action"] == .string("refresh"), "\(family): \(buttonDetails)")
            }

            // An element with its own widgetURL deeper in the tree: the first in pre-order still wins.
            let (deepOutcome, deepDetails) = try await renderer.tap(widget, "t")
            #expect(deepOutcome == "open-url" && deepDetails["url"] == .string("x-app://first"), "\(deepDetails)")
            #expect(deepDetails["diagnostics"] == .strings(["multiple-widget-urls"]))
            expectedURLs.append("x-app://first")
        }
        // What the app received, in order: exactly the URLs above, and the actions.
        let calls = app.calls
        #expect(calls.filter { $0.member == "OpenURL" }.map { $0.args[0] } == expectedURLs.map { .string($0) })
        let actions = calls.filter { $0.member == "PerformAction" }
        #expect(actions.count == 3)
        #expect(actions.allSatisfy { $0.args[0] == .string("refresh") && $0.args[1].unwrapped == .int64(7) })

        // No URL at all: rule 4 on the background, with the widget's kind.
        let plain = try await renderer.addWidget("org.example.Rules", "K", "systemSmall")
        try await app.setContent(plain, #"{"type":"text","id":"x"}"#)
        let (activity, details) = try await renderer.tap(plain, "")
        #expect(activity == "continue-user-activity" && details["activity_type"] == .string("K"))
        let info = details["user_info"]?.stringKeyedEntries?.mapValues(\.unwrapped)
        #expect(info?["widget_id"] == .string(String(plain.split(separator: "/").last!)) && info?["family"] == .string("systemSmall"))
        #expect(app.calls.last?.member == "ContinueUserActivity")
    }

    @Test("The car surface launches only apps that support it; a scheme the app did not declare still goes to the app")
    func carAndSchemes() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let parked = try await AppPeer(fixture, appID: "org.example.Parked", schemes: ["x-app"])
        let driving = try await AppPeer(
            fixture, appID: "org.example.Driving", schemes: ["x-app"], options: ["surfaces": .strings(["desktop", "car"])])
        defer { [parked, driving].forEach { $0.close() } }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let tapped = SignalRecorder(try await renderer.signals(MatchRule(interface: "org.widgethost.Host1.Widgets", member: "Tapped")))
        var widgets: [String: String] = [:]
        for app in [parked, driving] {
            try await app.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
            let widget = try await renderer.addWidget(app.appID, "K", "systemSmall")
            try await app.setContent(widget, #"{"type":"button","id":"b","action":"go","widgetURL":"other-scheme://x"}"#)
            widgets[app.appID] = widget
        }
        let (refused, refusal) = try await renderer.tap(widgets["org.example.Parked"]!, "b", ["surface": .string("car")])
        #expect(refused == "none" && refusal["reason"] == .string("app-does-not-support-car"), "\(refusal)")
        #expect(parked.calls.isEmpty, "nothing may reach an app that does not support car")

        let (performed, _) = try await renderer.tap(widgets["org.example.Driving"]!, "b", ["surface": .string("car")])
        #expect(performed == "perform-action")
        let source = driving.calls.first?.args[2].stringKeyedEntries?["org.widgethost.source"]?.unwrapped.stringKeyedEntries
        #expect(source?["surface"]?.unwrapped == .string("car"))

        // A URL whose scheme the app did not declare: delivered to that app anyway, with a diagnostic.
        let (opened, openDetails) = try await renderer.tap(widgets["org.example.Parked"]!, "")
        #expect(opened == "open-url" && openDetails["diagnostics"] == .strings(["undeclared-scheme"]), "\(openDetails)")
        #expect(parked.calls.map(\.member) == ["OpenURL"] && parked.calls.first?.args[0] == .string("other-scheme://x"))

        // Tapped follows every resolved Tap, the refused one included.
        let signalled = await eventually { tapped.messages.count == 3 }
        #expect(signalled, "\(tapped.events)")
        #expect(tapped.messages.first?.arguments()[1] == .string("none"))
    }

    @Test("An app that crashes mid-delivery gives ActivationFailed at once, not at the delivery timeout")
    func crashedApp() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installTapMe(environment: ["WIDGETHOST_TEST_CRASH": "open"])
        try await fixture.startHost(["--delivery-timeout", "25"])
        let publisher = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
        try await publisher.registerWidgets(try exampleFile("tap-me/bundle.json"))
        let widget = try await publisher.connection.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
        try await publisher.setContent(widget, try exampleFile("tap-me/red.json"))
        publisher.close()
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        _ = await eventually { (try? await listApps(renderer)["org.example.TapMe"]?["source"]) == .string("desktop-entry") }
        let tapped = SignalRecorder(try await renderer.signals(MatchRule(interface: "org.widgethost.Host1.Widgets", member: "Tapped")))

        let start = ContinuousClock.now
        await expectHostError("ActivationFailed", mentioning: "org.example.TapMe") {
            _ = try await renderer.tap(widget, "label")
        }
        let elapsed = ContinuousClock.now - start
        // The bus tells the host the moment the app's connection goes; the timeout is 25 s.
        #expect(elapsed < .seconds(15), "ActivationFailed took \(elapsed)")
        // The app did receive the URL before it died.
        #expect(fixture.records(record).first?["uris"] as? [String] == ["tap-me-widget://show-red"])
        let signalled = await eventually { tapped.messages.count == 1 }
        #expect(signalled)
        let details = tapped.messages.first?.arguments()[2].stringKeyedEntries?.mapValues(\.unwrapped)
        #expect(details?["error"]?.stringValue?.contains("org.example.TapMe") == true, "\(String(describing: details))")
    }
}
