import DBus
import Foundation
import PrivateBus
import Testing

/// `widget-host bar` (docs/bars.md), the line status bars show: the most
/// relevant Live Activity, printed once at the start and again only when what it
/// shows changes, through the host's restarts; and its click command,
/// `widget-host tap-activity most-relevant`, which opens the app.
@Suite("widget-host bar", .serialized, .timeLimit(.minutes(2)))
struct BarTests {
    static let waybarNone = #"{"alt":"","class":[],"text":"","tooltip":""}"#

    @Test("widget-host bar follows the most relevant Live Activity — started, updated (its state alone too), stale, outranked, ended, the host gone and back — and prints nothing while nothing it shows changes")
    func follows() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let bars = try BarProcesses(fixture)
        defer { bars.stop() }
        try await bars.expect(waybar: Self.waybarNone, text: "", "with no activity, an empty line")

        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        let delivery = try await app.startActivity(
            "DeliveryAttributes", try exampleFile("delivery/activity.json"),
            ["attributes": .vardict(["order": .string("1234")]), "state": .vardict(["eta_minutes": .int64(10)]), "relevance": .double(5)])
        let tooltip = "Arriving in 10 min Track on map Call courier"
        try await bars.expect(
            waybar: #"{"alt":"active","class":["active"],"text":"Delivery 10 min","tooltip":"\#(tooltip)"}"#, text: "Delivery 10 min",
            json: [
                "id": "a1", "app_id": "org.example.Delivery", "state": "active", "text": "Delivery 10 min", "leading": "Delivery",
                "trailing": "10 min", "tooltip": tooltip, "class": ["active"],
            ], "a started activity: its compact presentations' words (the leading icon's label), bound to its state")

        // An Update of the state alone redraws what binds to it.
        try await app.updateActivity(delivery, state: ["eta_minutes": .int64(9)])
        try await bars.expect(
            waybar: #"{"alt":"active","class":["active"],"text":"Delivery 9 min","tooltip":"Arriving in 9 min Track on map Call courier"}"#,
            text: "Delivery 9 min", "a state-only Update")

        // What changes nothing the bar shows prints nothing: the relevance of the only activity,
        // a widget's content, and time passing (no timer).
        try await app.update(delivery, ["relevance": .double(6)])
        try await app.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        let widget = try await app.connection.addWidget("org.example.Delivery", "K", "systemSmall")
        try await app.setContent(widget, #"{"type":"text","text":"not an activity"}"#)
        try await bars.expectNothingNew(for: 2.5)

        // A more relevant activity takes the bar; when it goes, the first comes back.
        let bare = #"{"type":"text","text":"Goal!"}"#
        let score = try await app.startActivity(
            "Score", #"{"lockScreen":\#(bare),"compactLeading":\#(bare),"compactTrailing":{"type":"text","bind":"state.score","text":"-"},"minimal":\#(bare),"expanded":\#(bare)}"#,
            ["state": .vardict(["score": .string("2–1")]), "relevance": .double(10)])
        try await bars.expect(waybar: #"{"alt":"active","class":["active"],"text":"Goal! 2–1","tooltip":"Goal!"}"#, text: "Goal! 2–1", "a more relevant activity")
        try await app.end(score, ["dismissal": .string("immediate")])
        try await bars.expect(
            waybar: #"{"alt":"active","class":["active"],"text":"Delivery 9 min","tooltip":"Arriving in 9 min Track on map Call courier"}"#,
            text: "Delivery 9 min", "the first activity again, once the other is removed")

        // Stale at its stale date: the class says so (the text, the same, prints no new line).
        try await app.update(delivery, ["stale_date": .int64(Int64(Date().timeIntervalSince1970) + 1)])
        try await bars.expect(
            waybar: #"{"alt":"stale","class":["stale"],"text":"Delivery 9 min","tooltip":"Arriving in 9 min Track on map Call courier"}"#,
            text: nil, "stale once its stale date passed")

        try await app.end(delivery, ["state": .vardict(["eta_minutes": .int64(0)])])
        try await bars.expect(
            waybar: #"{"alt":"ended","class":["ended"],"text":"Delivery 0 min","tooltip":"Arriving in 0 min Track on map Call courier"}"#,
            text: "Delivery 0 min", "ended, with its final state")

        // The host goes: an empty line; it comes back with the ended activity it keeps.
        await fixture.stopHost()
        try await bars.expect(waybar: Self.waybarNone, text: "", "the host gone")
        try await fixture.startHost()
        try await bars.expect(
            waybar: #"{"alt":"ended","class":["ended"],"text":"Delivery 0 min","tooltip":"Arriving in 0 min Track on map Call courier"}"#,
            text: "Delivery 0 min", "the host back")
        try await bars.expectNothingNew(for: 1)
    }

    @Test("The bar's click command, widget-host tap-activity most-relevant compactTrailing, opens the app at the activity's URL with the token given; with no activity it says there is none")
    func clickOpensTheApp() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let none = try await fixture.cli(["tap-activity", "most-relevant", "compactTrailing"])
        #expect(none.status == 1 && none.stderr.contains("no Live Activity runs, so there is none to tap"), "\(none)")

        let app = try await AppPeer(fixture, appID: "org.example.Delivery", schemes: ["delivery-tracker"])
        defer { app.close() }
        _ = try await app.startActivity("DeliveryAttributes", try exampleFile("delivery/activity.json"), ["relevance": .double(1)])
        let other = #"{"type":"text","text":"x"}"#
        _ = try await app.startActivity(
            "Other", #"{"widgetURL":"delivery-tracker://other","lockScreen":\#(other),"compactLeading":\#(other),"compactTrailing":\#(other),"minimal":\#(other),"expanded":\#(other)}"#)
        // The click command of the bars' snippets, as a bar runs it: through the shell.
        let click = try BarSnippets.clickCommand()
        let tapped = try await runCommand(
            "/bin/sh", ["-c", click + " --token token-from-the-bar"],
            environment: fixture.environment.merging(["PATH": buildDirectory + ":/usr/bin:/bin"]) { _, new in new })
        #expect(tapped.succeeded && tapped.stdout.hasPrefix("open-url "), "\(tapped)")
        let opened = app.calls.filter { $0.member == "OpenURL" }
        #expect(opened.map { $0.args[0] } == [.string("delivery-tracker://order/1234")], "the most relevant activity's URL: \(opened)")
        let platform = opened.first?.args[1].stringKeyedEntries?.mapValues(\.unwrapped)
        #expect(platform?["activation-token"] == .string("token-from-the-bar"), "\(String(describing: platform))")
        let source = platform?["org.widgethost.source"]?.stringKeyedEntries?.mapValues(\.unwrapped)
        #expect(source?["activity_id"] == .string("a1") && source?["presentation"] == .string("compactTrailing"), "\(String(describing: source))")
    }
}

/// `widget-host bar` in each format, on the fixture's bus, read line by line.
struct BarProcesses {
    let waybar: Launched, json: Launched, text: Launched

