import Foundation
import Testing
@testable import WidgetHostCore

private let hour: TimeInterval = 3600

/// Content JSON with a plain tree for every presentation not given.
private func activityJSON(widgetURL: String? = nil, _ trees: [ActivityPresentation: String] = [:]) -> String {
    var parts: [String] = []
    if let widgetURL { parts.append("\"widgetURL\":\"\(widgetURL)\"") }
    for presentation in ActivityPresentation.allCases {
        parts.append("\"\(presentation.rawValue)\":\(trees[presentation] ?? "{\"type\":\"text\"}")")
    }
    return "{" + parts.joined(separator: ",") + "}"
}

private func unix(_ date: Date) -> OptionValue { .int(Int64(date.timeIntervalSince1970)) }

// MARK: - Presentations and content

@Suite("Live Activity presentations and content")
struct ActivityContentTests {
    @Test("Presentation and state names are the contract's")
    func names() throws {
        #expect(ActivityPresentation.allCases.map(\.rawValue) == ["lockScreen", "compactLeading", "compactTrailing", "minimal", "expanded"])
        #expect(ActivityState.allCases.map(\.rawValue) == ["active", "stale", "ended"])
        #expect(ActivityDismissal.allCases.map(\.rawValue) == ["default", "immediate", "after"])
        for presentation in ActivityPresentation.allCases {
            #expect(try ActivityPresentation.parse(presentation.rawValue) == presentation)
        }
        expectHostError(.invalidArgument, mentioning: ["'lockscreen'", "lockScreen, compactLeading, compactTrailing, minimal, expanded"]) {
            try ActivityPresentation.parse("lockscreen")
        }
        #expect(ActivityPresentation.allCases.filter(\.allowsInteractiveControls) == [.lockScreen, .expanded])
        #expect(ActivityPresentation.allCases.filter(\.supportsLinks) == [.expanded])
    }

    @Test("Parses every presentation's tree and keeps the JSON text as given")
    func parse() throws {
        let json = activityJSON(
            widgetURL: "tapme://order/7",
            [
                .lockScreen: #"{"type":"vstack","children":[{"type":"text","id":"eta"}]}"#,
                .compactLeading: #"{"type":"image","id":"eta"}"#,
                .expanded: #"{"type":"zstack", "id":"x", "font":"title"}"#,
            ]) + "\n"
        let content = try ActivityContent.parse(json)
        #expect(content.json == json)
        #expect(content.widgetURL == "tapme://order/7")
        #expect(content.tree(for: .lockScreen).root.type == "vstack")
        #expect(content.lockScreen.path(to: "eta")?.map(\.type) == ["vstack", "text"])
        // Ids are unique per tree, not across presentations.
        #expect(content.tree(for: .compactLeading).path(to: "eta")?.map(\.type) == ["image"])
        #expect(content.tree(for: .compactTrailing).root.type == "text")
        #expect(content.tree(for: .minimal).root.type == "text")
        #expect(content.tree(for: .expanded).root.fields["font"] == .string("title"))
        #expect(try ActivityContent.parse(activityJSON()).widgetURL == nil)
    }

    @Test("Missing presentations are InvalidContent naming each of them")
    func missing() {
        let json = #"{"lockScreen":{"type":"text"},"expanded":{"type":"text"}}"#
        expectHostError(.invalidContent, mentioning: ["compactLeading, compactTrailing, minimal", "every presentation"]) {
            try ActivityContent.parse(json)
        }
        expectHostError(.invalidContent, mentioning: ["lacks the presentation minimal"]) {
            try ActivityContent.parse(#"{"lockScreen":{"type":"t"},"compactLeading":{"type":"t"},"compactTrailing":{"type":"t"},"expanded":{"type":"t"}}"#)
        }
    }

    @Test("Unknown top-level keys are InvalidContent naming them and the allowed keys")
    func unknownKeys() {
        let json = activityJSON([:]).dropLast() + #","dynamicIsland":{},"title":"x"}"#
        expectHostError(.invalidContent, mentioning: ["'dynamicIsland', 'title'", "widgetURL, lockScreen, compactLeading, compactTrailing, minimal, expanded"]) {
            try ActivityContent.parse(String(json))
        }
        // A misspelt presentation is named, and so is the one it leaves missing.
        let misspelt = activityJSON().replacingOccurrences(of: "\"minimal\"", with: "\"Minimal\"")
        expectHostError(.invalidContent, mentioning: ["'Minimal'", "minimal is missing"]) { try ActivityContent.parse(misspelt) }
    }

    @Test(
        "Malformed content is InvalidContent saying where",
        arguments: [
            ("not json", "not valid JSON"),
            ("[]", "must be a JSON object"),
            (activityJSON(widgetURL: "relative/path"), "$.widgetURL"),
            (activityJSON().replacingOccurrences(of: "{\"lockScreen", with: "{\"widgetURL\":7,\"lockScreen"), "$.widgetURL must be a string"),
            (activityJSON([.compactTrailing: #"{"type":"link","id":"l"}"#]), "$.compactTrailing (link 'l')"),
            (activityJSON([.minimal: "[]"]), "$.minimal must be an element object"),
            (activityJSON([.expanded: #"{"type":"v","children":[{"type":"a","id":"x"},{"type":"b","id":"x"}]}"#]), "used twice"),
        ])
    func malformed(_ json: String, _ fragment: String) {
        expectHostError(.invalidContent, mentioning: [fragment]) { try ActivityContent.parse(json) }
    }

    @Test("Size, depth and element limits cover the whole content")
    func limits() throws {
        var limits = ViewTreeLimits()
        limits.maxBytes = 100
        let json = activityJSON()
        #expect(json.utf8.count > 100)
        expectHostError(.limitExceeded, mentioning: ["\(json.utf8.count) bytes", "100 bytes"]) { try ActivityContent.parse(json, limits: limits) }

        limits = ViewTreeLimits()
        limits.maxElements = 5
        _ = try ActivityContent.parse(json, limits: limits)
        let six = activityJSON([.expanded: #"{"type":"v","children":[{"type":"t"}]}"#])
        expectHostError(.limitExceeded, mentioning: ["more than 5 elements"]) { try ActivityContent.parse(six, limits: limits) }

        limits = ViewTreeLimits()
        limits.maxDepth = 2
        _ = try ActivityContent.parse(activityJSON([.expanded: #"{"type":"v","children":[{"type":"t"}]}"#]), limits: limits)
        let deep = activityJSON([.expanded: #"{"type":"v","children":[{"type":"w","children":[{"type":"t"}]}]}"#])
        expectHostError(.limitExceeded, mentioning: ["deeper than 2"]) { try ActivityContent.parse(deep, limits: limits) }
    }
}

// MARK: - Compact consistency

@Suite("Compact consistency (InconsistentLinks)")
struct CompactConsistencyTests {
    @Test("Different widgetURLs on the two compact sides are InconsistentLinks naming both and the fix")
    func differentTreeURLs() {
        let json = activityJSON([
            .compactLeading: #"{"type":"image","widgetURL":"tapme://left"}"#,
            .compactTrailing: #"{"type":"text","widgetURL":"tapme://right"}"#,
        ])
        expectHostError(.inconsistentLinks, mentioning: ["tapme://left", "tapme://right", "same widgetURL", "activity-level widgetURL"]) {
            try ActivityContent.parse(json)
        }
    }

    @Test("A side without a widgetURL opens the activity-level one, which may conflict with the other side")
    func activityURLAgainstTreeURL() {
        let json = activityJSON(widgetURL: "tapme://activity", [.compactTrailing: #"{"type":"text","widgetURL":"tapme://right"}"#])
        expectHostError(.inconsistentLinks, mentioning: ["compactLeading opens tapme://activity", "compactTrailing opens tapme://right"]) {
            try ActivityContent.parse(json)
        }
    }

    @Test("The first widgetURL in pre-order is the one compared")
    func firstInPreOrder() throws {
        let json = activityJSON([
            .compactLeading: #"{"type":"h","children":[{"type":"a","widgetURL":"tapme://same"},{"type":"b","widgetURL":"tapme://other"}]}"#,
            .compactTrailing: #"{"type":"text","widgetURL":"tapme://same"}"#,
        ])
        let content = try ActivityContent.parse(json)
        #expect(content.defaultURL(for: .compactLeading) == "tapme://same")
        let swapped = json.replacingOccurrences(of: "\"widgetURL\":\"tapme://same\"},{", with: "\"widgetURL\":\"tapme://other\"},{")
        expectHostError(.inconsistentLinks, mentioning: ["tapme://other", "tapme://same"]) { try ActivityContent.parse(swapped) }
    }

    @Test(
        "Equal URLs, one-sided URLs and links (not honoured in compact) are consistent",
        arguments: [
            activityJSON([
                .compactLeading: #"{"type":"image","widgetURL":"tapme://same"}"#,
                .compactTrailing: #"{"type":"text","widgetURL":"tapme://same"}"#,
            ]),
            activityJSON(widgetURL: "tapme://activity"),
            activityJSON(widgetURL: "tapme://same", [.compactTrailing: #"{"type":"text","widgetURL":"tapme://same"}"#]),
            activityJSON([.compactLeading: #"{"type":"image","widgetURL":"tapme://left"}"#]),
            activityJSON([.compactTrailing: #"{"type":"image","widgetURL":"tapme://right"}"#]),
            activityJSON([
                .compactLeading: #"{"type":"link","id":"l","url":"tapme://left","widgetURL":"tapme://same"}"#,
                .compactTrailing: #"{"type":"link","id":"r","url":"tapme://right","widgetURL":"tapme://same"}"#,
            ]),
            activityJSON([.minimal: #"{"type":"image","widgetURL":"tapme://minimal"}"#, .compactLeading: #"{"type":"t","widgetURL":"tapme://c"}"#]),
        ])
    func consistent(_ json: String) throws {
        _ = try ActivityContent.parse(json)
    }

    @Test("One side opening a URL and the other none is allowed; the other side continues the user activity")
    func oneSided() throws {
        let content = try ActivityContent.parse(activityJSON([.compactLeading: #"{"type":"image","widgetURL":"tapme://left"}"#]))
        #expect(content.defaultURL(for: .compactLeading) == "tapme://left")
        #expect(content.defaultURL(for: .compactTrailing) == nil)
        try content.checkCompactConsistency()
    }

    @Test("Start, Update and End's final content refuse inconsistent compact links and change nothing")
    func throughTheStore() throws {
        let clock = TestWallClock()
        var store = LiveActivityStore()
        let bad = activityJSON([
            .compactLeading: #"{"type":"image","widgetURL":"tapme://left"}"#,
            .compactTrailing: #"{"type":"text","widgetURL":"tapme://right"}"#,
        ])
        expectHostError(.inconsistentLinks, mentioning: ["tapme://left"]) {
            try store.start(appID: "org.example.TapMe", attributesType: "Delivery", contentJSON: bad, options: [:], now: clock.now())
        }
        #expect(store.all.isEmpty)
        let a = try store.start(
            appID: "org.example.TapMe", attributesType: "Delivery", contentJSON: activityJSON(), options: [:], now: clock.now())
        expectHostError(.inconsistentLinks, mentioning: ["tapme://right"]) {
            try store.update(id: a.id, contentJSON: bad, options: [:], now: clock.now())
        }
        expectHostError(.inconsistentLinks, mentioning: ["tapme://right"]) {
            try store.end(id: a.id, options: ["content": .string(bad)], now: clock.now())
        }
        #expect(store.activity(a.id) == a)
    }
}

// MARK: - Starting and options

@Suite("Starting Live Activities and their options")
struct ActivityStartTests {
    let app = "org.example.TapMe"

    @Test("Start gives a1, a2, … with every field set")
    func start() throws {
        let clock = TestWallClock()
        var store = LiveActivityStore()
        let json = activityJSON(widgetURL: "tapme://order")
        let a = try store.start(
            appID: app, attributesType: "DeliveryAttributes", contentJSON: json,
            options: [
                "attributes": .dict(["order": .int(7)]), "state": .dict(["eta": .string("5 min")]),
                "stale_date": unix(clock.now().addingTimeInterval(hour)), "relevance": .double(0.5),
            ],
            now: clock.now())
        #expect(a.id == "a1")
        #expect(a.appID == app && a.attributesType == "DeliveryAttributes")
        #expect(a.content.json == json)
        #expect(a.attributes == ["order": .int(7)] && a.state == ["eta": .string("5 min")])
        #expect(a.staleDate == clock.now().addingTimeInterval(hour))
        #expect(a.relevance == 0.5)
        #expect(a.startedAt == clock.now() && a.endedAt == nil && a.removeAt == nil)
        #expect(a.activityState(at: clock.now()) == .active)
        #expect(a.automaticEndDate == clock.now().addingTimeInterval(8 * hour))
        #expect(a.removalDate == clock.now().addingTimeInterval(12 * hour))

        let b = try store.start(appID: "org.example.Other", attributesType: "Game", contentJSON: activityJSON(), options: [:], now: clock.now())
        #expect(b.id == "a2" && b.relevance == 0 && b.staleDate == nil && b.attributes.isEmpty && b.state.isEmpty)
        #expect(store.activity("a1") == a && store.activity("a2") == b && store.activity("a3") == nil)
        #expect(store.activities(of: app) == [a])
        #expect(store.all.map(\.id) == ["a1", "a2"])
    }

    @Test("Unknown options are InvalidArgument naming them and the allowed ones")
    func unknownOptions() {
        var store = LiveActivityStore()
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        expectHostError(.invalidArgument, mentioning: ["'dismissal', 'staleDate'", "StartActivity", "attributes (a{sv}), state (a{sv}), stale_date (x), relevance (d)"]) {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["staleDate": .int(1), "dismissal": .string("x")], now: now)
        }
        let a = try? store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: now)
        expectHostError(.invalidArgument, mentioning: ["'dismissal'", "Update", "state (a{sv}), stale_date (x), relevance (d)"]) {
            try store.update(id: a!.id, contentJSON: "", options: ["dismissal": .string("immediate")], now: now)
        }
        expectHostError(.invalidArgument, mentioning: ["'relevance'", "End", "dismissal (s), dismissal_date (x), content (s), state (a{sv})"]) {
            try store.end(id: a!.id, options: ["relevance": .double(1)], now: now)
        }
    }

    @Test(
        "Options of the wrong type are InvalidArgument naming the expected D-Bus type",
        arguments: [
            ("attributes", OptionValue.strings(["x"]), "a dictionary (a{sv}), got as"),
            ("state", .string("x"), "a dictionary (a{sv}), got s"),
            ("stale_date", .string("tomorrow"), "a 64-bit integer (x), got s"),
            ("stale_date", .double(1.5), "a 64-bit integer (x), got d"),
            ("relevance", .string("high"), "a double (d), got s"),
            ("relevance", .bool(true), "a double (d), got b"),
        ])
    func wrongTypes(_ key: String, _ value: OptionValue, _ fragment: String) {
        var store = LiveActivityStore()
        expectHostError(.invalidArgument, mentioning: ["option '\(key)'", fragment]) {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [key: value], now: Date())
        }
    }

    @Test("Relevance takes integers and must be finite; stale_date takes t too")
    func numbers() throws {
        var store = LiveActivityStore()
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let a = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["relevance": .int(3)], now: now)
        #expect(a.relevance == 3)
        let b = try store.start(
            appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["relevance": .uint(2), "stale_date": .uint(1_700_000_600)], now: now)
        #expect(b.relevance == 2 && b.staleDate == Date(timeIntervalSince1970: 1_700_000_600))
        expectHostError(.invalidArgument, mentioning: ["option 'relevance'", "finite"]) {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["relevance": .double(.nan)], now: now)
        }
        expectHostError(.invalidArgument, mentioning: ["option 'relevance'", "finite"]) {
            try store.update(id: a.id, contentJSON: "", options: ["relevance": .double(.infinity)], now: now)
        }
        #expect(store.activity(a.id)?.relevance == 3)
    }

    // Found by fuzzing (scripts/fuzz, fuzz-dbus): a StartActivity with
    // stale_date Int64.max crashed the host, which turned the date back into
    // whole seconds (a Double past Int64.max) for the activity's properties.
    @Test("Dates outside the range the XML declares are InvalidArgument, never converted")
    func farDates() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let range = try #require(StartActivityOptions.declared.first { $0.key == "stale_date" }?.range)
        let far: [OptionValue] = [.int(.max), .int(.min), .uint(.max), .int(range.upperBound + 1), .int(range.lowerBound - 1), .uint(UInt64(range.upperBound) + 1)]
        for value in far {
            var store = LiveActivityStore()
            expectHostError(.invalidArgument, mentioning: ["option 'stale_date' is", "out of range; give Unix seconds from 0 to 253402300799"]) {
                try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["stale_date": value], now: now)
            }
            let a = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: now)
            expectHostError(.invalidArgument, mentioning: ["option 'stale_date' is"]) {
                try store.update(id: a.id, contentJSON: "", options: ["stale_date": value], now: now)
            }
            expectHostError(.invalidArgument, mentioning: ["option 'dismissal_date' is"]) {
                try store.end(id: a.id, options: ["dismissal": .string("default"), "dismissal_date": value], now: now)
            }
        }
        for near in [range.upperBound, range.lowerBound] {
            var store = LiveActivityStore()
            let a = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["stale_date": .int(near)], now: now)
            #expect(a.staleDate == Date(timeIntervalSince1970: TimeInterval(near)))
        }
    }

    @Test(
        "Attributes types must be sensible names",
        arguments: [
            ("", "must not be empty"), ("1Delivery", "does not start with an ASCII letter or '_'"), ("Delivery Attributes", "' '"),
            (".Delivery", "empty element"), ("org..Delivery", "empty element"), ("Delivery.", "empty element"),
            ("Délivery", "'é'"), (String(repeating: "A", count: 256), "256 bytes"),
        ])
    func attributesTypes(_ type: String, _ fragment: String) {
        var store = LiveActivityStore()
        expectHostError(.invalidArgument, mentioning: ["attributes type", fragment]) {
            try store.start(appID: app, attributesType: type, contentJSON: activityJSON(), options: [:], now: Date())
        }
    }

    @Test("Good attributes types and app ids are accepted; a bad app id is InvalidArgument")
    func goodNames() throws {
        var store = LiveActivityStore()
        for type in ["DeliveryAttributes", "org.example.TapMe.Delivery_Attributes", "_Private", "Tap-Me2", String(repeating: "A", count: 255)] {
            _ = try store.start(appID: app, attributesType: type, contentJSON: activityJSON(), options: [:], now: Date())
        }
        expectHostError(.invalidArgument, mentioning: ["app id 'TapMe'"]) {
            try store.start(appID: "TapMe", attributesType: "T", contentJSON: activityJSON(), options: [:], now: Date())
        }
    }

    @Test("Each app may have 64 activities not yet removed; ended ones count until they disappear")
    func perAppLimit() throws {
        let clock = TestWallClock()
        var store = LiveActivityStore()
        #expect(store.limits.maxPerApp == 64)
        for _ in 0..<64 {
            _ = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        }
        expectHostError(.limitExceeded, mentioning: [app, "64"]) {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        }
        // Other apps are unaffected.
        _ = try store.start(appID: "org.example.Other", attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        // Ending one (default dismissal) keeps it counted while it is shown.
        _ = try store.end(id: "a1", options: [:], now: clock.now())
        expectHostError(.limitExceeded, mentioning: ["64"]) {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        }
        // Removing it at once frees a place.
        _ = try store.end(id: "a2", options: ["dismissal": .string("immediate")], now: clock.now())
        let a = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        #expect(a.id == "a66")
    }

    @Test("Activities whose removal date has passed do not count even before advance removes them")
    func limitAfterRemovalDate() throws {
        let clock = TestWallClock()
        var limits = ActivityLimits()
        limits.maxPerApp = 2
        var store = LiveActivityStore(limits: limits)
        _ = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        _ = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        expectHostError(.limitExceeded, mentioning: ["at most 2"]) {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        }
        clock.advance(by: 12 * hour - 1)
        expectHostError(.limitExceeded, mentioning: ["at most 2"]) {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        }
        clock.advance(by: 1)
        _ = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
    }
}

// MARK: - Payload

@Suite("Attributes and state payload")
struct ActivityPayloadTests {
    let app = "org.example.TapMe"

    /// `state` = {"k": <s n×"x">} with no attributes is 33 + n bytes:
    /// attributes 0..8; state length 8..12, padding → 16; key "k" → 22;
    /// signature "s" → 25; align 4 → 28; 4 + n + 1.
    func state(_ n: Int) -> [String: OptionValue] { ["k": .string(String(repeating: "x", count: n))] }

    @Test("4096 bytes serialized pass, 4097 are LimitExceeded naming both numbers")
    func limit() throws {
        #expect(LiveActivityStore.payloadSize(attributes: [:], state: state(4063)) == 4096)
        #expect(LiveActivityStore.payloadSize(attributes: [:], state: state(4064)) == 4097)
        var store = LiveActivityStore()
        #expect(store.limits.maxPayloadBytes == 4096)
        let now = Date()
        let a = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["state": .dict(state(4063))], now: now)
        expectHostError(.limitExceeded, mentioning: ["4097 bytes", "4096 bytes"]) {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["state": .dict(state(4064))], now: now)
        }
        expectHostError(.limitExceeded, mentioning: ["4097 bytes", "4096 bytes"]) {
            try store.update(id: a.id, contentJSON: "", options: ["state": .dict(state(4064))], now: now)
        }
        expectHostError(.limitExceeded, mentioning: ["4097 bytes"]) {
            try store.end(id: a.id, options: ["state": .dict(state(4064))], now: now)
        }
        #expect(store.activity(a.id)?.state == state(4063))
        #expect(store.activity(a.id)?.activityState(at: now) == .active)
    }

    @Test("Attributes count toward the limit together with state, also on update")
    func together() throws {
        // attributes {"a": <"">}: 8 → 14 → 17 → 20 → 25; state from align4(25) = 28: length → 32,
        // key "k" → 38, "s" → 41, align → 44, 4 + n + 1 → 49 + n.
        let attributes: [String: OptionValue] = ["a": .string("")]
        #expect(LiveActivityStore.payloadSize(attributes: attributes, state: state(4047)) == 4096)
        var store = LiveActivityStore()
        let now = Date()
        expectHostError(.limitExceeded, mentioning: ["4097 bytes"]) {
            try store.start(
                appID: app, attributesType: "T", contentJSON: activityJSON(),
                options: ["attributes": .dict(attributes), "state": .dict(state(4048))], now: now)
        }
        let a = try store.start(
            appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["attributes": .dict(attributes)], now: now)
        _ = try store.update(id: a.id, contentJSON: "", options: ["state": .dict(state(4047))], now: now)
        expectHostError(.limitExceeded, mentioning: ["4097 bytes"]) {
            try store.update(id: a.id, contentJSON: "", options: ["state": .dict(state(4048))], now: now)
        }
    }

    @Test("Values of other types are InvalidArgument naming the key, the type and what is allowed")
    func otherTypes() {
        var store = LiveActivityStore()
        expectHostError(.invalidArgument, mentioning: ["state value 'score'", "(ii)", "strings (s)", "dictionaries (a{sv})"]) {
            try store.start(
                appID: app, attributesType: "T", contentJSON: activityJSON(),
                options: ["state": .dict(["ok": .int(1), "score": .other(signature: "(ii)")])], now: Date())
        }
        expectHostError(.invalidArgument, mentioning: ["attributes value 'deep'", "a value of type h"]) {
            try store.start(
                appID: app, attributesType: "T", contentJSON: activityJSON(),
                options: ["attributes": .dict(["deep": .dict(["fd": .other(signature: "h")])])], now: Date())
        }
    }

    @Test("Attributes are fixed at start: Update and End refuse them")
    func attributesFixed() throws {
        var store = LiveActivityStore()
        let a = try store.start(
            appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["attributes": .dict(["n": .int(1)])], now: Date())
        expectHostError(.invalidArgument, mentioning: ["Update does not take 'attributes'", "fixed when the activity starts", "'state'"]) {
            try store.update(id: a.id, contentJSON: "", options: ["attributes": .dict(["n": .int(2)])], now: Date())
        }
        expectHostError(.invalidArgument, mentioning: ["End does not take 'attributes'"]) {
            try store.end(id: a.id, options: ["attributes": .dict([:])], now: Date())
        }
        #expect(store.activity(a.id)?.attributes == ["n": .int(1)])
    }
}

// MARK: - Lifecycle

@Suite("Live Activity lifecycle")
struct ActivityLifecycleTests {
    let app = "org.example.TapMe"

    func started(_ options: [String: OptionValue] = [:], clock: TestWallClock) throws -> (LiveActivityStore, LiveActivity) {
        var store = LiveActivityStore()
        let a = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: options, now: clock.now())
        return (store, a)
    }

    @Test("An activity ends itself 8 hours after it started and disappears 4 hours later")
    func automaticEnd() throws {
        let clock = TestWallClock()
        let t0 = clock.now()
        var (store, a) = try started(clock: clock)
        #expect(store.nextDeadline(after: t0) == t0.addingTimeInterval(8 * hour))
        clock.advance(by: 8 * hour - 1)
        #expect(store.advance(to: clock.now()).isEmpty)
        #expect(a.activityState(at: clock.now()) == .active)
        clock.advance(by: 1)
        #expect(a.activityState(at: clock.now()) == .ended)
        #expect(store.advance(to: clock.now()) == ActivityChanges(stateChanges: [.init(id: "a1", state: .ended)]))
        let ended = try #require(store.activity("a1"))
        #expect(ended.endedAt == t0.addingTimeInterval(8 * hour))
        #expect(ended.removeAt == t0.addingTimeInterval(12 * hour))
        #expect(store.nextDeadline(after: clock.now()) == t0.addingTimeInterval(12 * hour))
        #expect(store.advance(to: clock.now()).isEmpty)
        clock.advance(by: 4 * hour - 1)
        #expect(store.advance(to: clock.now()).isEmpty)
        clock.advance(by: 1)
        #expect(store.advance(to: clock.now()) == ActivityChanges(removed: ["a1"]))
        #expect(store.activity("a1") == nil)
        #expect(store.nextDeadline(after: clock.now()) == nil)
        a = ended
        #expect(a.isRemoved(at: clock.now()))
    }

    @Test("A jump past both deadlines only removes")
    func jump() throws {
        let clock = TestWallClock()
        var (store, _) = try started(clock: clock)
        clock.advance(by: 13 * hour)
        #expect(store.advance(to: clock.now()) == ActivityChanges(removed: ["a1"]))
    }

    @Test("End with the default dismissal keeps it shown for 4 hours")
    func endDefault() throws {
        let clock = TestWallClock()
        var (store, a) = try started(clock: clock)
        clock.advance(by: hour)
        let end = try store.end(id: a.id, options: [:], now: clock.now())
        #expect(!end.isRemoved)
        #expect(end.activity.endedAt == clock.now())
        #expect(end.activity.removeAt == clock.now().addingTimeInterval(4 * hour))
        #expect(end.activity.activityState(at: clock.now()) == .ended)
        #expect(store.activity(a.id) == end.activity)
        // End reported the new state itself; advance has nothing to add.
        #expect(store.advance(to: clock.now()).isEmpty)
        #expect(store.nextDeadline(after: clock.now()) == clock.now().addingTimeInterval(4 * hour))
        let explicit = try store.end(id: try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now()).id,
                                     options: ["dismissal": .string("default")], now: clock.now())
        #expect(explicit.activity.removeAt == clock.now().addingTimeInterval(4 * hour))
        clock.advance(by: 4 * hour)
        #expect(store.advance(to: clock.now()) == ActivityChanges(removed: [a.id, explicit.activity.id]))
        a = end.activity
        #expect(a.isRemoved(at: clock.now()))
    }

    @Test("End with dismissal immediate removes it at once")
    func endImmediate() throws {
        let clock = TestWallClock()
        var (store, a) = try started(clock: clock)
        let end = try store.end(id: a.id, options: ["dismissal": .string("immediate")], now: clock.now())
        #expect(end.isRemoved)
        #expect(end.activity.endedAt == clock.now() && end.activity.removeAt == clock.now())
        #expect(store.activity(a.id) == nil)
        #expect(store.advance(to: clock.now()).isEmpty)
        expectHostError(.invalidArgument, mentioning: ["no Live Activity '\(a.id)'"]) {
            try store.end(id: a.id, options: [:], now: clock.now())
        }
        a = end.activity
        #expect(a.activityState(at: clock.now()) == .ended)
    }

    @Test("End with dismissal after: at the date within 4 hours, clamped to 4 hours, at once for a past date")
    func endAfter() throws {
        let clock = TestWallClock()
        var store = LiveActivityStore()
        func start() throws -> String {
            try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now()).id
        }
        let inside = try store.end(
            id: try start(), options: ["dismissal": .string("after"), "dismissal_date": unix(clock.now().addingTimeInterval(2 * hour))],
            now: clock.now())
        #expect(!inside.isRemoved && inside.activity.removeAt == clock.now().addingTimeInterval(2 * hour))

        let exactly = try store.end(
            id: try start(), options: ["dismissal": .string("after"), "dismissal_date": unix(clock.now().addingTimeInterval(4 * hour))],
            now: clock.now())
        #expect(exactly.activity.removeAt == clock.now().addingTimeInterval(4 * hour))

        let over = try store.end(
            id: try start(), options: ["dismissal": .string("after"), "dismissal_date": unix(clock.now().addingTimeInterval(10 * hour))],
            now: clock.now())
        #expect(!over.isRemoved && over.activity.removeAt == clock.now().addingTimeInterval(4 * hour))

        let past = try store.end(
            id: try start(), options: ["dismissal": .string("after"), "dismissal_date": unix(clock.now().addingTimeInterval(-60))],
            now: clock.now())
        #expect(past.isRemoved && past.activity.removeAt == clock.now())
        #expect(store.activity(past.activity.id) == nil)

        let atNow = try store.end(
            id: try start(), options: ["dismissal": .string("after"), "dismissal_date": unix(clock.now())], now: clock.now())
        #expect(atNow.isRemoved)

        clock.advance(by: 2 * hour)
        #expect(store.advance(to: clock.now()) == ActivityChanges(removed: [inside.activity.id]))
        clock.advance(by: 2 * hour)
        #expect(store.advance(to: clock.now()) == ActivityChanges(removed: [exactly.activity.id, over.activity.id]))
    }

    @Test("dismissal and dismissal_date must go together and be valid")
    func dismissalOptions() throws {
        let clock = TestWallClock()
        var (store, a) = try started(clock: clock)
        expectHostError(.invalidArgument, mentioning: ["'after'", "no 'dismissal_date'"]) {
            try store.end(id: a.id, options: ["dismissal": .string("after")], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["'dismissal_date'", "only with dismissal 'after'", "is 'default'"]) {
            try store.end(id: a.id, options: ["dismissal_date": unix(clock.now())], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["is 'immediate'"]) {
            try store.end(id: a.id, options: ["dismissal": .string("immediate"), "dismissal_date": unix(clock.now())], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["'later'", "'default'", "'immediate'", "'after'"]) {
            try store.end(id: a.id, options: ["dismissal": .string("later")], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["option 'dismissal' must be a string (s), got x"]) {
            try store.end(id: a.id, options: ["dismissal": .int(1)], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["option 'dismissal_date' must be a 64-bit integer (x), got s"]) {
            try store.end(id: a.id, options: ["dismissal": .string("after"), "dismissal_date": .string("soon")], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["option 'content' must be a string (s), got a{sv}"]) {
            try store.end(id: a.id, options: ["content": .dict([:])], now: clock.now())
        }
        #expect(store.activity(a.id)?.activityState(at: clock.now()) == .active)
        a = try #require(store.activity(a.id))
        #expect(a.endedAt == nil)
    }

    @Test("End may give final content and state")
    func endWithFinalContent() throws {
        let clock = TestWallClock()
        var (store, a) = try started(["state": .dict(["eta": .int(5)])], clock: clock)
        let final = activityJSON(widgetURL: "tapme://delivered")
        let end = try store.end(id: a.id, options: ["content": .string(final), "state": .dict(["eta": .int(0)])], now: clock.now())
        #expect(end.activity.content.json == final && end.activity.state == ["eta": .int(0)])
        let (other, b) = try started(["state": .dict(["eta": .int(5)])], clock: clock)
        store = other
        let kept = try store.end(id: b.id, options: ["content": .string("")], now: clock.now())
        #expect(kept.activity.content == b.content && kept.activity.state == ["eta": .int(5)])
        a = end.activity
        #expect(a.content.widgetURL == "tapme://delivered")
    }

    @Test("Ended activities refuse Update and End, whether the app or the clock ended them")
    func afterEnd() throws {
        let clock = TestWallClock()
        var (store, a) = try started(clock: clock)
        _ = try store.end(id: a.id, options: [:], now: clock.now())
        expectHostError(.invalidArgument, mentioning: ["\(a.id) has ended", "StartActivity"]) {
            try store.update(id: a.id, contentJSON: "", options: ["state": .dict([:])], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["\(a.id) has already ended", "disappears by itself"]) {
            try store.end(id: a.id, options: ["dismissal": .string("immediate")], now: clock.now())
        }
        // The clock ends the second one; advance has not run yet.
        a = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        clock.advance(by: 8 * hour)
        expectHostError(.invalidArgument, mentioning: ["\(a.id) has ended"]) {
            try store.update(id: a.id, contentJSON: "", options: [:], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["\(a.id) has already ended"]) {
            try store.end(id: a.id, options: [:], now: clock.now())
        }
        expectHostError(.invalidArgument, mentioning: ["no Live Activity 'a9'"]) {
            try store.update(id: "a9", contentJSON: "", options: [:], now: clock.now())
        }
    }

    @Test("Update replaces content, state, stale date and relevance; absent ones are kept")
    func update() throws {
        let clock = TestWallClock()
        var (store, a) = try started(["state": .dict(["eta": .int(5)]), "relevance": .double(1)], clock: clock)
        let kept = try store.update(id: a.id, contentJSON: "", options: [:], now: clock.now())
        #expect(kept == a)
        let json = activityJSON(widgetURL: "tapme://next")
        let staleDate = clock.now().addingTimeInterval(hour)
        let updated = try store.update(
            id: a.id, contentJSON: json, options: ["state": .dict(["eta": .int(3)]), "stale_date": unix(staleDate), "relevance": .int(5)],
            now: clock.now())
        #expect(updated.content.json == json && updated.state == ["eta": .int(3)] && updated.staleDate == staleDate && updated.relevance == 5)
        #expect(updated.attributes == a.attributes && updated.startedAt == a.startedAt && updated.id == a.id)
        #expect(store.activity(a.id) == updated)
        expectHostError(.invalidContent, mentioning: ["$.lockScreen"]) {
            try store.update(id: a.id, contentJSON: activityJSON([.lockScreen: "{}"]), options: [:], now: clock.now())
        }
        #expect(store.activity(a.id) == updated)
        a = updated
    }

    @Test("Stale dates: a past one starts stale, a future one makes it stale later, a later one revives it")
    func stale() throws {
        let clock = TestWallClock()
        var store = LiveActivityStore()
        let past = try store.start(
            appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["stale_date": unix(clock.now().addingTimeInterval(-1))],
            now: clock.now())
        #expect(past.activityState(at: clock.now()) == .stale)
        let a = try store.start(
            appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["stale_date": unix(clock.now().addingTimeInterval(hour))],
            now: clock.now())
        #expect(a.activityState(at: clock.now()) == .active)
        #expect(store.advance(to: clock.now()).isEmpty)
        #expect(store.nextDeadline(after: clock.now()) == clock.now().addingTimeInterval(hour))

        clock.advance(by: hour - 1)
        #expect(store.advance(to: clock.now()).isEmpty)
        clock.advance(by: 1)
        #expect(store.advance(to: clock.now()) == ActivityChanges(stateChanges: [.init(id: a.id, state: .stale)]))
        #expect(store.nextDeadline(after: clock.now()) == a.automaticEndDate)

        // A new stale date in the future makes it active again; advance does not report it twice.
        let revived = try store.update(id: a.id, contentJSON: "", options: ["stale_date": unix(clock.now().addingTimeInterval(hour))], now: clock.now())
        #expect(revived.activityState(at: clock.now()) == .active)
        #expect(store.advance(to: clock.now()).isEmpty)
        // An update without stale_date keeps the current one.
        _ = try store.update(id: past.id, contentJSON: "", options: ["state": .dict([:])], now: clock.now())
        #expect(store.activity(past.id)?.activityState(at: clock.now()) == .stale)
        // A stale date in the past makes it stale at once.
        let staled = try store.update(id: a.id, contentJSON: "", options: ["stale_date": unix(clock.now())], now: clock.now())
        #expect(staled.activityState(at: clock.now()) == .stale)
        #expect(store.advance(to: clock.now()).isEmpty)

        // The end overrides staleness.
        clock.set(a.automaticEndDate)
        #expect(store.advance(to: clock.now()) == ActivityChanges(stateChanges: [.init(id: past.id, state: .ended), .init(id: a.id, state: .ended)]))
    }

    @Test("nextDeadline: the earliest pending deadline, never before now, nil when empty")
    func nextDeadline() throws {
        let clock = TestWallClock()
        let t0 = clock.now()
        var store = LiveActivityStore()
        #expect(store.nextDeadline(after: t0) == nil)
        let a = try store.start(
            appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["stale_date": unix(t0.addingTimeInterval(3 * hour))], now: t0)
        #expect(store.nextDeadline(after: t0) == t0.addingTimeInterval(3 * hour))
        clock.advance(by: hour)
        _ = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: ["stale_date": unix(t0.addingTimeInterval(2 * hour))], now: clock.now())
        #expect(store.nextDeadline(after: clock.now()) == t0.addingTimeInterval(2 * hour))
        // A deadline that passed without advance gives now.
        clock.set(t0.addingTimeInterval(2.5 * hour))
        #expect(store.nextDeadline(after: clock.now()) == clock.now())
        _ = store.advance(to: clock.now())
        #expect(store.nextDeadline(after: clock.now()) == t0.addingTimeInterval(3 * hour))
        _ = try store.end(id: a.id, options: ["dismissal": .string("after"), "dismissal_date": unix(clock.now().addingTimeInterval(60))], now: clock.now())
        #expect(store.nextDeadline(after: clock.now()) == clock.now().addingTimeInterval(60))
    }

    @Test("remove takes an activity out at once")
    func remove() throws {
        let clock = TestWallClock()
        var (store, a) = try started(clock: clock)
        #expect(store.remove(a.id) == a)
        #expect(store.remove(a.id) == nil)
        #expect(store.all.isEmpty && store.activities(of: app).isEmpty)
        a = try store.start(appID: app, attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        #expect(a.id == "a2")
    }

    @Test("Thousands of activities advance in one pass")
    func many() throws {
        let clock = TestWallClock()
        var limits = ActivityLimits()
        limits.maxPerApp = 10_000
        var store = LiveActivityStore(limits: limits)
        let json = activityJSON()
        for i in 0..<2000 {
            _ = try store.start(
                appID: app, attributesType: "T", contentJSON: json,
                options: ["stale_date": unix(clock.now().addingTimeInterval(TimeInterval(i % 3) * hour + hour))], now: clock.now())
        }
        clock.advance(by: hour)
        let changes = store.advance(to: clock.now())
        // Every third one (i = 0, 3, …, 1998) has gone stale.
        #expect(changes.stateChanges.count == 667 && changes.stateChanges.allSatisfy { $0.state == .stale })
        #expect(changes.stateChanges.first?.id == "a1" && changes.stateChanges.last?.id == "a1999")
        #expect(changes.removed.isEmpty)
        #expect(store.nextDeadline(after: clock.now()) == clock.now().addingTimeInterval(hour))
        clock.advance(by: 20 * hour)
        let removed = store.advance(to: clock.now()).removed
        #expect(removed.count == 2000 && removed.first == "a1" && removed.last == "a2000")
        #expect(store.all.isEmpty)
    }
}

// MARK: - Ordering

@Suite("Ordering of Live Activities")
struct ActivityOrderingTests {
    @Test("By relevance descending, then earlier start, then lower id (numerically)")
    func ordered() throws {
        let clock = TestWallClock()
        var store = LiveActivityStore()
        func start(_ relevance: Double) throws -> String {
            try store.start(
                appID: "org.example.TapMe", attributesType: "T", contentJSON: activityJSON(), options: ["relevance": .double(relevance)],
                now: clock.now()
            ).id
        }
        // a1…a10 at the same moment with the same relevance: by id, a2 before a10.
        for _ in 1...10 { _ = try start(0) }
        clock.advance(by: 60)
        let later = try start(0)  // a11: same relevance, later start
        let high = try start(5)  // a12
        let negative = try start(-1)  // a13
        #expect(store.ordered(now: clock.now()) == [high] + (1...10).map { "a\($0)" } + [later, negative])
        // Updating the relevance reorders.
        _ = try store.update(id: "a10", contentJSON: "", options: ["relevance": .double(9)], now: clock.now())
        #expect(store.ordered(now: clock.now()).prefix(3) == ["a10", high, "a1"])
        // Ended activities still shown stay; removed ones go, even before advance.
        _ = try store.end(id: high, options: ["dismissal": .string("after"), "dismissal_date": unix(clock.now().addingTimeInterval(60))], now: clock.now())
        #expect(store.ordered(now: clock.now()).contains(high))
        #expect(!store.ordered(now: clock.now().addingTimeInterval(60)).contains(high))
    }

    @Test("The start date, not the id, breaks relevance ties when the clock was set back")
    func startBeforeID() throws {
        let clock = TestWallClock()
        var store = LiveActivityStore()
        let first = try store.start(appID: "org.example.TapMe", attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        clock.advance(by: -60)
        let second = try store.start(appID: "org.example.TapMe", attributesType: "T", contentJSON: activityJSON(), options: [:], now: clock.now())
        #expect(second.startedAt < first.startedAt)
        #expect(store.ordered(now: clock.now()) == [second.id, first.id])
    }
}

// MARK: - Tap rules

@Suite("Live Activity tap rules")
struct ActivityTapRulesTests {
    let app = AppOptions(
        schemes: ["tapme"], appProtocol: .widgethost, objectPath: "/org/example/TapMe", surfaces: [.desktop, .lockScreen],
        liveActivityLaunchTypes: nil, userActivityAction: nil, providerPath: nil)

    static let rich = activityJSON(
        widgetURL: "tapme://activity",
        [
            .lockScreen: #"""
                {"type":"vstack","children":[
                  {"type":"button","id":"pause","action":"pause","parameter":{"n":1},"children":[{"type":"text","id":"pauseLabel"}]},
                  {"type":"link","id":"lsLink","url":"tapme://lock-link","children":[{"type":"text","id":"lsLinkLabel"}]},
                  {"type":"text","id":"lsText"}]}
                """#,
            .compactLeading: #"""
                {"type":"hstack","children":[{"type":"button","id":"clButton","action":"pause"},
                  {"type":"link","id":"clLink","url":"tapme://cl-link"}]}
                """#,
            .compactTrailing: #"{"type":"text","id":"ct"}"#,
            .minimal: #"{"type":"image","id":"m","widgetURL":"tapme://minimal"}"#,
            .expanded: #"""
                {"type":"vstack","widgetURL":"tapme://expanded","children":[
                  {"type":"link","id":"exLink","url":"tapme://ex-link","children":[{"type":"toggle","id":"exToggle","action":"toggle-sound"},{"type":"text","id":"exLinkLabel"}]},
                  {"type":"text","id":"exText","widgetURL":"other://second"}]}
                """#,
        ])

    func activity(_ json: String = rich, type: String = "DeliveryAttributes") throws -> (LiveActivityStore, LiveActivity, Date) {
        let clock = TestWallClock()
        var store = LiveActivityStore()
        let a = try store.start(appID: "org.example.TapMe", attributesType: type, contentJSON: json, options: [:], now: clock.now())
        return (store, a, clock.now())
    }

    func resolve(
        _ presentation: ActivityPresentation, _ element: String, surface: Surface = .desktop, app: AppOptions? = nil, json: String = rich,
        type: String = "DeliveryAttributes"
    ) throws -> TapResolution {
        let (_, a, now) = try activity(json, type: type)
        return try ActivityTapRules.resolve(
            presentation: presentation, elementID: element, surface: surface, activity: a, app: app ?? self.app, now: now)
    }

    @Test("Controls perform their action in lockScreen and expanded")
    func controls() throws {
        let lock = try resolve(.lockScreen, "pauseLabel")
        #expect(lock.outcome == .performAction(action: "pause", parameter: .object(["n": .integer(1)])))
        #expect(lock.diagnostics.isEmpty && lock.details == ["activity_state": .string("active")])
        // The innermost control wins over an enclosing link.
        #expect(try resolve(.expanded, "exToggle").outcome == .performAction(action: "toggle-sound", parameter: nil, toggleIsOn: true))
    }

    @Test("Controls in compact presentations are ignored")
    func controlsInCompact() throws {
        #expect(try resolve(.compactLeading, "clButton").outcome == .openURL(url: "tapme://activity", via: .activityURL))
    }

    @Test("Links open only in expanded")
    func links() throws {
        #expect(try resolve(.expanded, "exLinkLabel").outcome == .openURL(url: "tapme://ex-link", via: .link))
        // Not in lockScreen: the lockScreen tree has no widgetURL, so the activity's opens.
        #expect(try resolve(.lockScreen, "lsLinkLabel").outcome == .openURL(url: "tapme://activity", via: .activityURL))
        #expect(try resolve(.compactLeading, "clLink").outcome == .openURL(url: "tapme://activity", via: .activityURL))
    }

    @Test("The presentation's widgetURL, the first in pre-order, with multiple-widget-urls")
    func widgetURL() throws {
        #expect(try resolve(.minimal, "m").outcome == .openURL(url: "tapme://minimal", via: .widgetURL))
        #expect(try resolve(.minimal, "m").diagnostics.isEmpty)
        let expanded = try resolve(.expanded, "exText")
        #expect(expanded.outcome == .openURL(url: "tapme://expanded", via: .widgetURL))
        #expect(expanded.diagnostics == [.multipleWidgetURLs])
        #expect(try resolve(.expanded, "").outcome == .openURL(url: "tapme://expanded", via: .widgetURL))
    }

    @Test("The activity-level widgetURL when the tree has none")
    func activityURL() throws {
        for (presentation, element) in [(ActivityPresentation.lockScreen, "lsText"), (.lockScreen, ""), (.compactTrailing, "ct"), (.compactLeading, "")] {
            let r = try resolve(presentation, element)
            #expect(r.outcome == .openURL(url: "tapme://activity", via: .activityURL), "\(presentation) \(element)")
            #expect(r.diagnostics.isEmpty)
        }
    }

    @Test("No URL continues the user activity of org.widgethost.LiveActivity")
    func userActivity() throws {
        let (_, a, now) = try activity(activityJSON())
        for presentation in ActivityPresentation.allCases {
            let r = try ActivityTapRules.resolve(presentation: presentation, elementID: "", surface: .desktop, activity: a, app: app, now: now)
            #expect(
                r.outcome
                    == .continueUserActivity(
                        activityType: "org.widgethost.LiveActivity",
                        userInfo: [
                            "activity_id": .string(a.id), "attributes_type": .string("DeliveryAttributes"),
                            "presentation": .string(presentation.rawValue),
                        ]))
        }
    }

    @Test("An undeclared scheme adds undeclared-scheme, whichever way the URL was found")
    func undeclaredScheme() throws {
        let json = activityJSON(
            widgetURL: "mail:a@b", [.expanded: #"{"type":"link","id":"l","url":"https://example.org"}"#, .minimal: #"{"type":"t","widgetURL":"ftp://x"}"#])
        let link = try resolve(.expanded, "l", json: json)
        #expect(link.outcome == .openURL(url: "https://example.org", via: .link) && link.diagnostics == [.undeclaredScheme])
        #expect(try resolve(.minimal, "", json: json).diagnostics == [.undeclaredScheme])
        let activityLevel = try resolve(.lockScreen, "", json: json)
        #expect(activityLevel.outcome == .openURL(url: "mail:a@b", via: .activityURL) && activityLevel.diagnostics == [.undeclaredScheme])
        #expect(try resolve(.lockScreen, "").diagnostics.isEmpty)
    }

    @Test("An unknown element is UnknownElement naming it, the presentation and the activity")
    func unknownElement() {
        // "pause" exists, but in lockScreen, not in compactTrailing.
        expectHostError(.unknownElement, mentioning: ["'pause'", "compactTrailing", "a1", "\"\" for the background"]) {
            try resolve(.compactTrailing, "pause")
        }
        expectHostError(.unknownElement, mentioning: ["'ghost'", "expanded"]) { try resolve(.expanded, "ghost", surface: .car) }
    }

    @Test("Car: only apps that support car")
    func car() throws {
        let none = try resolve(.lockScreen, "pause", surface: .car)
        #expect(none.outcome == .none(reason: .appDoesNotSupportCar))
        var carApp = app
        carApp.surfaces = [.desktop, .car]
        #expect(try resolve(.lockScreen, "pause", surface: .car, app: carApp).outcome == .performAction(action: "pause", parameter: .object(["n": .integer(1)])))
        #expect(try resolve(.minimal, "", surface: .car, app: carApp).outcome == .openURL(url: "tapme://minimal", via: .widgetURL))
    }

    @Test(
        "Watch: launch only when the launch types are set and empty or name the type",
        arguments: [
            ([String]?.none, false), ([], true), (["DeliveryAttributes"], true), (["GameAttributes", "DeliveryAttributes"], true),
            (["GameAttributes"], false),
        ])
    func watch(_ types: [String]?, _ launches: Bool) throws {
        var watchApp = app
        watchApp.liveActivityLaunchTypes = types
        let r = try resolve(.lockScreen, "lsText", surface: .watch, app: watchApp)
        if launches {
            #expect(r.outcome == .openURL(url: "tapme://activity", via: .activityURL))
            #expect(r.details["offer_primary"] == nil)
        } else {
            #expect(r.outcome == .none(reason: .watchLaunchNotSupported))
            #expect(r.details["offer_primary"] == .bool(true))
        }
        #expect(ActivityTapRules.launchesFromWatch(app: watchApp, attributesType: "DeliveryAttributes") == launches)
        // Other surfaces do not look at the launch types.
        #expect(try resolve(.lockScreen, "lsText", surface: .lockScreen, app: watchApp).outcome.name == .openURL)
    }

    @Test("Car is checked before watch rules and before controls")
    func carFirst() throws {
        var watchApp = app
        watchApp.liveActivityLaunchTypes = []
        #expect(try resolve(.expanded, "exToggle", surface: .car, app: watchApp).outcome == .none(reason: .appDoesNotSupportCar))
        #expect(try resolve(.expanded, "exToggle", surface: .watch, app: watchApp).outcome.name == .performAction)
    }

    @Test("An ended activity that is still shown resolves as before, reporting its state")
    func endedStillResolves() throws {
        var (store, a, now) = try activity()
        _ = try store.end(id: a.id, options: [:], now: now)
        a = try #require(store.activity(a.id))
        let r = try ActivityTapRules.resolve(presentation: .expanded, elementID: "exLinkLabel", surface: .desktop, activity: a, app: app, now: now)
        #expect(r.outcome == .openURL(url: "tapme://ex-link", via: .link))
        #expect(r.details["activity_state"] == .string("ended"))
        let stale = try ActivityTapRules.resolve(
            presentation: .minimal, elementID: "", surface: .desktop, activity: a, app: app, now: now)
        #expect(stale.outcome == .openURL(url: "tapme://minimal", via: .widgetURL))
    }

    @Test("TapResolution's details default to empty")
    func detailsDefault() {
        let r = TapResolution(outcome: .none(reason: .appDoesNotSupportCar))
        #expect(r.details.isEmpty && r.diagnostics.isEmpty)
    }
}
