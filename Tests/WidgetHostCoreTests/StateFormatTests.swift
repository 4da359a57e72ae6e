import Foundation
import Testing
@testable import WidgetHostCore
@testable import WidgetHostSystem

/// The state files in Tests/Fixtures/state, written by the host before its
/// records had codecs of their own: what any host after it must still read,
/// and write again byte for byte.
@Suite("State format")
struct StateFormatTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/state")

    static func fixture(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name))) }

    /// A file's record lines, without the snapshot's header.
    static func lines(_ name: String) throws -> [ArraySlice<UInt8>] {
        let bytes = try fixture(name)
        let lines = bytes.split(separator: UInt8(ascii: "\n"))
        return name == "journal" ? Array(lines) : Array(lines.dropFirst())
    }

    @Test("The snapshot and journal an earlier host wrote open as the state it journalled")
    func opensTheFixtureDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wh-format-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["state.json", "journal"] {
            try Data(try Self.fixture(name)).write(to: URL(fileURLWithPath: directory + "/" + name))
        }
        let (opened, state) = try StateDirectory.open(directory: directory)
        #expect(opened.notes.isEmpty, "\(opened.notes)")
        #expect(state == StateFixture.state(try StateFixture.snapshotRecords() + StateFixture.journalRecords()))
        #expect(state.nextWidgetNumber == 10 && state.nextActivityNumber == 4)
    }

    @Test("Every record an earlier host wrote is written again byte for byte, but for the order of a dictionary's members")
    func writesTheSameBytes() throws {
        var exact = 0
        for name in ["state.json", "journal"] {
            for line in try Self.lines(name) {
                let record = try #require(StateFile.record(line), "\(name): \(String(decoding: line, as: UTF8.self))")
                let written = Array(try StateFile.line(record).utf8.dropLast())
                if written == Array(line) {
                    exact += 1
                    continue
                }
                // A dictionary of two or more members is written in the order it holds them, which varies.
                #expect(record.hasUnorderedMembers, "\(String(decoding: line, as: UTF8.self))")
                let json = { (bytes: [UInt8]) in try JSONValue.decode(String(decoding: bytes.dropFirst(17), as: UTF8.self)).value }
                #expect(try json(written) == json(Array(line)))
            }
        }
        #expect(exact >= 15, "all but one record hold no dictionary of several members: they compare exactly")
    }

    @Test("A version 1 snapshot an earlier host wrote reads as the state it held, and is to be written again as version 2")
    func readsVersion1() throws {
        let (state, reading) = StateFile.readSnapshot(try Self.fixture("state-v1.json"))
        #expect(reading.unreadable == nil && reading.damaged.isEmpty && reading.rewrite)
        #expect(state == StateFixture.state(try StateFixture.snapshotRecords()))
    }
}

extension StateRecord {
    /// Whether the record holds a dictionary of two or more members anywhere, which it writes in no fixed order.
    var hasUnorderedMembers: Bool {
        func unordered(_ options: [String: OptionValue]) -> Bool { options.count > 1 || options.values.contains(where: unordered) }
        func unordered(_ value: OptionValue) -> Bool {
            switch value {
            case .array(_, let items): items.contains(where: unordered)
            case .dict(let fields): unordered(fields)
            default: false
            }
        }
        switch self {
        case .widget(let widget): return unordered(widget.configuration)
        case .activity(let activity): return unordered(activity.attributes) || unordered(activity.state)
        default: return false
        }
    }
}

/// The state the files of Tests/Fixtures/state hold: the snapshot's records,
/// then the journal's, as a host wrote them with these values.
enum StateFixture {
    /// What JSON escapes (quotes, a backslash, control characters) and what it does not (every plane of Unicode).
    static let awkward = "\"quoted\" back\\slash tab\t newline\n nul\u{0} bell\u{7} é 中文 🧩 \u{2028} /"

