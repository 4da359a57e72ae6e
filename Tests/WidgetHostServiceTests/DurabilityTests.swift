import DBus
import Foundation
import PrivateBus
import Testing

/// The state directory end to end: restarts, SIGKILL at random moments, and
/// damaged files, against the real daemon on a private bus.
@Suite("Durability", .timeLimit(.minutes(4)))
struct DurabilityTests {
    static let bundle = #"{"widgets":[{"kind":"Hero","families":["systemSmall"],"configuration":{"intent":"SelectHero","parameters":[{"name":"n"}]}}]}"#
    static let app = "org.example.Durable"

    /// The app's side: registers (again after each restart) and publishes its bundle.
    static func registeredApp(_ fixture: HostFixture) async throws -> AppPeer {
        let app = try await AppPeer(fixture, appID: Self.app)
        try await app.registerWidgets(Self.bundle)
        return app
    }

    @Test("A burst of writes to one widget is announced once per sync, not once per write, and the last announcement carries what the host serves")
    func burstAnnouncedPerSync() async throws {
        // Syncs slow enough that the burst arrives while the first write syncs.
        let slow = try await SlowSync.build(milliseconds: 40)
        defer { slow.remove() }
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(environment: ["LD_PRELOAD": slow.path])
        let app = try await Self.registeredApp(fixture)
        defer { app.close() }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let widget = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
        let changes = SignalRecorder(
            try await renderer.signals(MatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")))

        let burst = 20
        let acknowledged = await withTaskGroup(of: Bool.self) { group in
            for n in 0..<burst {
                group.addTask { (try? await app.setContent(widget, #"{"type":"text","text":"\#(n)"}"#)) != nil }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(acknowledged == burst)
        let served = try await renderer.content(widget)
        func announced() -> [String] {
            changes.messages.filter { $0.path == widget }.compactMap { $0.arguments()[1].stringKeyedEntries?["Content"]?.unwrapped.stringValue }
        }
        // The signals reach the recorder through its own task: wait for the one carrying what is served.
        let settled = await eventually { announced().last == served }
        #expect(settled, "announced: \(announced()), served: \(served)")
        #expect(announced().count < burst / 2, "one PropertiesChanged per sync: \(announced().count) for \(burst) writes")
    }

    @Test("After a restart every widget keeps its id, path, configuration and content, and a tap reads that content; activities keep their dates; ids are not reused")
    func restartKeepsEverything() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        var app = try await Self.registeredApp(fixture)
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let w1 = try await renderer.addWidget(Self.app, "Hero", "systemSmall", ["n": .int64(1)])
        let w2 = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
        let w3 = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
        try await app.setContent(w1, #"{"type":"text","id":"t","text":"one","widgetURL":"durable://one"}"#)
        try await renderer.configure(w2, ["n": .int64(2)])
        _ = try await renderer.call(
            destination: "org.widgethost.Host1", path: w3, interface: "org.widgethost.Host1.Widget", member: "Remove")
        let activity = try await app.startActivity("T", Self.activityContent, ["stale_date": .int64(Int64(Date().timeIntervalSince1970) + 3600)])
        let before = try await renderer.managedObjects()

        await fixture.stopHost()
        // A clean stop wrote everything into the snapshot: the restart reads it from there.
        let journal = try Data(contentsOf: fixture.stateDirectory.appendingPathComponent("journal"))
        #expect(journal.isEmpty)
        try await fixture.startHost()
        let after = try await renderer.managedObjects()
        #expect(after == before, "the restarted host serves exactly what it served")
        #expect(after[w1]?["Content"] == .string(#"{"type":"text","id":"t","text":"one","widgetURL":"durable://one"}"#))
        #expect(after[w2]?["Configuration"] == .vardict(["n": .int64(2)]))
        #expect(after[w3] == nil && after[activity]?["State"] == .string("active"))

        // Registrations belong to connections: the app registers again, and then owns its widgets as before.
        let refused = await #expect(throws: DBusError.self) { try await app.setContent(w1, #"{"type":"text"}"#) }
        #expect(refused?.name.hasPrefix("org.widgethost.Host1.Error.") == true)
        app.close()
        app = try await Self.registeredApp(fixture)
        defer { app.close() }
        let (outcome, details) = try await renderer.tap(w1, "t", method: "Resolve")
        #expect(outcome == "open-url" && details["url"] == .string("durable://one"), "a tap reads the content restored: \(details)")
        try await app.setContent(w1, #"{"type":"text","id":"t","text":"again"}"#)
        #expect(try await renderer.addWidget(Self.app, "Hero", "systemSmall").hasSuffix("/w4"), "w3 was used once")
        #expect(try await app.startActivity("T", Self.activityContent).hasSuffix("/a2"))
        #expect(fixture.log.contains("state restored"))
    }

    @Test("A timeline survives a restart: its entries keep appearing at their dates without asking the provider again")
    func timelineSurvivesRestart() async throws {
        let run = try await RangersRun.start(environment: { _ in ["EMOJI_RANGERS_STEP": "0.8", "EMOJI_RANGERS_START_HEALTH": "40"] })
        defer { run.stop() }
        let (fixture, renderer, record) = (run.fixture, run.renderer, run.record)
        let widget = try await renderer.addWidget("org.example.EmojiRangers", "EmojiRangerWidget", "systemSmall")
        #expect(await eventually { (try? await renderer.content(widget))?.contains("40%") == true })
        await fixture.stopHost(signal: SIGKILL)
        try await fixture.startHost()
        #expect(await eventually { (try? await renderer.content(widget))?.contains("100%") == true }, "log:\n\(fixture.log)")
        // Once more through a clean stop, which puts the timeline into the snapshot.
        await fixture.stopHost()
        try await fixture.startHost()
        let described = try await renderer.describeTimeline(widget)
        #expect(described["policy"] == .string("at-end") && described["next_reload_reason"] == .string("policy"), "\(described)")
        #expect(try await renderer.content(widget).contains("100%"))
        #expect(fixture.records(record).count { $0["call"] as? String == "timeline" } == 1)
    }

    @Test("Kill test: SIGKILL at random moments loses nothing the host acknowledged")
    func killTest() async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["WIDGETHOST_KILL_ROUNDS"] ?? "") ?? 6
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let acknowledged = Acknowledged()
        var generator = SystemRandomNumberGenerator()
        for round in 0..<rounds {
            try await fixture.startHost(["--max-activities-per-app", "100000"])
            if round > 0 { try await acknowledged.verify(fixture, round: round) }
            let app = try await Self.registeredApp(fixture)
            let worker = Task { await Self.work(app, acknowledged, round: round) }
            try await Task.sleep(for: .milliseconds(Int.random(in: 50...400, using: &generator)))
            await fixture.stopHost(signal: SIGKILL)
            await worker.value
            app.close()
        }
        try await fixture.startHost()
        try await acknowledged.verify(fixture, round: rounds)
        #expect(await acknowledged.operations > rounds * 5, "the client got too few answers to prove anything")
    }

    /// One client, one operation at a time, until the host goes away; records each answer.
    static func work(_ app: AppPeer, _ acknowledged: Acknowledged, round: Int) async {
        var step = 0
        while true {
            step += 1
            let stamp = round * 100_000 + step
            do {
                let widget = try await app.connection.addWidget(Self.app, "Hero", "systemSmall")
                await acknowledged.placed(widget)
                try await app.setContent(widget, #"{"type":"text","id":"t","text":"\#(stamp)"}"#)
                await acknowledged.content(widget, stamp)
                try await app.connection.configure(widget, ["n": .int64(Int64(stamp))])
                await acknowledged.configured(widget, stamp)
                if step % 5 == 0 {
                    await acknowledged.started(try await app.startActivity("T", Self.activityContent))
                }
            } catch {
                return
            }
        }
    }

    @Test("Damaged state files: the host starts, says so in the log, keeps them aside, and works")
    func corruption() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await Self.registeredApp(fixture)
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let kept = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
        app.close()
        await fixture.stopHost(signal: SIGKILL)

        // A write cut short at the end of the journal: never acknowledged, dropped; the rest stays.
        let journal = fixture.stateDirectory.appendingPathComponent("journal")
        let handle = try FileHandle(forWritingTo: journal)
        handle.seekToEndOfFile()
        handle.write(Data(#"0123456789abcdef {"widget":{"id":"w9"#.utf8))
        try handle.close()
        try await fixture.startHost()
        #expect(try await renderer.managedObjects()[kept] != nil)
        #expect(fixture.log.contains("cut short"))
        await fixture.stopHost()

        // Garbage in the snapshot and the journal: kept aside; the host starts empty and serves.
        try Data([0x00, 0xff, 0x13, 0x37]).write(to: fixture.stateDirectory.appendingPathComponent("state.json"))
        try Data("not a record\n".utf8).write(to: journal)
        try await fixture.startHost()
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.stateDirectory.path)
        #expect(names.contains { $0.hasPrefix("state.json.corrupt-") } && names.contains { $0.hasPrefix("journal.corrupt-") }, "\(names)")
        #expect(fixture.log.contains("is damaged") && fixture.log.contains("kept aside as"))
        let again = try await Self.registeredApp(fixture)
        defer { again.close() }
        _ = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
    }

    @Test("A damaged snapshot line costs its widget only, logged by id; ids are never minted again, even those no object holds any more")
    func damageCostsOnlyWhatIsDamaged() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        /// Starts the host, with the app registered, and runs `body`.
        func run(_ body: () async throws -> Void) async throws {
            try await fixture.startHost()
            let app = try await Self.registeredApp(fixture)
            try await body()
            app.close()
            await fixture.stopHost()
        }
        // Every widget removed: the snapshot holds no widget, only the ids minted.
        try await run {
            let first = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
            _ = try await renderer.call(
                destination: "org.widgethost.Host1", path: first, interface: "org.widgethost.Host1.Widget", member: "Remove")
        }
        var (second, third) = ("", "")
        try await run {
            second = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
            third = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
        }
        #expect(second.hasSuffix("/w2"), "w1 was minted once")

        // One byte of the second widget's line: its family reads "systemSmalL", which its checksum refuses.
        let snapshot = fixture.stateDirectory.appendingPathComponent("state.json")
        let lines = try String(contentsOf: snapshot, encoding: .utf8).split(separator: "\n").map { line in
            line.contains(#""id":"w2""#) ? line.replacingOccurrences(of: "systemSmall", with: "systemSmalL") : String(line)
        }
        try (lines.joined(separator: "\n") + "\n").write(to: snapshot, atomically: false, encoding: .utf8)
        try await run {
            let objects = try await renderer.managedObjects()
            #expect(objects[second] == nil && objects[third] != nil, "\(objects.keys.sorted())")
            #expect(try await renderer.addWidget(Self.app, "Hero", "systemSmall").hasSuffix("/w4"), "w2 is not minted again")
        }
        #expect(fixture.log.contains("is damaged") && fixture.log.contains("dropped widget w2") && fixture.log.contains("kept aside in"), "\(fixture.log)")
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.stateDirectory.path)
        #expect(names.contains { $0.hasPrefix("state.json.corrupt-") }, "\(names)")
    }

    static let activityContent =
        "{" + ["lockScreen", "compactLeading", "compactTrailing", "minimal", "expanded"].map { "\"\($0)\":{\"type\":\"text\"}" }
        .joined(separator: ",") + "}"
}

/// What the host acknowledged, for the kill test to check after each restart.
actor Acknowledged {
    private var widgets: Set<String> = []
    private var contents: [String: Int] = [:]
    private var configurations: [String: Int] = [:]
    private var activities: Set<String> = []
    private(set) var operations = 0

    func placed(_ widget: String) { widgets.insert(widget); operations += 1 }
    func content(_ widget: String, _ stamp: Int) { contents[widget] = stamp; operations += 1 }
    func configured(_ widget: String, _ stamp: Int) { configurations[widget] = stamp; operations += 1 }
    func started(_ activity: String) { activities.insert(activity); operations += 1 }

    /// Every acknowledged widget and activity is there, with its acknowledged
    /// content and configuration or a later one (the change in flight at the kill
    /// may or may not have been saved; its answer never came).
    func verify(_ fixture: HostFixture, round: Int) async throws {
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let objects = try await renderer.managedObjects()
        for widget in widgets {
            guard let properties = objects[widget] else {
                Issue.record("round \(round): acknowledged widget \(widget) is gone")
                continue
            }
            if let stamp = contents[widget] {
                let text = properties["Content"]?.stringValue ?? ""
                let shown = Int(text.split(separator: "\"").dropLast().last ?? "") ?? -1
                #expect(shown >= stamp, "round \(round): \(widget) shows \(text), acknowledged \(stamp)")
            }
            if let stamp = configurations[widget] {
                let n = properties["Configuration"]?.stringKeyedEntries?["n"]?.unwrapped.integerValue ?? -1
                #expect(n >= Int64(stamp), "round \(round): \(widget) configured \(n), acknowledged \(stamp)")
            }
        }
        for activity in activities where objects[activity] == nil {
            Issue.record("round \(round): acknowledged Live Activity \(activity) is gone")
        }
    }
}

extension Connection {
    /// GetManagedObjects of the host: each object's properties (all interfaces merged), by path.
    func managedObjects() async throws -> [String: [String: DBusValue]] {
        let reply = try await call(
            destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.freedesktop.DBus.ObjectManager",
            member: "GetManagedObjects")
        var result: [String: [String: DBusValue]] = [:]
        for (path, interfaces) in reply.first?.stringKeyedEntries ?? [:] {
            var merged: [String: DBusValue] = [:]
            for (_, properties) in interfaces.stringKeyedEntries ?? [:] {
                for (name, value) in properties.stringKeyedEntries ?? [:] { merged[name] = value.unwrapped }
            }
            result[path] = merged
        }
        return result
    }
}
