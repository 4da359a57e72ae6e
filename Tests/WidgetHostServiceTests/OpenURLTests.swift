import DBus
import Foundation
import Testing

@Suite("Apps.OpenURL", .timeLimit(.minutes(2)))
struct OpenURLTests {
    @Test("Routes by scheme: earliest live registration, else the mimeapps.list default, else the first app id")
    func routing() async throws {
        let fixture = try await HostFixture.make()
        defer { fixture.stop() }
        let script = repositoryRoot.appendingPathComponent("Tests/Fixtures/gapp/tapme_gapp.py").path
        var records: [String: String] = [:]
        for id in ["org.example.Alpha", "org.example.Beta"] {
            let record = fixture.root.appendingPathComponent("\(id).jsonl").path
            records[id] = record
            try "[Desktop Entry]\nType=Application\nName=\(id)\nDBusActivatable=true\nMimeType=x-scheme-handler/shared;\n".write(
                to: fixture.dataHome.appendingPathComponent("applications/\(id).desktop"), atomically: true, encoding: .utf8)
            try fixture.bus.installService(
                name: id,
                exec: "/usr/bin/env WIDGETHOST_TEST_RECORD=\(record) WIDGETHOST_TEST_LINGER=20 /usr/bin/python3 \(script) \(id) --gapplication-service")
        }
        try await fixture.startHost()
        let caller = try await fixture.connect()
        defer { caller.close() }
        func open(_ url: String, _ options: [String: DBusValue] = [:]) async throws -> String {
            try await caller.host("OpenURL", [.string(url), .vardict(options)]).first?.stringValue ?? ""
        }
        func opened(_ id: String) -> String {
            (try? String(contentsOfFile: records[id]!, encoding: .utf8)) ?? ""
        }

        // No registration, no default: the app id that sorts first.
        #expect(try await open("shared://one", ["activation_token": .string("tok")]) == "org.example.Alpha")
        #expect(opened("org.example.Alpha").contains("shared://one"))
        #expect(opened("org.example.Alpha").contains("'tok'"))

        // A mimeapps.list default picks Beta.
        try "[Default Applications]\nx-scheme-handler/shared=org.example.Beta.desktop;\n".write(
            to: fixture.root.appendingPathComponent("config/mimeapps.list"), atomically: true, encoding: .utf8)
        #expect(try await open("shared://two") == "org.example.Beta")
        #expect(opened("org.example.Beta").contains("shared://two"))

        // Live registrations come first, the earliest of them.
        let gamma = try await AppPeer(fixture, appID: "org.example.Gamma", schemes: ["shared"])
        let delta = try await AppPeer(fixture, appID: "org.example.Delta", schemes: ["shared"])
        defer { [gamma, delta].forEach { $0.close() } }
        #expect(try await open("SHARED://three") == "org.example.Gamma")
        #expect(gamma.calls.map(\.member) == ["OpenURL"])
        #expect(gamma.calls.first?.args.first == .string("SHARED://three"))
        #expect(delta.calls.isEmpty)

        await expectHostError("UnknownApp", mentioning: "nobody") { _ = try await open("nobody://x") }
        await expectHostError("InvalidArgument", mentioning: "absolute") { _ = try await open("not a url") }
        await expectHostError("InvalidArgument", mentioning: "colour") { _ = try await open("shared://x", ["colour": .string("red")]) }
    }
}
