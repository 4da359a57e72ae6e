import Foundation
import Testing
@testable import WidgetHostCore
@testable import WidgetHostSystem

/// Damage costs only what is damaged: a record per damaged line, never an
/// acknowledged record beside it, never an id minted twice.
@Suite("Damaged state files")
struct StateDamageTests {
    func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("wh-damage-\(UUID().uuidString.prefix(8))").path
    }

    /// A new directory whose snapshot holds `state`: the directory, the snapshot's path and lines.
    func compacted(_ state: DurableState) throws -> (String, String, [[UInt8]]) {
        let dir = directory()
        do { try StateDirectory.open(directory: dir).0.compact(state) }
        let path = dir + "/state.json"
        return (dir, path, Self.lines(try Self.read(path)))
    }

    /// The lines of a file, each with its newline.
    static func lines(_ bytes: [UInt8]) -> [[UInt8]] {
        bytes.split(separator: StateFile.newlineByte, omittingEmptySubsequences: false).dropLast()
            .map { Array($0) + [StateFile.newlineByte] }
    }

    static func read(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func write(_ bytes: [UInt8], _ path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The files `name` was kept aside in.
    static func keptAside(_ dir: String, _ name: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix(name + ".corrupt-") }.sorted()
    }

    /// `line` with the byte in the middle of its JSON changed.
    static func damaged(_ line: [UInt8]) -> [UInt8] {
        var line = line
        line[17 + (line.count - 18) / 2] ^= 0x01
        return line
    }

    static let widget = StateDirectoryTests.widget

    static func widget(_ id: String, _ text: String) -> StoredWidget {
        var widget = StoredWidget.renamed(Self.widget, id)
        widget.content = #"{"type":"text","text":"\#(text)"}"#
        return widget
    }

    /// A state with one of each record, a timeline that needs its widget, and
    /// counters past every object (w10, w11 and a3, a4 were removed).
    static func state() throws -> DurableState {
        var state = try StateDirectoryTests.everything()
        state.nextWidgetNumber = 12
        state.nextActivityNumber = 5
        return state
    }

    /// `records` applied in order, but for the one at `skipped`.
    static func replay(_ records: [StateRecord], skipping skipped: Int? = nil, onto base: DurableState = DurableState()) -> DurableState {
        var state = base
        for (index, record) in records.enumerated() where index != skipped { state.apply(record) }
        return state
    }

    @Test("One damaged byte in a snapshot record costs that record (a widget's timeline goes with it); the line is kept aside as it was and logged")
    func snapshotRecord() throws {
        let state = try Self.state()
        let (dir, path, original) = try compacted(state)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let records = original.dropFirst().map { StateFile.record($0.dropLast()[...])! }
        #expect(records.count == 8, "minted, a bundle, two widgets, two activities, a timeline, minted")
        for index in records.indices {
            var lines = original
            let damaged = Self.damaged(original[index + 1])
            lines[index + 1] = damaged
            try Self.write(lines.flatMap { $0 }, path)
            for aside in Self.keptAside(dir, "state.json") {
                try FileManager.default.removeItem(atPath: dir + "/" + aside)
            }

            do {
                let (opened, loaded) = try StateDirectory.open(directory: dir)
                var expected = Self.replay(records, skipping: index)
                expected.nextWidgetNumber = state.nextWidgetNumber
                expected.nextActivityNumber = state.nextActivityNumber
                #expect(loaded == expected, "damaged: \(records[index].subject)")
                let asides = Self.keptAside(dir, "state.json")
                #expect(asides.count == 1)
                #expect(
                    try asides.first.map { try Self.read(dir + "/" + $0) } == damaged,
                    "the damaged line is kept aside as it was")
                let note = opened.notes.first { $0.contains("line \(index + 2) is damaged") }
                #expect(note?.contains("kept aside in") == true, "\(opened.notes)")
                if case .widget(let widget) = records[index] {
                    #expect(note?.contains(widget.id) == true, "\(opened.notes)")
                }
            }
            // Opening wrote the rest again: the next opening finds nothing wrong.
            #expect(try StateDirectory.open(directory: dir).0.notes.isEmpty)
        }
    }

    @Test("Any one byte of a snapshot changed, newlines and the header included, costs one record at most and never lowers a counter")
    func everyByteOfASnapshot() throws {
        let state = try Self.state()
        let bytes = try StateFile.snapshot(state)
        let records = Self.lines(bytes).dropFirst().map { StateFile.record($0.dropLast()[...])! }
        var allowed = [state]
        for index in records.indices {
            var without = Self.replay(records, skipping: index)
            without.nextWidgetNumber = state.nextWidgetNumber
            without.nextActivityNumber = state.nextActivityNumber
            allowed.append(without)
        }
        for position in bytes.indices {
            for value in Set([bytes[position] ^ 0x01, bytes[position] ^ 0x80, StateFile.newlineByte])
            where value != bytes[position] {
                var damaged = bytes
                damaged[position] = value
                let (read, reading) = StateFile.readSnapshot(damaged)
                #expect(
                    allowed.contains(read),
                    "byte \(position) set to \(value): \(reading.notes) \(reading.damaged)")
                #expect(reading.rewrite, "byte \(position) set to \(value)")
            }
        }
    }

    @Test("Any one byte of a journal changed costs one record at most; its last newline damaged or lost costs nothing")
    func everyByteOfAJournal() throws {
        let base = try Self.state()
        let records: [StateRecord] = [
            .widget(Self.widget("w12", "one")), .widget(Self.widget("w13", "two")),
            .timeline(base.timelines["w1"]!),
            .widget(Self.widget("w12", "three")), .widgetRemoved(id: "w13"), .activityRemoved(id: "a1"),
            .bundle(appID: "org.example.B", json: "{}"),
        ]
        let bytes = try records.flatMap { Array(try StateFile.line($0).utf8) }
        var allowed = [Self.replay(records, onto: base)]
        for index in records.indices {
            allowed.append(Self.replay(records, skipping: index, onto: base))
        }
        for position in bytes.indices {
            for value in Set([bytes[position] ^ 0x01, bytes[position] ^ 0x80, StateFile.newlineByte])
            where value != bytes[position] {
                var damaged = bytes
                damaged[position] = value
                var read = base
                let reading = StateFile.readJournal(damaged, onto: &read)
                #expect(
                    allowed.contains(read),
                    "byte \(position) set to \(value): \(reading.notes) \(reading.damaged)")
                #expect(!reading.torn, "a line with its newline is never taken for a write cut short")
            }
        }
        var read = base
        let reading = StateFile.readJournal(Array(bytes.dropLast()), onto: &read)
        #expect(
            read == allowed[0] && reading.unterminated && !reading.torn && reading.end == bytes.count - 1)
    }

    @Test("A damaged journal line costs that line: the lines after it are applied, it is kept aside as it was, and the log names its widget")
    func journalLine() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            try state.append(.bundle(appID: "org.example.A", json: "{}"))
            try state.append(.widget(Self.widget("w1", "one")))
            try state.append(.widget(Self.widget("w2", "two")))
            try state.append(.widget(Self.widget("w3", "three")))
            try state.append(.widget(Self.widget("w1", "changed")))
            try state.append(.widgetRemoved(id: "w2"))
        }
        let journal = dir + "/journal"
        var lines = Self.lines(try Self.read(journal))
        let damaged = Self.damaged(lines[3])
        lines[3] = damaged
        try Self.write(lines.flatMap { $0 }, journal)

        let (reopened, loaded) = try StateDirectory.open(directory: dir)
        #expect(loaded.bundles.keys.sorted() == ["org.example.A"])
        #expect(
            loaded.widgets == ["w1": Self.widget("w1", "changed")],
            "the change and the removal after the damaged line are applied")
        #expect(loaded.nextWidgetNumber == 4, "w3 is not minted again")
        #expect(reopened.notes.count == 2, "\(reopened.notes)")
        #expect(reopened.notes.first?.contains("journal line 4 is damaged") == true && reopened.notes.first?.contains("w3") == true)
        #expect(reopened.notes.last?.hasPrefix("ids up to w3 are named") == true)
        let asides = Self.keptAside(dir, "journal")
        #expect(try asides.map { try Self.read(dir + "/" + $0) } == [damaged])
    }

    @Test("A record after a damaged line that needs what that line held is skipped, and logged: a timeline without its widget")
    func dependentRecord() throws {
        let state = try Self.state()
        var records = [
            StateRecord.widget(Self.widget("w12", "one")), .timeline(state.timelines["w1"]!),
        ]
        if case .timeline(var timeline) = records[1] {
            timeline.widgetID = "w12"
            records[1] = .timeline(timeline)
        }
        var lines = try records.map { Array(try StateFile.line($0).utf8) }
        lines[0] = Self.damaged(lines[0])
        var read = DurableState()
        let reading = StateFile.readJournal(lines.flatMap { $0 }, onto: &read)
        #expect(read.widgets.isEmpty && read.timelines.isEmpty)
        #expect(reading.damaged.map(\.lines) == [1...1])
        #expect(
            reading.notes == [
                "line 2 (the timeline of widget w12) is skipped: no line read places the widget"
            ])
    }

    @Test("A last journal line that lost its newline, its checksum matching, was acknowledged: kept, and the next append starts a line of its own")
    func lastNewlineLost() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            try state.append(.widget(Self.widget("w1", "one")))
            try state.append(.widget(Self.widget("w2", "two")))
        }
        let journal = dir + "/journal"
        try Self.write(try Self.read(journal).dropLast(), journal)
        // No snapshot can be written (a directory is where its temporary file goes):
        // the journal stays as it is, and takes the next record after that line.
        try FileManager.default.createDirectory(
            atPath: dir + "/state.json.tmp", withIntermediateDirectories: false)
        do {
            let (state, loaded) = try StateDirectory.open(directory: dir)
            #expect(loaded.widgets.keys.sorted() == ["w1", "w2"])
            #expect(state.notes.contains { $0.contains("lost its newline") }, "\(state.notes)")
            #expect(!state.notes.contains { $0.contains("never acknowledged") })
            try state.append(.widget(Self.widget("w3", "three")))
        }
        try FileManager.default.removeItem(atPath: dir + "/state.json.tmp")
        let (reopened, loaded) = try StateDirectory.open(directory: dir)
        #expect(loaded.widgets.keys.sorted() == ["w1", "w2", "w3"])
        #expect(reopened.notes.isEmpty, "\(reopened.notes)")
        #expect(Self.keptAside(dir, "journal").isEmpty)
    }

    @Test("No id is minted twice: not when the line of the highest widget and activity is damaged, nor when only a file kept aside names them")
    func idsNotMintedAgain() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let state = try Self.state()
        do {
            let (opened, _) = try StateDirectory.open(directory: dir)
            try opened.append(.widget(Self.widget("w1", "one")))
            try opened.append(.widget(Self.widget("w2", "two")))
            try opened.append(.activity(state.activities["a1"]!))
            try opened.append(.activity(state.activities["a2"]!))
        }
        let journal = dir + "/journal"
        var lines = Self.lines(try Self.read(journal))
        lines[1] = Self.damaged(lines[1])
        lines[3] = Self.damaged(lines[3])
        try Self.write(lines.flatMap { $0 }, journal)
        let (_, loaded) = try StateDirectory.open(directory: dir)
        #expect(loaded.widgets.keys.sorted() == ["w1"] && loaded.activities.keys.sorted() == ["a1"])
        #expect(loaded.nextWidgetNumber == 3 && loaded.nextActivityNumber == 3)

        // Files an older host kept aside whole: the ids they name are not minted again.
        let other = directory()
        defer { try? FileManager.default.removeItem(atPath: other) }
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: false)
        try Data(
            #"widgethost-state 1 0000000000000000\#n{"widgets":{"w55":{"id":"w55"}},"activities":{"a5":{"id":"a5"}},"next"#
                .utf8
        )
        .write(to: URL(fileURLWithPath: other + "/state.json.corrupt-1700000000"))
        do {
            let (opened, fresh) = try StateDirectory.open(directory: other)
            #expect(fresh.nextWidgetNumber == 56 && fresh.nextActivityNumber == 6)
            #expect(opened.notes.count == 1 && opened.notes[0].contains("w55"), "\(opened.notes)")
        }
        #expect(try StateDirectory.open(directory: other).1.nextWidgetNumber == 56, "the snapshot holds it now")
    }

    @Test("Removed ids live on only in the snapshot's first and last lines: either one damaged, they are not minted again")
    func countersInBothLines() throws {
        let state = try Self.state()
        let (dir, path, original) = try compacted(state)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for index in [1, original.count - 1] {
            var lines = original
            // "w11" read as "w10": the checksum no longer matches.
            let text = String(decoding: lines[index], as: UTF8.self)
            #expect(text.contains(#""widget":"w11""#))
            lines[index] = Array(text.replacingOccurrences(of: "w11", with: "w10").utf8)
            try Self.write(lines.flatMap { $0 }, path)
            let (_, loaded) = try StateDirectory.open(directory: dir)
            #expect(loaded.nextWidgetNumber == 12 && loaded.nextActivityNumber == 5)
            #expect(loaded.widgets == state.widgets)
        }
    }

    @Test("A version 1 snapshot, the whole state as one JSON document, still loads, and is written again as version 2")
    func versionOne() throws {
        let dir = directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        let json =
            #"{"bundles":{"org.example.A":"{\"widgets\":[]}"},"widgets":{"w3":{"id":"w3","appID":"org.example.A","kind":"K","family":"systemSmall","configuration":{"n":{"x":1}},"content":"{\"type\":\"text\"}"}},"activities":{},"timelines":{},"nextWidgetNumber":7,"nextActivityNumber":2}"#
        try Data("widgethost-state 1 \(StateFile.checksum(json))\n\(json)\n".utf8).write(
            to: URL(fileURLWithPath: dir + "/state.json"))
        let loaded: DurableState
        do {
            let (opened, read) = try StateDirectory.open(directory: dir)
            loaded = read
            #expect(opened.notes.isEmpty, "\(opened.notes)")
        }
        #expect(loaded.bundles == ["org.example.A": #"{"widgets":[]}"#])
        #expect(
            loaded.widgets["w3"]?.configuration == ["n": .int(1)]
                && loaded.widgets["w3"]?.content == #"{"type":"text"}"#)
        #expect(loaded.nextWidgetNumber == 7 && loaded.nextActivityNumber == 2)
        let text = try String(contentsOfFile: dir + "/state.json", encoding: .utf8)
        #expect(text.hasPrefix("widgethost-state 2 "), "written again as version 2")
        let (reopened, again) = try StateDirectory.open(directory: dir)
        #expect(again == loaded && reopened.notes.isEmpty)
    }

    @Test("A snapshot cut short loses the records cut off and says so; the closing line tells a cut at a line's end")
    func snapshotCutShort() throws {
        var state = DurableState()
        state.apply(.widget(Self.widget))
        let bytes = try StateFile.snapshot(state)
        let (cut, inLine) = StateFile.readSnapshot(Array(bytes.dropLast(10)))
        #expect(
            cut == state, "only the closing line is cut, and the first line holds the same counters")
        #expect(inLine.damaged.count == 1 && inLine.damaged[0].problem == "its checksum does not match")
        let lines = Self.lines(bytes)
        let (shorter, atEnd) = StateFile.readSnapshot(lines.dropLast().flatMap { $0 })
        #expect(shorter == state)
        #expect(
            atEnd.rewrite
                && atEnd.notes == [
                    "it ends before its closing line (cut short): records after line 3 are missing"
                ])
    }

    @Test("Every id a record names counts as minted, a removal's too; ids a scan found move the counters past them")
    func recordsNameIDs() {
        var state = DurableState()
        state.apply(.widgetRemoved(id: "w7"))
        state.apply(.activityRemoved(id: "a3"))
        #expect(state.nextWidgetNumber == 8 && state.nextActivityNumber == 4)
        var scan = MintedIDScan()
        scan.scan(Array(#""w5" "a9""#.utf8))
        #expect(state.reserve(scan) == ["a9"])
        #expect(state.nextWidgetNumber == 8 && state.nextActivityNumber == 10)
        #expect(state.reserve(scan).isEmpty)
    }

    @Test("Ids are found in any bytes, read in pieces; numbers no host mints are passed over")
    func mintedIDScan() {
        var scan = MintedIDScan()
        scan.scan(Array(#"{"id":"w7","x":"w12"}, "a3" "w9x" "#.utf8))
        scan.scan(Array(#""w1"#.utf8))
        scan.scan(Array(#"00" "a"#.utf8))
        #expect(scan.widget == 100 && scan.activity == 3)
        scan.scan(Array(#"4" "w99999999999999999999" "w\#(MintedIDScan.plausible + 1)" "a5" "#.utf8))
        #expect(scan.widget == 100 && scan.activity == 5)
        scan.scan(Array(#""w500"#.utf8))
        scan.end()
        scan.scan(Array(#"""#.utf8))
        #expect(scan.widget == 100, "an id is never read across two pieces of text")
        var store = WidgetStore()
        store.reserveNumbers(upTo: 56)
        #expect(store.nextWidgetNumber == 56)
        var activities = LiveActivityStore()
        activities.reserveNumbers(upTo: 6)
        #expect(activities.nextActivityNumber == 6)
    }
}
