import Foundation
import Testing
@testable import WidgetHostCore

@Suite struct OptionValueTests {
    @Test(arguments: [
        (OptionValue.string("x"), "s"),
        (.objectPath("/"), "o"),
        (.bool(true), "b"),
        (.int(-1), "x"),
        (.uint(1), "t"),
        (.double(1.5), "d"),
        (.strings(["a"]), "as"),
        (.array(elementSignature: "a{sv}", []), "aa{sv}"),
        (.dict(["k": .int(1)]), "a{sv}"),
        (.other(signature: "(ii)"), "(ii)"),
    ])
    func signatures(_ value: OptionValue, _ signature: String) {
        #expect(value.signature == signature)
    }

    @Test func accessors() {
        #expect(OptionValue.string("a").stringValue == "a")
        #expect(OptionValue.objectPath("/a").stringValue == nil)
        #expect(OptionValue.objectPath("/a").objectPathValue == "/a")
        #expect(OptionValue.strings(["a", "b"]).stringArrayValue == ["a", "b"])
        #expect(OptionValue.array(elementSignature: "o", [.objectPath("/a")]).stringArrayValue == nil)
        #expect(OptionValue.array(elementSignature: "s", [.int(1)]).stringArrayValue == nil)
    }
}

@Suite struct HostErrorTests {
    @Test(arguments: HostError.Name.allCases)
    func factoriesAndNames(_ name: HostError.Name) {
        let factories: [HostError.Name: (String) -> HostError] = [
            .invalidArgument: HostError.invalidArgument, .unknownApp: HostError.unknownApp,
            .unknownKind: HostError.unknownKind, .unsupportedFamily: HostError.unsupportedFamily,
            .unknownElement: HostError.unknownElement, .invalidContent: HostError.invalidContent,
            .accessDenied: HostError.accessDenied, .activationFailed: HostError.activationFailed,
            .limitExceeded: HostError.limitExceeded, .inconsistentLinks: HostError.inconsistentLinks,
            .storageFailed: HostError.storageFailed,
        ]
        let error = factories[name]?("why; how")
        #expect(error == HostError(name, "why; how"))
        #expect(error?.dbusName == "org.widgethost.Host1.Error." + name.rawValue)
        #expect(error?.description == name.rawValue + ": why; how")
    }

    @Test func rawValuesMatchTheContract() {
        #expect(HostError.Name.allCases.map(\.rawValue) == [
            "InvalidArgument", "UnknownApp", "UnknownKind", "UnsupportedFamily", "UnknownElement",
            "InvalidContent", "AccessDenied", "ActivationFailed", "LimitExceeded", "InconsistentLinks", "StorageFailed",
        ])
    }
}

@Suite struct ClockTests {
    @Test func testClockMovesOnlyWhenTold() {
        let clock = TestWallClock(Date(timeIntervalSince1970: 1000))
        #expect(clock.now() == Date(timeIntervalSince1970: 1000))
        clock.advance(by: 60.5)
        #expect(clock.now() == Date(timeIntervalSince1970: 1060.5))
        clock.set(Date(timeIntervalSince1970: 5))
        #expect(clock.now() == Date(timeIntervalSince1970: 5))
        #expect(TestWallClock().now() == Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test func systemClockIsNow() {
        let clock: any WallClock = SystemWallClock()
        #expect(abs(clock.now().timeIntervalSinceNow) < 5)
    }
}
