import DBus
import PrivateBus
import Foundation
import Testing

/// What an app or a stranger can make the host hold or do: descriptors,
/// registrations that outlive their connections, stale deliveries.
@Suite("Hostile input", .timeLimit(.minutes(3)))
struct HostileInputTests {
    static func openDescriptors(_ pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }

    @Test("A call carrying unix fds is InvalidArgs, changes nothing and leaves the host's descriptors flat after 2,000 of them")
    func noDescriptors() async throws {
        let host = try await HostWithWidget.start()
        defer { host.stop() }
        let (fixture, caller, widget) = (host.fixture, host.caller, host.widget)
        let pid = try #require(fixture.hostProcess?.processIdentifier)
        let file = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { close(file) }
        let fd = DBusValue.variant(.unixFD(file))
        let before = try Self.openDescriptors(pid)
        let calls: [(String, () async throws -> Void)] = [
            ("Tap", { _ = try await caller.tap(widget, "", ["surface": fd]) }),
            ("AddWidget", { _ = try await caller.addWidget(DurabilityTests.app, "Hero", "systemSmall", ["n": fd]) }),
            ("RegisterApp", { _ = try await caller.host("RegisterApp", [.string("org.example.Fds"), .vardict(["schemes": fd])]) }),
            ("Configure", {
                _ = try await caller.call(
                    destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Configure",
                    [.vardict(["n": .variant(.array(element: "h", [.unixFD(file)]))])])
            }),
            ("Properties.Get", {
                _ = try await caller.call(
                    destination: "org.widgethost.Host1", path: widget, interface: "org.freedesktop.DBus.Properties", member: "Get",
                    [.string("org.widgethost.Host1.Widget"), .string("Content"), .unixFD(file)])
            }),
        ]
        for round in 0..<400 {
            for (name, call) in calls {
                do {
                    try await call()
                    Issue.record("\(name) took a descriptor")
                } catch let error as DBusError {
                    if round == 0 {
                        #expect(error.name == "org.freedesktop.DBus.Error.InvalidArgs", "\(name): \(error)")
                        #expect(error.message.contains("takes no unix file descriptors"), "\(name): \(error.message)")
                    }
                }
            }
        }
        // 2,000 calls later the host holds what it held, and serves as before.
        // (Give or take one the host opens meanwhile for its own use, such as a pidfd.)
        let after = try Self.openDescriptors(pid)
        #expect(after <= before + 2, "descriptors before \(before), after \(after)")
        let objects = try await caller.managedObjects()
        #expect(objects.count == 1 && objects[widget]?["Configuration"] == .vardict([:]), "\(objects)")
        #expect(try await listApps(caller)["org.example.Fds"] == nil)

        // A flood of calls carrying the most descriptors the bus lets one message
        // carry, from many connections at once, to a host with a small table:
        // those waiting to be dispatched never fill it.
        let limit = try await runCommand("/usr/bin/prlimit", ["--pid", "\(pid)", "--nofile=\(before + 120):\(before + 120)"])
        #expect(limit.status == 0, "\(limit.stderr)")
        let sixteen = DBusValue.array(element: "h", Array(repeating: .unixFD(file), count: 16))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                let flooder = try await fixture.connect()
                group.addTask {
                    defer { flooder.close() }
                    for _ in 0..<40 {
                        try flooder.send(
                            Message.methodCall(
                                destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Tap",
                                arguments: [.string(""), .vardict(["surface": sixteen])]))
                    }
                    _ = try? await flooder.tap(widget, "", [:], method: "Resolve")
                }
            }
            try await group.waitForAll()
        }
        #expect(fixture.hostProcess?.isRunning == true)
        #expect(try await caller.tap(widget, "", [:], method: "Resolve").0 == "continue-user-activity")
        #expect(try Self.openDescriptors(pid) <= before + 2)
        let (outcome, _) = try await caller.tap(widget, "", [:], method: "Resolve")
        #expect(outcome == "continue-user-activity")
    }

    @Test("Values of types the host does not keep — a{sd}, (sd), g, a(sd) — are InvalidArgument naming where, never stored as ''")
    func unkeptTypes() async throws {
        let host = try await HostWithWidget.start()
        defer { host.stop() }
        let (app, renderer, widget) = (host.app, host.caller, host.widget)
        let values: [(DBusValue, String)] = [
            (.dictionary(key: "s", value: "d", [DBusValue.DictEntry(.string("a"), .double(1))]), "a{sd}"),
            (.structure([.string("a"), .double(1)]), "(sd)"),
            (.signature("s"), "g"),
            (.array(element: "(sd)", [.structure([.string("a"), .double(1)])]), "a(sd)"),
        ]
        for (value, signature) in values {
            await expectHostError("InvalidArgument", mentioning: "configuration value 'n' holds a value of type \(signature), which the host does not keep") {
                _ = try await renderer.addWidget(DurabilityTests.app, "Hero", "systemSmall", ["n": value])
            }
            await expectHostError("InvalidArgument", mentioning: "configuration value 'n' holds a value of type \(signature)") {
                _ = try await renderer.call(
                    destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Configure",
                    [.vardict(["n": .vardict(["deep": .array(element: "v", [.variant(value)])])])])
            }
            await expectHostError("InvalidArgument", mentioning: "state value 'speed' holds a value of type \(signature)") {
                _ = try await app.startActivity("T", DurabilityTests.activityContent, ["state": .vardict(["speed": value])])
            }
        }
        let objects = try await renderer.managedObjects()
        #expect(objects.count == 1 && objects[widget]?["Configuration"] == .vardict([:]), "\(objects)")
    }

    @Test("Connections that close mid-RegisterApp leave no registration behind, and the id stays free")
    func registrationsDieWithTheirConnections() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let appID = "org.example.Churn"
        let observer = try await fixture.connect()
        defer { observer.close() }
        // Six lanes of connections, each sending RegisterApp and closing a moment
        // later, while its identity and the name's owner are being looked up.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<6 {
                group.addTask {
                    for round in 0..<60 {
                        let connection = try await fixture.connect()
                        try connection.send(
                            Message.methodCall(
                                destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.widgethost.Host1.Apps",
                                member: "RegisterApp",
                                arguments: [.string(appID), .vardict(["protocol": .string("freedesktop"), "schemes": .strings(["x-churn"])])]))
                        try await Task.sleep(for: .microseconds((lane * 60 + round) % 7 * 250))
                        connection.close()
                    }
                }
            }
            try await group.waitForAll()
        }
        // Once the host has seen every connection go (lookups take milliseconds),
        // none of them holds the id.
        try await Task.sleep(for: .seconds(1))
        let left = try await listApps(observer)[appID] ?? [:]
        #expect(left["registered"] != .bool(true), "a registration outlived its connection: \(left)")
        await expectHostError("UnknownApp", mentioning: "x-churn") {
            _ = try await observer.host("OpenURL", [.string("x-churn://x"), .vardict([:])])
        }
        // The app itself registers as if nothing had happened.
        let app = try await AppPeer(fixture, appID: appID)
        defer { app.close() }
        #expect(try await listApps(observer)[appID]?["registered_by"] == .string(app.connection.uniqueName ?? ""))
    }

    static func residentBytes(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    @Test("An a{sv} over max-dict-entries or max-dict-bytes is LimitExceeded while it is read; a million keys leave the host's memory where it was")
    func boundedDictionaries() async throws {
        let host = try await HostWithWidget.start()
        defer { host.stop() }
        let (fixture, caller, widget) = (host.fixture, host.caller, host.widget)
        let pid = try #require(fixture.hostProcess?.processIdentifier)
        func keys(_ count: Int) -> [String: DBusValue] {
            Dictionary(uniqueKeysWithValues: (0..<count).map { ("k\($0)", DBusValue.int32(1)) })
        }
        // At the limit the call is read, and refused for what it says.
        await expectHostError("InvalidArgument", mentioning: "unknown options") { _ = try await caller.tap(widget, "", keys(4096)) }
        await expectHostError("LimitExceeded", mentioning: "more than 4096 entries, the limit set by widget-hostd --max-dict-entries") {
            _ = try await caller.tap(widget, "", keys(4097))
        }
        await expectHostError("LimitExceeded", mentioning: "more than 4096 entries") {
            _ = try await caller.addWidget(DurabilityTests.app, "Hero", "systemSmall", ["n": .array(element: "i", (0...4096).map { _ in .int32(0) })])
        }
        await expectHostError("LimitExceeded", mentioning: "more than 131072 bytes, the limit set by widget-hostd --max-dict-bytes") {
            _ = try await caller.addWidget(DurabilityTests.app, "Hero", "systemSmall", ["n": .vardict(["deep": .string(String(repeating: "x", count: 140_000))])])
        }
        // Warm, then a flood of million-key dictionaries from another caller.
        for _ in 0..<20 { _ = try await caller.tap(widget, "", [:], method: "Resolve") }
        let before = try Self.residentBytes(pid)
        let million = DBusValue.vardict(keys(1_000_000))
        for _ in 0..<3 {
            await expectHostError("LimitExceeded", mentioning: "more than 4096 entries") {
                _ = try await caller.call(
                    destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "Tap",
                    [.string(""), million])
            }
            // Answered once the refused call's dispatch is over, message freed.
            _ = try await caller.tap(widget, "", [:], method: "Resolve")
        }
        let after = try Self.residentBytes(pid)
        #expect(after - before < 8 << 20, "RSS \(before >> 10) KiB before, \(after >> 10) KiB after three million-key calls")
        // Nothing changed, and the host serves as before.
        let objects = try await caller.managedObjects()
        #expect(objects.count == 1 && objects[widget]?["Configuration"] == .vardict([:]), "\(objects)")
        #expect(try await caller.tap(widget, "", [:], method: "Resolve").0 == "continue-user-activity")
    }
}

