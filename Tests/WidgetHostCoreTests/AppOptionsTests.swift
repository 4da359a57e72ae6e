import Testing
@testable import WidgetHostCore

private let appID = "org.example.TapMe"

@Suite struct AppOptionsParseTests {
    @Test func defaults() throws {
        let o = try AppOptions.parse(appID: appID, [:])
        #expect(o.schemes == [])
        #expect(o.appProtocol == .widgethost)
        #expect(o.objectPath == "/org/example/TapMe")
        #expect(o.surfaces == [.desktop, .lockScreen])
        #expect(o.liveActivityLaunchTypes == nil)
        #expect(o.userActivityAction == nil)
        #expect(o.providerPath == nil)
        #expect(o == AppOptions(defaultsFor: appID))
    }

    @Test func baseFromADesktopEntry() throws {
        let o = try AppOptions.parse(appID: "org.example.Tap-Me", [:], base: AppOptions(defaultsFor: "org.example.Tap-Me", appProtocol: .freedesktop))
        #expect(o.appProtocol == .freedesktop)
        #expect(o.objectPath == "/org/example/Tap_Me")
    }

    @Test func everyKey() throws {
        let o = try AppOptions.parse(appID: appID, [
            "schemes": .strings(["tapme", "https"]),
            "protocol": .string("freedesktop"),
            "object_path": .objectPath("/org/example/Handler"),
            "surfaces": .strings(["watch", "desktop"]),
            "live_activity_launch_types": .strings(["Delivery"]),
            "user_activity_action": .string("continue-activity"),
            "provider_path": .objectPath("/org/example/Provider"),
        ])
        #expect(o == AppOptions(
            schemes: ["tapme", "https"],
            appProtocol: .freedesktop,
            objectPath: "/org/example/Handler",
            surfaces: [.desktop, .watch],
            liveActivityLaunchTypes: ["Delivery"],
            userActivityAction: "continue-activity",
            providerPath: "/org/example/Provider"
        ))
    }

    @Test func invalidAppID() {
        expectHostError(.invalidArgument, mentioning: ["'TapMe'", "at least two elements"]) {
            try AppOptions.parse(appID: "TapMe", [:])
        }
    }

    @Test func unknownKeysAreListedWithTheKnownOnes() {
        expectHostError(.invalidArgument, mentioning: [
            "'Schemes'", "'color'", "schemes (as)", "protocol (s)", "object_path (o)", "surfaces (as)",
            "live_activity_launch_types (as)", "user_activity_action (s)", "provider_path (o)",
        ]) {
            try AppOptions.parse(appID: appID, ["schemes": .strings([]), "color": .string("red"), "Schemes": .strings([])])
        }
    }

    // MARK: schemes

    @Test func schemesAreLowercasedAndDeduplicatedInOrder() throws {
        let o = try AppOptions.parse(appID: appID, ["schemes": .strings(["TapMe", "https", "tapme", "HTTPS", "web+tap"])])
        #expect(o.schemes == ["tapme", "https", "web+tap"])
        #expect(o.declares(scheme: "TAPME"))
        #expect(!o.declares(scheme: "http"))
    }

    @Test func schemesEmptyList() throws {
        #expect(try AppOptions.parse(appID: appID, ["schemes": .strings([])]).schemes == [])
    }

    @Test(arguments: [
        (OptionValue.string("tapme"), "s"),
        (OptionValue.array(elementSignature: "i", [.int(1)]), "ai"),
        (OptionValue.array(elementSignature: "v", []), "av"),
        (OptionValue.other(signature: "(ss)"), "(ss)"),
    ])
    func schemesWrongType(_ value: OptionValue, _ got: String) {
        expectHostError(.invalidArgument, mentioning: ["option 'schemes' must be an array of strings (as), got \(got)"]) {
            try AppOptions.parse(appID: appID, ["schemes": value])
        }
    }

    @Test(arguments: [("1tap", "must start with an ASCII letter"), ("tap:", "without ':'"), ("", "must not be empty")])
    func schemesInvalidValue(_ scheme: String, _ rule: String) {
        expectHostError(.invalidArgument, mentioning: ["option 'schemes'", rule]) {
            try AppOptions.parse(appID: appID, ["schemes": .strings(["ok", scheme])])
        }
    }

    // MARK: protocol

    @Test(arguments: [("widgethost", AppProtocol.widgethost), ("freedesktop", .freedesktop)])
    func protocols(_ raw: String, _ expected: AppProtocol) throws {
        #expect(try AppOptions.parse(appID: appID, ["protocol": .string(raw)]).appProtocol == expected)
    }

    @Test func protocolUnknown() {
        expectHostError(.invalidArgument, mentioning: ["option 'protocol'", "'dbus'", "'widgethost'", "'freedesktop'"]) {
            try AppOptions.parse(appID: appID, ["protocol": .string("dbus")])
        }
    }

    @Test func protocolWrongType() {
        expectHostError(.invalidArgument, mentioning: ["option 'protocol' must be a string (s), got b"]) {
            try AppOptions.parse(appID: appID, ["protocol": .bool(true)])
        }
    }

    // MARK: object_path

    @Test func objectPathInvalid() {
        expectHostError(.invalidArgument, mentioning: ["option 'object_path'", "'/org/x/'", "must not end with '/'"]) {
            try AppOptions.parse(appID: appID, ["object_path": .objectPath("/org/x/")])
        }
    }

    @Test func objectPathWrongType() {
        expectHostError(.invalidArgument, mentioning: ["option 'object_path' must be an object path (o), got s"]) {
            try AppOptions.parse(appID: appID, ["object_path": .string("/org/x")])
        }
    }

    // MARK: surfaces

    @Test func surfacesAreSortedAndUnique() throws {
        let o = try AppOptions.parse(appID: appID, ["surfaces": .strings(["watch", "lock-screen", "car", "watch", "desktop"])])
        #expect(o.surfaces == [.desktop, .lockScreen, .car, .watch])
    }

    @Test func surfacesEmpty() throws {
        #expect(try AppOptions.parse(appID: appID, ["surfaces": .strings([])]).surfaces == [])
    }

    @Test func surfacesUnknown() {
        expectHostError(.invalidArgument, mentioning: ["option 'surfaces'", "'phone'", "desktop, lock-screen, car, watch"]) {
            try AppOptions.parse(appID: appID, ["surfaces": .strings(["desktop", "phone"])])
        }
    }

    @Test func surfacesWrongType() {
        expectHostError(.invalidArgument, mentioning: ["option 'surfaces' must be an array of strings (as), got s"]) {
            try AppOptions.parse(appID: appID, ["surfaces": .string("desktop")])
        }
    }

    // MARK: live_activity_launch_types

    @Test func launchTypes() throws {
        #expect(try AppOptions.parse(appID: appID, [:]).liveActivityLaunchTypes == nil)
        #expect(try AppOptions.parse(appID: appID, ["live_activity_launch_types": .strings([])]).liveActivityLaunchTypes == [])
        #expect(try AppOptions.parse(appID: appID, ["live_activity_launch_types": .strings(["B", "A", "B"])]).liveActivityLaunchTypes == ["B", "A"])
    }

    @Test func launchTypesEmptyName() {
        expectHostError(.invalidArgument, mentioning: ["option 'live_activity_launch_types'", "empty type name"]) {
            try AppOptions.parse(appID: appID, ["live_activity_launch_types": .strings(["A", ""])])
        }
    }

    @Test func launchTypesWrongType() {
        expectHostError(.invalidArgument, mentioning: ["option 'live_activity_launch_types' must be an array of strings (as), got a{sv}"]) {
            try AppOptions.parse(appID: appID, ["live_activity_launch_types": .dict([:])])
        }
    }

    // MARK: user_activity_action

    @Test func userActivityActionNeedsFreedesktop() {
        expectHostError(.invalidArgument, mentioning: ["user_activity_action", "'go'", "only to protocol 'freedesktop'"]) {
            try AppOptions.parse(appID: appID, ["user_activity_action": .string("go")])
        }
        expectHostError(.invalidArgument, mentioning: ["only to protocol 'freedesktop'"]) {
            try AppOptions.parse(appID: appID, ["user_activity_action": .string("go"), "protocol": .string("widgethost")])
        }
    }

    @Test func userActivityActionWithFreedesktop() throws {
        let explicit = try AppOptions.parse(appID: appID, ["user_activity_action": .string("app.go"), "protocol": .string("freedesktop")])
        #expect(explicit.userActivityAction == "app.go")
        let byDefault = try AppOptions.parse(
            appID: appID, ["user_activity_action": .string("go")], base: AppOptions(defaultsFor: appID, appProtocol: .freedesktop))
        #expect(byDefault.userActivityAction == "go")
    }

    @Test func userActivityActionInvalidName() {
        expectHostError(.invalidArgument, mentioning: ["option 'user_activity_action'", "'open url'", "' '"]) {
            try AppOptions.parse(appID: appID, ["user_activity_action": .string("open url"), "protocol": .string("freedesktop")])
        }
        expectHostError(.invalidArgument, mentioning: ["option 'user_activity_action' must not be empty"]) {
            try AppOptions.parse(appID: appID, ["user_activity_action": .string(""), "protocol": .string("freedesktop")])
        }
    }

    @Test func userActivityActionWrongType() {
        expectHostError(.invalidArgument, mentioning: ["option 'user_activity_action' must be a string (s), got as"]) {
            try AppOptions.parse(appID: appID, ["user_activity_action": .strings(["go"]), "protocol": .string("freedesktop")])
        }
    }

    // MARK: provider_path

    @Test func providerPath() throws {
        #expect(try AppOptions.parse(appID: appID, ["provider_path": .objectPath("/p")]).providerPath == "/p")
        expectHostError(.invalidArgument, mentioning: ["option 'provider_path'", "'p'", "must start with '/'"]) {
            try AppOptions.parse(appID: appID, ["provider_path": .objectPath("p")])
        }
        expectHostError(.invalidArgument, mentioning: ["option 'provider_path' must be an object path (o), got x"]) {
            try AppOptions.parse(appID: appID, ["provider_path": .int(3)])
        }
    }
}

