import DBus
import PrivateBus
import Foundation
import Testing

/// Who may act for an app (README, "Identity"), end to end: a widget extension
/// beside its GApplication, an impostor, sandboxed callers made as Flatpak
/// makes them (bwrap) and as snapd places them (a snap.<name>. cgroup), and
/// the app taking its id back after a host restart.
@Suite("Identity", .timeLimit(.minutes(3)))
struct IdentityTests {
    static let root = "/org/widgethost/Host1"
    static let red = #"{"type":"vstack","widgetURL":"tap-me-widget://show-red","children":[{"type":"text","id":"label","text":"Red"}]}"#
    static let activity = #"{"widgetURL":"x-app://a","lockScreen":{"type":"t"},"compactLeading":{"type":"t"},"compactTrailing":{"type":"t"},"minimal":{"type":"t"},"expanded":{"type":"t"}}"#

    @Test("A widget extension registers the app (freedesktop); taps start the app by activation and reach it, never the extension")
    func widgetExtension() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installTapMe()
        try await fixture.startHost()
        // The extension: another process, registering the app's id and publishing its widgets.
        let extensionPeer = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
        defer { extensionPeer.close() }
        try await extensionPeer.registerWidgets(try exampleFile("tap-me/bundle.json"))
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        let widget = try await renderer.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
        try await extensionPeer.setContent(widget, Self.red)
        let listed = try #require(try await listApps(renderer)["org.example.TapMe"])
        #expect(listed["registered_by"] == .string(extensionPeer.connection.uniqueName!))
        #expect(listed["protocol"] == .string("freedesktop"))
        #expect(listed["sandbox"] == .string("none"))
        #expect(try await renderer.nameOwner("org.example.TapMe") == nil, "the app must not be running before the first tap")

        let (outcome, details) = try await renderer.tap(widget, "label", ["activation_token": .string("token-cold")])
        #expect(outcome == "open-url" && details["url"] == .string("tap-me-widget://show-red"), "\(details)")
        let running = try #require(try await renderer.nameOwner("org.example.TapMe"), "the tap started the app")
        #expect(running != extensionPeer.connection.uniqueName)
        // And again, with the app running.
        _ = try await renderer.tap(widget, "label", ["activation_token": .string("token-warm")])

