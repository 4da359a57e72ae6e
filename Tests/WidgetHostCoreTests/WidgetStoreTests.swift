import Foundation
import Testing
@testable import WidgetHostCore

@Suite("Widget bundles and placed widgets")
struct WidgetStoreTests {
    static let bundle = """
        {"widgets":[
          {"kind":"EmojiRangerWidget","families":["systemSmall","systemMedium"],"configuration":{"intent":"SelectCharacterIntent","parameters":[{"name":"hero","dynamic":true},{"name":"style"}]}},
          {"kind":"LeaderboardWidget","families":["systemMedium"]}]}
        """

    func store() throws -> WidgetStore {
        var store = WidgetStore()
        _ = store.registerBundle(appID: "org.example.EmojiRangers", try WidgetBundle.parse(Self.bundle))
        return store
    }

    @Test("An app's widgets are listed in placement order, w2 before w10, optionally of one kind")
    func placementOrder() throws {
        var store = try store()
        for i in 1...11 {
            _ = try store.add(
                appID: "org.example.EmojiRangers", kind: i % 2 == 0 ? "LeaderboardWidget" : "EmojiRangerWidget", family: "systemMedium",
                configuration: [:])
        }
        #expect(store.widgetIDs(appID: "org.example.EmojiRangers") == (1...11).map { "w\($0)" })
        #expect(store.widgetIDs(appID: "org.example.EmojiRangers", kind: "LeaderboardWidget") == ["w2", "w4", "w6", "w8", "w10"])
        #expect(store.widgetIDs(appID: "org.example.Other").isEmpty)
    }

    @Test("Only a declared dynamic parameter has options; the messages name the parameters there are")
    func dynamicParameters() throws {
        let store = try store()
        let kind = try #require(store.bundles["org.example.EmojiRangers"]?.kind("EmojiRangerWidget"))
        try kind.requireDynamic("hero", appID: "org.example.EmojiRangers")
        func message(_ name: String, _ kind: WidgetKind) -> String {
            do {
                try kind.requireDynamic(name, appID: "org.example.EmojiRangers")
                return ""
            } catch { return "\(error.name.rawValue): \(error.message)" }
        }
        #expect(message("style", kind).hasPrefix("InvalidArgument: 'style' of org.example.EmojiRangers's 'EmojiRangerWidget' is not dynamic"))
        #expect(message("style", kind).hasSuffix("its dynamic parameters are hero"))
        #expect(message("villain", kind).hasSuffix("its parameters are hero, style"))
        let leaderboard = try #require(store.bundles["org.example.EmojiRangers"]?.kind("LeaderboardWidget"))
        #expect(message("hero", leaderboard).hasSuffix("it takes none"))
    }