@Suite struct AppOptionsValuesTests {
    @Test func defaultsView() {
        let values = AppOptions(defaultsFor: appID).optionValues()
        #expect(values == [
            "schemes": .array(elementSignature: "s", []),
            "protocol": .string("widgethost"),
            "object_path": .objectPath("/org/example/TapMe"),
            "surfaces": .array(elementSignature: "s", [.string("desktop"), .string("lock-screen")]),
        ])
    }

    @Test func fullViewAndRoundTrip() throws {
        let options: [String: OptionValue] = [
            "schemes": .strings(["tapme"]),
            "protocol": .string("freedesktop"),
            "object_path": .objectPath("/h"),
            "surfaces": .strings(["car"]),
            "live_activity_launch_types": .strings([]),
            "user_activity_action": .string("go"),
            "provider_path": .objectPath("/p"),
        ]
        let parsed = try AppOptions.parse(appID: appID, options)
        #expect(parsed.optionValues() == options)
        #expect(try AppOptions.parse(appID: appID, parsed.optionValues()) == parsed)
        #expect(parsed.optionValues()["live_activity_launch_types"]?.signature == "as")
    }
}

@Suite struct SurfaceTests {
    @Test func orderAndRawValues() {
        #expect(Surface.allCases.sorted() == [.desktop, .lockScreen, .car, .watch])
        #expect(Surface.lockScreen.rawValue == "lock-screen")
        #expect(Surface.car < Surface.watch)
        #expect(!(Surface.watch < Surface.desktop))
    }
}
