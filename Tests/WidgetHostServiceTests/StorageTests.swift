import DBus
import Foundation
import PrivateBus
import Testing

/// A state directory on a small tmpfs that fills up or turns read-only under
/// the running daemon: changes are refused with StorageFailed, everything else
/// goes on, and nothing acknowledged is lost.
@Suite("Storage faults", .timeLimit(.minutes(3)), .enabled(if: SmallDisk.isAvailable, "mounting a tmpfs needs root"))
struct StorageTests {
    static let app = "org.example.Durable"
    static func content(_ text: String, padding: Int = 0) -> String {
        #"{"type":"text","id":"t","widgetURL":"x-durable://w","text":"\#(text)","pad":"\#(String(repeating: "x", count: padding))"}"#
    }

    /// The daemon on a private bus with its state on `disk`, an app with its bundle, and a renderer.
    static func start(on disk: SmallDisk) async throws -> (HostFixture, AppPeer, Connection) {
        let fixture = try await HostFixture.make()
        try await fixture.startHost(["--state-dir", disk.path + "/widgethost"])
        let app = try await DurabilityTests.registeredApp(fixture)
        let renderer = try await fixture.connect()
        return (fixture, app, renderer)
    }

    /// A host on `disk` that saved one widget (content "saved") and then stopped
    /// cleanly; returns what it served.
    static func savedWidget(on disk: SmallDisk) async throws -> (HostFixture, Connection, String, [String: [String: DBusValue]]) {
        let (fixture, app, renderer) = try await start(on: disk)
        let widget = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
        try await app.setContent(widget, Self.content("saved"))
        let served = try await renderer.managedObjects()
        app.close()
        await fixture.stopHost()
        return (fixture, renderer, widget, served)
    }

    /// Starts the host again on `disk`, after killing it with `signal` if it runs.
    static func restart(_ fixture: HostFixture, on disk: SmallDisk, signal: Int32 = SIGKILL) async throws {
        await fixture.stopHost(signal: signal)
        try await fixture.startHost(["--state-dir", disk.path + "/widgethost"])
    }

