import DBus
import Foundation
import Testing

/// Each example app ships a desktop entry and a D-Bus service file (as
/// templates naming `@EXAMPLES@`), filled in and installed as the README says:
/// a URL of the app's scheme then starts the app by D-Bus activation, and the
/// started app does its work on the host.
@Suite("Example apps start by D-Bus activation", .timeLimit(.minutes(2)))
struct ExampleActivationTests {
    struct Example: Sendable, CustomStringConvertible {
        var appID: String
        var folder: String
        var url: String
        var description: String { appID }
    }

    static let examples = [
        Example(appID: "org.example.TapMe", folder: "tap-me", url: "tap-me-widget://show-red"),
        Example(appID: "org.example.EmojiRangers", folder: "emoji-rangers", url: "emoji-rangers://hero/spouty"),
        Example(appID: "org.example.Delivery", folder: "delivery", url: "delivery-tracker://order/1234"),
    ]

    /// The template filled in as the README's `sed "s|@EXAMPLES@|$PWD/examples|"` does.
    static func filled(_ example: Example, _ suffix: String) throws -> String {
        try exampleFile("\(example.folder)/\(example.appID).\(suffix).in")
            .replacingOccurrences(of: "@EXAMPLES@", with: repositoryRoot.appendingPathComponent("examples").path)
    }

    @Test("The desktop entry and the service file start the app when a URL of its scheme is opened", arguments: examples)
    func startsByActivation(_ example: Example) async throws {
        let entry = try Self.filled(example, "desktop")
        #expect(entry.contains("\nDBusActivatable=true\n"))
        let service = try Self.filled(example, "service")
        #expect(service.hasPrefix("[D-BUS Service]\nName=\(example.appID)\nExec=/usr/bin/python3 /"), "\(service)")
        #expect(service.contains(" --gapplication-service\n"))
        let fixture = try await HostFixture.make(desktopEntries: ["\(example.appID).desktop": entry])
        defer { fixture.stop() }
        try service.write(to: fixture.bus.serviceDirectory.appendingPathComponent("\(example.appID).service"), atomically: true, encoding: .utf8)
        try await fixture.startHost()
        let connection = try await fixture.connect()
        defer { connection.close() }

        let known = try #require(try await listApps(connection)[example.appID])
        #expect(known["source"] == .string("desktop-entry"))
        #expect(try await connection.nameOwner(example.appID) == nil)
        let opened = try await connection.host("OpenURL", [.string(example.url), .vardict([:])])
        #expect(opened.first?.stringValue == example.appID)
        #expect(try await connection.nameOwner(example.appID) != nil)
        // The started app registered, then did what it does at start: it answers
        // taps meanwhile, so its widgets or its activity come in their own time.
        let registered = await eventually { (try? await listApps(connection)[example.appID]?["source"]) == .string("registration") }
        #expect(registered)
        let expected = ["tap-me": 5, "delivery": 1][example.folder] ?? 0
        var objects = -1
        let started = await eventually {
            let reply = try? await connection.call(
                destination: "org.widgethost.Host1", path: "/org/widgethost/Host1", interface: "org.freedesktop.DBus.ObjectManager",
                member: "GetManagedObjects")
            objects = reply?.first?.stringKeyedEntries?.count ?? -1
            return objects == expected
        }
        #expect(started, "\(example.appID) has \(expected) objects once started (Tap Me its five widgets, Delivery its activity): \(objects)")
    }
}
