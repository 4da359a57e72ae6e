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