        let opens = fixture.records(record).filter { $0["call"] as? String == "open" }
        #expect(opens.map { ($0["uris"] as? [String]) ?? [] } == [["tap-me-widget://show-red"], ["tap-me-widget://show-red"]])
        #expect(opens.map { ($0["platform_data"] as? [String: String])?["activation-token"] } == ["'token-cold'", "'token-warm'"])
        #expect(Set(opens.compactMap { $0["pid"] as? Int }).count == 1, "one app process got both")
        #expect(extensionPeer.calls.isEmpty, "the extension received \(extensionPeer.calls.map(\.member))")
    }

    @Test("An impostor cannot register a running app's id as widgethost; OpenURL and taps still reach the real app")
    func impostor() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installTapMe()
        try await fixture.startHost()
        let renderer = try await fixture.connect()
        defer { renderer.close() }
        // The real app starts (by activation) and owns its name.
        let opened = try await renderer.host("OpenURL", [.string("tap-me-widget://first"), .vardict([:])])
        #expect(opened.first?.stringValue == "org.example.TapMe")
        let app = try #require(try await renderer.nameOwner("org.example.TapMe"))

        let impostor = try await fixture.connect()
        defer { impostor.close() }
        #expect(try await impostor.requestName("org.example.TapMe") == .exists)
        await expectHostError("AccessDenied", mentioning: "request the name first") {
            _ = try await impostor.host(
                "RegisterApp",
                [.string("org.example.TapMe"), .vardict(["protocol": .string("widgethost"), "schemes": .strings(["tap-me-widget"])])])
        }
        // Registering as an extension is allowed — and changes nothing about where taps go.
        _ = try await impostor.host(
            "RegisterApp", [.string("org.example.TapMe"), .vardict(["protocol": .string("freedesktop"), "schemes": .strings(["tap-me-widget"])])])
        _ = try await impostor.host(
            "RegisterWidgets", [.string("org.example.TapMe"), .string(try exampleFile("tap-me/bundle.json"))],
            interface: "org.widgethost.Host1.Widgets")
        let widget = try await renderer.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
        _ = try await impostor.call(
            destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "SetContent", [.string(Self.red)])
        let routed = try await renderer.host("OpenURL", [.string("tap-me-widget://second"), .vardict(["activation_token": .string("tok")])])
        #expect(routed.first?.stringValue == "org.example.TapMe")
        let (outcome, _) = try await renderer.tap(widget, "label", ["activation_token": .string("tok-tap")])
        #expect(outcome == "open-url")
        let opens = fixture.records(record).filter { $0["call"] as? String == "open" }
        #expect(opens.map { ($0["uris"] as? [String])?.first ?? "" } == ["tap-me-widget://first", "tap-me-widget://second", "tap-me-widget://show-red"])
        #expect(opens.last.flatMap { ($0["platform_data"] as? [String: String])?["activation-token"] } == "'tok-tap'")
        #expect(try await renderer.nameOwner("org.example.TapMe") == app, "the same app process received everything")
    }

    /// Runs caller.py inside bwrap as Flatpak runs an app: a root made from
    /// `--tmpfs /`, `/usr` and `/etc` read-only, its own PID namespace, and a
    /// generated `/.flatpak-info`; the private bus's socket bound in.
    func sandboxed(_ fixture: HostFixture, flatpakInfo: String, plan: [[String]]) async throws -> (rows: [[String: Any]], caller: Launched) {
        let info = fixture.root.appendingPathComponent("flatpak-info-\(UUID().uuidString.prefix(6))")
        try flatpakInfo.write(to: info, atomically: true, encoding: .utf8)
        let script = repositoryRoot.appendingPathComponent("Tests/Fixtures/sandbox/caller.py").path
        let socketPath = try #require(fixture.bus.address.split(separator: ",").first.map { String($0.dropFirst("unix:path=".count)) })
        let socketDir = (socketPath as NSString).deletingLastPathComponent
        let planText = String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)
        let bwrap = try #require(PrivateBus.which("bwrap"), "bwrap (Debian's bubblewrap) is needed")
        let caller = try fixture.launch(bwrap, [
            "--die-with-parent", "--unshare-pid", "--tmpfs", "/", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc",
            "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
            "--proc", "/proc", "--dev", "/dev", "--bind", socketDir, socketDir, "--ro-bind", info.path, "/.flatpak-info",
            "--ro-bind", script, "/app/caller.py", "/usr/bin/python3", "/app/caller.py", planText,
        ])
        return (try await results(of: caller, steps: plan.count), caller)
    }

    /// Waits for caller.py's "done" and returns its step results, leaving it running.
    func results(of caller: Launched, steps: Int) async throws -> [[String: Any]] {
        let finished = await eventually(timeout: 30) { caller.printed().contains("done\n") || !caller.process.isRunning }
        #expect(finished && caller.process.isRunning, "caller.py printed: \(caller.printed())")
        let rows = caller.printed().split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        try #require(rows.count == steps, "caller.py printed: \(caller.printed())")
        return rows
    }

    /// Another app, registered by a connection that owns its name, with a widget and a Live Activity.
    func otherApp(_ fixture: HostFixture) async throws -> (AppPeer, widget: String, activity: String) {
        let other = try await AppPeer(fixture, appID: "org.example.Other", schemes: ["x-app"])
        try await other.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        let widget = try await other.connection.addWidget("org.example.Other", "K", "systemSmall")
        let activity = try await other.startActivity("T", Self.activity)
        return (other, widget, activity)
    }

    /// Every app-owned method, called for org.example.Other.
    func foreignSteps(widget: String, activity: String) -> [[String]] {
        let apps = "org.widgethost.Host1.Apps", widgets = "org.widgethost.Host1.Widgets"
        return [
            ["call", Self.root, apps, "RegisterApp", "sa{sv}", "('org.example.Other', {'protocol': <'freedesktop'>})"],
            ["call", Self.root, apps, "UnregisterApp", "s", "('org.example.Other',)"],
            ["call", Self.root, widgets, "RegisterWidgets", "ss", #"('org.example.Other', '{"widgets":[{"kind":"K","families":["systemSmall"]}]}')"#],
            ["call", widget, "org.widgethost.Host1.Widget", "SetContent", "s", #"('{"type":"t"}',)"#],
            ["call", Self.root, "org.widgethost.Host1.LiveActivities", "StartActivity", "sssa{sv}",
             "('org.example.Other', 'T', '\(Self.activity)', @a{sv} {})"],
            ["call", activity, "org.widgethost.Host1.LiveActivity", "Update", "sa{sv}", "('\(Self.activity)', @a{sv} {})"],
            ["call", activity, "org.widgethost.Host1.LiveActivity", "End", "a{sv}", "(@a{sv} {},)"],
            ["call", Self.root, widgets, "ReloadTimelines", "ss", "('org.example.Other', 'K')"],
            ["call", Self.root, widgets, "ReloadAllTimelines", "s", "('org.example.Other',)"],
        ]
    }

    @Test("A Flatpak caller acts as itself and ids below it; for any other id every app-owned method is AccessDenied naming both")
    func flatpakCaller() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let (other, widget, activity) = try await otherApp(fixture)
        defer { other.close() }
        let apps = "org.widgethost.Host1.Apps", widgets = "org.widgethost.Host1.Widgets"
        let own: [[String]] = [
            ["own", "org.example.Sandboxed"],
            ["call", Self.root, apps, "RegisterApp", "sa{sv}", "('org.example.Sandboxed', @a{sv} {})"],
            ["call", Self.root, widgets, "RegisterWidgets", "ss", #"('org.example.Sandboxed', '{"widgets":[{"kind":"S","families":["systemSmall"]}]}')"#],
            ["call", Self.root, apps, "RegisterApp", "sa{sv}", "('org.example.Sandboxed.Helper', {'protocol': <'freedesktop'>})"],
        ]
        let foreign = foreignSteps(widget: widget, activity: activity)
        let (rows, caller) = try await sandboxed(
            fixture, flatpakInfo: "[Application]\nname=org.example.Sandboxed\nruntime=runtime/org.gnome.Platform/x86_64/45\n",
            plan: own + foreign)
        defer { caller.stop() }
        for row in rows.prefix(own.count) { #expect(row["ok"] as? Bool == true, "\(row)") }
        for (row, step) in zip(rows.dropFirst(own.count), foreign) {
            #expect(row["error"] as? String == "org.widgethost.Host1.Error.AccessDenied", "\(step[3]): \(row)")
            let message = (row["message"] as? String) ?? ""
            #expect(message.contains("'org.example.Sandboxed'") && message.contains("'org.example.Other'"), "\(step[3]): \(message)")
        }
        // Nothing of the other app changed, and the registrations show what the kernel said.
        let listed = try await listApps(other.connection)
        #expect(listed["org.example.Other"]?["registered_by"] == .string(other.connection.uniqueName!))
        #expect(listed["org.example.Sandboxed"]?["sandbox"] == .string("flatpak"))
        #expect(listed["org.example.Sandboxed"]?["sandbox_app_id"] == .string("org.example.Sandboxed"))
        #expect(listed["org.example.Sandboxed.Helper"]?["sandbox_app_id"] == .string("org.example.Sandboxed"))
        #expect(try await other.connection.activityProperty(activity, "State") == .string("active"))
        let cli = try await fixture.cli(["apps"])
        #expect(cli.stdout.contains("flatpak:org.example.Sandboxed"), "\(cli)")
    }

    @Test("A Flatpak caller whose .flatpak-info is malformed is refused, never taken for unsandboxed")
    func malformedFlatpakInfo() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let register = ["call", Self.root, "org.widgethost.Host1.Apps", "RegisterApp", "sa{sv}", "('org.example.Any', {'protocol': <'freedesktop'>})"]
        for info in ["[Application\nname=org.example.Any\n", "[Instance]\ninstance-id=1\n", "[Application]\nname=not-an-id\n"] {
            let (rows, caller) = try await sandboxed(fixture, flatpakInfo: info, plan: [register])
            caller.stop()
            #expect(rows.first?["error"] as? String == "org.widgethost.Host1.Error.AccessDenied", "\(info): \(rows)")
            let message = rows.first.flatMap { $0["message"] as? String } ?? ""
            #expect(message.contains("flatpak-info"), "\(rows)")
        }
        let connection = try await fixture.connect()
        defer { connection.close() }
        #expect(try await listApps(connection)["org.example.Any"] == nil)
    }

    /// Where a test can make a cgroup, as snapd makes `snap.<name>.<app>.<uuid>.scope`: nil when it cannot (not root, or a read-only cgroupfs).
    static let cgroupHierarchy: String? = {
        for base in ["/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"] {
            let probe = base + "/widgethost-probe-\(getpid())"
            if mkdir(probe, 0o755) == 0 {
                rmdir(probe)
                return base
            }
        }
        return nil
    }()

    @Test("A Snap caller is known by its snap.<name>. cgroup", .enabled(if: cgroupHierarchy != nil, "needs a writable cgroup hierarchy"))
    func snapCaller() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let (other, widget, activity) = try await otherApp(fixture)
        defer { other.close() }
        let scope = Self.cgroupHierarchy! + "/snap.tapme.tapme-widgets.\(UUID().uuidString.prefix(8).lowercased()).scope"
        #expect(mkdir(scope, 0o755) == 0)
        defer { rmdir(scope) }
        let plan = [
            ["call", Self.root, "org.widgethost.Host1.Apps", "RegisterApp", "sa{sv}", "('tapme.Widgets', {'protocol': <'freedesktop'>})"],
        ] + foreignSteps(widget: widget, activity: activity).prefix(1)
        let script = repositoryRoot.appendingPathComponent("Tests/Fixtures/sandbox/caller.py").path
        let planText = String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self)
        // The process enters the cgroup before it connects, as a snap's app starts inside its scope.
        let caller = try fixture.launch("/bin/sh", ["-c", "echo $$ > \"$0/cgroup.procs\" && exec /usr/bin/python3 \"$1\" \"$2\"", scope, script, planText])
        defer { caller.stop() }
        let rows = try await results(of: caller, steps: plan.count)
        #expect(rows[0]["ok"] as? Bool == true, "\(rows[0])")
        #expect(rows[1]["error"] as? String == "org.widgethost.Host1.Error.AccessDenied", "\(rows[1])")
        let message = rows[1]["message"] as? String
        #expect(message?.contains("Snap app 'tapme'") == true, "\(rows[1])")
        let listed = try await listApps(other.connection)
        #expect(listed["tapme.Widgets"]?["sandbox"] == .string("snap"))
        #expect(listed["tapme.Widgets"]?["sandbox_app_id"] == .string("tapme"))
        caller.stop()
        await waitForExit(caller.process)
    }

    @Test("Surfaces and watch launch types from the desktop entry survive a registration that omits them")
    func entryDeclarationsSurvive() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let record = try fixture.installActivatable(
            "org.example.TapMe", script: "Tests/Fixtures/gapp/tapme_gapp.py", entry: "Tests/Fixtures/gapp/org.example.TapMe.desktop",
            extraKeys: "X-WidgetHost-LiveActivityLaunchTypes=\n", recordVariable: "WIDGETHOST_TEST_RECORD",
            settings: ["WIDGETHOST_TEST_LINGER": "20"])
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.TapMe", protocol: "freedesktop", schemes: ["tap-me-widget"])
        defer { app.close() }
        let listed = try #require(try await listApps(app.connection)["org.example.TapMe"])
        #expect(listed["source"] == .string("registration"))
        #expect(listed["live_activity_launch_types"] == .strings([]))
        #expect(listed["surfaces"] == .strings(["desktop", "lock-screen", "car"]))
        let activity = try await app.startActivity("AnyAttributes", Self.activity)
        let (watch, details) = try await app.connection.tapActivity(activity, "minimal", "", ["surface": .string("watch")])
        #expect(watch == "open-url", "\(details)")
        let (car, _) = try await app.connection.tapActivity(activity, "minimal", "", ["surface": .string("car")])
        #expect(car == "open-url")
        let opens = fixture.records(record).filter { $0["call"] as? String == "open" }
        #expect(opens.count == 2)
    }

    @Test("After a host restart, the app takes its id back from a connection that registered it first; that one gets AppUnregistered")
    func appTakesItsIDBack() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let first = try await AppPeer(fixture, appID: "org.example.TapMe", schemes: ["tap-me-widget"])
        try await first.registerWidgets(try exampleFile("tap-me/bundle.json"))
        let widget = try await first.connection.addWidget("org.example.TapMe", "TapMeWidget", "systemSmall")
        try await first.setContent(widget, Self.red)
        first.close()
        await fixture.stopHost()
        try await fixture.startHost()

        // Someone registers the id before the app does.
        let squatter = try await fixture.connect()
        defer { squatter.close() }
        let signals = SignalRecorder(try await squatter.signals(MatchRule(interface: "org.widgethost.Host1.Apps")))
        _ = try await squatter.host("RegisterApp", [.string("org.example.TapMe"), .vardict(["protocol": .string("freedesktop")])])
        #expect(try await listApps(squatter)["org.example.TapMe"]?["registered_by"] == .string(squatter.uniqueName!))

        // The app (owning its name) registers and takes over.
        let app = try await AppPeer(fixture, appID: "org.example.TapMe", schemes: ["tap-me-widget"])
        defer { app.close() }
        #expect(try await listApps(squatter)["org.example.TapMe"]?["registered_by"] == .string(app.connection.uniqueName!))
        let announced = await eventually {
            signals.events == ["AppRegistered org.example.TapMe", "AppUnregistered org.example.TapMe", "AppRegistered org.example.TapMe"]
        }
        #expect(announced, "signals: \(signals.events)")
        // The squatter holds nothing any more; the app does, and gets the taps.
        await expectHostError("AccessDenied", mentioning: "org.example.TapMe") {
            _ = try await squatter.call(
                destination: "org.widgethost.Host1", path: widget, interface: "org.widgethost.Host1.Widget", member: "SetContent", [.string(Self.red)])
        }
        try await app.setContent(widget, Self.red)
        let (outcome, _) = try await squatter.tap(widget, "label", ["activation_token": .string("t")])
        #expect(outcome == "open-url")
        #expect(app.calls.map(\.member) == ["OpenURL"])
    }
}