    init(_ fixture: HostFixture) throws {
        func bar(_ format: String) throws -> Launched { try fixture.launch(buildDirectory + "/widget-host", ["bar", "--format", format]) }
        (waybar, json, text) = (try bar("waybar"), try bar("json"), try bar("text"))
    }

    static func lines(_ process: Launched) -> [String] {
        process.printed().split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    var printed: String { "waybar: \(Self.lines(waybar))\njson: \(Self.lines(json))\ntext: \(Self.lines(text))" }

    /// Waits until the waybar bar's last line is `waybar` (and the text bar's `text`, unless nil:
    /// a change it does not show) and checks that the json bar printed as many lines as the waybar
    /// one, its last with the fields of `json` when given, and that each line is new.
    func expect(waybar expected: String, text: String?, json: [String: Any]? = nil, _ what: String) async throws {
        let seen = await eventually(timeout: 10) {
            Self.lines(waybar).last == expected && (text == nil || Self.lines(self.text).last == text)
                && Self.lines(self.json).count == Self.lines(waybar).count
        }
        #expect(seen, "\(what): \(printed)")
        let lines = Self.lines(waybar)
        #expect(zip(lines, lines.dropFirst()).allSatisfy { $0 != $1 }, "\(what): a line repeats the one before: \(lines)")
        let last = Self.lines(self.json).last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(last?["text"] as? String == Self.field(expected, "text"), "\(what): \(printed)")
        if let json {
            for (key, value) in json {
                #expect("\(last?[key] ?? "nil")" == "\(value)", "\(what): json's \(key): \(printed)")
            }
        }
    }

    /// A waybar line's field, as the json line gives it (Pango markup undone).
    static func field(_ line: String, _ key: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?[key] as? String
    }

    /// Nothing more is printed for `seconds`.
    func expectNothingNew(for seconds: Double) async throws {
        let before = (Self.lines(waybar).count, Self.lines(json).count, Self.lines(text).count)
        try await Task.sleep(for: .seconds(seconds))
        let after = (Self.lines(waybar).count, Self.lines(json).count, Self.lines(text).count)
        #expect(before == after, "nothing changed, yet the bars printed: \(printed)")
    }

    func stop() {
        for process in [waybar, json, text] { endProcess(process.process) }
    }
}

/// The bars' configuration snippets (examples/bars/, docs/bars.md).
enum BarSnippets {
    static let folder = repositoryRoot.appendingPathComponent("examples/bars")

    /// The click command the Waybar snippet runs.
    static func clickCommand() throws -> String {
        let config = try String(contentsOf: folder.appendingPathComponent("waybar/config.jsonc"), encoding: .utf8)
        let line = config.split(separator: "\n").first { $0.contains("\"on-click\"") }
        guard let command = line?.split(separator: "\"").dropFirst(3).first else {
            throw PrivateBusError("examples/bars/waybar/config.jsonc has no on-click command")
        }
        return String(command)
    }
}

extension AppPeer {
    /// `LiveActivity.Update` of `activity` with `options`, its content kept.
    func update(_ activity: String, _ options: [String: DBusValue]) async throws {
        _ = try await connection.call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
            [.string(""), .vardict(options)])
    }

    /// `LiveActivity.End` of `activity` with `options`.
    func end(_ activity: String, _ options: [String: DBusValue]) async throws {
        _ = try await connection.call(
            destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "End",
            [.vardict(options)])
    }
}
