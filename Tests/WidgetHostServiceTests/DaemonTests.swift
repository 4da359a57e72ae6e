import DBus
import Foundation
import PrivateBus
import Testing
import WidgetHostKit

@Suite("widget-hostd", .timeLimit(.minutes(2)))
struct DaemonTests {
    @Test("What the running host introspects equals dbus/*.xml (checked by busctl and Python's XML parser)")
    func introspectionEqualsInterfaceFiles() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let introspected = try await fixture.busctl(["introspect", "--xml-interface", "org.widgethost.Host1", "/org/widgethost/Host1"])
        #expect(introspected.succeeded, "\(introspected.stderr)")
        // Interfaces of the root, and of each kind of object below it.
        let perObject = ["org.widgethost.Host1.Widget.xml": "widget", "org.widgethost.Host1.LiveActivity.xml": "activity"]
        let hostFiles = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("dbus").path)
            .filter { $0.hasPrefix("org.widgethost.Host1.") && $0.hasSuffix(".xml") }.sorted()
        #expect(hostFiles.count >= 3)
        try await compare(fixture, introspected.stdout, hostFiles.filter { perObject[$0] == nil })

        let app = try await AppPeer(fixture, appID: "org.example.Introspected")
        defer { app.close() }
        try await app.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        let widget = try await app.connection.addWidget("org.example.Introspected", "K", "systemSmall")
        let object = try await fixture.busctl(["introspect", "--xml-interface", "org.widgethost.Host1", widget])
        try await compare(fixture, object.stdout, hostFiles.filter { perObject[$0] == "widget" })
        let activity = try await app.startActivity("Delivery", try exampleFile("delivery/activity.json"))
        let activityObject = try await fixture.busctl(["introspect", "--xml-interface", "org.widgethost.Host1", activity])
        try await compare(fixture, activityObject.stdout, hostFiles.filter { perObject[$0] == "activity" })
        // The doc annotations travel with the interface.
        #expect(introspected.stdout.contains("org.gtk.GDBus.DocString"))
        // The standard interfaces are there too, and ObjectManager at the root.
        for interface in ["Introspectable", "Properties", "Peer", "ObjectManager"] {
            #expect(introspected.stdout.contains("org.freedesktop.DBus.\(interface)"))
        }
        // The app-side interface is not served by the host.
        #expect(!introspected.stdout.contains("interface name=\"org.widgethost.App1\""))
        // Inner nodes introspect with their children.
        let parent = try await fixture.busctl(["introspect", "--xml-interface", "org.widgethost.Host1", "/org/widgethost"])
        #expect(parent.stdout.contains("<node name=\"Host1\"/>"), "\(parent.stdout)")
    }

    func compare(_ fixture: HostFixture, _ xml: String, _ files: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let file = fixture.root.appendingPathComponent("introspected-\(UUID().uuidString.prefix(6)).xml")
        try xml.write(to: file, atomically: true, encoding: .utf8)
        let compared = try await runCommand(
            "/usr/bin/python3",
            [repositoryRoot.appendingPathComponent("Tests/Fixtures/compare_introspection.py").path, file.path]
                + files.map { repositoryRoot.appendingPathComponent("dbus/\($0)").path })
        #expect(compared.stdout.contains("equal") && compared.succeeded, "\(compared.stdout)\(compared.stderr)", sourceLocation: sourceLocation)
    }

    @Test("An idle widget-hostd uses almost no CPU and wakes almost never (disabled watches cost nothing, timers do not spin)")
    func idleCost() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let pid = try #require(fixture.hostProcess?.processIdentifier)
        // Some work first, so every part of the loop has run: a burst of
        // updates has announcements held to a frame's end (docs/daemon.md#updates).
        let app = try await AppPeer(fixture, appID: "org.example.Idle")
        try await app.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        let widget = try await app.connection.addWidget("org.example.Idle", "K", "systemSmall")
        for n in 0..<20 { try await app.setContent(widget, #"{"type":"text","text":"\#(n)"}"#) }
        try await Task.sleep(for: .milliseconds(300))
        func ticks() throws -> Int {
            // utime + stime, fields 14 and 15 of /proc/PID/stat, in clock ticks (1/100 s).
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
            return Int(fields[11])! + Int(fields[12])!
        }
        /// Times the host's threads were put to sleep and woken, all of them together.
        func switches() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").reduce(0) { sum, thread in
                let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8)) ?? ""
                return sum + status.split(separator: "\n").filter { $0.hasPrefix("voluntary_ctxt_switches:") }
                    .compactMap { Int($0.split(separator: "\t").last ?? "") }.reduce(0, +)
            }
        }
        let before = try ticks(), woken = try switches()
        try await Task.sleep(for: .seconds(3))
        let used = try ticks() - before, wakeups = try switches() - woken
        #expect(used <= 3, "widget-hostd used \(used * 10) ms of CPU in 3 s of idling")
        // A timer left armed with nothing to do would wake it every frame: some 190 times in 3 s.
        #expect(wakeups <= 10, "widget-hostd's threads woke \(wakeups) times in 3 s of idling")
        app.close()
    }

    @Test("The standard interfaces answer busctl: Peer.Ping, GetManagedObjects, unknown objects")
    func standardInterfaces() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let ping = try await fixture.busctl(["call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.freedesktop.DBus.Peer", "Ping"])
        #expect(ping.succeeded, "\(ping.stderr)")
        let managed = try await fixture.busctl(
            ["call", "org.widgethost.Host1", "/org/widgethost/Host1", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"])
        #expect(managed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "a{oa{sa{sv}}} 0", "\(managed.stdout)\(managed.stderr)")
        let unknown = try await fixture.gdbus([
            "call", "--session", "--dest", "org.widgethost.Host1", "--object-path", "/org/widgethost/Host1/nothing",
            "--method", "org.widgethost.Host1.Apps.ListApps",
        ])
        #expect(unknown.stderr.contains("org.freedesktop.DBus.Error.UnknownObject"), "\(unknown.stderr)")
    }

    @Test("The service file starts the host by D-Bus activation on a plain ListApps call")
    func activation() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        // The packaged service file, pointed at the built daemon.
        let packaged = try String(
            contentsOf: repositoryRoot.appendingPathComponent("packaging/org.widgethost.Host1.service"), encoding: .utf8)
        #expect(packaged.contains("Name=org.widgethost.Host1"))
        #expect(packaged.contains("SystemdService=widget-hostd.service"))
        let exec = try #require(packaged.split(separator: "\n").first { $0.hasPrefix("Exec=") })
        #expect(exec.dropFirst(5).hasPrefix("/"), "Exec= must be absolute")
        let local = packaged.replacingOccurrences(of: String(exec), with: "Exec=\(buildDirectory)/widget-hostd --log-level debug")
        try local.write(
            to: fixture.bus.serviceDirectory.appendingPathComponent("org.widgethost.Host1.service"), atomically: true,
            encoding: .utf8)

        let connection = try await fixture.connect()
        defer { connection.close() }
        #expect(try await connection.nameOwner("org.widgethost.Host1") == nil)
        let result = try await fixture.callHost("org.widgethost.Host1.Apps.ListApps")
        #expect(result.succeeded, "\(result.stderr)")
        #expect(result.stdout.contains("@a(sa{sv}) []"), "\(result.stdout)")
        #expect(try await connection.nameOwner("org.widgethost.Host1") != nil)
        // Activated, it stays up and keeps serving.
        let again = try await fixture.cli(["apps", "--json"])
        #expect(again.succeeded && again.stdout == "[]\n", "\(again.stdout)\(again.stderr)")
        // Stop the activated host so the bus can go.
        let pid = try await connection.credentials(of: "org.widgethost.Host1").processID
        if let pid { kill(pid_t(pid), SIGTERM) }
    }

    @Test("--version prints each program's name and the version; the one binary called widget-hostd is the daemon")
    func versions() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("widgethost-version-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // As the package installs it: widget-hostd is a link to widget-host.
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/widget-hostd", withDestinationPath: buildDirectory + "/widget-host")
        for (program, name) in [
            (buildDirectory + "/widget-host", "widget-host"), (buildDirectory + "/widget-hostd", "widget-hostd"), (dir.path + "/widget-hostd", "widget-hostd"),
        ] {
            let result = try await runCommand(program, ["--version"])
            #expect(result.succeeded && result.stdout == "\(name) \(WidgetHostVersion.current)\n", "\(program): \(result)")
        }
    }

    @Test("widget-host apps prints a table and JSON; with no host it says so")
    func cli() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let none = try await fixture.cli(["apps"])
        #expect(none.status == 1)
        #expect(none.stderr.contains("no WidgetHost service"), "\(none.stderr)")

        try await fixture.startHost()
        // Nothing known yet: an empty JSON array, as every JSON parser and jq read it.
        for command in ["apps", "bundles", "widgets", "activities"] {
            let empty = try await fixture.cli([command, "--json"])
            #expect(empty.succeeded && empty.stdout == "[]\n", "\(command) --json: \(empty.stdout)\(empty.stderr)")
        }
        let app = try await fixture.connect()
        defer { app.close() }
        #expect(try await app.requestName("org.example.TapMe") == .primaryOwner)
        _ = try await app.host(
            "RegisterApp", [.string("org.example.TapMe"), .vardict(["schemes": .strings(["tap-me-widget"]), "surfaces": .strings(["car"])])])
        let table = try await fixture.cli(["apps"])
        #expect(table.succeeded, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(lines.first == ["APP", "ID", "PROTOCOL", "SOURCE", "REGISTERED-BY", "SANDBOX", "SCHEMES", "SURFACES"])
        #expect(lines.dropFirst().first == ["org.example.TapMe", "widgethost", "registration", app.uniqueName!, "none", "tap-me-widget", "car"])

        let json = try await fixture.cli(["apps", "--json"])
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(parsed.count == 1)
        #expect(parsed.first?["app_id"] as? String == "org.example.TapMe")
        #expect(parsed.first?["schemes"] as? [String] == ["tap-me-widget"])
        #expect(parsed.first?["registered"] as? Bool == true)
        // Stable text: keys sorted, two spaces a level, the same on every run.
        #expect(json.stdout.hasPrefix("[\n  {\n    \"app_id\": \"org.example.TapMe\",\n"), "\(json.stdout)")
        #expect(try await fixture.cli(["apps", "--json"]).stdout == json.stdout)

        let noBus = try await runCommand(
            buildDirectory + "/widget-host", ["apps", "--address", "unix:path=/nonexistent/bus"], environment: fixture.environment)
        #expect(noBus.status == 1)
        #expect(noBus.stderr.contains("cannot connect"), "\(noBus.stderr)")
    }

    @Test("SIGTERM stops the host gracefully; losing the bus makes it exit non-zero; a taken name is refused")
    func lifecycle() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let host = try #require(fixture.hostProcess)

        // A second daemon on the same bus refuses to start.
        let elsewhere = fixture.root.appendingPathComponent("other-state").path
        let second = try await runCommand(
            buildDirectory + "/widget-hostd", ["--state-dir", elsewhere], environment: fixture.environment, timeout: 20)
        #expect(second.status == 1)
        #expect(second.stderr.contains("already owned"), "\(second.stderr)")
        // So does one that would share the first one's state directory, before touching it.
        let journal = try Data(contentsOf: fixture.stateDirectory.appendingPathComponent("journal"))
        let sharing = try await runCommand(buildDirectory + "/widget-hostd", [], environment: fixture.environment, timeout: 20)
        #expect(sharing.status == 1)
        #expect(sharing.stderr.contains("is in use by another widget-hostd (process \(host.processIdentifier))"), "\(sharing.stderr)")
        #expect(try Data(contentsOf: fixture.stateDirectory.appendingPathComponent("journal")) == journal)

        host.terminate()
        await waitForExit(host)
        #expect(host.terminationStatus == 0, "\(fixture.log)")
        #expect(fixture.log.contains("widget-hostd stopped"))

        // Restart, then take the bus away.
        try await fixture.startHost()
        let again = try #require(fixture.hostProcess)
        fixture.bus.stop()
        await waitForExit(again)
        #expect(again.terminationStatus == 1)
        #expect(fixture.log.contains("lost the connection"), "\(fixture.log)")
    }
}