extension HostileInputTests {
    @Test("Bundles: one connection holding many ids takes at most its share, all bundles at most the pool; ListBundles answers throughout and after a restart")
    func bundleBudgets() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--max-bundle-bytes", "300000", "--max-bundle-bytes-per-connection", "130000"])
        func bundle(_ n: Int) -> String {
            #"{"widgets":[{"kind":"K\#(n)","families":["systemSmall"],"description":"\#(String(repeating: "x", count: 60_000))"}]}"#
        }
        var peers: [Connection] = []
        defer { for peer in peers { peer.close() } }
        var refused: [String] = []
        for lane in 0..<4 {
            let peer = try await fixture.connect()
            peers.append(peer)
            for n in 0..<3 {
                let appID = "org.example.Bulk\(lane).A\(n)"
                _ = try await peer.host("RegisterApp", [.string(appID), .vardict(["protocol": .string("freedesktop")])])
                do {
                    _ = try await peer.host("RegisterWidgets", [.string(appID), .string(bundle(n))], interface: "org.widgethost.Host1.Widgets")
                } catch let error as DBusError {
                    #expect(error.name == "org.widgethost.Host1.Error.LimitExceeded", "\(error)")
                    refused.append(error.message.contains("max-bundle-bytes-per-connection") ? "share" : "pool")
                }
            }
        }
        // Two bundles fit a connection's share; the pool takes four in all.
        #expect(refused == ["share"] + Array(repeating: "pool", count: 7), "\(refused)")
        func listed() async throws -> Int {
            guard case .array(_, let items)? = try await peers[0].host("ListBundles", [], interface: "org.widgethost.Host1.Widgets").first else { return -1 }
            return items.count
        }
        #expect(try await listed() == 4)
        await fixture.stopHost()
        try await fixture.startHost(["--max-bundle-bytes", "300000", "--max-bundle-bytes-per-connection", "130000"])
        // Apps with neither a registration nor a placed widget leave nothing behind.
        #expect(try await listed() == 0)
    }

    @Test("A Flatpak app registers at most max-ids-per-sandboxed-app of its ids")
    func sandboxedIDs() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--max-ids-per-sandboxed-app", "5"])
        let plan = (1...6).map { n in
            ["call", IdentityTests.root, "org.widgethost.Host1.Apps", "RegisterApp", "sa{sv}", "('org.example.Sandboxed.s\(n)', {'protocol': <'freedesktop'>})"]
        }
        let (rows, caller) = try await IdentityTests().sandboxed(
            fixture, flatpakInfo: "[Application]\nname=org.example.Sandboxed\n", plan: plan)
        defer { caller.stop() }
        for row in rows.prefix(5) { #expect(row["ok"] as? Bool == true, "\(row)") }
        #expect(rows.last?["error"] as? String == "org.widgethost.Host1.Error.LimitExceeded", "\(rows.last ?? [:])")
        #expect((rows.last?["message"] as? String)?.contains("org.example.Sandboxed already holds 5 registrations") == true, "\(rows.last ?? [:])")
    }
}

