import Testing
@testable import WidgetHostCore
import WidgetHostSystem

private func discovered(_ id: String, schemes: [String] = []) -> DiscoveredApp {
    var options = AppOptions(defaultsFor: id, appProtocol: .freedesktop)
    options.schemes = schemes
    return DiscoveredApp(entry: DesktopEntry(id: id, path: "/apps/\(id).desktop", name: id, dbusActivatable: true), options: options)
}

@Suite struct AppRegistryTests {
    @Test func registerAndUpdate() throws {
        var r = AppRegistry()
        #expect(try r.register(appID: "org.a.A", owner: ":1.5", options: ["schemes": .strings(["a"])], ownsName: true) == .registered)
        let first = try #require(r.app("org.a.A"))
        #expect(first.registeredBy == ":1.5")
        #expect(first.isRegistered)
        #expect(first.options.schemes == ["a"])
        #expect(first.options.appProtocol == .widgethost)
        #expect(first.desktopEntry == nil)

        #expect(try r.register(appID: "org.b.B", owner: ":1.6", options: [:], ownsName: true) == .registered)
        #expect(try r.register(appID: "org.a.A", owner: ":1.5", options: ["schemes": .strings(["b"])], ownsName: true) == .updated)
        let updated = try #require(r.app("org.a.A"))
        #expect(updated.options.schemes == ["b"])
        #expect(updated.registeredSequence == first.registeredSequence)
        #expect(try #require(r.app("org.b.B")?.registeredSequence) > (first.registeredSequence ?? .max))
    }

    @Test func secondOwnerIsDenied() throws {
        var r = AppRegistry()
        try r.register(appID: "org.a.A", owner: ":1.5", options: [:], ownsName: true)
        expectHostError(.accessDenied, mentioning: ["'org.a.A'", ":1.5", "UnregisterApp", "disconnect"]) {
            try r.register(appID: "org.a.A", owner: ":1.9", options: ["protocol": .string("freedesktop")], ownsName: false)
        }
        #expect(r.app("org.a.A")?.registeredBy == ":1.5")
    }

    @Test func invalidRegistrationsChangeNothing() {
        var r = AppRegistry()
        expectHostError(.invalidArgument, mentioning: ["'Nope'"]) {
            try r.register(appID: "Nope", owner: ":1.5", options: [:], ownsName: true)
        }
        expectHostError(.invalidArgument, mentioning: ["'bogus'"]) {
            try r.register(appID: "org.a.A", owner: ":1.5", options: ["bogus": .bool(true)], ownsName: true)
        }
        #expect(r.apps == [])
        #expect(r.registrations(of: ":1.5") == [])
    }

    @Test func unregisterRules() throws {
        var r = AppRegistry()
        expectHostError(.unknownApp, mentioning: ["'org.a.A'", "not registered", "RegisterApp"]) {
            try r.unregister(appID: "org.a.A", caller: ":1.5")
        }
        expectHostError(.invalidArgument, mentioning: ["'bad'"]) {
            try r.unregister(appID: "bad", caller: ":1.5")
        }
        try r.register(appID: "org.a.A", owner: ":1.5", options: [:], ownsName: true)
        expectHostError(.accessDenied, mentioning: ["'org.a.A'", ":1.5", "only that connection"]) {
            try r.unregister(appID: "org.a.A", caller: ":1.7")
        }
        try r.unregister(appID: "org.a.A", caller: ":1.5")
        #expect(r.app("org.a.A") == nil)
        // Now someone else may register it.
        #expect(try r.register(appID: "org.a.A", owner: ":1.7", options: [:], ownsName: true) == .registered)
    }

    @Test func unregisterOfADiscoveredOnlyAppIsUnknown() {
        var r = AppRegistry()
        r.replaceDiscovered(DesktopScan(apps: [discovered("org.d.D")]))
        expectHostError(.unknownApp, mentioning: ["'org.d.D'"]) {
            try r.unregister(appID: "org.d.D", caller: ":1.5")
        }
        #expect(r.app("org.d.D") != nil)
    }

