import Foundation
import Testing
@testable import WidgetHostCore
import WidgetHostWire

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

/// A placed widget's configuration is held packed (docs/daemon.md#footprint):
/// every value reads back as it was given.
@Suite struct PackedOptionsTests {
    static let every: [String: OptionValue] = [
        "s": .string("text é ✓"), "empty": .string(""), "o": .objectPath("/org/example/x"),
        "yes": .bool(true), "no": .bool(false),
        "small": .int(-1), "min": .int(.min), "max": .int(.max), "zero": .int(0),
        "t": .uint(.max), "t0": .uint(127), "t1": .uint(128),
        "d": .double(-2.5e-300), "pi": .double(.pi),
        "as": .strings(["a", "", "ccc"]), "none": .array(elementSignature: "a{sv}", []),
        "nested": .array(elementSignature: "a{sv}", [.dict(["k": .int(1)]), .dict([:])]),
        "dict": .dict(["inner": .dict(["deeper": .strings(["x"])]), "n": .uint(300)]),
        "other": .other(signature: "(ii)"),
        String(repeating: "k", count: 200): .string(String(repeating: "v", count: 70_000)),
    ]

    @Test func everyKindOfValueReadsBackAsGiven() {
        var bytes: [UInt8] = []
        OptionValue.pack(Self.every, into: &bytes)
        #expect(bytes.withUnsafeBytes { OptionValue.unpack($0) } == Self.every)
        var empty: [UInt8] = []
        OptionValue.pack([:], into: &empty)
        #expect(empty.withUnsafeBytes { OptionValue.unpack($0) } == [:])
    }

    @Test func equalDictionariesPackTheSame() {
        var a: [UInt8] = []
        var b: [UInt8] = []
        OptionValue.pack(Self.every, into: &a)
        // The same entries put in in another order, into a table of another size.
        var other: [String: OptionValue] = [:]
        other.reserveCapacity(1000)
        for key in Self.every.keys.sorted().reversed() { other[key] = Self.every[key] }
        OptionValue.pack(other, into: &b)
        #expect(a == b)
    }

    @Test func aPlacedWidgetKeepsEveryField() {
        let content = try! ViewTree.parse(#"{"type":"text","id":"t","text":"héllo","widgetURL":"x://y"}"#)
        var widget = PlacedWidget(
            id: "w7", appID: "org.example.LongerThanFifteen", kind: "K", family: .systemMedium, configuration: Self.every, content: content)
        #expect(widget.id == "w7")
        #expect(widget.appID == "org.example.LongerThanFifteen")
        #expect(widget.kind == "K")
        #expect(widget.family == .systemMedium)
        #expect(widget.configuration == Self.every)
        #expect(widget.content == content)

        let before = widget
        widget.configuration["small"] = .int(2)
        #expect(widget.configuration["small"] == .int(2))
        #expect(widget.content == content)
        #expect(before.configuration == Self.every, "a copy keeps its own value")
        #expect(widget != before)
        widget.configuration["small"] = .int(-1)
        #expect(widget == before)

        widget.content = nil
        #expect(widget.content == nil)
        #expect(widget.configuration == Self.every)
        #expect(widget != before)
        widget.content = content
        #expect(widget.family == .systemMedium && widget.content == content && widget.id == "w7")
        #expect(widget == before)

        let bare = PlacedWidget(id: "w8", appID: "a.b", kind: "K", family: .systemSmall, configuration: [:], content: nil)
        #expect(bare.configuration.isEmpty && bare.content == nil)
        #expect(bare == PlacedWidget(id: "w8", appID: "a.b", kind: "K", family: .systemSmall, configuration: [:], content: nil))
        #expect(bare != PlacedWidget(id: "w8", appID: "a.b", kind: "K", family: .systemSmall, configuration: ["n": .int(0)], content: nil))
        let zero = PlacedWidget(id: "w8", appID: "a.b", kind: "K", family: .systemSmall, configuration: ["d": .double(0)], content: nil)
        let negativeZero = PlacedWidget(id: "w8", appID: "a.b", kind: "K", family: .systemSmall, configuration: ["d": .double(-0.0)], content: nil)
        #expect(zero == negativeZero, "equal as values, though their bits differ")
    }
}