extension HostileInputTests {
    @Test("A write a frozen disk never takes answers StorageFailed at the delivery timeout, saying it may still be stored; taps and reads never wait; it lands once the disk thaws")
    func frozenDisk() async throws {
        let shim = try await SlowSync.build(milliseconds: 0, frozen: true)
        defer { shim.remove() }
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost(["--delivery-timeout", "1.5"], environment: ["LD_PRELOAD": shim.path])
        let app = try await DurabilityTests.registeredApp(fixture)
        defer { app.close() }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let widget = try await renderer.addWidget(DurabilityTests.app, "Hero", "systemSmall")

        #expect(FileManager.default.createFile(atPath: shim.frozenFile, contents: nil))
        let clock = ContinuousClock()
        let started = clock.now
        async let write: Void = app.setContent(widget, #"{"type":"text","text":"frozen"}"#)
        // Meanwhile taps and reads are answered as usual.
        try await Task.sleep(for: .milliseconds(200))
        for _ in 0..<10 {
            let quick = try await clock.measure { _ = try await renderer.tap(widget, "", [:], method: "Resolve") }
            #expect(quick < .seconds(1), "a tap waited on the frozen disk: \(quick)")
        }
        do {
            try await write
            Issue.record("SetContent was acknowledged while the disk was frozen")
        } catch let error as DBusError {
            #expect(error.name == "org.widgethost.Host1.Error.StorageFailed", "\(error)")
            #expect(error.message.contains("has not taken the change within 1.5 s") && error.message.contains("it may still be stored"), "\(error.message)")
        }
        let waited = clock.now - started
        #expect(waited >= .seconds(1.4) && waited < .seconds(10), "answered after \(waited)")
        // The disk thaws: the change lands, and the host takes writes again.
        try FileManager.default.removeItem(atPath: shim.frozenFile)
        try await app.setContent(widget, #"{"type":"text","text":"thawed"}"#)
        await fixture.stopHost(signal: SIGKILL)
        try await fixture.startHost()
        #expect(try await renderer.content(widget) == #"{"type":"text","text":"thawed"}"#)
    }
}

extension HostileInputTests {
    @Test("Once an app leaves a delivery unanswered past the timeout (it was stopped), no tap is sent to it until it answers a ping: the refused ones never reach it when it resumes")
    func noStaleDeliveries() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installTapMe()
        try await fixture.startHost(["--delivery-timeout", "1"])
        let publisher = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
        try await publisher.registerWidgets(try exampleFile("tap-me/bundle.json"))
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let widget = try await renderer.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
        try await publisher.setContent(widget, try exampleFile("tap-me/red.json"))
        publisher.close()
        func tap(_ token: String) async throws { _ = try await renderer.tap(widget, "", ["activation_token": .string(token)]) }
        try await tap("first")
        let pid = try await renderer.processID(of: "org.example.TapMe")
        var resumed = false
        defer { if !resumed { kill(pid, SIGCONT) } }
        #expect(await stopProcess(pid), "the app's threads did not all stop")
        await expectHostError("ActivationFailed", mentioning: "did not answer Open within 1 s") { try await tap("in-flight") }
        for n in 0..<20 {
            await expectHostError("ActivationFailed", mentioning: "was not sent") { try await tap("refused-\(n)") }
        }
        kill(pid, SIGCONT)
        resumed = true
        // Once the app answers the ping, taps reach it again.
        let answered = await eventually(timeout: 10) { (try? await tap("after")) != nil }
        #expect(answered)
        let tokens = fixture.records(record).filter { $0["call"] as? String == "open" }.compactMap {
            ($0["platform_data"] as? [String: String])?["activation-token"]
        }
        // The one sent before the app was known to be stopped arrives late (D-Bus cannot recall it;
        // a WidgetHostKit app drops it by its deadline); none of the refused ones ever does.
        #expect(tokens.first == "'first'" && tokens.contains("'in-flight'") && tokens.last == "'after'", "\(tokens)")
        #expect(!tokens.contains { $0.hasPrefix("'refused") }, "\(tokens)")
    }
}

/// A host with Durable's app registered and one of its widgets placed by another connection.
struct HostWithWidget {
    let fixture: HostFixture
    let app: AppPeer
    let caller: Connection
    let widget: String