    @Test("A tap resolves on the widget's tree as it is now: never on a tree parsed for an earlier content, even of a widget tapped just before")
    func tappedTrees() throws {
        var store = try store()
        let app = AppOptions(
            schemes: ["x"], appProtocol: .freedesktop, objectPath: "/org/example/EmojiRangers", surfaces: [.desktop],
            liveActivityLaunchTypes: nil, userActivityAction: nil, providerPath: nil)
        func resolve(_ id: String) throws -> TapOutcome {
            let context = store.tapContext(id, app: app)
            return try WidgetTapRules.resolve(elementID: "t", surface: .desktop, policy: .current, #require(context)).outcome
        }
        func content(_ url: String) throws -> ViewTree? { try ViewTree.parse(#"{"type":"text","id":"t","widgetURL":"\#(url)"}"#) }
        let ids = try (0..<10).map { _ in
            try store.add(appID: "org.example.EmojiRangers", kind: "LeaderboardWidget", family: "systemMedium", configuration: [:]).id
        }
        for id in ids { store.setContent(id, tree: try content("x://\(id)")) }
        for _ in 0..<2 {
            for id in ids { #expect(try resolve(id) == .openURL(url: "x://\(id)", via: .widgetURL)) }
        }
        // Tapped last: its tree is kept, and must not outlive its content.
        #expect(try resolve(ids[0]) == .openURL(url: "x://\(ids[0])", via: .widgetURL))
        let first = try #require(store.widgets[ids[0]])
        store.setContent(ids[0], tree: try content("x://changed"))
        #expect(try resolve(ids[0]) == .openURL(url: "x://changed", via: .widgetURL))
        // Put back as it was (a write the disk refused): the tree of that content again.
        store.putBack(ids[0], first)
        #expect(try resolve(ids[0]) == .openURL(url: "x://\(ids[0])", via: .widgetURL))
        store.remove(ids[9])
        #expect(store.tapContext(ids[9], app: app) == nil)
        let big = #"{"type":"vstack","id":"t","widgetURL":"x://big","children":["# + Array(repeating: #"{"type":"text"}"#, count: 2000).joined(separator: ",") + "]}"
        store.setContent(ids[1], tree: try ViewTree.parse(big))
        for _ in 0..<2 { #expect(try resolve(ids[1]) == .openURL(url: "x://big", via: .widgetURL)) }
    }

    @Test("A timeline entry's tree replaces the content of that widget only")
    func showTree() throws {
        var store = try store()
        let a = try store.add(appID: "org.example.EmojiRangers", kind: "EmojiRangerWidget", family: "systemSmall", configuration: [:])
        let b = try store.add(appID: "org.example.EmojiRangers", kind: "EmojiRangerWidget", family: "systemSmall", configuration: [:])
        let tree = try ViewTree.parse(#"{"type":"text","id":"health","text":"60%"}"#)
        store.setContent(a.id, tree: tree)
        store.setContent("w99", tree: tree)
        #expect(store.widgets[a.id]?.content == tree)
        #expect(store.widgets[b.id]?.content == nil)
        #expect(store.widgets["w99"] == nil)
    }
}

@Suite("ViewNode")
struct ViewNodeTests {
    @Test("A ViewNode encodes to content the host accepts, element for element, and decodes back with unknown keys kept")
    func roundTrip() throws {
        let node = ViewNode.vstack(widgetURL: "emoji-rangers://hero/spouty", [
            .text("🐳", id: "avatar"),
            .link("emoji-rangers://hero/spouty", id: "spouty", [.text("Spouty")]),
            .button(action: "superCharge", parameter: .object(["hero": .string("spouty")]), id: "charge", [.text("⚡")]),
            .toggle(action: "favourite", isOn: true, id: "fav"),
            ViewNode("progress", id: "health", fields: ["value": .number(0.6), "tint": .string("green")]),
        ])
        let tree = try ViewTree.parse(node.json)
        #expect(tree.widgetURLs == ["emoji-rangers://hero/spouty"])
        #expect(tree.elements.map(\.type) == ["vstack", "text", "link", "text", "button", "text", "toggle", "progress"])
        #expect(tree.elements.first { $0.id == "spouty" }?.url == "emoji-rangers://hero/spouty")
        #expect(tree.elements.first { $0.id == "fav" }.map { [$0.isOn, $0.isOnAfterTap] } == [true, false])
        #expect(tree.elements.first { $0.id == "health" }?.fields["tint"] == .string("green"))
        #expect(try ViewNode.decode(node.json) == node)
        let foreign = #"{"type":"zstack","children":[{"type":"color","id":"swatch","color":"red"}],"padding":4}"#
        let decoded = try ViewNode.decode(foreign)
        #expect(decoded.fields["padding"] == .integer(4) && decoded.children[0].fields["color"] == .string("red"))
        #expect(try ViewTree.parse(decoded.json).elements.count == 2)
    }

    @Test("what an earlier host stored is read back past the limits and rules added since")
    func restoresWhatWasStored() throws {
        var store = WidgetStore()
        store.limits.maxBytes = 100
        let kinds = (0..<40).map { #"{"kind":"k\#($0)","families":["systemSmall"]}"# }.joined(separator: ",")
        try store.restoreBundle(appID: "org.example.Old", json: #"{"widgets":["# + kinds + "]}")
        #expect(store.bundles["org.example.Old"]?.kinds.count == 40)
        let placed = PlacedWidget(id: "w1", appID: "org.example.Old", kind: "k0", family: .systemSmall, configuration: [:], content: nil)
        // Over today's 100 bytes, and a key given twice: both were taken before.
        let content = #"{"type":"text","id":"t","text":""# + String(repeating: "x", count: 200) + #"","text":"again"}"#
        try store.restore(StoredWidget(placed, content: content), nextNumber: 1)
        #expect(store.widgets["w1"]?.content != nil)
        var activities = LiveActivityStore()
        activities.limits.content.maxBytes = 100
        let presentations = ["lockScreen", "compactLeading", "compactTrailing", "minimal", "expanded"]
        let activity = "{" + presentations.map { #""\#($0)":{"type":"text","text":"\#(String(repeating: "y", count: 50))"}"# }.joined(separator: ",")
            + #","lockScreen":{"type":"text"}}"#
        var starter = LiveActivityStore()
        var stored = StoredActivity(try starter.start(
            appID: "org.example.Old", attributesType: "T", contentJSON: Self.activityContent, options: [:], now: Date()))
        stored.content = activity
        try activities.restore(stored, nextNumber: 1, now: Date())
        #expect(activities.activity(stored.id) != nil)
    }

    static let activityContent =
        "{" + ["lockScreen", "compactLeading", "compactTrailing", "minimal", "expanded"].map { "\"\($0)\":{\"type\":\"text\"}" }
        .joined(separator: ",") + "}"

    @Test("Bundles share a pool (max-bundle-bytes) and each connection's apps a share of it (max-bundle-bytes-per-connection); a bundle that does not grow is always taken")
    func bundleBudgets() throws {
        var store = WidgetStore()
        store.maxBundleBytes = 1000
        store.maxBundleBytesPerConnection = 600
        func bundle(_ padding: Int) throws -> WidgetBundle {
            try WidgetBundle.parse(#"{"widgets":[{"kind":"K","families":["systemSmall"],"description":"\#(String(repeating: "x", count: padding))"}]}"#)
        }
        let size = try bundle(0).json.utf8.count
        let a = try bundle(300 - size), b = try bundle(300 - size)
        try store.checkBundleBudget(appID: "a", a, sharing: ["a"])
        store.registerBundle(appID: "a", a)
        // A second app of the same connection: 600 bytes, its whole share.
        try store.checkBundleBudget(appID: "b", b, sharing: ["a", "b"])
        store.registerBundle(appID: "b", b)
        expectHostError(.limitExceeded, mentioning: ["this connection holds would take 900 bytes", "max-bundle-bytes-per-connection"]) {
            try store.checkBundleBudget(appID: "c", try bundle(300 - size), sharing: ["a", "b", "c"])
        }
        // Another connection's app fits the pool up to its end, and no further.
        try store.checkBundleBudget(appID: "d", try bundle(400 - size), sharing: ["d"])
        store.registerBundle(appID: "d", try bundle(400 - size))
        expectHostError(.limitExceeded, mentioning: ["all apps would take \(1000 + size) bytes", "max-bundle-bytes"]) {
            try store.checkBundleBudget(appID: "e", try bundle(0), sharing: ["e"])
        }
        // Shrinking, or publishing the same again, is always taken, even over a lowered pool.
        store.maxBundleBytes = 10
        try store.checkBundleBudget(appID: "a", a, sharing: ["a"])
        try store.checkBundleBudget(appID: "d", try bundle(0), sharing: ["d"])
    }
}

