import Testing
@testable import WidgetHostCore

@Suite struct AppIDValidationTests {
    @Test(arguments: [
        "org.example.TapMe", "a.b", "org.example.Tap_Me", "org.example.tap-me",
        "_3d.viewer", "org.example.A1", "-org.x", "org.example.TapMe.desktop",
        "a." + String(repeating: "b", count: 253),
    ])
    func accepts(_ id: String) throws {
        try Validate.appID(id)
    }

    @Test(arguments: [
        ("TapMe", "at least two elements"),
        ("org..TapMe", "empty element"),
        (".org.TapMe", "empty element"),
        ("org.TapMe.", "empty element"),
        ("org.exa mple.TapMe", "' '"),
        ("org.ex/ample", "'/'"),
        ("org.example.Täp", "'ä'"),
        ("org.3d.Viewer", "starts with a digit"),
        ("1org.Viewer", "starts with a digit"),
        (":1.42", "unique connection name"),
        ("TapMe.desktop", "'.desktop' suffix"),
        ("org.example.Tap\tMe", "U+0009"),
        ("a." + String(repeating: "b", count: 254), "at most 255"),
    ])
    func rejects(_ id: String, _ rule: String) {
        expectHostError(.invalidArgument, mentioning: ["'\(Validate.prefix(id))'", rule, "org.example.TapMe"]) {
            try Validate.appID(id)
        }
    }

    @Test func rejectsEmpty() {
        expectHostError(.invalidArgument, mentioning: ["must not be empty", "org.example.TapMe"]) {
            try Validate.appID("")
        }
    }
}

@Suite struct SchemeValidationTests {
    @Test(arguments: [
        ("tapme", "tapme"), ("HTTPS", "https"), ("web+app", "web+app"),
        ("a.b-c", "a.b-c"), ("x1", "x1"), ("TapMe", "tapme"),
    ])
    func acceptsAndLowercases(_ input: String, _ expected: String) throws {
        #expect(try Validate.scheme(input) == expected)
    }

    @Test(arguments: [
        ("1abc", "must start with an ASCII letter"),
        ("-x", "must start with an ASCII letter"),
        ("https:", "without ':'"),
        ("https://", "without ':'"),
        ("ta pme", "' '"),
        ("tap_me", "'_'"),
        ("héllo", "'é'"),
    ])
    func rejects(_ input: String, _ rule: String) {
        expectHostError(.invalidArgument, mentioning: ["'\(input)'", rule, "RFC 3986"]) {
            try Validate.scheme(input)
        }
    }

    @Test func rejectsEmpty() {
        expectHostError(.invalidArgument, mentioning: ["must not be empty"]) {
            try Validate.scheme("")
        }
    }
}

@Suite struct ObjectPathValidationTests {
    @Test(arguments: ["/", "/org/example/TapMe", "/a_b/C9", "/0"])
    func accepts(_ path: String) throws {
        try Validate.objectPath(path)
    }

    @Test(arguments: [
        ("org/example", "must start with '/'"),
        ("/org/", "must not end with '/'"),
        ("/org//x", "empty element"),
        ("/org/x-y", "'-'"),
        ("/org/x.y", "'.'"),
        ("/org/ü", "'ü'"),
    ])
    func rejects(_ path: String, _ rule: String) {
        expectHostError(.invalidArgument, mentioning: ["'\(path)'", rule, "/org/example/TapMe"]) {
            try Validate.objectPath(path)
        }
    }

    @Test func rejectsEmpty() {
        expectHostError(.invalidArgument, mentioning: ["must not be empty"]) {
            try Validate.objectPath("")
        }
    }
}

@Suite struct ActionNameValidationTests {
    @Test(arguments: ["continue-activity", "app.open", "A1", "x"])
    func accepts(_ name: String) throws {
        try Validate.actionName(name)
    }

    @Test(arguments: [("open url", "' '"), ("open_url", "'_'"), ("a/b", "'/'")])
    func rejects(_ name: String, _ rule: String) {
        expectHostError(.invalidArgument, mentioning: ["'\(name)'", rule, "letters, digits, '.' and '-'"]) {
            try Validate.actionName(name)
        }
    }

    @Test func rejectsEmpty() {
        expectHostError(.invalidArgument, mentioning: ["must not be empty"]) {
            try Validate.actionName("")
        }
    }
}

@Suite struct DefaultObjectPathTests {
    @Test(arguments: [
        ("org.example.TapMe", "/org/example/TapMe"),
        ("org.example.Tap-Me", "/org/example/Tap_Me"),
        ("org.gnome.Text-Editor.x", "/org/gnome/Text_Editor/x"),
        ("_3d.a-b-c", "/_3d/a_b_c"),
    ])
    func mapsDotsAndDashes(_ id: String, _ path: String) throws {
        #expect(Validate.busNameElementsPath(appID: id) == path)
        try Validate.objectPath(path)
    }
}
