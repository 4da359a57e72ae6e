import DBus
import Foundation
import PrivateBus
import Testing

extension Connection {
    func tapActivity(_ activity: String, _ presentation: String, _ element: String = "", _ options: [String: DBusValue] = [:],
                     method: String = "Tap") async throws -> (String, [String: DBusValue]) {
        let reply = try await call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: method,
            [.string(presentation), .string(element), .vardict(options)])
        return (reply[0].stringValue ?? "", (reply[1].stringKeyedEntries ?? [:]).mapValues(\.unwrapped))
    }

    func activityProperty(_ activity: String, _ name: String) async throws -> DBusValue {
        let reply = try await call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.freedesktop.DBus.Properties", member: "Get",
            [.string("org.widgethost.Host1.LiveActivity"), .string(name)])
        return reply.first?.unwrapped ?? .string("")
    }
}

/// Live Activities (docs/live-activities.md) end to end: an app starts, updates and ends a Live Activity on
/// a private bus; a renderer mirrors it and taps each presentation; the test
/// checks what the app received.
@Suite("Live Activities", .timeLimit(.minutes(2)))
struct LiveActivityTests {
    static let attributes: [String: DBusValue] = ["order": .string("1234")]
    static let state: [String: DBusValue] = ["eta_minutes": .int32(10), "status": .string("out-for-delivery")]

    @Test("A tap on each presentation delivers what the rules say, to an App1 app and to a GApplication")
    func presentations() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installTapMe()
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let tapped = SignalRecorder(try await renderer.signals(MatchRule(interface: "org.widgethost.Host1.Widgets", member: "Tapped")))
        let content = try exampleFile("delivery/activity.json")
        let activity = try await app.startActivity(
            "DeliveryAttributes", content, ["attributes": .vardict(Self.attributes), "state": .vardict(Self.state), "relevance": .double(5)])
        #expect(activity == "/org/widgethost/Host1/activities/a1")
        #expect(try await renderer.activityProperty(activity, "State") == .string("active"))
        #expect(try await renderer.activityProperty(activity, "AttributesType") == .string("DeliveryAttributes"))
        #expect(try await renderer.activityProperty(activity, "ContentState").stringKeyedEntries?["eta_minutes"]?.unwrapped == .int64(10))

        let cases: [(String, String, String, String)] = [
            ("lockScreen", "eta", "delivery-tracker://order/1234/status", "widget-url"),
            ("compactLeading", "leading", "delivery-tracker://order/1234", "default"),
            ("compactTrailing", "", "delivery-tracker://order/1234", "default"),
            ("minimal", "minimal", "delivery-tracker://order/1234", "default"),
            ("expanded", "map", "delivery-tracker://order/1234/map", "link"),
            ("expanded", "courier", "delivery-tracker://order/1234/courier", "link"),
            ("expanded", "headline", "delivery-tracker://order/1234", "default"),
        ]
        for (presentation, element, url, via) in cases {
            let (outcome, details) = try await renderer.tapActivity(activity, presentation, element, ["activation_token": .string("t")])
            #expect(outcome == "open-url" && details["url"] == .string(url) && details["via"] == .string(via), "\(presentation) \(element): \(details)")
        }
        let opened = app.calls.filter { $0.member == "OpenURL" }
        #expect(opened.map { $0.args[0] } == cases.map { .string($0.2) })
        let source = opened.first?.args[1].stringKeyedEntries?["org.widgethost.source"]?.unwrapped.stringKeyedEntries?.mapValues(\.unwrapped)
        #expect(source?["activity_id"] == .string("a1") && source?["presentation"] == .string("lockScreen"), "\(String(describing: source))")
        #expect(opened.first?.args[1].stringKeyedEntries?["activation-token"]?.unwrapped == .string("t"))
        let signalled = await eventually { tapped.messages.count == cases.count }
        #expect(signalled && tapped.messages.first?.arguments()[0] == .objectPath(activity))