    static func start() async throws -> HostWithWidget {
        let fixture = try await HostFixture.make()
        do {
            try await fixture.startHost()
            let app = try await DurabilityTests.registeredApp(fixture)
            let caller = try await fixture.connect()
            return HostWithWidget(
                fixture: fixture, app: app, caller: caller, widget: try await caller.addWidget(DurabilityTests.app, "Hero", "systemSmall"))
        } catch {
            fixture.stop()
            throw error
        }
    }

    func stop() {
        caller.close()
        app.close()
        fixture.stop()
    }
}

extension HostileInputTests {
    @Test("A tap its renderer stopped waiting for reaches nobody: read after its deadline (the host was stopped) it is answered ActivationFailed and nothing is delivered; read in time, the app is told the deadline and waited for only until then, and an app slower than a renderer is not cut off from later taps")
    func tapDeadlines() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installTapMe()
        try await fixture.startHost()
        let bundle = #"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#
        let content = #"{"type":"text","id":"t","widgetURL":"x-app://open"}"#
        let fine = try await AppPeer(fixture, appID: "org.example.Fine")
        let hung = try await AppPeer(fixture, appID: "org.example.Hung", behaviour: .hang)
        defer { [fine, hung].forEach { $0.close() } }
        var paths: [String] = []
        for app in [fine, hung] {
            try await app.registerWidgets(bundle)
            let path = try await app.connection.addWidget(app.appID, "K", "systemSmall")
            try await app.setContent(path, content)
            paths.append(path)
        }
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        func inMs(_ seconds: Double) -> Int64 { Int64((Date().timeIntervalSince1970 + seconds) * 1000) }