    @Test func connectionClosed() throws {
        var r = AppRegistry()
        try r.register(appID: "org.z.Z", owner: ":1.5", options: [:], ownsName: true)
        try r.register(appID: "org.a.A", owner: ":1.5", options: [:], ownsName: true)
        try r.register(appID: "org.m.M", owner: ":1.6", options: [:], ownsName: true)
        #expect(r.registrations(of: ":1.5") == ["org.a.A", "org.z.Z"])
        #expect(r.connectionClosed(":1.5") == ["org.a.A", "org.z.Z"])
        #expect(r.connectionClosed(":1.5") == [])
        #expect(r.apps.map(\.id) == ["org.m.M"])
        #expect(try r.register(appID: "org.a.A", owner: ":1.8", options: [:], ownsName: true) == .registered)
    }

    @Test func listingMergesDiscovered() throws {
        var r = AppRegistry()
        r.replaceDiscovered(DesktopScan(apps: [discovered("org.b.B", schemes: ["b"]), discovered("org.d.D")], warnings: ["w"]))
        #expect(r.scanWarnings == ["w"])
        try r.register(appID: "org.b.B", owner: ":1.5", options: ["schemes": .strings(["live"])], ownsName: true)
        try r.register(appID: "org.a.A", owner: ":1.5", options: [:], ownsName: true)
        let apps = r.apps
        #expect(apps.map(\.id) == ["org.a.A", "org.b.B", "org.d.D"])
        #expect(apps[1].options.schemes == ["live"])
        // The registration left the protocol out, so it keeps the entry's.
        #expect(apps[1].options.appProtocol == .freedesktop)
        #expect(apps[1].registeredBy == ":1.5")
        #expect(apps[1].desktopEntry?.path == "/apps/org.b.B.desktop")
        #expect(apps[2].registeredBy == nil)
        #expect(apps[2].registeredSequence == nil)
        #expect(apps[2].options.appProtocol == .freedesktop)

        _ = r.connectionClosed(":1.5")
        #expect(r.apps.map(\.id) == ["org.b.B", "org.d.D"])
        #expect(r.app("org.b.B")?.options.schemes == ["b"])
        #expect(r.app("org.b.B")?.registeredBy == nil)

        r.replaceDiscovered(DesktopScan())
        #expect(r.apps == [])
        #expect(r.scanWarnings == [])
    }

    @Test func registrationLimit() throws {
        var r = AppRegistry(maxRegistrationsPerConnection: 2)
        try r.register(appID: "org.a.A", owner: ":1.5", options: [:], ownsName: true)
        try r.register(appID: "org.b.B", owner: ":1.5", options: [:], ownsName: true)
        #expect(try r.register(appID: "org.b.B", owner: ":1.5", options: [:], ownsName: true) == .updated)
        expectHostError(.limitExceeded, mentioning: [":1.5", "'org.c.C'", "UnregisterApp"]) {
            try r.register(appID: "org.c.C", owner: ":1.5", options: [:], ownsName: true)
        }
        #expect(try r.register(appID: "org.c.C", owner: ":1.6", options: [:], ownsName: true) == .registered)
    }
}

