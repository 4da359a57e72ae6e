import DBus
import Foundation
import Testing

@Suite("Apps.OpenURL", .timeLimit(.minutes(2)))
struct OpenURLTests {
    @Test("Routes by scheme: the mimeapps.list default, else the first installed app declaring it, else the earliest live registration")
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

        // Registering a scheme an installed app handles captures nothing.
        let gamma = try await AppPeer(fixture, appID: "org.example.Gamma", schemes: ["shared", "live-only"])
        let delta = try await AppPeer(fixture, appID: "org.example.Delta", schemes: ["shared", "live-only"])
        defer { [gamma, delta].forEach { $0.close() } }
        #expect(try await open("SHARED://three") == "org.example.Beta")
        #expect(gamma.calls.isEmpty && delta.calls.isEmpty)
        // A scheme no installed entry declares goes to the earliest live registration.
        #expect(try await open("LIVE-ONLY://three") == "org.example.Gamma")
        #expect(gamma.calls.map(\.member) == ["OpenURL"])
        #expect(gamma.calls.first?.args.first == .string("LIVE-ONLY://three"))
        #expect(delta.calls.isEmpty)

        await expectHostError("UnknownApp", mentioning: "nobody") { _ = try await open("nobody://x") }

        // https: a browser's entry (not D-Bus-activatable, so not an app the host
        // delivers to) declares it, and a process registers it: the process gets nothing.
        try "[Desktop Entry]\nType=Application\nName=Browser\nExec=browser %u\nMimeType=text/html;x-scheme-handler/https;\n".write(
            to: fixture.dataDir.appendingPathComponent("applications/browser.desktop"), atomically: true, encoding: .utf8)
        _ = try await caller.host("Reload")
        let evil = try await AppPeer(fixture, appID: "org.example.Evil", schemes: ["https"])
        defer { evil.close() }
        await expectHostError("UnknownApp", mentioning: "https") { _ = try await open("https://bank.example/login") }
        #expect(evil.calls.isEmpty)
        // With an installed, activatable app declaring it, that app gets the URL.
        try "[Desktop Entry]\nType=Application\nName=Alpha\nDBusActivatable=true\nMimeType=x-scheme-handler/shared;x-scheme-handler/https;\n".write(
            to: fixture.dataHome.appendingPathComponent("applications/org.example.Alpha.desktop"), atomically: true, encoding: .utf8)
        _ = try await caller.host("Reload")
        #expect(try await open("https://bank.example/login") == "org.example.Alpha")
        #expect(opened("org.example.Alpha").contains("https://bank.example/login"))
        #expect(evil.calls.isEmpty)
        await expectHostError("InvalidArgument", mentioning: "absolute") { _ = try await open("not a url") }
        await expectHostError("InvalidArgument", mentioning: "colour") { _ = try await open("shared://x", ["colour": .string("red")]) }
    }
}