    @Test("A full disk: changes are StorageFailed and change nothing, taps and reads go on, writes resume once there is room, and kill -9 loses nothing acknowledged")
    func fullDisk() async throws {
        let disk = try SmallDisk(bytes: 512 << 10)
        defer { disk.unmount() }
        let (fixture, app, renderer) = try await Self.start(on: disk)
        defer { fixture.stop() }
        defer { renderer.close() }
        let widget = try await renderer.addWidget(Self.app, "Hero", "systemSmall", ["n": .int64(1)])
        try await app.setContent(widget, Self.content("saved"))
        let before = try await renderer.managedObjects()

        try disk.fill()
        // Each kind of change, from the app and from a renderer, is refused and changes nothing.
        // (Each is larger than a page: a small one could still fit in the journal's last page.)
        let big = String(repeating: "x", count: 20_000)
        await expectHostError("StorageFailed", mentioning: "nothing was changed") {
            try await app.setContent(widget, Self.content("lost", padding: 100_000))
        }
        await expectHostError("StorageFailed", mentioning: "free space") { try await renderer.configure(widget, ["n": .string(big)]) }
        await expectHostError("StorageFailed") { _ = try await renderer.addWidget(Self.app, "Hero", "systemSmall", ["n": .string(big)]) }
        let bigActivity = DurabilityTests.activityContent.replacingOccurrences(of: #"{"type":"text"}"#, with: #"{"type":"text","text":"\#(big)"}"#)
        await expectHostError("StorageFailed") { _ = try await app.startActivity("T", bigActivity) }
        await expectHostError("StorageFailed") { try await app.registerWidgets(#"{"widgets":[],"pad":"\#(big)"}"#) }
        #expect(try await renderer.managedObjects() == before, "the refused changes left everything as it was")

        // Reads and taps need no disk.
        let (outcome, details) = try await renderer.tap(widget)
        #expect(outcome == "open-url" && details["url"] == .string("x-durable://w"))
        #expect(app.calls.contains { $0.member == "OpenURL" })
        #expect(fixture.hostProcess?.isRunning == true, "the host did not exit")

        disk.makeRoom()
        try await app.setContent(widget, Self.content("after"))
        let second = try await renderer.addWidget(Self.app, "Hero", "systemSmall")
        #expect(second.hasSuffix("/w2"), "a refused AddWidget used no id")
        let acknowledged = try await renderer.managedObjects()
        #expect(fixture.log.contains("refuses writes") && fixture.log.contains("takes writes again"), "\(fixture.log)")

        app.close()
        try await Self.restart(fixture, on: disk)
        #expect(try await renderer.managedObjects() == acknowledged, "every acknowledged write, and nothing else, after kill -9")
        #expect(!fixture.log.contains("damaged"), "the refused writes left no torn record: \(fixture.log)")
    }

    @Test("Writes in flight together when the disk fills: a write is acknowledged only once it is on disk, every write of a batch the disk refuses is StorageFailed and put back, and kill -9 keeps exactly the acknowledged ones")
    func pipelinedWritesOnAFillingDisk() async throws {
        let disk = try SmallDisk(bytes: 512 << 10)
        defer { disk.unmount() }
        let (fixture, app, renderer) = try await Self.start(on: disk)
        defer { fixture.stop() }
        defer { renderer.close() }
        var widgets: [String] = []
        for _ in 0..<24 { widgets.append(try await renderer.addWidget(Self.app, "Hero", "systemSmall")) }

        // Room for a few of the writes: the rest find the disk full, in whichever batch they share a sync with.
        try disk.fill()
        disk.makeRoom(48 << 10)
        // The first write alone, so that a loaded machine cannot put all of them in one batch the
        // disk refuses whole: the others then share syncs as they come.
        let first: (String, (any Error)?)
        do {
            try await app.setContent(widgets[0], Self.content("v0", padding: 6_000))
            first = (widgets[0], nil)
        } catch {
            first = (widgets[0], error)
        }
        let outcomes = await withTaskGroup(of: (String, (any Error)?).self) { group in
            for (index, widget) in widgets.enumerated().dropFirst() {
                group.addTask {
                    do {
                        try await app.setContent(widget, Self.content("v\(index)", padding: 6_000))
                        return (widget, nil)
                    } catch {
                        return (widget, error)
                    }
                }
            }
            return await group.reduce(into: [first]) { $0.append($1) }
        }
        let acknowledged = Set(outcomes.filter { $0.1 == nil }.map(\.0))
        let refused = outcomes.compactMap { outcome in outcome.1.map { (outcome.0, $0) } }
        #expect(!acknowledged.isEmpty && !refused.isEmpty, "the disk filled part way: \(acknowledged.count) acknowledged")
        for (widget, error) in refused {
            #expect((error as? DBusError)?.name == "org.widgethost.Host1.Error.StorageFailed", "\(widget): \(error)")
        }
        let served = try await renderer.managedObjects()
        for (index, widget) in widgets.enumerated() {
            let content = served[widget]?["Content"]
            if acknowledged.contains(widget) {
                #expect(content == .string(Self.content("v\(index)", padding: 6_000)), "\(widget) shows what was acknowledged")
            } else {
                #expect(content == .string(""), "\(widget) was put back: a refused write changes nothing")
            }
        }

        app.close()
        try await Self.restart(fixture, on: disk)
        #expect(try await renderer.managedObjects() == served, "kill -9 keeps every acknowledged write and nothing else")
    }

    @Test("Started on a full disk the host serves what it restored, refuses changes, and takes them once there is room")
    func startsOnAFullDisk() async throws {
        let disk = try SmallDisk(bytes: 512 << 10)
        defer { disk.unmount() }
        let (fixture, renderer, widget, before) = try await Self.savedWidget(on: disk)
        defer { fixture.stop() }
        defer { renderer.close() }

        try disk.fill()
        try await Self.restart(fixture, on: disk)
        #expect(try await renderer.managedObjects() == before)
        // The stop left everything in the snapshot, so the start had nothing to write.
        #expect(!fixture.log.contains("cannot write a snapshot"), "\(fixture.log)")
        await expectHostError("StorageFailed") { try await renderer.configure(widget, ["n": .string(String(repeating: "x", count: 20_000))]) }
        #expect(try await renderer.content(widget) == Self.content("saved"))
        disk.makeRoom()
        let again = try await DurabilityTests.registeredApp(fixture)
        defer { again.close() }
        try await again.setContent(widget, Self.content("after"))
        #expect(try await renderer.content(widget) == Self.content("after"))
        try await Self.restart(fixture, on: disk)
        #expect(try await renderer.content(widget) == Self.content("after"))
    }

    @Test("Started on a read-only state directory: it serves what it holds, changes are StorageFailed, and taken once it is writable")
    func readOnly() async throws {
        let disk = try SmallDisk(bytes: 512 << 10)
        defer { disk.unmount() }
        let (fixture, renderer, widget, _) = try await Self.savedWidget(on: disk)
        defer { fixture.stop() }
        defer { renderer.close() }

        try disk.setReadOnly(true)
        try await Self.restart(fixture, on: disk)
        let again = try await AppPeer(fixture, appID: Self.app)
        defer { again.close() }
        await expectHostError("StorageFailed", mentioning: "Read-only file system") { try await again.setContent(widget, Self.content("lost")) }
        #expect(try await renderer.content(widget) == Self.content("saved"))
        #expect(try await renderer.tap(widget).0 == "open-url")
        try disk.setReadOnly(false)
        try await again.setContent(widget, Self.content("after"))
        try await Self.restart(fixture, on: disk)
        #expect(try await renderer.content(widget) == Self.content("after"))
    }
}
