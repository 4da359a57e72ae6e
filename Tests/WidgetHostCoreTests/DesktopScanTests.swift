import Foundation
import Testing
@testable import WidgetHostCore
import WidgetHostSystem

@Suite struct DesktopScanTests {
    @Test func dataHomeBeatsDataDirsAndEarlierDataDirsBeatLater() throws {
        let t = try TempTree()
        try t.write("home/share/applications/org.example.Both.desktop", activatableEntry(name: "Home"))
        try t.write("sys1/share/applications/org.example.Both.desktop", activatableEntry(name: "Sys1"))
        try t.write("sys1/share/applications/org.example.Sys.desktop", activatableEntry(name: "Sys1"))
        try t.write("sys2/share/applications/org.example.Sys.desktop", activatableEntry(name: "Sys2"))
        try t.write("sys2/share/applications/org.example.Only2.desktop", activatableEntry(name: "Only2"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps.map(\.id) == ["org.example.Both", "org.example.Only2", "org.example.Sys"])
        #expect(scan.apps.map { $0.entry.name } == ["Home", "Only2", "Sys1"])
        #expect(scan.apps[0].entry.path == t.path("home/share/applications/org.example.Both.desktop"))
        #expect(scan.warnings == [])
    }

    @Test func discoveredOptions() throws {
        let t = try TempTree()
        try t.write("sys1/share/applications/org.example.Tap-Me.desktop", activatableEntry(name: "Tap", extra: """
        MimeType=text/plain;x-scheme-handler/TapMe;X-Scheme-Handler/web+tap;x-scheme-handler/tapme;
        """))
        let scan = DesktopScan.scan(t.xdg())
        let app = try #require(scan.apps.first)
        #expect(scan.apps.count == 1)
        #expect(app.options == AppOptions(
            schemes: ["tapme", "web+tap"],
            appProtocol: .freedesktop,
            objectPath: "/org/example/Tap_Me",
            surfaces: [.desktop, .lockScreen],
            liveActivityLaunchTypes: nil,
            userActivityAction: nil,
            providerPath: nil
        ))
    }

    @Test func widgetHostKeys() throws {
        let t = try TempTree()
        try t.write("home/share/applications/org.example.Keys.desktop", activatableEntry(name: "Keys", extra: """
        X-WidgetHost-Surfaces=watch;car; desktop ;car
        X-WidgetHost-LiveActivityLaunchTypes=Delivery;Ride;Delivery;
        X-WidgetHost-UserActivityAction=app.continue
        X-WidgetHost-ProviderPath=/org/example/Keys/Provider
        """))
        try t.write("home/share/applications/org.example.Empty.desktop", activatableEntry(name: "Empty", extra: """
        X-WidgetHost-Surfaces=
        X-WidgetHost-LiveActivityLaunchTypes=
        X-WidgetHost-UserActivityAction=
        """))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.warnings == [])
        #expect(scan.apps.map(\.id) == ["org.example.Empty", "org.example.Keys"])
        let empty = scan.apps[0].options
        #expect(empty.surfaces == [])
        #expect(empty.liveActivityLaunchTypes == [])
        #expect(empty.userActivityAction == nil)
        let keys = scan.apps[1].options
        #expect(keys.surfaces == [.desktop, .car, .watch])
        #expect(keys.liveActivityLaunchTypes == ["Delivery", "Ride"])
        #expect(keys.userActivityAction == "app.continue")
        #expect(keys.providerPath == "/org/example/Keys/Provider")
    }

    @Test func subdirectoryIDs() throws {
        let t = try TempTree()
        try t.write("sys1/share/applications/vendor/org.example.Sub.desktop", activatableEntry(name: "Sub"))
        try t.write("sys1/share/applications/deep/er/org.example.Deep.desktop", activatableEntry(name: "Deep"))
        try t.write("sys1/share/applications/vendor/app.desktop", activatableEntry(name: "Bad"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps.map(\.id) == ["deep-er-org.example.Deep", "vendor-org.example.Sub"])
        #expect(scan.apps[1].options.objectPath == "/vendor_org/example/Sub")
        #expect(scan.warnings.count == 1)
        let warning = try #require(scan.warnings.first)
        #expect(warning.contains(t.path("sys1/share/applications/vendor/app.desktop")))
        #expect(warning.contains("'vendor-app'"))
        #expect(warning.contains("at least two elements"))
    }

    @Test func subdirectoryIDMasksAcrossDirectories() throws {
        let t = try TempTree()
        // home: vendor/org.example.X.desktop has ID vendor-org.example.X, same as sys1's flat file.
        try t.write("home/share/applications/vendor/org.example.X.desktop", activatableEntry(name: "Home"))
        try t.write("sys1/share/applications/vendor-org.example.X.desktop", activatableEntry(name: "Sys"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps.map { $0.entry.name } == ["Home"])
    }

    @Test func sameDirectoryCollisionPrefersTheDirectFile() throws {
        let t = try TempTree()
        try t.write("sys1/share/applications/org.example-Tool.desktop", activatableEntry(name: "Direct"))
        try t.write("sys1/share/applications/org.example/Tool.desktop", activatableEntry(name: "Nested"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps.map(\.id) == ["org.example-Tool"])
        #expect(scan.apps.map { $0.entry.name } == ["Direct"])
    }

    @Test func hiddenMasksLowerEntry() throws {
        let t = try TempTree()
        try t.write("home/share/applications/org.example.Gone.desktop", "[Desktop Entry]\nHidden=true\n")
        try t.write("sys1/share/applications/org.example.Gone.desktop", activatableEntry(name: "Gone"))
        try t.write("sys2/share/applications/org.example.Kept.desktop", activatableEntry(name: "Kept"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps.map(\.id) == ["org.example.Kept"])
        #expect(scan.warnings == [])
    }

    @Test func notActivatableSkippedSilently() throws {
        let t = try TempTree()
        try t.write("sys1/share/applications/org.example.Plain.desktop", "[Desktop Entry]\nType=Application\nName=Plain\nExec=plain\n")
        try t.write("sys1/share/applications/org.example.False.desktop", activatableEntry(name: "F").replacingOccurrences(of: "DBusActivatable=true", with: "DBusActivatable=false"))
        try t.write("sys1/share/applications/org.example.Link.desktop", "[Desktop Entry]\nType=Link\nURL=https://example.org\nDBusActivatable=true\n")
        try t.write("sys1/share/applications/notanid.desktop", "[Desktop Entry]\nType=Application\nName=NotAnID\n")
        try t.write("sys1/share/applications/org.example.NoDisplay.desktop", activatableEntry(name: "ND", extra: "NoDisplay=true"))
        try t.write("sys1/share/applications/org.example.Readme.txt", activatableEntry(name: "Txt"))
        try t.write("sys1/share/applications/.desktop", activatableEntry(name: "Nameless"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps.map(\.id) == ["org.example.NoDisplay"])
        #expect(scan.warnings == [])
    }

    @Test func invalidIDsWarn() throws {
        let t = try TempTree()
        try t.write("sys1/share/applications/tapme.desktop", activatableEntry(name: "One"))
        try t.write("sys1/share/applications/org.3d.Viewer.desktop", activatableEntry(name: "Digit"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps == [])
        #expect(scan.warnings.count == 2)
        #expect(scan.warnings.contains { $0.contains("org.3d.Viewer.desktop") && $0.contains("starts with a digit") && $0.contains("skipped") })
        #expect(scan.warnings.contains { $0.contains("tapme.desktop") && $0.contains("'tapme'") && $0.contains("skipped") })
    }

    @Test(arguments: [
        ("X-WidgetHost-Surfaces=desktop;phone;", "'phone'"),
        ("X-WidgetHost-UserActivityAction=open url", "'open url'"),
        ("X-WidgetHost-ProviderPath=/bad/", "'/bad/'"),
    ])
    func invalidWidgetHostKeysSkipWithWarning(_ line: String, _ mention: String) throws {
        let t = try TempTree()
        let path = try t.write("sys1/share/applications/org.example.Bad.desktop", activatableEntry(name: "Bad", extra: line))
        let key = String(line.prefix { $0 != "=" })
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps == [])
        #expect(scan.warnings.count == 1)
        let warning = try #require(scan.warnings.first)
        #expect(warning.contains(path))
        #expect(warning.contains(key))
        #expect(warning.contains(mention))
    }

    @Test func invalidSchemeIsDroppedWithWarning() throws {
        let t = try TempTree()
        let path = try t.write("sys1/share/applications/org.example.Mixed.desktop", activatableEntry(name: "M", extra: "MimeType=x-scheme-handler/1bad;x-scheme-handler/good;"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps.map(\.options.schemes) == [["good"]])
        #expect(scan.warnings.count == 1)
        #expect(scan.warnings.first?.contains(path) == true)
        #expect(scan.warnings.first?.contains("'1bad'") == true)
    }

    @Test func brokenFilesWarnAndStillMask() throws {
        let t = try TempTree()
        let broken = try t.write("home/share/applications/org.example.Broken.desktop", "[Desktop Entry]\nthis is not a key value pair\n")
        try t.write("sys1/share/applications/org.example.Broken.desktop", activatableEntry(name: "Lower"))
        let notUTF8 = try t.writeData("sys1/share/applications/org.example.Latin1.desktop", latin1("[Desktop Entry]\nName=Caf\u{E9}\nDBusActivatable=true\n"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps == [])
        #expect(scan.warnings.count == 2)
        #expect(scan.warnings.contains { $0.contains(broken) && $0.contains("line 2") })
        #expect(scan.warnings.contains { $0.contains(notUTF8) && $0.contains("UTF-8") })
    }

    @Test func symlinksAreFollowedAndLoopsTerminate() throws {
        let t = try TempTree()
        let target = try t.write("elsewhere/org.example.Linked.desktop", activatableEntry(name: "Linked"))
        try t.symlink("sys1/share/applications/org.example.Linked.desktop", to: target)
        try t.write("elsewhere/dir/org.example.InDir.desktop", activatableEntry(name: "InDir"))
        try t.symlink("sys1/share/applications/linked", to: t.path("elsewhere/dir"))
        try t.mkdir("sys1/share/applications/loop")
        try t.symlink("sys1/share/applications/loop/again", to: t.path("sys1/share/applications/loop"))
        try t.symlink("sys1/share/applications/org.example.Dangling.desktop", to: t.path("nowhere.desktop"))
        let scan = DesktopScan.scan(t.xdg())
        #expect(scan.apps.map(\.id) == ["linked-org.example.InDir", "org.example.Linked"])
        #expect(scan.warnings == [])
    }

    @Test func missingDirectoriesAreFine() {
        let dirs = XDGDirectories(dataHome: "/nonexistent/widgethost/a", dataDirs: ["/nonexistent/widgethost/b"], configHome: "/x", configDirs: [])
        let scan = DesktopScan.scan(dirs)
        #expect(scan == DesktopScan(apps: [], warnings: []))
    }

    @Test func appFromSingleEntry() throws {
        var warnings: [String] = []
        let entry = try DesktopEntry.parse(id: "org.example.One", path: "/p/org.example.One.desktop", contents: activatableEntry(name: "One", extra: "X-WidgetHost-LiveActivityLaunchTypes=A"))
        let app = DesktopScan.app(from: entry, warnings: &warnings)
        #expect(app?.options.liveActivityLaunchTypes == ["A"])
        #expect(app?.options.appProtocol == .freedesktop)
        #expect(warnings == [])
    }
}

/// `text` encoded as ISO-8859-1 (not valid UTF-8 when it has non-ASCII characters).
private func latin1(_ text: String) -> Data {
    Data(text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) })
}
