import DBus
import Foundation
import PrivateBus
import Testing

/// What scripts and the documents rely on: a host of their own that leaves
/// nothing behind, a list of just their apps, and a wait for an app to be ready.
@Suite("The command line for scripts", .timeLimit(.minutes(2)))
struct CLITests {
    static let entry = """
        [Desktop Entry]
        Type=Application
        Name=Some app
        Exec=/usr/bin/false
        DBusActivatable=true

        """

    @Test("widget-host apps APP_ID… lists only those apps and the ones below them")
    func appsFilter() async throws {
        let fixture = try await HostFixture.make(desktopEntries: [
            "org.gnome.TextEditor.desktop": Self.entry, "org.example.One.desktop": Self.entry, "org.examples.Two.desktop": Self.entry,
        ])
        defer { fixture.stop() }
        try await fixture.startHost()
        let app = try await AppPeer(fixture, appID: "org.example.TapMe", schemes: ["tap-me-widget"])
        defer { app.close() }

        func ids(_ arguments: [String]) async throws -> [String] {
            let listed = try await fixture.cli(["apps"] + arguments)
            #expect(listed.succeeded, "\(listed)")
            return listed.stdout.split(separator: "\n").dropFirst().map { String($0.prefix { $0 != " " }) }
        }
        #expect(try await ids([]) == ["org.example.One", "org.example.TapMe", "org.examples.Two", "org.gnome.TextEditor"])
        // Whole elements: org.example takes org.example.One, never org.examples.Two.
        #expect(try await ids(["org.example"]) == ["org.example.One", "org.example.TapMe"])
        #expect(try await ids(["org.example."]) == ["org.example.One", "org.example.TapMe"])
        #expect(try await ids(["org.example.TapMe"]) == ["org.example.TapMe"])
        #expect(try await ids(["org.example.TapMe", "org.gnome"]) == ["org.example.TapMe", "org.gnome.TextEditor"])
        #expect(try await ids(["org.example.Tap"]) == [])

        let none = try await fixture.cli(["apps", "org.example.Nothing"])
        #expect(none.succeeded && none.stdout.hasPrefix("No apps match org.example.Nothing:"), "\(none)")
        let json = try await fixture.cli(["apps", "--json", "org.example.One"])
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(parsed.map { $0["app_id"] as? String } == ["org.example.One"])
        #expect(try await fixture.cli(["apps", "--json", "org.example.Nothing"]).stdout == "[]\n")

        let bad = try await fixture.cli(["apps", "not an id"])
        #expect(bad.status == 64 && bad.stderr.contains("'not an id' is neither an app id nor the start of one"), "\(bad)")
        // The man page is made from --help: the filter is there.
        let help = try await fixture.cli(["apps", "--help"])
        #expect(help.stdout.contains("[<app-id> ...]") && help.stdout.contains("List only these apps"), "\(help.stdout)")
    }

    @Test("widget-host wait returns once the app has registered, published its kinds, placed widgets with content and started activities")
    func waitsForTheApp() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        try await fixture.startHost()
        let waiting = try fixture.launch(
            buildDirectory + "/widget-host", ["wait", "org.example.Late", "--kinds", "--widgets", "1", "--activities", "1", "--timeout", "30"])
        defer { waiting.stop() }
        func stillWaiting() async throws -> Bool {
            try await Task.sleep(for: .milliseconds(400))
            return waiting.process.isRunning
        }
        #expect(try await stillWaiting(), "\(waiting.printed())")
        let app = try await AppPeer(fixture, appID: "org.example.Late", protocol: "freedesktop")
        defer { app.close() }
        #expect(try await stillWaiting(), "registered, without kinds: \(waiting.printed())")
        try await app.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        #expect(try await stillWaiting(), "kinds, no widget: \(waiting.printed())")
        let widget = try await app.connection.addWidget("org.example.Late", "K", "systemSmall")
        #expect(try await stillWaiting(), "a widget without content: \(waiting.printed())")
        try await app.setContent(widget, #"{"type":"text","text":"hi"}"#)
        #expect(try await stillWaiting(), "no activity: \(waiting.printed())")
        _ = try await app.startActivity("Delivery", try exampleFile("delivery/activity.json"))
        #expect(await eventually(timeout: 10) { !waiting.process.isRunning }, "\(waiting.printed())")
        #expect(waiting.process.terminationStatus == 0 && waiting.printed().isEmpty, "\(waiting.printed())")

        // What is missing, when the time is up, with the status of a failure.
        let kindless = try await AppPeer(fixture, appID: "org.example.Kindless", protocol: "freedesktop")
        defer { kindless.close() }
        for (arguments, message) in [
            (["org.example.Never"], "org.example.Never has not registered after 0.3 s"),
            (["org.example.Kindless", "--kinds"], "org.example.Kindless has registered but published no widget kinds (RegisterWidgets) after 0.3 s"),
            (["org.example.Late", "--widgets", "2"], "org.example.Late has 1 widget with content, not 2 after 0.3 s"),
            (["org.example.Kindless", "--activities", "1"], "org.example.Kindless has 0 Live Activities going, not 1 after 0.3 s"),
        ] {
            let late = try await fixture.cli(["wait"] + arguments + ["--timeout", "0.3"])
            #expect(late.status == 1 && late.stderr.contains(message), "\(late)")
        }
        // An app that has gone counts as not registered, though the host may not have heard yet.
        kindless.close()
        let gone = try await fixture.cli(["wait", "org.example.Kindless", "--timeout", "0.3"])
        #expect(gone.status == 1, "\(gone)")
        let bad = try await fixture.cli(["wait", "org.example.Late", "--timeout", "0"])
        #expect(bad.status == 64 && bad.stderr.contains("--timeout must be a positive number of seconds"), "\(bad)")
    }

    @Test("widget-hostd --ephemeral keeps its state in a folder of its own, removed when it stops")
    func ephemeral() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let runtime = fixture.root.appendingPathComponent("runtime")
        func folders() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: runtime.path).filter { $0.hasPrefix("widgethost-ephemeral-") }
        }
        for _ in 0..<2 {
            try await fixture.startHost(["--ephemeral"], environment: ["XDG_RUNTIME_DIR": runtime.path])
            // Every start begins with nothing placed.
            let before = try await fixture.cli(["widgets"])
            #expect(before.stdout == "No widgets placed.\n", "\(before)")
            let app = try await AppPeer(fixture, appID: "org.example.Brief", protocol: "freedesktop")
            try await app.registerWidgets(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
            _ = try await app.connection.addWidget("org.example.Brief", "K", "systemSmall")
            app.close()
            let held = try folders()
            #expect(held.count == 1)
            #expect(FileManager.default.fileExists(atPath: runtime.appendingPathComponent("\(held.first ?? "?")/journal").path))
            await fixture.stopHost()
            #expect(try folders() == [], "the ephemeral state stays after the host stopped")
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.stateDirectory.path), "the host wrote to its usual state directory")

        let both = try await runCommand(
            buildDirectory + "/widget-hostd", ["--ephemeral", "--state-dir", runtime.path], environment: fixture.environment)
        #expect(both.status == 64 && both.stderr.contains("--ephemeral and --state-dir exclude each other"), "\(both)")
    }
}
