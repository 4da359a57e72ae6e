import Foundation
import Testing
@testable import WidgetHostCore
import WidgetHostSystem

private func entry(_ id: String, _ configure: (inout AppOptions) -> Void = { _ in }) -> DiscoveredApp {
    var options = AppOptions(defaultsFor: id, appProtocol: .freedesktop)
    configure(&options)
    return DiscoveredApp(entry: DesktopEntry(id: id, path: "/apps/\(id).desktop", name: id, dbusActivatable: true), options: options)
}

@Suite struct CallerIdentityTests {
    @Test func sandboxedCallersActForThemselvesAndBelow() {
        let flatpak = CallerIdentity.flatpak(appID: "org.example.Notes")
        #expect(flatpak.mayActFor("org.example.Notes"))
        #expect(flatpak.mayActFor("org.example.Notes.Helper"))
        #expect(flatpak.mayActFor("org.example.Notes.Widgets.Extra"))
        #expect(!flatpak.mayActFor("org.example.NotesPlus"))
        #expect(!flatpak.mayActFor("org.example"))
        #expect(!flatpak.mayActFor("org.example.TapMe"))
        #expect(CallerIdentity.unsandboxed.mayActFor("org.example.TapMe"))
        expectHostError(.accessDenied, mentioning: ["Flatpak", "'org.example.Notes'", "'org.example.TapMe'"]) {
            try flatpak.check("org.example.TapMe", doing: "register")
        }
        expectHostError(.accessDenied, mentioning: ["Snap", "'tapme'", "'org.example.TapMe'"]) {
            try CallerIdentity.snap(name: "tapme").check("org.example.TapMe", doing: "set content")
        }
    }

    @Test func flatpakInfo() throws {
        let info = """
            [Application]
            name=org.example.Notes
            runtime=runtime/org.gnome.Platform/x86_64/45

            [Instance]
            instance-id=1234567
            """
        #expect(try CallerIdentity.flatpakAppID(info) == "org.example.Notes")
        expectHostError(.accessDenied, mentioning: ["malformed"]) { try CallerIdentity.flatpakAppID("[Application\nname=org.a.B\n") }
        expectHostError(.accessDenied, mentioning: ["names no app"]) { try CallerIdentity.flatpakAppID("[Instance]\ninstance-id=1\n") }
        expectHostError(.accessDenied, mentioning: ["names no app"]) { try CallerIdentity.flatpakAppID("[Application]\nname=\n") }
        expectHostError(.accessDenied, mentioning: ["not an app id"]) { try CallerIdentity.flatpakAppID("[Application]\nname=notes\n") }
        // A hostile value is quoted only in part.
        do {
            _ = try CallerIdentity.flatpakAppID("[Application]\nname=" + String(repeating: "x", count: 100_000) + "\n")
            Issue.record("a bad name was accepted")
        } catch {
            #expect(error.message.count < 300)
        }
    }

    @Test func snapCgroups() throws {
        // cgroup v2, as snapd's systemd scopes appear there.
        #expect(try CallerIdentity.snapName(cgroupFile: "0::/user.slice/user-1000.slice/user@1000.service/app.slice/snap.tapme.tapme-widgets.9d2b1c.scope\n") == "tapme")
        // Hybrid hierarchy: the name=systemd line carries it.
        let hybrid = """
            12:pids:/user.slice/user-1000.slice/user@1000.service
            9:freezer:/
            1:name=systemd:/user.slice/user-1000.slice/user@1000.service/snap.notes-app.hook.configure.abc.scope
            0::/user.slice/user-1000.slice/user@1000.service
            """
        #expect(try CallerIdentity.snapName(cgroupFile: hybrid) == "notes-app")
        #expect(try CallerIdentity.snapName(cgroupFile: "4:freezer,devices:/snap.frozen.app\n") == "frozen")
        // Unsandboxed: plain sessions, and snap-like names in other controllers.
        #expect(try CallerIdentity.snapName(cgroupFile: "0::/user.slice/user-1000.slice/session-2.scope\n") == nil)
        #expect(try CallerIdentity.snapName(cgroupFile: "4:memory:/snap.evil.app.scope\n0::/\n") == nil)
        #expect(try CallerIdentity.snapName(cgroupFile: "0::/snapshot.service\n") == nil)
        expectHostError(.accessDenied, mentioning: ["Snap"]) { try CallerIdentity.snapName(cgroupFile: "0::/snap.Bad_Name.app.scope\n") }
        expectHostError(.accessDenied, mentioning: ["Snap"]) { try CallerIdentity.snapName(cgroupFile: "0::/snap.x\n") }
    }

