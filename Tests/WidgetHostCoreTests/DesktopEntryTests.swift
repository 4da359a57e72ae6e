import Testing
@testable import WidgetHostCore

@Suite struct DesktopEntryParseTests {
    @Test func tolerantOfCommentsGroupsAndLocalizedKeys() throws {
        let contents = """
        \u{FEFF}# A comment before the group

        [Desktop Entry]
        # a comment inside
        Type=Application
        Name=Tap Me
        Name[fr]=Touche-moi
        Name[de_DE@euro]=Tipp mich
          Comment = spaced out\u{20}
        Exec=tapme %u
        DBusActivatable=true

        [Desktop Action new-window]
        Name=New Window
        Exec=tapme --new
        this line is not key=value-free but ignored in another group
        garbage without equals sign
        """
        let e = try DesktopEntry.parse(id: "org.example.TapMe", path: "/x/org.example.TapMe.desktop", contents: contents)
        #expect(e.id == "org.example.TapMe")
        #expect(e.path == "/x/org.example.TapMe.desktop")
        #expect(e.name == "Tap Me")
        #expect(e.dbusActivatable)
        #expect(!e.hidden)
        #expect(!e.noDisplay)
        #expect(e.keys == [
            "Type": "Application", "Name": "Tap Me", "Comment": "spaced out ",
            "Exec": "tapme %u", "DBusActivatable": "true",
        ])
    }

    @Test func crlfLineEndings() throws {
        let e = try DesktopEntry.parse(id: "a.b", path: "p", contents: "[Desktop Entry]\r\nName=CR\r\nHidden=true\r\n")
        #expect(e.name == "CR")
        #expect(e.hidden)
        #expect(e.keys == ["Name": "CR", "Hidden": "true"])
    }

    @Test func escapesInStrings() throws {
        let e = try DesktopEntry.parse(id: "a.b", path: "p", contents: #"""
        [Desktop Entry]
        Name=\sTap\tMe\\Now\nplease\r\q
        X-Plain=a\;b
        """#)
        #expect(e.name == " Tap\tMe\\Now\nplease\r\\q")
        #expect(e.keys["Name"] == #"\sTap\tMe\\Now\nplease\r\q"#)
        #expect(e.string("X-Plain") == "a;b")
        #expect(e.string("Missing") == nil)
    }

    @Test func lists() throws {
        let e = try DesktopEntry.parse(id: "a.b", path: "p", contents: #"""
        [Desktop Entry]
        MimeType=x-scheme-handler/tapme;text/plain;
        X-List=a\;b;c\\;d\sx;;
        X-Empty=
        X-NoTrailing=one;two
        """#)
        #expect(e.mimeTypes == ["x-scheme-handler/tapme", "text/plain"])
        #expect(e.stringList("X-List") == ["a;b", "c\\", "d x"])
        #expect(e.stringList("X-Empty") == [])
        #expect(e.stringList("X-NoTrailing") == ["one", "two"])
        #expect(e.stringList("X-Absent") == nil)
    }

    @Test func booleans() throws {
        let e = try DesktopEntry.parse(id: "a.b", path: "p", contents: """
        [Desktop Entry]
        Hidden=true
        NoDisplay=1
        DBusActivatable=false
        X-Yes=yes
        """)
        #expect(e.hidden)
        #expect(e.noDisplay)
        #expect(!e.dbusActivatable)
        #expect(!e.bool("X-Yes"))
        #expect(!e.bool("X-Absent"))
    }

    @Test func defaultsWhenKeysAbsent() throws {
        let e = try DesktopEntry.parse(id: "a.b", path: "p", contents: "[Desktop Entry]\n")
        #expect(e == DesktopEntry(id: "a.b", path: "p"))
    }

    @Test func repeatedKeyKeepsLastValueAndRepeatedGroupMerges() throws {
        let e = try DesktopEntry.parse(id: "a.b", path: "p", contents: """
        [Desktop Entry]
        Name=First
        Name=Second
        [Other]
        Name=Other
        [Desktop Entry]
        Exec=x
        """)
        #expect(e.name == "Second")
        #expect(e.keys == ["Name": "Second", "Exec": "x"])
    }

    @Test func otherGroupsOnly() {
        expectHostError(.invalidContent, mentioning: ["/apps/x.desktop", "no [Desktop Entry] group"]) {
            try DesktopEntry.parse(id: "a.b", path: "/apps/x.desktop", contents: "[Desktop Action x]\nName=X\n")
        }
    }

    @Test func malformedLineInTheGroup() {
        expectHostError(.invalidContent, mentioning: ["/apps/x.desktop", "line 3", "'not a pair'"]) {
            try DesktopEntry.parse(id: "a.b", path: "/apps/x.desktop", contents: "[Desktop Entry]\nName=X\nnot a pair\n")
        }
    }

    @Test func keyBeforeAnyGroup() {
        expectHostError(.invalidContent, mentioning: ["line 1", "'Name=X'", "before the [Desktop Entry] group"]) {
            try DesktopEntry.parse(id: "a.b", path: "/apps/x.desktop", contents: "Name=X\n[Desktop Entry]\n")
        }
    }
}

@Suite struct XDGDirectoriesTests {
    @Test func defaults() {
        let d = XDGDirectories.fromEnvironment(["HOME": "/home/u"])
        #expect(d == XDGDirectories(
            dataHome: "/home/u/.local/share",
            dataDirs: ["/usr/local/share", "/usr/share"],
            configHome: "/home/u/.config",
            configDirs: ["/etc/xdg"],
            currentDesktops: []
        ))
        #expect(d.applicationDirectories == [
            "/home/u/.local/share/applications", "/usr/local/share/applications", "/usr/share/applications",
        ])
    }

    @Test func emptyVariablesMeanDefault() {
        let d = XDGDirectories.fromEnvironment([
            "HOME": "/home/u/", "XDG_DATA_HOME": "", "XDG_DATA_DIRS": "", "XDG_CONFIG_HOME": "",
            "XDG_CONFIG_DIRS": "", "XDG_CURRENT_DESKTOP": "",
        ])
        #expect(d == XDGDirectories.fromEnvironment(["HOME": "/home/u"]))
    }

    @Test func explicitValuesRelativePathsIgnored() {
        let d = XDGDirectories.fromEnvironment([
            "HOME": "/home/u",
            "XDG_DATA_HOME": "/data/",
            "XDG_DATA_DIRS": "/opt/share:relative/share::/usr/share/",
            "XDG_CONFIG_HOME": "relative",
            "XDG_CONFIG_DIRS": "/etc/xdg/custom:/etc/xdg",
            "XDG_CURRENT_DESKTOP": "ubuntu:GNOME",
        ])
        #expect(d.dataHome == "/data")
        #expect(d.dataDirs == ["/opt/share", "/usr/share"])
        #expect(d.configHome == "/home/u/.config")
        #expect(d.configDirs == ["/etc/xdg/custom", "/etc/xdg"])
        #expect(d.currentDesktops == ["ubuntu", "gnome"])
    }

    @Test func onlyRelativeDataDirsMeansDefault() {
        let d = XDGDirectories.fromEnvironment(["HOME": "/h", "XDG_DATA_DIRS": "a:b"])
        #expect(d.dataDirs == ["/usr/local/share", "/usr/share"])
    }

    @Test func applicationDirectoriesDeduplicated() {
        let d = XDGDirectories(dataHome: "/a", dataDirs: ["/b", "/a", "/b/"], configHome: "/c", configDirs: [])
        #expect(d.applicationDirectories == ["/a/applications", "/b/applications"])
    }
}
