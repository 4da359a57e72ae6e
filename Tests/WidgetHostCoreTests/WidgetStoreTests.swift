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

    static let tapApp = AppOptions(
        schemes: ["x"], appProtocol: .freedesktop, objectPath: "/org/example/EmojiRangers", surfaces: [.desktop],
        liveActivityLaunchTypes: nil, userActivityAction: nil, providerPath: nil)

    /// The outcome of a tap on element `t` of widget `id` of `store`.
    static func tapT(_ id: String, _ store: WidgetStore) throws -> TapOutcome {
        let context = try #require(store.tapContext(id, app: tapApp))
        return try WidgetTapRules.resolve(elementID: "t", surface: .desktop, policy: .current, context).outcome
    }

    /// A tree whose element `t` carries widgetURL `url`.
    static func opening(_ url: String) -> String { #"{"type":"text","id":"t","widgetURL":"\#(url)"}"# }

    @Test("A tap after SetContent reads the content just set, of that widget only; put back after a refused write, the content put back; gone once removed")
    func tapAfterSetContent() throws {
        var store = try store()
        let ids = try (0..<3).map { _ in
            try store.add(appID: "org.example.EmojiRangers", kind: "LeaderboardWidget", family: "systemMedium", configuration: [:]).id
        }
        #expect(throws: HostError.self) { try Self.tapT(ids[0], store) }
        // As SetContent stores it: with the root its check built.
        for id in ids {
            let content = try #require(try store.content(Self.opening("x://\(id)")))
            store.setContent(id, tree: content.tree, root: content.root)
        }
        for id in ids { #expect(try Self.tapT(id, store) == .openURL(url: "x://\(id)", via: .widgetURL)) }
        let first = try #require(store.widgets[ids[0]])
        let changed = try #require(try store.content(#"{"type":"button","id":"t","action":"go","widgetURL":"x://changed"}"#))
        store.setContent(ids[0], tree: changed.tree, root: changed.root)
        #expect(try Self.tapT(ids[0], store) == .performAction(action: "go", parameter: nil))
        #expect(try Self.tapT(ids[1], store) == .openURL(url: "x://\(ids[1])", via: .widgetURL))
        // Without a root at hand, the tree is parsed for it.
        store.setContent(ids[1], tree: try ViewTree.parse(Self.opening("x://parsed")))
        #expect(try Self.tapT(ids[1], store) == .openURL(url: "x://parsed", via: .widgetURL))
        // Put back as it was (a write the disk refused): the content put back.
        store.putBack(ids[0], first)
        #expect(try Self.tapT(ids[0], store) == .openURL(url: "x://\(ids[0])", via: .widgetURL))
        store.setContent(ids[2], tree: nil)
        #expect(throws: HostError.self) { try Self.tapT(ids[2], store) }
        store.remove(ids[2])
        #expect(store.tapContext(ids[2], app: Self.tapApp) == nil)
    }

    @Test("A tap after a restore reads the content stored, derived as the widget is put back")
    func tapAfterRestore() throws {
        var store = try store()
        let placed = PlacedWidget(
            id: "w7", appID: "org.example.EmojiRangers", kind: "LeaderboardWidget", family: .systemMedium, configuration: [:], content: nil)
        try store.restore(StoredWidget(placed, content: Self.opening("x://stored")), nextNumber: 1)
        #expect(try Self.tapT("w7", store) == .openURL(url: "x://stored", via: .widgetURL))
        try store.restore(StoredWidget(placed, content: #"{"type":"link","id":"t","url":"x://link"}"#), nextNumber: 1)
        #expect(try Self.tapT("w7", store) == .openURL(url: "x://link", via: .link))
    }

    @Test("What a widget keeps for taps gives what the tree's elements give: every id, the background, an id it lacks")
    func tapIndexMatchesTheTree() throws {
        let trees = [
            WidgetRulesTests.mixed,
            #"{"type":"vstack","widgetURL":"x://one","children":[{"type":"text","id":"a","widgetURL":"x://two"},{"type":"text","widgetURL":"x://three"}]}"#,
            #"{"type":"text","id":"only"}"#,
            #"{"type":"toggle","id":"off","action":"fav","children":[{"type":"text","id":"in"}]}"#,
            #"{"type":"toggle","id":"on","action":"fav","isOn":true,"parameter":{"hero":"spouty","n":[1,2.5,null,true]}}"#,
            #"{"type":"vstack","children":[{"type":"toggle","id":"p","action":"fav","parameter":"spouty"},{"type":"button","id":"b","action":"go","parameter":null}]}"#,
            #"{"type":"link","id":"l\u00e9\n\"","url":"x://caf\u00e9/\"q\"","children":[{"type":"button","id":"🐳","action":"a\tb","parameter":{"k":"\u0000"},"children":[{"type":"link","id":"deep","url":"x://deep"}]}]}"#,
            #"{"type":"zstack","widgetURL":"x://"# + String(repeating: "long", count: 300) + #"","children":[{"type":"link","id":"x","url":"x://l"}]}"#,
        ]
        for json in trees { try Self.expectIndexMatches(ViewTree.parse(json), scanned: !json.contains("\\")) }
        // What an earlier host stored is read leniently, and its text left to
        // the elements' reading: a trailing comma, and an id given twice (the
        // later element loses it); an id, type or URL with an escape; a key
        // of an element given twice (the first counts); a toggle's isOn that
        // is not true or false (no tree at all).
        let stored = [
            #"{"type":"vstack","children":[{"type":"link","id":"d","url":"x://first"},{"type":"button","id":"d","action":"second"},],}"#,
            #"{"type":"vstack","children":[{"type":"link","id":"d","url":"x://first"},{"type":"button","id":"d","action":"second"}]}"#,
            #"{"type":"link","id":"d","url":"x://first","url":"x://second","children":[{"type":"text","id":"e"}]}"#,
            #"{"type":"toggle","id":"d","action":"go","isOn":"yes"}"#,
            #"{"type":"vstack","widgetURL":"not a url","children":[{"type":"text","id":"d","widgetURL":"x://second"}]}"#,
        ]
        for json in stored { try Self.expectIndexMatches(ViewTree(validated: json), scanned: json.contains("not a url")) }
        let first = ViewTree(validated: stored[0])
        #expect(PlacedWidget(id: "w1", appID: "a", kind: "k", family: .systemSmall, configuration: [:], content: first).tapped("d")
            == TappedTree(linkURL: "x://first"))
        #expect(PlacedWidget(id: "w2", appID: "a", kind: "k", family: .systemSmall, configuration: [:], content: nil).tapped("") == TappedTree())
    }

    /// Checks that the index of `tree` read from its text (when `scanned`: else
    /// the text is left to the elements' reading) and the one read from its
    /// elements both give what the elements give for each id.
    static func expectIndexMatches(_ tree: ViewTree, scanned: Bool, sourceLocation: SourceLocation = #_sourceLocation) throws {
        var json = tree.json
        let fromText = json.withUTF8 { TapIndex.scanned($0) }
        #expect((fromText != nil) == scanned, "read from the text: \(tree.json)", sourceLocation: sourceLocation)
        let fromElements = TapIndex.packed(root: tree.root)
        let widget = PlacedWidget(id: "w1", appID: "a", kind: "k", family: .systemSmall, configuration: [:], content: tree)
        for id in [""] + tree.elements.compactMap(\.id) + ["missing"] {
            let expected = TappedTree(id, in: tree.root)
            for index in [fromText, fromElements].compactMap({ $0 }) {
                let tapped = index.withUnsafeBytes { index in json.withUTF8 { TapIndex.tapped(id, in: index, text: UnsafeRawBufferPointer($0)) } }
                #expect(tapped == expected, "\(id) in \(tree.json)", sourceLocation: sourceLocation)
            }
            #expect(widget.tapped(id) == expected, "\(id) in \(tree.json)", sourceLocation: sourceLocation)
        }
        #expect(widget.tapped("missing") == nil, sourceLocation: sourceLocation)
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