@Suite struct RoutingTests {
    @Test func earliestLiveRegistrationWins() throws {
        var r = AppRegistry()
        r.replaceDiscovered(DesktopScan(apps: [discovered("org.a.Disc", schemes: ["other"])]))
        try r.register(appID: "org.z.Early", owner: ":1.1", options: ["schemes": .strings(["tap"])], ownsName: true)
        try r.register(appID: "org.b.Late", owner: ":1.2", options: ["schemes": .strings(["TAP"])], ownsName: true)
        #expect(r.route(scheme: "tap", mimeDefaults: [])?.id == "org.z.Early")
        // The user's default (a known app) outranks every live claim.
        #expect(r.route(scheme: "tap", mimeDefaults: ["org.a.Disc"])?.id == "org.a.Disc")
        // Re-registering keeps the place in line.
        try r.register(appID: "org.z.Early", owner: ":1.1", options: ["schemes": .strings(["other", "tap"])], ownsName: true)
        #expect(r.route(scheme: "Tap", mimeDefaults: [])?.id == "org.z.Early")
        try r.unregister(appID: "org.z.Early", caller: ":1.1")
        #expect(r.route(scheme: "tap", mimeDefaults: [])?.id == "org.b.Late")
        // A new registration comes after the existing one.
        try r.register(appID: "org.z.Early", owner: ":1.1", options: ["schemes": .strings(["tap"])], ownsName: true)
        #expect(r.route(scheme: "tap", mimeDefaults: [])?.id == "org.b.Late")
        // Installed handlers outrank runtime claims.
        r.replaceDiscovered(DesktopScan(apps: [discovered("org.a.Disc", schemes: ["tap"])]))
        #expect(r.route(scheme: "tap", mimeDefaults: [])?.id == "org.a.Disc")
    }

    @Test func noCaptureOfAnInstalledScheme() throws {
        var r = AppRegistry()
        var scan = DesktopScan()
        scan.installedHandlers = ["https": ["firefox"]]   // a browser's entry, not D-Bus-activatable
        r.replaceDiscovered(scan)
        try r.register(appID: "org.e.Evil", owner: ":1.1", options: ["schemes": .strings(["https", "evil"])], ownsName: true)
        #expect(r.route(scheme: "HTTPS", mimeDefaults: []) == nil)
        #expect(r.route(scheme: "evil", mimeDefaults: [])?.id == "org.e.Evil")
    }

    @Test("a live app whose installed entry is not D-Bus-activatable still gets its declared scheme, before any other claim")
    func installedButNotActivatable() throws {
        var r = AppRegistry()
        var scan = DesktopScan()
        scan.installedHandlers = ["note": ["org.example.Notes"]]
        r.replaceDiscovered(scan)
        try r.register(appID: "org.a.Claims", owner: ":1.1", options: ["schemes": .strings(["note"])], ownsName: true)
        #expect(r.route(scheme: "note", mimeDefaults: []) == nil, "the installed app is not running: no one else takes it")
        try r.register(appID: "org.example.Notes", owner: ":1.2", options: [:], ownsName: true)
        #expect(r.route(scheme: "note", mimeDefaults: [])?.id == "org.example.Notes")
    }

