import Foundation
import PrivateBus
import Testing
@testable import WidgetHostCore
@testable import WidgetHostSystem

/// The state directory on a real small tmpfs that fills up or turns read-only.
@Suite("State directory on a full or read-only disk", .enabled(if: SmallDisk.isAvailable, "mounting a tmpfs needs root"))
struct StorageFaultTests {
    /// A record of about `bytes` bytes, told apart by `n`.
    static func record(_ n: Int, bytes: Int = 64) -> StateRecord {
        .bundle(appID: "org.example.App\(n)", json: #"{"pad":""# + String(repeating: "x", count: bytes) + #""}"#)
    }

    static func size(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? -1
    }

    /// What a fresh open of `dir` reads, with the apps of its bundles.
    static func reopen(_ dir: String) throws -> (apps: [String], notes: [String]) {
        let (state, image) = try StateDirectory.open(directory: dir)
        return (image.bundles.keys.sorted(), state.notes)
    }

    @Test("A failed append is cut back off at once: the journal keeps whole records, and appends go through again once there is room")
    func failedAppendIsCutBack() throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { disk.unmount() }
        let dir = disk.path + "/state"
        let journal = dir + "/journal"
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            try state.append(Self.record(1))
            try disk.fill()
            // Room for part of the next record only: the write stops in its middle.
            disk.makeRoom(8192)
            let before = Self.size(journal)
            #expect(throws: StateDirectoryError.self) { try state.append(Self.record(2, bytes: 40_000)) }
            #expect(Self.size(journal) == before, "the part that was written is cut off before the call returns")
            // Still full: refused again, nothing written.
            #expect(throws: StateDirectoryError.self) { try state.append(Self.record(3, bytes: 40_000)) }
            #expect(Self.size(journal) == before)
            disk.makeRoom()
            try state.append(Self.record(4))
        }
        let (apps, notes) = try Self.reopen(dir)
        #expect(apps == ["org.example.App1", "org.example.App4"], "every acknowledged record, none of the refused ones")
        #expect(notes.isEmpty, "nothing damaged, nothing kept aside: \(notes)")
    }

    @Test("Opened on a full disk it reads everything, appends once there is room, and writes its snapshot later")
    func startsOnAFullDisk() throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { disk.unmount() }
        let dir = disk.path + "/state"
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            for n in 1...3 { try state.append(Self.record(n, bytes: 2000)) }
        }
        try disk.fill()
        do {
            let (state, image) = try StateDirectory.open(directory: dir)
            #expect(image.bundles.count == 3, "served from the journal although no snapshot could be written")
            #expect(state.notes.contains { $0.contains("cannot write a snapshot") }, "\(state.notes)")
            #expect(throws: StateDirectoryError.self) { try state.append(Self.record(4, bytes: 8000)) }
            disk.makeRoom()
            try state.append(Self.record(5))
            var whole = image
            whole.apply(Self.record(5))
            try state.compact(whole)
        }
        let (apps, notes) = try Self.reopen(dir)
        #expect(apps == ["org.example.App1", "org.example.App2", "org.example.App3", "org.example.App5"])
        #expect(notes.isEmpty, "\(notes)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/state.json.tmp"), "a failed snapshot leaves no temporary file")
    }

    @Test("A read-only directory: opened and read, writes refused while it is read-only, taken again once it is writable")
    func readOnly() throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { disk.unmount() }
        let dir = disk.path + "/state"
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            try state.append(Self.record(1))
        }
        try disk.setReadOnly(true)
        do {
            let (state, image) = try StateDirectory.open(directory: dir)
            #expect(image.bundles.keys.sorted() == ["org.example.App1"])
            #expect(throws: StateDirectoryError.self) { try state.append(Self.record(2)) }
            try disk.setReadOnly(false)
            try state.append(Self.record(3))
        }
        #expect(try Self.reopen(dir).apps == ["org.example.App1", "org.example.App3"])
    }

    @Test("A damaged journal line on a full disk stays where it is until it can be kept aside; appends go on meanwhile")
    func damagedLineOnAFullDisk() throws {
        let disk = try SmallDisk(bytes: 256 << 10)
        defer { disk.unmount() }
        let dir = disk.path + "/state"
        do {
            let (state, _) = try StateDirectory.open(directory: dir)
            for n in 1...2 { try state.append(Self.record(n)) }
        }
        // Damage the first line: it alone is lost.
        let journal = dir + "/journal"
        var text = try String(contentsOfFile: journal, encoding: .utf8)
        text.replaceSubrange(text.startIndex..<text.index(text.startIndex, offsetBy: 4), with: "0000")
        try text.write(toFile: journal, atomically: false, encoding: .utf8)
        let damaged = String(text.prefix { $0 != "\n" }) + "\n"
        func keptAside() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix("journal.corrupt-") }
        }
        try disk.fill()
        do {
            let (state, image) = try StateDirectory.open(directory: dir)
            #expect(image.bundles.keys.sorted() == ["org.example.App2"])
            #expect(!state.needsSnapshot, "the journal still holds what was read")
            #expect(state.notes.contains { $0.contains("cannot be kept aside yet") }, "\(state.notes)")
            #expect(keptAside().isEmpty)
            disk.makeRoom()
            try state.append(Self.record(3))
            var whole = image
            whole.apply(Self.record(3))
            // The damaged line is kept aside before a snapshot replaces the journal that holds it.
            try state.compact(whole)
            #expect(try keptAside().map { try String(contentsOfFile: dir + "/" + $0, encoding: .utf8) } == [damaged])
        }
        let (apps, notes) = try Self.reopen(dir)
        #expect(apps == ["org.example.App2", "org.example.App3"])
        #expect(notes.isEmpty, "\(notes)")
    }

    @Test("A record that cannot be encoded (a NaN) is refused before anything is written")
    func encodingErrorsWriteNothing() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("wh-state-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (state, _) = try StateDirectory.open(directory: dir)
        var widget = StoredWidget(try WidgetStore.sample(), content: nil)
        widget.configuration = ["n": .double(.nan)]
        #expect {
            try state.append(.widget(widget))
        } throws: { error in
            if case StateDirectoryError.encoding = error { return true }
            return false
        }
        #expect(Self.size(dir + "/journal") == 0)
    }
}
