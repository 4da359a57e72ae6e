import Testing
@testable import WidgetHostCore
import WidgetHostSystem

@Suite struct MimeAppsTests {
    @Test func lookupOrder() throws {
        let dirs = XDGDirectories(
            dataHome: "/h/share", dataDirs: ["/d1", "/d2"], configHome: "/h/config", configDirs: ["/etc/xdg"],
            currentDesktops: ["ubuntu", "gnome"]
        )
        #expect(MimeApps.listFiles(dirs) == [
            "/h/config/ubuntu-mimeapps.list", "/h/config/gnome-mimeapps.list", "/h/config/mimeapps.list",
            "/etc/xdg/ubuntu-mimeapps.list", "/etc/xdg/gnome-mimeapps.list", "/etc/xdg/mimeapps.list",
            "/h/share/applications/ubuntu-mimeapps.list", "/h/share/applications/gnome-mimeapps.list",
            "/h/share/applications/mimeapps.list",
            "/d1/applications/ubuntu-mimeapps.list", "/d1/applications/gnome-mimeapps.list", "/d1/applications/mimeapps.list",
            "/d2/applications/ubuntu-mimeapps.list", "/d2/applications/gnome-mimeapps.list", "/d2/applications/mimeapps.list",
        ])
    }

    @Test func defaultsInPrecedenceOrder() throws {
        let t = try TempTree()
        try t.write("home/config/gnome-mimeapps.list", """
        [Default Applications]
        x-scheme-handler/tapme=org.desktop.First.desktop
        """)
        try t.write("home/config/mimeapps.list", """
        # user file
        [Added Associations]
        x-scheme-handler/tapme=org.added.Ignored.desktop;

        [Default Applications]
        x-scheme-handler/https=org.web.Browser.desktop
        x-scheme-handler/tapme=org.user.Second.desktop;org.desktop.First.desktop;org.user.Third.desktop;
        """)
        try t.write("etc/xdg/mimeapps.list", "[Default Applications]\nx-scheme-handler/tapme=org.sysconf.Fourth.desktop\n")
        try t.write("home/share/applications/mimeapps.list", "[Default Applications]\nx-scheme-handler/tapme=org.datahome.Fifth.desktop\n")
        try t.write("sys1/share/applications/mimeapps.list", "[Default Applications]\nx-scheme-handler/tapme=org.sys1.Sixth.desktop\n")
        try t.write("sys2/share/applications/gnome-mimeapps.list", "[Default Applications]\nx-scheme-handler/tapme=org.sys2.Seventh\n")
        try t.write("sys2/share/applications/kde-mimeapps.list", "[Default Applications]\nx-scheme-handler/tapme=org.kde.NotUsed.desktop\n")
        let handlers = MimeApps.defaultHandlers(forScheme: "tapme", dirs: t.xdg(desktops: ["gnome"]))
        #expect(handlers == [
            "org.desktop.First", "org.user.Second", "org.user.Third", "org.sysconf.Fourth",
            "org.datahome.Fifth", "org.sys1.Sixth", "org.sys2.Seventh",
        ])
        #expect(MimeApps.defaultHandlers(forScheme: "https", dirs: t.xdg(desktops: ["gnome"])) == ["org.web.Browser"])
        #expect(MimeApps.defaultHandlers(forScheme: "mailto", dirs: t.xdg(desktops: ["gnome"])) == [])
    }

    @Test func removedAssociationsApplyToSameAndLowerPrecedence() throws {
        let t = try TempTree()
        try t.write("home/config/mimeapps.list", """
        [Default Applications]
        x-scheme-handler/tapme=org.a.A.desktop;org.b.B.desktop;org.c.C.desktop;

        [Removed Associations]
        x-scheme-handler/tapme=org.b.B.desktop;
        """)
        try t.write("etc/xdg/mimeapps.list", """
        [Removed Associations]
        x-scheme-handler/tapme=org.a.A.desktop;org.d.D.desktop;
        x-scheme-handler/other=org.e.E.desktop;
        """)
        try t.write("sys1/share/applications/mimeapps.list", """
        [Default Applications]
        x-scheme-handler/tapme=org.d.D.desktop;org.e.E.desktop;org.b.B.desktop;
        """)
        // org.a.A stays (removed only at lower precedence); org.b.B is removed in the same file;
        // org.d.D is removed by a higher file; org.e.E is removed for another scheme only.
        #expect(MimeApps.defaultHandlers(forScheme: "tapme", dirs: t.xdg()) == ["org.a.A", "org.c.C", "org.e.E"])
    }

    @Test func caseInsensitiveMimeTypeAndScheme() throws {
        let t = try TempTree()
        try t.write("home/config/mimeapps.list", "[Default Applications]\nX-Scheme-Handler/TapMe = org.a.A.desktop ; org.b.B.desktop\n")
        #expect(MimeApps.defaultHandlers(forScheme: "TAPME", dirs: t.xdg()) == ["org.a.A", "org.b.B"])
    }

    @Test func desktopSpecificFileOnlyForCurrentDesktops() throws {
        let t = try TempTree()
        try t.write("home/config/kde-mimeapps.list", "[Default Applications]\nx-scheme-handler/tapme=org.kde.K.desktop\n")
        try t.write("home/config/mimeapps.list", "[Default Applications]\nx-scheme-handler/tapme=org.any.A.desktop\n")
        #expect(MimeApps.defaultHandlers(forScheme: "tapme", dirs: t.xdg()) == ["org.any.A"])
        #expect(MimeApps.defaultHandlers(forScheme: "tapme", dirs: t.xdg(desktops: ["kde"])) == ["org.kde.K", "org.any.A"])
    }
}