    @Test func scanRecordsEveryInstalledScheme() throws {
        let t = try TempTree()
        try t.write("sys1/share/applications/browser.desktop", "[Desktop Entry]\nType=Application\nName=B\nExec=b %u\nMimeType=x-scheme-handler/HTTPS;text/html;\n")
        try t.write("sys1/share/applications/gone.desktop", "[Desktop Entry]\nType=Application\nName=G\nHidden=true\nMimeType=x-scheme-handler/gone;\n")
        try t.write("sys1/share/applications/org.example.Viewer.desktop", activatableEntry(name: "V", extra: "MimeType=x-scheme-handler/tap;"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.installedSchemes == ["https", "tap"])
        #expect(scan.installedHandlers == ["https": ["browser"], "tap": ["org.example.Viewer"]])
        #expect(scan.apps.map(\.id) == ["org.example.Viewer"])
    }

    @Test func mimeDefaultThatIsKnown() throws {
        var r = AppRegistry()
        r.replaceDiscovered(DesktopScan(apps: [discovered("org.a.Declares", schemes: ["tap"]), discovered("org.m.Mime")]))
        try r.register(appID: "org.r.Other", owner: ":1.1", options: ["schemes": .strings(["other"])], ownsName: true)
        // The first known one counts, even when it does not declare the scheme.
        let routed = r.route(scheme: "tap", mimeDefaults: ["org.unknown.App", "org.m.Mime", "org.a.Declares"])
        #expect(routed?.id == "org.m.Mime")
        // A registered app named by mimeapps.list counts too.
        #expect(r.route(scheme: "tap", mimeDefaults: ["org.r.Other"])?.id == "org.r.Other")
    }

    @Test func fallbackToFirstDeclaringID() throws {
        var r = AppRegistry()
        r.replaceDiscovered(DesktopScan(apps: [discovered("org.c.C", schemes: ["tap"]), discovered("org.b.B", schemes: ["tap"]), discovered("org.a.A")]))
        #expect(r.route(scheme: "tap", mimeDefaults: ["org.unknown.X"])?.id == "org.b.B")
        // What the entry declares counts, whatever the registration says; a live one goes first.
        try r.register(appID: "org.c.C", owner: ":1.1", options: ["schemes": .strings(["nope"])], ownsName: true)
        #expect(r.route(scheme: "tap", mimeDefaults: [])?.id == "org.c.C")
        #expect(r.route(scheme: "nope", mimeDefaults: [])?.id == "org.c.C")
    }

    @Test func noHandler() {
        var r = AppRegistry()
        r.replaceDiscovered(DesktopScan(apps: [discovered("org.a.A", schemes: ["x"])]))
        #expect(r.route(scheme: "tap", mimeDefaults: ["org.unknown.X"]) == nil)
        #expect(AppRegistry().route(scheme: "tap", mimeDefaults: []) == nil)
    }

    @Test func endToEndWithMimeApps() throws {
        let t = try TempTree()
        try t.write("sys1/share/applications/org.example.Viewer.desktop", activatableEntry(name: "V", extra: "MimeType=x-scheme-handler/tap;"))
        try t.write("sys1/share/applications/org.example.Editor.desktop", activatableEntry(name: "E", extra: "MimeType=x-scheme-handler/tap;"))
        try t.write("home/config/mimeapps.list", "[Default Applications]\nx-scheme-handler/tap=org.example.Gone.desktop;org.example.Viewer.desktop;\n")
        var r = AppRegistry()
        r.replaceDiscovered(DesktopScan.scan(t.xdg()))
        let defaults = MimeApps.defaultHandlers(forScheme: "tap", dirs: t.xdg())
        #expect(r.route(scheme: "tap", mimeDefaults: defaults)?.id == "org.example.Viewer")
        #expect(r.route(scheme: "tap", mimeDefaults: [])?.id == "org.example.Editor")
    }

    @Test("A sandboxed app holds at most max-ids-per-sandboxed-app registrations of its ids over all its connections; updating one is always taken")
    func idsPerSandboxedApp() throws {
        var r = AppRegistry()
        r.maxRegistrationsPerSandboxedApp = 3
        let sandbox = CallerIdentity.flatpak(appID: "org.f.F")
        for (index, id) in ["org.f.F.s1", "org.f.F.s2", "org.f.F.s3"].enumerated() {
            _ = try r.register(appID: id, owner: ":1.\(index % 2)", options: ["protocol": .string("freedesktop")], identity: sandbox, ownsName: false)
        }
        expectHostError(.limitExceeded, mentioning: ["org.f.F already holds 3 registrations", "max-ids-per-sandboxed-app"]) {
            try r.register(appID: "org.f.F.s4", owner: ":1.9", options: ["protocol": .string("freedesktop")], identity: sandbox, ownsName: false)
        }
        #expect(r.app("org.f.F.s4") == nil)
        #expect(try r.register(appID: "org.f.F.s1", owner: ":1.0", options: ["protocol": .string("freedesktop")], identity: sandbox, ownsName: false) == .updated)
        // Other sandboxes and unsandboxed callers have their own counts.
        _ = try r.register(appID: "org.g.G", owner: ":1.9", options: ["protocol": .string("freedesktop")], identity: .flatpak(appID: "org.g.G"), ownsName: false)
        _ = try r.register(appID: "org.u.U", owner: ":1.9", options: ["protocol": .string("freedesktop")], ownsName: false)
        #expect(r.appIDs(registeredBy: ":1.9").sorted() == ["org.g.G", "org.u.U"])
    }
}