    /// Every kind of option value, with the extremes of each number, in an
    /// array: written in a fixed order, unlike a dictionary's members.
    static let everyValue = OptionValue.array(elementSignature: "v", [
        .string(awkward), .string(""), .objectPath("/org/example/Fixture"), .bool(true), .bool(false),
        .int(Int64.min), .int(Int64.max), .int(0), .uint(UInt64.max), .uint(UInt64(Int64.max) + 1), .uint(0),
        .double(0.1), .double(2), .double(-1.5e-7), .double(1e300), .double(-Double.greatestFiniteMagnitude),
        .double(Double.leastNonzeroMagnitude), .double(Double.leastNormalMagnitude), .double(9_007_199_254_740_992),
        .strings(["a", awkward]), .array(elementSignature: "x", []), .array(elementSignature: "av", [.array(elementSignature: "v", [.int(1)])]),
        .dict([:]), .dict(["only": .dict(["deeper": .uint(7)])]), .other(signature: "h"),
    ])

    static let bundle = #"{"widgets":[{"kind":"K","families":["systemSmall","systemMedium"],"displayName":"Fixture \"K\" é"}]}"#
    /// A text element showing ``awkward``.
    static let content = #"{"type":"text","text":"# + JSONValue.string(awkward).jsonText + "}"
    static let activityContent =
        #"{"lockScreen":{"type":"text","text":"🧩"},"compactLeading":{"type":"text"},"compactTrailing":{"type":"text"},"minimal":{"type":"text"},"expanded":{"type":"text"}}"#

    /// The records of the snapshot, in the order the state applies them.
    static func snapshotRecords() throws -> [StateRecord] {
        let many = StoredWidget(
            id: "w1", appID: "org.example.Fixture", kind: "K", family: .systemSmall,
            configuration: [
                "all": everyValue, "s": .string(awkward), "x": .int(-5), "d": .double(0.5), "nested": .dict(["a": .int(1), "b": .strings(["x"])]),
            ],
            content: content)
        let bare = StoredWidget(id: "w2", appID: "org.example.Fixture", kind: "K", family: .systemMedium, configuration: [:], content: nil)
        let single = StoredWidget(
            id: "w3", appID: "org.example.Fixture", kind: "K", family: .systemSmall, configuration: ["all": everyValue], content: #"{"type":"spacer"}"#)
        var live = LiveActivityStore()
        let started = try live.start(
            appID: "org.example.Fixture", attributesType: "Fixture.Attributes", contentJSON: activityContent,
            options: [
                "relevance": .double(2.25), "stale_date": .int(1_700_000_600), "attributes": .dict(["order": .string(awkward)]),
                "state": .dict(["eta": .uint(UInt64.max)]),
            ],
            now: Date(timeIntervalSince1970: 1_700_000_000))
        var ended = StoredActivity(started)
        ended.id = "a2"
        ended.staleDate = nil
        ended.relevance = 0
        ended.endedAt = 1_700_000_100_000
        ended.removeAt = Int64.max
        ended.attributes = ["all": everyValue]
        ended.state = [:]
        let timeline = try Timeline.parse(
            entries: [(1_700_000_000_000, #"{"type":"text","text":"one"}"#), (1_700_000_060_000, content)], policy: "after",
            reloadAtMs: 1_700_000_900_000, limits: ViewTreeLimits(), maxEntries: 10)
        return [
            .bundle(appID: "org.example.Fixture", json: bundle), .widget(many), .widget(bare), .widget(single),
            .activity(StoredActivity(started)), .activity(ended),
            .timeline(StoredTimeline(widgetID: "w1", timeline: timeline, receivedAt: Date(timeIntervalSince1970: 1_700_000_000.5))),
        ]
    }

    /// The records of the journal: one of each kind.
    static func journalRecords() throws -> [StateRecord] {
        let timeline = try Timeline.parse(
            entries: [(0, #"{"type":"spacer"}"#)], policy: "never", reloadAtMs: 0, limits: ViewTreeLimits(), maxEntries: 10)
        return [
            .bundle(appID: "org.example.Gone", json: #"{"widgets":[]}"#), .bundleRemoved(appID: "org.example.Gone"),
            .widget(StoredWidget(id: "w4", appID: "org.example.Fixture", kind: "K", family: .systemSmall, configuration: ["n": .int(1)], content: nil)),
            .widgetRemoved(id: "w2"), .activityRemoved(id: "a1"),
            .timeline(StoredTimeline(widgetID: "w4", timeline: timeline, receivedAt: Date(timeIntervalSince1970: 0))),
            .minted(widget: "w9", activity: "a3"),
        ]
    }

    static func state(_ records: [StateRecord]) -> DurableState {
        var state = DurableState()
        for record in records { state.apply(record) }
        return state
    }
}
