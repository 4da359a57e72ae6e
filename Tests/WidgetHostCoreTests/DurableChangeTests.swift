import Foundation
import Testing
@testable import WidgetHostCore

/// Changes made through the model's stores: the records that journal them,
/// and what undoing them puts back.
@Suite("Durable changes")
struct DurableChangeTests {
    static let app = "org.example.A"
    static let bundle = #"{"widgets":[{"kind":"K","families":["systemSmall"]},{"kind":"L","families":["systemSmall"]}]}"#
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    /// The store with the bundle and widgets w1 (kind K, with content) and w2 (kind L).
    func widgetStore() throws -> WidgetStore {
        var store = WidgetStore()
        store.registerBundle(appID: Self.app, try WidgetBundle.parse(Self.bundle))
        var first = try store.add(appID: Self.app, kind: "K", family: "systemSmall", configuration: [:])
        first.content = try ViewTree.parse(#"{"type":"text","text":"one"}"#)
        store.insert(first)
        _ = try store.add(appID: Self.app, kind: "L", family: "systemSmall", configuration: [:])
        return store
    }

    /// The durable state a widget store holds.
    func image(_ store: WidgetStore) -> DurableState {
        var image = DurableState()
        image.bundles = store.bundles.mapValues(\.json)
        for widget in store.widgets.values { image.widgets[widget.id] = StoredWidget(widget, content: widget.content?.json) }
        image.nextWidgetNumber = store.nextWidgetNumber
        return image
    }

    /// Whether two widget stores hold the same: what a restart would rebuild, and the next id.
    func same(_ a: WidgetStore, _ b: WidgetStore) -> Bool {
        a.widgets == b.widgets && a.bundles == b.bundles && a.nextWidgetNumber == b.nextWidgetNumber
            && a.widgetIDs(appID: Self.app) == b.widgetIDs(appID: Self.app)
    }

    @Test("Each kind of widget change hands back the records that take the stored state where it took the store, and undone leaves the store as it was")
    func widgetChanges() throws {
        let before = try widgetStore()
        let placed = try before.placement(appID: Self.app, kind: "K", family: "systemSmall", configuration: [:])
        let smaller = try WidgetBundle.parse(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        let changes: [(String, (inout WidgetStore) -> Void, [StateRecord])] = [
            ("insert", { $0.insert(placed) }, [.widget(StoredWidget(placed, content: nil))]),
            ("content", { $0.setContent("w1", tree: nil) }, [.widget(StoredWidget(before.widgets["w1"]!, content: nil))]),
            ("configuration", { $0.setConfiguration("w2", ["n": .int(1)]) }, [.widget(StoredWidget(id: "w2", appID: Self.app, kind: "L", family: .systemSmall, configuration: ["n": .int(1)], content: nil))]),
            ("remove", { $0.remove("w1") }, [.widgetRemoved(id: "w1")]),
            ("bundle dropping a kind", { $0.registerBundle(appID: Self.app, smaller) }, [.bundle(appID: Self.app, json: smaller.json), .widgetRemoved(id: "w2")]),
            ("bundle forgotten", { $0.dropBundle(appID: Self.app) }, [.bundleRemoved(appID: Self.app)]),
        ]
        for (name, change, expected) in changes {
            var store = before
            let ((), made) = store.changing(change)
            #expect(made.records == expected, "\(name)")
            #expect(made.priors.count == expected.count, "\(name)")
            var image = image(before)
            for record in made.records { image.apply(record) }
            #expect(image == self.image(store), "\(name): the records journal what the change did")
            store.undo(made)
            #expect(same(store, before), "\(name): undone")
        }
    }

    @Test("An object a change touches twice is put back as it was before the first touch; one made and removed in the same change is not journalled")
    func touchedTwice() throws {
        let before = try widgetStore()
        var store = before
        let placed = try store.placement(appID: Self.app, kind: "K", family: "systemSmall", configuration: [:])
        let ((), made) = store.changing {
            $0.setContent("w1", tree: try? ViewTree.parse(#"{"type":"text","text":"two"}"#))
            $0.setContent("w1", tree: nil)
            $0.insert(placed)
            $0.remove(placed.id)
        }
        #expect(made.records == [.widget(StoredWidget(store.widgets["w1"]!, content: nil))])
        guard case .widget("w1", let old)? = made.priors.first else {
            Issue.record("no prior of w1: \(made.priors)")
            return
        }
        #expect(old == before.widgets["w1"])
        store.undo(made)
        #expect(store.widgets == before.widgets && store.widgetIDs(appID: Self.app) == ["w1", "w2"])
        #expect(store.widgets["w1"]?.content?.json == #"{"type":"text","text":"one"}"#)
        // The id of the widget no record names stays minted: ids are never handed out twice.
        #expect(store.nextWidgetNumber == before.nextWidgetNumber + 1)
    }

    @Test("A change that throws has changed nothing and hands back nothing; a change that touches nothing journals nothing")
    func throwingAndEmpty() throws {
        let before = try widgetStore()
        var store = before
        #expect(throws: HostError.self) {
            _ = try store.changing { (store: inout WidgetStore) throws(HostError) in
                try store.checkConfiguration("w9", [:])
                store.remove("w1")
            }
        }
        #expect(same(store, before))
        let ((), nothing) = store.changing { $0.remove("w9") }
        #expect(nothing.isEmpty && nothing.records.isEmpty)
    }

    @Test("Live Activity changes hand back their records; undone, the activity and the next id are as they were")
    func activityChanges() throws {
        var before = LiveActivityStore()
        let first = try before.start(appID: Self.app, attributesType: "T", contentJSON: ActivityFixtures.content, options: [:], now: Self.now)
        let changes: [(String, (inout LiveActivityStore) throws -> Void, (LiveActivityStore) -> [StateRecord])] = [
            ("start", { _ = try $0.start(appID: Self.app, attributesType: "T", contentJSON: ActivityFixtures.content, options: [:], now: Self.now) },
             { [.activity(StoredActivity($0.activity("a2")!))] }),
            ("update", { _ = try $0.update(id: first.id, contentJSON: "", options: ["relevance": .double(3)], now: Self.now) },
             { [.activity(StoredActivity($0.activity("a1")!))] }),
            ("end", { _ = try $0.end(id: first.id, options: [:], now: Self.now) }, { [.activity(StoredActivity($0.activity("a1")!))] }),
            ("end at once", { _ = try $0.end(id: first.id, options: ["dismissal": .string("immediate")], now: Self.now) }, { _ in [.activityRemoved(id: "a1")] }),
        ]
        for (name, change, expected) in changes {
            var store = before
            let ((), made) = try store.changing(change)
            #expect(made.records == expected(store), "\(name)")
            store.undo(made, now: Self.now)
            #expect(store.all == before.all && store.nextActivityNumber == before.nextActivityNumber, "\(name): undone")
            #expect(store.ordered(now: Self.now) == before.ordered(now: Self.now), "\(name): undone")
        }
    }
}