        // Without any URL: the user activity, here to a GApplication started by D-Bus activation.
        let publisher = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop")
        let bare = #"{"type":"text","id":"x"}"#
        let plain = try await publisher.startActivity(
            "Timer", #"{"lockScreen":\#(bare),"compactLeading":\#(bare),"compactTrailing":\#(bare),"minimal":\#(bare),"expanded":\#(bare)}"#)
        publisher.close()
        _ = await eventually { (try? await listApps(renderer)["org.example.TapMe"]?["source"]) == .string("desktop-entry") }
        let (outcome, details) = try await renderer.tapActivity(plain, "minimal", "x")
        #expect(outcome == "continue-user-activity" && details["activity_type"] == .string("org.widgethost.LiveActivity"))
        let activate = fixture.records(record).first { $0["call"] as? String == "activate" }
        let info = (activate?["platform_data"] as? [String: String])?["org.widgethost.user-activity"] ?? ""
        #expect(info.contains("'activity_id': <'a2'>") && info.contains("'attributes_type': <'Timer'>") && info.contains("'presentation': <'minimal'>"), "\(info)")
    }

    @Test("Car and watch: launched only with the app's support; offer_primary otherwise")
    func surfaces() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let content = try exampleFile("delivery/activity.json")
        let plain = try await AppPeer(fixture, appID: "org.example.Plain", schemes: ["delivery-tracker"])
        let everyType = try await AppPeer(
            fixture, appID: "org.example.Everywhere", schemes: ["delivery-tracker"],
            options: ["surfaces": .strings(["desktop", "car", "watch"]), "live_activity_launch_types": .strings([])])
        let someTypes = try await AppPeer(
            fixture, appID: "org.example.Picky", schemes: ["delivery-tracker"],
            options: ["live_activity_launch_types": .strings(["DeliveryAttributes"])])
        defer { [plain, everyType, someTypes].forEach { $0.close() } }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let p = try await plain.startActivity("DeliveryAttributes", content)
        let e = try await everyType.startActivity("DeliveryAttributes", content)
        let picked = try await someTypes.startActivity("DeliveryAttributes", content)
        let unpicked = try await someTypes.startActivity("GameAttributes", content)

        let car = try await renderer.tapActivity(p, "lockScreen", "", ["surface": .string("car")])
        #expect(car.0 == "none" && car.1["reason"] == .string("app-does-not-support-car"))
        let watch = try await renderer.tapActivity(p, "lockScreen", "", ["surface": .string("watch")])
        #expect(watch.0 == "none" && watch.1["reason"] == .string("watch-launch-not-supported") && watch.1["offer_primary"] == .bool(true), "\(watch.1)")
        #expect(plain.calls.isEmpty)

