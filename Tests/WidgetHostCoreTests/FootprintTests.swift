import Testing
@testable import WidgetHostCore

@Suite("Budgets per app and for the host")
struct FootprintTests {
    func footprint(perApp: Int = 100, total: Int = 150) -> Footprint {
        var budgets = Footprint.Budgets()
        budgets.perApp = perApp
        budgets.total = total
        return Footprint(budgets: budgets)
    }

    @Test("an object may grow while its app and the host stay within their budgets; a change replaces the object's charge")
    func perApp() throws {
        var footprint = footprint()
        try footprint.check("w1", appID: "org.example.A", bytes: 60)
        footprint.set("w1", appID: "org.example.A", bytes: 60)
        try footprint.check("w2", appID: "org.example.A", bytes: 40)
        #expect(throws: HostError.limitExceeded(
            "org.example.A's widgets, timelines and Live Activities would take 101 bytes on the bus; an app may have at most 100 bytes (the limit max-app-bytes) — send smaller content, or remove widgets or end Live Activities first"
        )) { try footprint.check("w2", appID: "org.example.A", bytes: 41) }
        // w1 growing to 100 replaces its 60: it fits alone.
        try footprint.check("w1", appID: "org.example.A", bytes: 100)
        footprint.set("w1", appID: "org.example.A", bytes: 100)
        #expect(footprint.bytes(of: "org.example.A") == 100 && footprint.total == 100)
        footprint.release("w1")
        #expect(footprint.bytes(of: "org.example.A") == 0 && footprint.total == 0 && footprint.charge(of: "w1") == 0)
    }

    @Test("the host's budget binds all apps together")
    func total() throws {
        var footprint = footprint()
        footprint.set("w1", appID: "org.example.A", bytes: 100)
        try footprint.check("a1", appID: "org.example.B", bytes: 50)
        footprint.set("a1", appID: "org.example.B", bytes: 50)
        #expect(throws: HostError.self) { try footprint.check("w2", appID: "org.example.C", bytes: 1) }
        do {
            try footprint.check("w2", appID: "org.example.C", bytes: 1)
        } catch {
            #expect(error.name == .limitExceeded && error.message.contains("at most 150 bytes (the limit max-host-bytes)"), "\(error)")
        }
        footprint.release("a1")
        try footprint.check("w2", appID: "org.example.C", bytes: 50)
    }

    @Test("what does not grow is never refused, even over budgets lowered since it was stored")
    func shrinking() throws {
        var footprint = footprint(perApp: 10, total: 10)
        footprint.set("w1", appID: "org.example.A", bytes: 500)
        try footprint.check("w1", appID: "org.example.A", bytes: 500)
        try footprint.check("w1", appID: "org.example.A", bytes: 20)
        #expect(throws: HostError.self) { try footprint.check("w1", appID: "org.example.A", bytes: 501) }
        #expect(throws: HostError.self) { try footprint.check("w2", appID: "org.example.B", bytes: 1) }
    }
}

@Suite("Bundles nobody needs")
struct UnneededBundleTests {
    @Test("a bundle is unneeded when its app is not known and has no placed widget")
    func unneeded() throws {
        var store = WidgetStore()
        let bundle = try WidgetBundle.parse(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        for app in ["org.example.Known", "org.example.Placed", "org.example.Gone"] { store.registerBundle(appID: app, bundle) }
        let widget = try store.add(appID: "org.example.Placed", kind: "K", family: "systemSmall", configuration: [:])
        let known: (String) -> Bool = { $0 == "org.example.Known" }
        let all = ["org.example.Known", "org.example.Placed", "org.example.Gone", "org.example.NoBundle", "org.example.Gone"]
        #expect(store.unneededBundles(among: all, isKnown: known) == ["org.example.Gone"])
        store.remove(widget.id)
        #expect(store.unneededBundles(among: all, isKnown: known) == ["org.example.Gone", "org.example.Placed"])
        store.dropBundle(appID: "org.example.Gone")
        #expect(store.bundles["org.example.Gone"] == nil && store.bundles["org.example.Known"] != nil)
    }
}
