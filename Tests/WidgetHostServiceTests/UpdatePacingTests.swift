import DBus
import Foundation
import PrivateBus
import Testing

/// Frames and update budgets end to end (docs/daemon.md#updates): what a
/// renderer watching PropertiesChanged gets while an app streams or floods.
@Suite("Widget and Live Activity updates, paced", .timeLimit(.minutes(2)))
struct WidgetUpdatePacingTests {
    static let app = "org.example.Paced"
    static let bundle = #"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#

    static func tree(_ n: Int) -> String { #"{"type":"text","id":"t","text":"\#(n)"}"# }

    static func activityContent(_ n: Int) -> String {
        let tree = tree(n)
        return #"{"lockScreen":\#(tree),"compactLeading":\#(tree),"compactTrailing":\#(tree),"minimal":\#(tree),"expanded":\#(tree)}"#
    }

    /// A host started with `arguments`, the app registered with its bundle, a
    /// renderer, one placed widget, and what the renderer hears of it.
    struct Setup {
        let fixture: HostFixture
        let app: AppPeer
        let renderer: Connection
        let widget: String
        let changes: SignalRecorder

        static func start(_ arguments: [String]) async throws -> Setup {
            let fixture = try await HostFixture.make()
            do {
                try await fixture.startHost(arguments)
                let app = try await AppPeer(fixture, appID: WidgetUpdatePacingTests.app)
                try await app.registerWidgets(WidgetUpdatePacingTests.bundle)
                let renderer = try await fixture.connect()
                let widget = try await renderer.addWidget(WidgetUpdatePacingTests.app, "K", "systemSmall")
                let changes = SignalRecorder(
                    try await renderer.signals(MatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")))
                return Setup(fixture: fixture, app: app, renderer: renderer, widget: widget, changes: changes)
            } catch {
                fixture.stop()
                throw error
            }
        }

        func stop() {
            app.close()
            renderer.close()
            fixture.stop()
        }

        /// The Content values announced for `path` so far, in order.
        func announced(_ path: String? = nil) -> [String] {
            changes.messages.filter { $0.path == (path ?? widget) }.compactMap {
                $0.arguments()[1].stringKeyedEntries?["Content"]?.unwrapped.stringValue
            }
        }
    }

    @Test("A quiet widget's first change is announced at once; the next ones within the frame once, at its end, the latest")
    func frames() async throws {
        // The longest frame: a loaded machine cannot blur "at once" and "at the frame's end".
        let setup = try await Setup.start(["--update-frame-ms", "1000"])
        defer { setup.stop() }
        /// A signal of the app's own, after a reply: everything the host
        /// sent before that reply reaches the renderer before the marker.
        func mark(_ n: Int) throws {
            try setup.app.connection.emit(
                path: "/org/example/Marker", interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                arguments: [.string("org.example.Marker\(n)"), .vardict([:]), .strings([])])
        }
        /// What the renderer heard, in order: Content values and markers.
        func heard() -> [String] {
            setup.changes.messages.compactMap { message in
                if message.path == "/org/example/Marker" { return message.arguments().first?.stringValue }
                return message.path == setup.widget ? message.arguments()[1].stringKeyedEntries?["Content"]?.unwrapped.stringValue : nil
            }
        }

        // Frames are slots of the clock: start just after one starts (Unix seconds, for frames of 1000 ms).
        let now = Date().timeIntervalSince1970
        try await Task.sleep(for: .milliseconds(Int((now.rounded(.down) + 1.02 - now) * 1000)))
        try await setup.app.setContent(setup.widget, Self.tree(1))
        let firstAcknowledged = Date()
        try mark(1)
        try await setup.app.setContent(setup.widget, Self.tree(2))
        try await setup.app.setContent(setup.widget, Self.tree(3))
        try mark(2)
        let marked = Date().timeIntervalSince(firstAcknowledged)
        #expect(marked < 0.8, "the markers must go out well within the frame to tell anything: \(marked) s")
        let both = await eventually { heard().contains("org.example.Marker2") }
        #expect(both)
        #expect(
            heard() == [Self.tree(1), "org.example.Marker1", "org.example.Marker2"],
            "the first change was announced with its reply, the next two held: \(heard())")
        // Acknowledged and served at once all the same.
        #expect(try await setup.renderer.content(setup.widget) == Self.tree(3))

        let last = await eventually { heard().last == Self.tree(3) }
        let lastHeard = Date().timeIntervalSince(firstAcknowledged)
        #expect(last && heard() == [Self.tree(1), "org.example.Marker1", "org.example.Marker2", Self.tree(3)], "one announcement, of the latest: \(heard())")
        #expect(lastHeard > 0.7, "held to the frame's end, a second after it started: heard after \(lastHeard) s")
    }

    @Test("A renderer watching a streamed widget gets far fewer announcements than updates, and the last one carries the final value")
    func streamed() async throws {
        let setup = try await Setup.start([])
        defer { setup.stop() }
        // 200 updates, 8 in flight: within the default burst and ceiling, every one acknowledged.
        let count = 200
        var failures: [String] = []
        let started = Date()
        for batch in stride(from: 0, to: count, by: 8) {
            await withTaskGroup(of: String?.self) { group in
                for n in batch..<min(count, batch + 8) {
                    group.addTask {
                        do { try await setup.app.setContent(setup.widget, Self.tree(n)) } catch { return "\(error)" }
                        return nil
                    }
                }
                for await failure in group { if let failure { failures.append(failure) } }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        // Within a batch the tasks send in any order; one more, sent after all of them, is the last sent.
        try await setup.app.setContent(setup.widget, Self.tree(count))
        // One sender's calls take effect in the order it sent them: the last is what is served.
        let served = try await setup.renderer.content(setup.widget)
        #expect(served == Self.tree(count))
        let settled = await eventually { setup.announced().last == served }
        #expect(settled, "the final value is announced: last heard \(setup.announced().last ?? "nothing")")
        // At most one announcement a frame (16 ms), and one at the end: for each sync, as many updates of one
        // widget as arrived meanwhile would be announced at once.
        let frames = Int(Date().timeIntervalSince(started) * 1000 / 16) + 2
        #expect(setup.announced().count <= frames, "\(setup.announced().count) announcements for \(count) updates in \(frames) frames")
    }

    @Test("An app flooding past its ceiling gets LimitExceeded with its rate, ten frames later; what is stored is what it last had acknowledged")
    func ceiling() async throws {
        let setup = try await Setup.start(["--update-rate", "5", "--update-burst", "5", "--max-update-rate", "20"])
        defer { setup.stop() }
        let activity = try await setup.app.startActivity("T", Self.activityContent(0))
        var refused: [String] = [], admitted = 0, quickestRefusal = Double.infinity
        var lastWidget = 0, lastActivity = 0
        // SetContent and Update in turn: they count together against the app's budget.
        let started = Date()
        for n in 1...60 {
            let sent = Date()
            do {
                try await setup.app.setContent(setup.widget, Self.tree(n))
                lastWidget = n
                admitted += 1
            } catch let error as DBusError {
                refused.append("SetContent \(error.name): \(error.message)")
                quickestRefusal = min(quickestRefusal, Date().timeIntervalSince(sent))
            }
            do {
                _ = try await setup.app.connection.call(
                    destination: "org.widgethost.Host1", path: activity, interface: "org.widgethost.Host1.LiveActivity", member: "Update",
                    [.string(Self.activityContent(n)), .vardict([:])])
                lastActivity = n
                admitted += 1
            } catch let error as DBusError {
                refused.append("Update \(error.name): \(error.message)")
            }
        }
        let seconds = Date().timeIntervalSince(started)
        #expect(admitted <= 20 + Int(20 * seconds) + 1, "at most 20 a second, in bursts of 20: \(admitted) in \(seconds) s")
        #expect(refused.contains { $0.hasPrefix("SetContent") } && refused.contains { $0.hasPrefix("Update") }, "\(refused.count) refused")
        #expect(lastWidget >= 5 && lastActivity >= 5, "widget \(lastWidget), activity \(lastActivity)")
        // A flooding app waits ten frames for each refusal: it cannot make the host answer as fast as it sends.
        #expect(quickestRefusal >= 0.155, "a refusal came \(quickestRefusal) s after its call, within ten frames (160 ms)")
        for message in refused {
            #expect(message.contains(" org.widgethost.Host1.Error.LimitExceeded: "), "\(message)")
            #expect(
                message.contains("more than 20 updates in a second") && message.contains("max-update-rate")
                    && message.contains("5 updates a second") && message.contains("update-rate"), "\(message)")
        }
        // Nothing of a refused update is stored: each object holds what the app last had acknowledged, and says so.
        #expect(try await setup.renderer.content(setup.widget) == Self.tree(lastWidget))
        #expect(try await setup.renderer.activityProperty(activity, "Content") == .string(Self.activityContent(lastActivity)))
        let heard = await eventually { setup.announced().last == Self.tree(lastWidget) }
        #expect(heard, "the last acknowledged content is announced: \(setup.announced().suffix(3))")
        let heardActivity = await eventually {
            setup.changes.messages.filter { $0.path == activity }.last?.arguments()[1].stringKeyedEntries?["Content"]?.unwrapped.stringValue
                == Self.activityContent(lastActivity)
        }
        #expect(heardActivity)
        // Other apps keep their budgets.
        let other = try await AppPeer(setup.fixture, appID: "org.example.Other")
        defer { other.close() }
        try await other.registerWidgets(Self.bundle)
        let widget = try await setup.renderer.addWidget("org.example.Other", "K", "systemSmall")
        try await other.setContent(widget, Self.tree(1))
    }
}