        #expect(try await renderer.tapActivity(e, "lockScreen", "", ["surface": .string("car")]).0 == "open-url")
        #expect(try await renderer.tapActivity(e, "lockScreen", "", ["surface": .string("watch")]).0 == "open-url")
        #expect(everyType.calls.count == 2)
        #expect(try await renderer.tapActivity(picked, "lockScreen", "", ["surface": .string("watch")]).0 == "open-url")
        let refused = try await renderer.tapActivity(unpicked, "lockScreen", "", ["surface": .string("watch")])
        #expect(refused.0 == "none" && refused.1["offer_primary"] == .bool(true))
        #expect(someTypes.calls.count == 1)
    }

    @Test("Bad input changes nothing: InconsistentLinks, oversize payloads, far dates, missing presentations, other connections, unknown objects")
    func refusals() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        let other = try await fixture.connect()
        defer { other.close() }
        let t = #"{"type":"text","id":"x"}"#
        func content(leading: String, trailing: String) -> String {
            #"{"lockScreen":\#(t),"compactLeading":{"type":"text","widgetURL":"\#(leading)"},"compactTrailing":{"type":"text","widgetURL":"\#(trailing)"},"minimal":\#(t),"expanded":\#(t)}"#
        }
        await expectHostError("InconsistentLinks", mentioning: "delivery-tracker://b") {
            _ = try await app.startActivity("T", content(leading: "delivery-tracker://a", trailing: "delivery-tracker://b"))
        }
        await expectHostError("InvalidContent", mentioning: "expanded") {
            _ = try await app.startActivity("T", #"{"lockScreen":\#(t),"compactLeading":\#(t),"compactTrailing":\#(t),"minimal":\#(t)}"#)
        }
        let big = String(repeating: "x", count: 5000)
        await expectHostError("LimitExceeded", mentioning: "4096") {
            _ = try await app.startActivity("T", try exampleFile("delivery/activity.json"), ["state": .vardict(["blob": .string(big)])])
        }
        await expectHostError("AccessDenied", mentioning: "org.example.Delivery") {
            _ = try await other.call(
                destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.widgethost.Host1.LiveActivities",
                member: "StartActivity", [.string("org.example.Delivery"), .string("T"), .string(try exampleFile("delivery/activity.json")), .vardict([:])])
        }
        // Found by fuzzing (fuzz-dbus): a stale_date this far from 1970 crashed the host.
        await expectHostError("InvalidArgument", mentioning: "stale_date") {
            _ = try await app.startActivity("T", try exampleFile("delivery/activity.json"), ["stale_date": .int64(.max)])
        }
        // Nothing above started anything.
        let order = try await other.call(
            destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.freedesktop.DBus.Properties", member: "Get",
            [.string("org.widgethost.Host1.LiveActivities"), .string("Order")])
        #expect(order.first?.unwrapped == .array(element: "o", []))

        let activity = try await app.startActivity("T", content(leading: "delivery-tracker://a", trailing: "delivery-tracker://a"))
        for (member, args) in [("Update", [DBusValue.string(""), .vardict(["relevance": .double(1)])]), ("End", [.vardict([:])])] {
            await expectHostError("AccessDenied", mentioning: "org.example.Delivery") {
                _ = try await other.call(
                    destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: member, args)
            }
        }
        await expectHostError("InconsistentLinks", mentioning: "delivery-tracker://c") {
            _ = try await app.connection.call(
                destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
                [.string(content(leading: "delivery-tracker://a", trailing: "delivery-tracker://c")), .vardict([:])])
        }
        await expectHostError("LimitExceeded", mentioning: "4096") {
            _ = try await app.connection.call(
                destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
                [.string(""), .vardict(["state": .vardict(["blob": .string(big)])])])
        }
        #expect(try await other.activityProperty(activity, "Content") == .string(content(leading: "delivery-tracker://a", trailing: "delivery-tracker://a")))
        await expectHostError("UnknownElement", mentioning: "nope") { _ = try await other.tapActivity(activity, "expanded", "nope") }
        await expectHostError("InvalidArgument", mentioning: "lockScreen") { _ = try await other.tapActivity(activity, "island", "") }
    }

    @Test("Update, End and dismissal are mirrored: PropertiesChanged, Order, InterfacesRemoved; a dismissed activity is UnknownObject")
    func lifecycle() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let changes = SignalRecorder(try await renderer.signals(MatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")))
        let managed = SignalRecorder(try await renderer.signals(MatchRule(interface: "org.freedesktop.DBus.ObjectManager")))
        let content = try exampleFile("delivery/activity.json")
        let low = try await app.startActivity("DeliveryAttributes", content, ["relevance": .double(1)])
        let high = try await app.startActivity("DeliveryAttributes", content, ["relevance": .double(9)])
        func order() async throws -> DBusValue? {
            try await renderer.call(
                destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.freedesktop.DBus.Properties",
                member: "Get", [.string("org.widgethost.Host1.LiveActivities"), .string("Order")]).first?.unwrapped
        }
        #expect(try await order() == .array(element: "o", [.objectPath(high), .objectPath(low)]))
        _ = try await app.connection.call(
            destination: "org.widgethost.Host1", path: low, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
            [.string(""), .vardict(["relevance": .double(20), "state": .vardict(["eta_minutes": .int32(2)])])])
        #expect(try await order() == .array(element: "o", [.objectPath(low), .objectPath(high)]))
        #expect(try await renderer.activityProperty(low, "Relevance") == .double(20))

        _ = try await app.connection.call(
            destination: "org.widgethost.Host1", path: low, interface: "org.widgethost.Host1.LiveActivity", member: "End",
            [.vardict(["dismissal": .string("after"), "dismissal_date": .int64(Int64(Date().timeIntervalSince1970) + 30 * 3600)])])
        #expect(try await renderer.activityProperty(low, "State") == .string("ended"))
        let end = try await renderer.activityProperty(low, "EndDate").integerValue ?? 0
        let dismissal = try await renderer.activityProperty(low, "DismissalDate").integerValue ?? 0
        #expect(dismissal - end <= 4 * 3600 && dismissal - end >= 4 * 3600 - 2, "a dismissal 30 h away is clamped to 4 h: \(end) → \(dismissal)")
        // An ended activity is still shown, so it can still be tapped.
        #expect(try await renderer.tapActivity(low, "minimal").0 == "open-url")

        _ = try await app.connection.call(
            destination: "org.widgethost.Host1", path: high, interface: "org.widgethost.Host1.LiveActivity", member: "End",
            [.vardict(["dismissal": .string("immediate")])])
        let removed = await eventually { managed.messages.contains { $0.member == "InterfacesRemoved" && $0.arguments().first == .objectPath(high) } }
        #expect(removed)
        await #expect(throws: DBusError.self) { _ = try await renderer.tapActivity(high, "minimal") }
        do { _ = try await renderer.tapActivity(high, "minimal") } catch let error as DBusError {
            #expect(error.name == DBusError.unknownObjectName)
        }
        #expect(try await order() == .array(element: "o", [.objectPath(low)]))
        let mirrored = await eventually {
            let names = changes.messages.compactMap { $0.arguments().first?.stringValue }
            return names.contains("org.widgethost.Host1.LiveActivity") && names.contains("org.widgethost.Host1.LiveActivities")
        }
        #expect(mirrored, "\(changes.events)")
        #expect(managed.messages.filter { $0.member == "InterfacesAdded" }.count == 2)
    }

    @Test("The delivery-tracker app starts its activity with GDBus; widget-host activities, tap-activity and monitor show and tap it")
    func exampleAndCLI() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try fixture.launch("/usr/bin/python3", [repositoryRoot.appendingPathComponent("examples/delivery/delivery_app.py").path])
        defer { app.stop() }
        let printed = app.printed
        let started = await eventually(timeout: 10) { printed().contains("started a1") }
        #expect(started, "\(printed())")

        let monitor = Process()
        let monitorOutput = fixture.root.appendingPathComponent("monitor.out")
        _ = FileManager.default.createFile(atPath: monitorOutput.path, contents: nil)
        monitor.executableURL = URL(fileURLWithPath: buildDirectory + "/widget-host")
        monitor.arguments = ["monitor"]
        monitor.environment = fixture.environment
        monitor.standardOutput = try FileHandle(forWritingTo: monitorOutput)
        try PrivateBus.withCleanSignalMask { try monitor.run() }
        defer { monitor.terminate() }
        try await Task.sleep(for: .milliseconds(300))

        let list = try await fixture.cli(["activities"])
        #expect(list.succeeded && list.stdout.contains("a1") && list.stdout.contains("DeliveryAttributes") && list.stdout.contains("active"), "\(list)")
        let tap = try await fixture.cli(["tap-activity", "a1", "expanded", "map", "--token", "tok"])
        #expect(tap.succeeded && tap.stdout.hasPrefix("open-url") && tap.stdout.contains("delivery-tracker://order/1234/map"), "\(tap)")
        let opened = await eventually(timeout: 10) { printed().contains("Delivery opened delivery-tracker://order/1234/map") }
        #expect(opened, "\(printed())")
        let dry = try await fixture.cli(["tap-activity", "a1", "minimal", "--dry-run"])
        #expect(dry.succeeded && dry.stdout.contains("via=\"default\""), "\(dry)")
        let unknown = try await fixture.cli(["tap-activity", "a9", "minimal"])
        #expect(!unknown.succeeded && unknown.stderr.contains("UnknownObject"), "\(unknown)")
        let monitored = await eventually(timeout: 10) {
            ((try? String(contentsOf: monitorOutput, encoding: .utf8)) ?? "").contains("/org/widgethost/Host1/activities/a1 open-url")
        }
        #expect(monitored)
    }
}