    @Test func readsAProcessTree() throws {
        let t = try TempTree()
        try t.write("proc/10/cgroup", "0::/user.slice/session-2.scope\n")
        try t.mkdir("proc/10/root")
        try t.write("proc/11/cgroup", "0::/user.slice/session-2.scope\n")
        try t.write("proc/11/root/.flatpak-info", "[Application]\nname=org.example.Notes\n")
        try t.write("proc/12/cgroup", "0::/user.slice/snap.tapme.tapme.1.scope\n")
        try t.mkdir("proc/12/root")
        try t.write("proc/13/cgroup", "0::/\n")
        try t.write("proc/13/root/.flatpak-info", "garbage\n")
        try t.write("proc/14/cgroup", "0::/\n")
        try t.mkdir("proc/14/root/.flatpak-info")
        let proc = t.path("proc")
        #expect(try CallerIdentity.read(pid: 10, procRoot: proc) == .unsandboxed)
        #expect(try CallerIdentity.read(pid: 11, procRoot: proc) == .flatpak(appID: "org.example.Notes"))
        #expect(try CallerIdentity.read(pid: 12, procRoot: proc) == .snap(name: "tapme"))
        expectHostError(.accessDenied, mentioning: ["malformed"]) { try CallerIdentity.read(pid: 13, procRoot: proc) }
        expectHostError(.accessDenied, mentioning: ["not a regular file"]) { try CallerIdentity.read(pid: 14, procRoot: proc) }
        // A process that is gone is refused, never taken for unsandboxed.
        expectHostError(.accessDenied, mentioning: ["cannot read"]) { try CallerIdentity.read(pid: 99, procRoot: proc) }
        // This very process, through the real /proc.
        #expect(try CallerIdentity.read(pid: getpid()) == .unsandboxed)
    }
}

@Suite struct RegistrationIdentityTests {
    @Test func sandboxedRegistration() throws {
        var r = AppRegistry()
        let notes = CallerIdentity.flatpak(appID: "org.example.Notes")
        try r.register(appID: "org.example.Notes", owner: ":1.5", options: [:], identity: notes, ownsName: true)
        try r.register(appID: "org.example.Notes.Helper", owner: ":1.5", options: ["protocol": .string("freedesktop")], identity: notes, ownsName: false)
        #expect(r.app("org.example.Notes")?.registrant == notes)
        expectHostError(.accessDenied, mentioning: ["'org.example.Notes'", "'org.example.TapMe'"]) {
            // Owning the name does not help a sandbox act for another app.
            try r.register(appID: "org.example.TapMe", owner: ":1.5", options: [:], identity: notes, ownsName: true)
        }
        #expect(r.app("org.example.TapMe") == nil)
    }

    @Test func widgethostNeedsTheName() throws {
        var r = AppRegistry()
        expectHostError(.accessDenied, mentioning: ["does not own the bus name 'org.example.TapMe'", "request the name first"]) {
            try r.register(appID: "org.example.TapMe", owner: ":1.9", options: [:], ownsName: false)
        }
        #expect(r.apps == [])
        // freedesktop is delivered to the name's owner, so anyone may register it (a widget extension).
        #expect(try r.register(appID: "org.example.TapMe", owner: ":1.9", options: ["protocol": .string("freedesktop")], ownsName: false) == .registered)
        #expect(r.app("org.example.TapMe")?.deliveryDestination == "org.example.TapMe")
    }

    @Test func theNameOwnerTakesTheIDOver() throws {
        var r = AppRegistry()
        try r.register(appID: "org.example.TapMe", owner: ":1.3", options: ["protocol": .string("freedesktop")], ownsName: false)
        // Another connection that does not own the name is still refused.
        expectHostError(.accessDenied, mentioning: [":1.3", "owner of the bus name"]) {
            try r.register(appID: "org.example.TapMe", owner: ":1.4", options: ["protocol": .string("freedesktop")], ownsName: false)
        }
        #expect(try r.register(appID: "org.example.TapMe", owner: ":1.7", options: [:], ownsName: true) == .replaced(previousOwner: ":1.3"))
        let app = try #require(r.app("org.example.TapMe"))
        #expect(app.registeredBy == ":1.7")
        #expect(app.options.appProtocol == .widgethost)
        #expect(app.deliveryDestination == ":1.7")
        #expect(r.registrations(of: ":1.3") == [])
        // The old holder's connection closing later ends nothing.
        #expect(r.connectionClosed(":1.3") == [])
        #expect(r.app("org.example.TapMe")?.registeredBy == ":1.7")
    }

    @Test func registrationKeepsWhatTheEntryDeclares() throws {
        var r = AppRegistry()
        r.replaceDiscovered(DesktopScan(apps: [entry("org.example.Rangers") {
            $0.schemes = ["emoji-rangers"]
            $0.liveActivityLaunchTypes = []
            $0.surfaces = [.desktop, .car]
            $0.userActivityAction = "continue-activity"
        }]))
        try r.register(appID: "org.example.Rangers", owner: ":1.5", options: ["schemes": .strings(["rangers"])], ownsName: false)
        let merged = try #require(r.app("org.example.Rangers")?.options)
        #expect(merged.schemes == ["rangers"])
        #expect(merged.liveActivityLaunchTypes == [])
        #expect(merged.surfaces == [.desktop, .car])
        #expect(merged.appProtocol == .freedesktop)
        #expect(merged.userActivityAction == "continue-activity")
        // Options the registration gives override; an inherited user activity action
        // does not survive a switch to widgethost.
        try r.register(
            appID: "org.example.Rangers", owner: ":1.5",
            options: ["protocol": .string("widgethost"), "live_activity_launch_types": .strings(["Quest"])], ownsName: true)
        let overridden = try #require(r.app("org.example.Rangers")?.options)
        #expect(overridden.liveActivityLaunchTypes == ["Quest"])
        #expect(overridden.surfaces == [.desktop, .car])
        #expect(overridden.userActivityAction == nil)
        // A rescan merges again over what the entry declares now.
        r.replaceDiscovered(DesktopScan(apps: [entry("org.example.Rangers") { $0.surfaces = [.watch] }]))
        #expect(r.app("org.example.Rangers")?.options.surfaces == [.watch])
        #expect(r.app("org.example.Rangers")?.options.liveActivityLaunchTypes == ["Quest"])
    }
}
