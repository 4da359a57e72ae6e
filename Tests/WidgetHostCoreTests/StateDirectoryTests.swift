import Foundation
import PrivateBus
import Testing
@testable import WidgetHostCore
@testable import WidgetHostSystem

@Suite("State directory")
struct StateDirectoryTests {
    func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("wh-state-\(UUID().uuidString.prefix(8))").path
    }

    /// A new directory whose state holds the sample widget, journalled or (`compacted`) in the snapshot.
    func directoryWithWidget(compacted: Bool) throws -> String {
        let dir = directory()
        let (state, _) = try StateDirectory.open(directory: dir)
        try state.append(.widget(Self.widget))
        if compacted {
            var image = DurableState()
            image.apply(.widget(Self.widget))
            try state.compact(image)
        }
        return dir
    }

    @Test("a refused second opening in the same process leaves the first one's lock held against other processes")
    func secondOpeningKeepsTheLock() async throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (first, _) = try StateDirectory.open(directory: dir)
        #expect(throws: StateDirectoryError.self) { try StateDirectory.open(directory: dir) }
        // Another process asks for the same POSIX lock: it must still be held.
        let probe = try await runCommand(
            "/usr/bin/python3",
            ["-c", "import fcntl,sys; f=open(sys.argv[1],'r+');\ntry: fcntl.lockf(f, fcntl.LOCK_EX|fcntl.LOCK_NB)\nexcept OSError: sys.exit(3)", dir + "/lock"])
        #expect(probe.status == 3, "the lock was free: \(probe)")
        withExtendedLifetime(first) {}
    }

    static let widget = StoredWidget(
        try! WidgetStore.sample(), content: #"{"type":"text","id":"t","text":"hi"}"#)

    func files(_ dir: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted() }

    @Test("Records survive a reopen; ids are never reused; compaction keeps everything")
    func roundTrip() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var configured = Self.widget
        configured.configuration = ["hero": .string("spouty"), "n": .int(3), "list": .strings(["a"]), "nested": .dict(["b": .bool(true)])]
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            try state.append(.bundle(appID: "org.example.A", json: #"{"widgets":[]}"#))
            try state.append([.widget(configured), .widget(StoredWidget.renamed(Self.widget, "w7"))])
            try state.append(.widgetRemoved(id: "w7"))
        }
        let (reopened, loaded) = try StateDirectory.open(directory: dir)
        #expect(reopened.notes.isEmpty)
        #expect(loaded.bundles["org.example.A"] == #"{"widgets":[]}"#)
        #expect(loaded.widgets.keys.sorted() == ["w1"])
        #expect(loaded.widgets["w1"] == configured)
        #expect(loaded.nextWidgetNumber == 8, "w7 was used once, so the next widget is w8")
        // Opening compacted everything into the snapshot and emptied the journal.
        #expect(files(dir) == ["journal", "lock", "state.json"])
        let permissions = try FileManager.default.attributesOfItem(atPath: dir)[.posixPermissions] as? Int
        #expect(permissions == 0o700)
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/journal")).isEmpty)
    }

    @Test("A last line cut short was never acknowledged: it is dropped quietly, everything before it kept")
    func tornTail() throws {
        let dir = try directoryWithWidget(compacted: false)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A crash in the middle of writing the next record.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/journal"))
        handle.seekToEndOfFile()
        handle.write(Data("0123456789abcdef {\"widgetRemov".utf8))
        try handle.close()
        let (reopened, loaded) = try StateDirectory.open(directory: dir)
        #expect(loaded.widgets["w1"] == Self.widget)
        #expect(reopened.notes.count == 1 && reopened.notes[0].contains("cut short"))
        #expect(!files(dir).contains { $0.contains("corrupt") })
    }

    @Test("A damaged, truncated, foreign or future snapshot is kept aside and the host starts empty", arguments: [
        "garbage\u{0}\u{1}", "", "widgethost-state 1 0000000000000000\n{}", "widgethost-state 99 x\n{}", "widgethost-state 1",
    ])
    func damagedSnapshot(_ text: String) throws {
        let dir = try directoryWithWidget(compacted: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try text.write(toFile: dir + "/state.json", atomically: false, encoding: .utf8)
        do {
            let (reopened, loaded) = try StateDirectory.open(directory: dir)
            #expect(loaded == DurableState())
            #expect(reopened.notes.count == 1, "\(reopened.notes)")
            #expect(files(dir).contains { $0.hasPrefix("state.json.corrupt-") })
            // One host per directory: a second opening is refused while the first lives.
            #expect(throws: StateDirectoryError.self) { try StateDirectory.open(directory: dir) }
        }
        // The fresh snapshot is sound again.
        #expect(try StateDirectory.open(directory: dir).0.notes.isEmpty)
    }

    @Test("Option values keep their D-Bus types through JSON")
    func optionValues() throws {
        let values: [String: OptionValue] = [
            "s": .string("x"), "o": .objectPath("/a"), "b": .bool(false), "x": .int(-5), "t": .uint(7), "d": .double(0.5),
            "as": .strings(["a", "b"]), "ax": .array(elementSignature: "x", [.int(1)]), "dict": .dict(["k": .uint(1)]),
            "other": .other(signature: "h"),
        ]
        #expect(try [String: OptionValue](durableJSON: values.durableJSON()) == values)
    }

    /// A state holding one of everything a snapshot can: every kind of option value, an activity with and without its dates, a timeline.
    static func everything() throws -> DurableState {
        var state = DurableState()
        state.apply(.bundle(appID: "org.example.A", json: #"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#))
        var widget = Self.widget
        widget.configuration = [
            "s": .string("x \"quoted\" é"), "o": .objectPath("/a"), "b": .bool(false), "x": .int(-5), "t": .uint(7), "d": .double(0.5),
            "whole": .double(2), "as": .strings(["a", "b"]), "ax": .array(elementSignature: "x", [.int(1)]),
            "dict": .dict(["k": .uint(1), "deeper": .dict(["n": .int(Int64.min)])]), "other": .other(signature: "h"),
        ]
        state.apply(.widget(widget))
        var bare = StoredWidget.renamed(Self.widget, "w9")
        bare.content = nil
        state.apply(.widget(bare))
        var live = LiveActivityStore()
        let started = try live.start(
            appID: "org.example.A", attributesType: "T", contentJSON: ActivityFixtures.content,
            options: ["relevance": .double(2.25), "stale_date": .int(5_000), "state": .dict(["eta": .int(3)])], now: Date(timeIntervalSince1970: 1_000))
        state.apply(.activity(StoredActivity(started)))
        var ended = StoredActivity(started)
        ended.id = "a2"
        ended.endedAt = 1_500_000
        ended.removeAt = 2_000_000
        ended.staleDate = nil
        state.apply(.activity(ended))
        let timeline = try Timeline.parse(
            entries: [(1_000, #"{"type":"text","text":"one"}"#), (2_000, #"{"type":"text","text":"two"}"#)], policy: "after",
            reloadAtMs: 3_000, limits: ViewTreeLimits(), maxEntries: 10)
        state.apply(.timeline(StoredTimeline(widgetID: "w1", timeline: timeline, receivedAt: Date(timeIntervalSince1970: 900))))
        return state
    }

    @Test("A snapshot reads back everything it was written with, and so does a version 1 snapshot's JSON")
    func snapshotReader() throws {
        let state = try Self.everything()
        let (written, reading) = StateFile.readSnapshot(try StateFile.snapshot(state))
        #expect(written == state)
        #expect(reading.notes.isEmpty && reading.damaged.isEmpty && !reading.rewrite)
        #expect(try DurableState(jsonText: state.durableJSON()) == state)
        for record in [StateRecord.bundle(appID: "a", json: "{}"), .bundleRemoved(appID: "a"), .widget(state.widgets["w1"]!),
            .widgetRemoved(id: "w1"), .activity(state.activities["a2"]!), .activityRemoved(id: "a2"), .timeline(state.timelines["w1"]!),
            state.minted]
        {
            #expect(try StateRecord(jsonText: record.jsonText()) == record)
        }
    }

    @Test("A snapshot of another shape names where: the reader says which member is wrong")
    func snapshotReaderErrors() throws {
        let wrongFamily = #"{"bundles":{},"widgets":{"w1":{"id":"w1","appID":"a","kind":"K","family":7,"configuration":{}}},"activities":{},"timelines":{},"nextWidgetNumber":2,"nextActivityNumber":1}"#
        #expect(throws: StateFormatError(path: "$.widgets.w1.family", problem: "expected a string, found a number")) {
            try DurableState(jsonText: wrongFamily)
        }
        let missing = #"{"widget":{"_0":{"id":"w1","appID":"a","family":"systemSmall","configuration":{"n":{"x":1}}}}}"#
        #expect(throws: StateFormatError(path: "$.widget._0", problem: "the member 'kind' is missing")) { try StateRecord(jsonText: missing) }
        let badOption = #"{"widget":{"_0":{"id":"w1","appID":"a","kind":"K","family":"systemSmall","configuration":{"n":{"x":"1"}}}}}"#
        #expect(throws: StateFormatError(path: "$.widget._0.configuration.n.x", problem: "expected a whole number, found a string")) {
            try StateRecord(jsonText: badOption)
        }
    }

    @Test("An unsigned value past Int64.max, which a JSON value holds only as a double, is read back exactly")
    func hugeUnsigned() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var widget = Self.widget
        widget.configuration = ["t": .uint(UInt64.max)]
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            try state.append(.widget(widget))
        }
        do {
            let (_, loaded) = try StateDirectory.open(directory: dir)  // replays the journal, then compacts
            #expect(loaded.widgets["w1"] == widget)
        }
        let (reopened, loaded) = try StateDirectory.open(directory: dir)  // reads the snapshot
        #expect(reopened.notes.isEmpty)
        #expect(loaded.widgets["w1"]?.configuration["t"] == .uint(UInt64.max))
    }

    @Test("A host restarted after a clean stop writes nothing before it serves: the snapshot already holds everything")
    func cleanReopenWritesNothing() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            try state.compact(try Self.everything())
        }
        func identity() throws -> String {
            let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/state.json")
            return "\(attributes[.systemFileNumber] ?? 0) \((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)"
        }
        let before = try identity()
        Thread.sleep(forTimeInterval: 0.02)
        do {
            let (reopened, loaded) = try StateDirectory.open(directory: dir)
            #expect(loaded == (try Self.everything()))
            #expect(try identity() == before, "the snapshot was not rewritten")
            // A journalled change still makes the next opening compact.
            try reopened.append(.widgetRemoved(id: "w9"))
        }
        let (_, again) = try StateDirectory.open(directory: dir)
        #expect(again.widgets["w9"] == nil)
        #expect(try identity() != before, "the journal was compacted into a new snapshot")
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/journal")).isEmpty)
    }

    @Test("Widgets, bundles and activities are rebuilt from the stored state")
    func rebuild() throws {
        var store = WidgetStore()
        try store.restoreBundle(appID: "org.example.A", json: #"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#)
        try store.restore(Self.widget, nextNumber: 12)
        #expect(store.widgets["w1"]?.content?.json == Self.widget.content)
        let next = try store.add(appID: "org.example.A", kind: "K", family: "systemSmall", configuration: [:])
        #expect(next.id == "w12")

        var live = LiveActivityStore()
        let started = try live.start(
            appID: "org.example.A", attributesType: "T", contentJSON: ActivityFixtures.content, options: ["relevance": .double(2)],
            now: Date(timeIntervalSince1970: 1_000))
        var restored = LiveActivityStore()
        try restored.restore(StoredActivity(started), nextNumber: 1, now: Date(timeIntervalSince1970: 1_001))
        #expect(restored.activity("a1") == started)
        #expect(try restored.start(
            appID: "org.example.A", attributesType: "T", contentJSON: ActivityFixtures.content, options: [:],
            now: Date(timeIntervalSince1970: 1_002)).id == "a2")
    }
}

extension WidgetStore {
    /// A placed widget w1 of org.example.A's kind K.
    static func sample() throws -> PlacedWidget {
        var store = WidgetStore()
        _ = store.registerBundle(appID: "org.example.A", try WidgetBundle.parse(#"{"widgets":[{"kind":"K","families":["systemSmall"]}]}"#))
        return try store.add(appID: "org.example.A", kind: "K", family: "systemSmall", configuration: [:])
    }
}

extension StoredWidget {
    static func renamed(_ widget: StoredWidget, _ id: String) -> StoredWidget {
        var copy = widget
        copy.id = id
        return copy
    }
}

enum ActivityFixtures {
    /// Every presentation a plain text element.
    static let content =
        "{" + ActivityPresentation.allCases.map { "\"\($0.rawValue)\":{\"type\":\"text\"}" }.joined(separator: ",") + "}"
}