        // The host stopped past the tap's deadline: once it runs again, the tap is refused and reaches nobody.
        let pid = try #require(fixture.hostProcess?.processIdentifier)
        var stopped = true
        defer { if stopped { kill(pid, SIGCONT) } }
        #expect(await stopProcess(pid), "the host's threads did not all stop")
        let first = paths[0], soon = inMs(0.5)
        async let late = renderer.tap(first, "t", ["deadline": .int64(soon)])
        try await Task.sleep(for: .seconds(1.5))
        kill(pid, SIGCONT)
        stopped = false
        do {
            let answer = try await late
            Issue.record("a tap read after its deadline was delivered: \(answer)")
        } catch let error as DBusError {
            #expect(error.name == "org.widgethost.Host1.Error.ActivationFailed" && error.message.contains("deadline"), "\(error)")
        }
        // Only the resolution, which delivers nothing, takes a deadline that passed.
        _ = try await renderer.tap(paths[0], "t", ["deadline": .int64(inMs(-10))], method: "Resolve")

        // Read in time: delivered, the app told the renderer's deadline (sooner than the delivery timeout).
        let deadline = inMs(10)
        let (outcome, _) = try await renderer.tap(paths[0], "t", ["deadline": .int64(deadline)])
        #expect(outcome == "open-url")
        #expect(fine.calls.count == 1, "only the tap read in time reached the app: \(fine.calls)")
        let context = fine.calls.last?.args.last?.stringKeyedEntries ?? [:]
        #expect(context["org.widgethost.deadline"]?.unwrapped == .int64(deadline), "\(context)")

        // An app that does not answer is waited for until the deadline, not the 25 s delivery timeout.
        let started = Date()
        await expectHostError("ActivationFailed", mentioning: "before the tap's deadline") {
            _ = try await renderer.tap(paths[1], "t", ["deadline": .int64(inMs(1))])
        }
        #expect(Date().timeIntervalSince(started) < 10, "waited \(Date().timeIntervalSince(started)) s for a tap with a 1 s deadline")
        #expect(hung.calls.count == 1, "\(hung.calls)")

        // An app slower than a renderer waits (a stopped process, which answers no ping either) is
        // not taken for one that stopped answering: the next tap is sent to it all the same.
        let publisher = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
        try await publisher.registerWidgets(try exampleFile("tap-me/bundle.json"))
        let tapMe = try await renderer.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
        try await publisher.setContent(tapMe, try exampleFile("tap-me/red.json"))
        publisher.close()
        _ = try await renderer.tap(tapMe, "", ["activation_token": .string("first")])
        let app = try await renderer.processID(of: "org.example.TapMe")
        var appStopped = true
        defer { if appStopped { kill(app, SIGCONT) } }
        #expect(await stopProcess(app), "the app's threads did not all stop")
        for token in ["slow-1", "slow-2"] {
            await expectHostError("ActivationFailed", mentioning: "before the tap's deadline") {
                _ = try await renderer.tap(tapMe, "", ["activation_token": .string(token), "deadline": .int64(inMs(0.5))])
            }
        }
        kill(app, SIGCONT)
        appStopped = false
        #expect(await eventually(timeout: 10) {
            let tokens = fixture.records(record).compactMap { ($0["platform_data"] as? [String: String])?["activation-token"] }
            return tokens.contains("'slow-2'")
        }, "the second tap was sent to the slow app: \(fixture.records(record))")

        // A deadline of the wrong type is bad input.
        await expectHostError("InvalidArgument", mentioning: "deadline") {
            _ = try await renderer.tap(paths[0], "t", ["deadline": .string("soon")])
        }
    }
}

extension Connection {
    /// The process of the connection owning `name`, as the bus tells it.
    func processID(of name: String) async throws -> Int32 {
        let reply = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetConnectionUnixProcessID", [.string(name)])
        return Int32(try #require(reply.first?.integerValue))
    }
}
