import DBus
import Foundation
import Testing

/// Ownership, limits, head-of-line blocking and hostile input, against the real daemon.
@Suite("Reliability", .timeLimit(.minutes(3)))
struct ReliabilityTests {
    static let bundle = #"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#
    static let activity =
        "{" + ["lockScreen", "compactLeading", "compactTrailing", "minimal", "expanded"].map { "\"\($0)\":{\"type\":\"text\"}" }
        .joined(separator: ",") + "}"

    @Test("Every app-owned operation is refused with AccessDenied to a connection that is not the app's registration")
    func ownership() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Owner", options: ["provider_path": .objectPath("/org/example/Owner/P")])
        defer { app.close() }
        try await app.registerWidgets(Self.bundle)
        let widget = try await app.connection.addWidget("org.example.Owner", "K", "systemSmall")
        let activity = try await app.startActivity("T", Self.activity)
        let root = "/org/widgethost/Host1"
        let attempts: [(String, String, [String])] = [
            (root, "org.widgethost.Host1.Apps.UnregisterApp", ["org.example.Owner"]),
            (root, "org.widgethost.Host1.Widgets.RegisterWidgets", ["org.example.Owner", Self.bundle]),
            (root, "org.widgethost.Host1.Widgets.ReloadTimelines", ["org.example.Owner", "K"]),
            (root, "org.widgethost.Host1.Widgets.ReloadAllTimelines", ["org.example.Owner"]),
            (root, "org.widgethost.Host1.LiveActivities.StartActivity", ["org.example.Owner", "T", Self.activity, "{}"]),
            (widget, "org.widgethost.Host1.Widget.SetContent", [#"{"type":"text"}"#]),
            (activity, "org.widgethost.Host1.LiveActivity.Update", ["", "{}"]),
            (activity, "org.widgethost.Host1.LiveActivity.End", ["{}"]),
        ]
        for (path, method, args) in attempts {
            let result = try await fixture.gdbus(
                ["call", "--session", "--dest", "org.widgethost.Host1", "--object-path", path, "--method", method] + args)
            #expect(result.stderr.contains("org.widgethost.Host1.Error.AccessDenied"), "\(method): \(result.stderr)")
        }
        // Nothing changed: the widget has no content, the activity is active, the registration stands.
        let objects = try await app.connection.managedObjects()
        #expect(objects[widget]?["Content"] == .string("") && objects[activity]?["State"] == .string("active"))
        #expect(try await listApps(app.connection)["org.example.Owner"]?["registered"] == .bool(true))
        // Desktop operations are open to the session.
        let configured = try await fixture.gdbus(
            ["call", "--session", "--dest", "org.widgethost.Host1", "--object-path", widget, "--method", "org.widgethost.Host1.Widget.Configure", "{}"])
        #expect(configured.succeeded, "\(configured.stderr)")
    }

    @Test("Each limit is a daemon option and refuses with LimitExceeded naming it")
    func limits() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost([
            "--max-widgets-per-app", "2", "--max-content-bytes", "200", "--max-content-depth", "3", "--max-url-length", "40",
            "--max-content-elements", "5", "--max-activities-per-app", "1", "--max-registrations-per-connection", "1",
            "--max-pending-deliveries-per-app", "2",
        ])
        let app = try await AppPeer(fixture, appID: "org.example.Limited", behaviour: .hang)
        defer { app.close() }
        try await app.registerWidgets(Self.bundle)
        let widget = try await app.connection.addWidget("org.example.Limited", "K", "systemSmall")
        _ = try await app.connection.addWidget("org.example.Limited", "K", "systemSmall")
        func limit(_ name: String, _ body: () async throws -> Void) async {
            do {
                try await body()
                Issue.record("\(name): no error")
            } catch let error as DBusError {
                #expect(error.name == "org.widgethost.Host1.Error.LimitExceeded" && error.message.contains(name), "\(name): \(error)")
            } catch {
                Issue.record("\(name): \(error)")
            }
        }
        await limit("max-widgets-per-app") { _ = try await app.connection.addWidget("org.example.Limited", "K", "systemSmall") }
        await limit("max-content-bytes") {
            try await app.setContent(widget, #"{"type":"text","text":"\#(String(repeating: "x", count: 300))"}"#)
        }
        await limit("max-content-depth") {
            try await app.setContent(widget, #"{"type":"a","children":[{"type":"b","children":[{"type":"c","children":[{"type":"d","children":[{"type":"e"}]}]}]}]}"#)
        }
        await limit("max-content-elements") {
            try await app.setContent(widget, #"{"type":"a","children":[{"type":"b"},{"type":"b"},{"type":"b"},{"type":"b"},{"type":"b"}]}"#)
        }
        await limit("max-url-length") {
            try await app.setContent(widget, #"{"type":"text","widgetURL":"x-app://\#(String(repeating: "p", count: 40))"}"#)
        }
        _ = try await app.startActivity("T", Self.activity)
        await limit("max-activities-per-app") { _ = try await app.startActivity("T", Self.activity) }
        await limit("max-registrations-per-connection") {
            _ = try await app.connection.host("RegisterApp", [.string("org.example.Second"), .vardict(["protocol": .string("freedesktop")])])
        }
        // The app never answers: two taps wait, the third is refused at once.
        try await app.setContent(widget, #"{"type":"text","widgetURL":"x-app://w"}"#)
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let waiting = (0..<2).map { _ in Task { try? await renderer.tap(widget) } }
        #expect(await eventually { app.calls.count == 2 })
        await limit("max-pending-deliveries-per-app") { _ = try await renderer.tap(widget) }
        // A tap that delivers nothing is answered by the rules, not by the limit.
        let car = try await renderer.tap(widget, "", ["surface": .variant(.string("car"))])
        #expect(car.0 == "none" && car.1["reason"]?.stringValue == "app-does-not-support-car")
        for task in waiting { task.cancel() }
    }

    /// Two App1 apps, the first with `behaviour`, each with a placed widget whose tap opens a URL.
    static func twoApps(_ fixture: HostFixture, _ first: String, behaviour: AppPeer.Behaviour, _ second: String) async throws
        -> (AppPeer, AppPeer, [String])
    {
        let apps = [try await AppPeer(fixture, appID: first, behaviour: behaviour), try await AppPeer(fixture, appID: second)]
        var widgets: [String] = []
        for app in apps {
            try await app.registerWidgets(Self.bundle)
            let widget = try await app.connection.addWidget(app.appID, "K", "systemSmall")
            try await app.setContent(widget, #"{"type":"text","widgetURL":"x-app://w"}"#)
            widgets.append(widget)
        }
        return (apps[0], apps[1], widgets)
    }

    /// Taps `widget` `count` times, one after another; the longest wait.
    static func slowestOf(_ count: Int, taps widget: String, from renderer: Connection) async throws -> Duration {
        let clock = ContinuousClock()
        var slowest = Duration.zero
        for _ in 0..<count {
            slowest = max(slowest, try await clock.measure { _ = try await renderer.tap(widget) })
        }
        return slowest
    }

    @Test("Head of line: while one app never answers, 1,000 taps to another complete at once")
    func headOfLine() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--delivery-timeout", "60"])
        let (hung, quick, widgets) = try await Self.twoApps(fixture, "org.example.Hung", behaviour: .hang, "org.example.Quick")
        defer { hung.close(); quick.close() }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let hungWidget = widgets[0]
        let stuck = (0..<50).map { _ in Task { try? await renderer.tap(hungWidget) } }
        #expect(await eventually { hung.calls.count == 50 })

        let slowest = try await Self.slowestOf(1000, taps: widgets[1], from: renderer)
        #expect(quick.calls.count == 1000)
        // "At once" against the 60 s the hung app's taps wait: none of these waited on it.
        #expect(slowest < .seconds(5), "slowest tap to the answering app: \(slowest)")
        #expect(hung.calls.count == 50)
        for task in stuck { task.cancel() }
    }

    @Test("A flood of taps from one renderer does not starve another renderer's taps")
    func flood() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let (flooded, calm, widgets) = try await Self.twoApps(fixture, "org.example.Flooded", behaviour: .answer, "org.example.Calm")
        defer { flooded.close(); calm.close() }
        let flooder = try await fixture.connect()
        defer { flooder.close() }
        let other = try await fixture.connect()
        defer { other.close() }
        let target = widgets[0]
        let flood = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<4000 { group.addTask { _ = try? await flooder.tap(target) } }
            }
        }
        #expect(await eventually { flooded.calls.count >= 100 })
        let slowest = try await Self.slowestOf(50, taps: widgets[1], from: other)
        #expect(calm.calls.count == 50)
        #expect(slowest < .seconds(5), "slowest tap during the flood: \(slowest)")
        await flood.value
    }

    @Test("Fuzz: 10,000 calls with wrong types and hostile values get named errors; the host stays up and its memory flat")
    func fuzz() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.Fuzzed")
        defer { app.close() }
        try await app.registerWidgets(Self.bundle)
        let widget = try await app.connection.addWidget("org.example.Fuzzed", "K", "systemSmall")
        let activity = try await app.startActivity("T", Self.activity)
        let pid = try #require(fixture.hostProcess?.processIdentifier)
        var fuzzer = Fuzzer(seed: UInt64(ProcessInfo.processInfo.environment["WIDGETHOST_FUZZ_SEED"] ?? "") ?? 20_261_123)
        let total = Int(ProcessInfo.processInfo.environment["WIDGETHOST_FUZZ_CALLS"] ?? "") ?? 10_000
        var unnamed: [String] = []
        var hostErrors = 0
        var rssAfterWarmUp = 0
        for batch in 0..<(total / 100) {
            let calls = (0..<100).map { _ in fuzzer.call(widget: widget, activity: activity) }
            let outcomes = await withTaskGroup(of: String.self) { group in
                for call in calls {
                    group.addTask {
                        do {
                            _ = try await app.connection.call(
                                destination: "org.widgethost.Host1", path: call.path, interface: call.interface, member: call.member,
                                call.arguments)
                            return "answered"
                        } catch let error as DBusError {
                            guard Fuzzer.isNamed(error.name) else { return "\(call.member): \(error.name): \(error.message)" }
                            return error.name.hasPrefix("org.widgethost.Host1.Error.") ? "host error" : "bus error"
                        } catch {
                            return "\(call.member): \(error)"
                        }
                    }
                }
                var seen: [String] = []
                for await outcome in group { seen.append(outcome) }
                return seen
            }
            for outcome in outcomes {
                switch outcome {
                case "answered", "bus error": break
                case "host error": hostErrors += 1
                default: unnamed.append(outcome)
                }
            }
            if batch == total / 500 { rssAfterWarmUp = residentKiB(pid) }
        }
        #expect(unnamed.isEmpty, "replies that are not named errors: \(unnamed.prefix(10))")
        // Most calls got past the signature check and were refused by the host's own validation.
        #expect(hostErrors > total / 3, "only \(hostErrors) of \(total) calls reached the host's validation")
        #expect(fixture.hostProcess?.isRunning == true)
        // Still serving, and the objects are intact.
        let objects = try await app.connection.managedObjects()
        #expect(objects[widget] != nil && objects[activity] != nil)
        let grown = residentKiB(pid) - rssAfterWarmUp
        #expect(grown < 32 * 1024, "the host grew by \(grown) KiB after warm-up")
    }
}

/// The resident memory of a process, in KiB.
func residentKiB(_ pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

/// Random calls to the host: right methods with wrong types, hostile values, unknown objects.
struct Fuzzer {
    struct Call: Sendable {
        var path: String
        var interface: String
        var member: String
        var arguments: [DBusValue]
    }

    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    /// xorshift64*: reproducible from the seed.
    mutating func next(_ bound: Int) -> Int {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return Int((state &* 0x2545_F491_4F6C_DD1D) % UInt64(bound))
    }

    static let methods: [(interface: String, member: String, signature: [String], on: String)] = [
        ("org.widgethost.Host1.Apps", "RegisterApp", ["s", "a{sv}"], "root"),
        ("org.widgethost.Host1.Apps", "UnregisterApp", ["s"], "root"),
        ("org.widgethost.Host1.Apps", "OpenURL", ["s", "a{sv}"], "root"),
        ("org.widgethost.Host1.Widgets", "RegisterWidgets", ["s", "s"], "root"),
        ("org.widgethost.Host1.Widgets", "AddWidget", ["s", "s", "s", "a{sv}"], "root"),
        ("org.widgethost.Host1.Widgets", "LintContent", ["s", "s"], "root"),
        ("org.widgethost.Host1.Widgets", "GetConfigurationOptions", ["s", "s", "s", "a{sv}"], "root"),
        ("org.widgethost.Host1.LiveActivities", "StartActivity", ["s", "s", "s", "a{sv}"], "root"),
        ("org.widgethost.Host1.Widget", "SetContent", ["s"], "widget"),
        ("org.widgethost.Host1.Widget", "Configure", ["a{sv}"], "widget"),
        ("org.widgethost.Host1.Widget", "Tap", ["s", "a{sv}"], "widget"),
        ("org.widgethost.Host1.Widget", "Resolve", ["s", "a{sv}"], "widget"),
        ("org.widgethost.Host1.LiveActivity", "Update", ["s", "a{sv}"], "activity"),
        ("org.widgethost.Host1.LiveActivity", "Tap", ["s", "s", "a{sv}"], "activity"),
    ]

    mutating func call(widget: String, activity: String) -> Call {
        let method = Self.methods[next(Self.methods.count)]
        var path: String
        switch method.on {
        case "widget": path = next(4) == 0 ? "/org/widgethost/Host1/widgets/w\(next(1_000_000))" : widget
        case "activity": path = next(4) == 0 ? "/org/widgethost/Host1/activities/a\(next(1_000_000))" : activity
        default: path = "/org/widgethost/Host1"
        }
        if next(20) == 0 { path = "/org/widgethost/Host1/nowhere/\(next(100))" }
        let wrongTypes = next(3) == 0
        let arguments = method.signature.map { signature in wrongTypes ? anyValue() : value(signature) }
        return Call(path: path, interface: method.interface, member: method.member, arguments: arguments)
    }

    mutating func value(_ signature: String) -> DBusValue {
        switch signature {
        case "s": .string(string())
        default: .vardict(options())
        }
    }

    mutating func anyValue() -> DBusValue {
        switch next(7) {
        case 0: .int32(Int32(truncatingIfNeeded: next(Int(Int32.max))))
        case 1: .bool(next(2) == 0)
        case 2: .double(Double(next(1000)) / 7)
        case 3: .strings([string(), string()])
        case 4: .objectPath("/x/\(next(100))")
        case 5: .structure([.string(string()), .uint64(UInt64(next(1000)))])
        default: .array(element: "ay", [])
        }
    }

    mutating func options() -> [String: DBusValue] {
        let keys = ["surface", "activation_token", "schemes", "protocol", "state", "stale_date", "hero", "dismissal", "x\(next(9))"]
        var out: [String: DBusValue] = [:]
        for _ in 0..<next(4) { out[keys[next(keys.count)]] = next(2) == 0 ? .string(string()) : anyValue() }
        return out
    }

    /// Hostile strings: deep JSON, huge text, wrong JSON types, bad URLs, bad names.
    mutating func string() -> String {
        switch next(14) {
        case 0: return String(repeating: "[", count: 5000 + next(20000))
        case 1: return #"{"type":"text","text":""# + String(repeating: "é", count: 100_000 + next(200_000)) + #""}"#
        case 2: return #"{"type":5,"children":{"a":1}}"#
        case 3: return #"{"type":"link","url":"not a url"}"#
        case 4: return #"{"type":"vstack","children":[{"type":"button"},{"id":"x","type":"t"},{"id":"x","type":"t"}]}"#
        case 5: return "org..bad..name"
        case 6: return "systemSmall"
        case 7: return "org.example.Fuzzed"
        case 8: return "K"
        case 9: return "\u{FEFF}\u{202E}" + String(repeating: "\u{1F600}", count: next(50))
        case 10: return #"{"widgetURL":"javascript:alert(1)","type":"text"}"#
        case 11: return String(repeating: #"{"type":"a","children":["#, count: 200) + "]"
        case 12: return ""
        default: return "tap-me-widget://\(String(repeating: "a", count: next(5000)))"
        }
    }

    /// An error a caller can act on: the host's own, or the bus's standard ones for bad calls.
    static func isNamed(_ name: String) -> Bool {
        name.hasPrefix("org.widgethost.Host1.Error.")
            || ["org.freedesktop.DBus.Error.InvalidArgs", "org.freedesktop.DBus.Error.UnknownObject",
                "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownInterface"].contains(name)
    }
}
