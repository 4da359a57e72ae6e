import Foundation
import PrivateBus
import Testing

@testable import DBus

/// `GetManagedObjects` is written into its reply as the objects are walked
/// (``BodyWriter``), never built as values first: what a client reads must be
/// what the reply built from values was, to the byte.
@Suite("Replies written as they are walked")
struct BodyWriterTests {
    /// The body of `message`: its last `bodyLength` bytes on the wire.
    func body(_ message: Message) -> [UInt8] {
        Array(message.marshalled.suffix(message.bodyLength))
    }

    @Test("values written through the writer give the body Message.append gives, for values of every type")
    func sameBodyAsAppend() throws {
        func signal(_ arguments: [DBusValue] = []) throws -> Message {
            try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: arguments)
        }
        for value in sampleValues {
            // Each value alone, then inside the layout GetManagedObjects writes — a{sv} in
            // a{sa{sv}} in a{oa{sa{sv}}} — in the first of two objects, so the second
            // starts wherever the value left the body.
            let objects = ["/o", "/p"]
            let nested = DBusValue.dictionary(
                key: "o", value: "a{sa{sv}}",
                objects.map { .init(.objectPath($0), .dictionary(key: "s", value: "a{sv}", [.init(.string("org.example.I"), .vardict(["P": value]))])) })
            guard let expected = try? signal([value, nested]) else { continue }
            let written = try signal()
            let bytes = try written.writeBody { writer in
                try writer.append(value)
                try writer.openArray(of: "{oa{sa{sv}}}")
                for object in objects {
                    try writer.openEntry()
                    try writer.append(.objectPath(object))
                    try writer.openArray(of: "{sa{sv}}")
                    try writer.openEntry()
                    try writer.append(.string("org.example.I"))
                    try writer.append(.vardict(["P": value]))
                    try writer.close()
                    try writer.close()
                    try writer.close()
                }
                try writer.close()
            }
            #expect(bytes == expected.bodyLength, "\(value)")
            #expect(body(written) == body(expected), "\(value)")
            #expect(written.signature == expected.signature)
        }
    }

    @Test("the writer refuses what libdbus would abort on or a peer would drop the connection for, before libdbus sees it")
    func refusals() throws {
        func refused(_ write: (inout BodyWriter) throws -> Void) -> String? {
            do {
                _ = try Message.signal(path: "/", interface: "org.example.I", member: "S").writeBody(write)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(refused { try $0.openArray(of: "s"); try $0.append(.int32(1)) }?.contains("'i' where 's' belongs") == true)
        #expect(refused { try $0.openArray(of: "{sv}"); try $0.openEntry(); try $0.append(.int32(1)) }?.contains("'i' where 's' belongs") == true)
        #expect(
            refused {
                try $0.openArray(of: "{sv}")
                try $0.openEntry()
                try $0.append(.string("k"))
                try $0.append(.variant(.byte(1)))
                try $0.append(.string("third"))
            }?.contains("not a third value") == true)
        #expect(refused { try $0.openArray(of: "{sv}"); try $0.openEntry(); try $0.append(.string("k")); try $0.close() }?.contains("needs a key and a value") == true)
        #expect(refused { try $0.openArray(of: "s"); try $0.openEntry() }?.contains("only be written in a dictionary") == true)
        #expect(refused { try $0.openArray(of: "s") }?.contains("left open") == true)
        #expect(refused { try $0.close() }?.contains("no open container") == true)
        #expect(refused { try $0.openArray(of: "{vs}") }?.contains("not one complete type") == true)
        #expect(refused { try $0.openArray(of: "s"); try $0.append(.string("nul\0inside")) }?.contains("NUL") == true)
        // An array past D-Bus's 64 MiB is LimitsExceeded once the element that passes it is written.
        let eightMiB = String(repeating: "x", count: 8 << 20)
        let tooLong = refused { writer in
            try writer.openArray(of: "s")
            for _ in 0..<9 { try writer.append(.string(eightMiB)) }
            try writer.close()
        }
        #expect(tooLong?.contains("at most 67108864 bytes in one array") == true, "\(tooLong ?? "accepted")")
        // A message whose writing was refused is dropped; the next one is fine.
        let fine = try Message.signal(path: "/", interface: "org.example.I", member: "S")
        let bytes = try fine.writeBody { try $0.append(.string("fine")) }
        #expect(fine.arguments() == [.string("fine")] && bytes == 9)
    }

    @Test("GetManagedObjects lists what the reply built from values listed, to the byte: every object below the manager, by path")
    func managedObjectsUnchanged() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let manager = "/org/widgethost/Test/Walked"
            server.addObjectManager(at: manager)
            let both = try interfaces(
                """
                <node>
                  <interface name="org.widgethost.Test.Handlers">
                    <property name="Leaf" type="s" access="read"/>
                    <property name="Hidden" type="s" access="write"/>
                    <property name="Any" type="v" access="read"/>
                  </interface>
                  <interface name="org.widgethost.Test.ReadAll">
                    <property name="Path" type="o" access="read"/>
                    <property name="Count" type="t" access="readwrite"/>
                  </interface>
                </node>
                """)
            @Sendable func leaf(_ path: String) -> String { String(path.split(separator: "/").last ?? "") }
            // A value of some type for each object, picked by its path's length
            // (not a NaN, which no value equals, so that the replies' values compare too).
            let samples = sampleValues.filter { $0 == $0 }
            @Sendable func any(_ path: String) -> DBusValue { samples[path.utf8.count % samples.count] }
            var handlers = ExportedInterface(both[0])
            handlers.property("Leaf", PropertyHandler(getAt: { .string(leaf($0)) }))
            handlers.property("Hidden", PropertyHandler(get: { .string("") }, set: { _ in }))
            handlers.property("Any", PropertyHandler(getAt: { any($0) }))
            var readAll = ExportedInterface(both[1])
            readAll.property("Path", PropertyHandler(getAt: { .objectPath($0) }))
            readAll.property("Count", PropertyHandler(get: { .uint64(0) }, set: { _ in }))
            readAll.readAll { path in [.objectPath(path), .uint64(UInt64(path.utf8.count))] }

            // Objects under several parents, whose paths interleave in path order
            // (a, a/x, a/x/y, a/x0, a0), the manager's own object and ones outside it.
            let below = ["a", "a0", "a/x", "a/x/y", "b", "a/x0", "z/deep/er", "w10", "w9", "w100"].map { "\(manager)/\($0)" }
            try server.export([handlers, readAll], at: Array(below.prefix(5)))
            for path in below.dropFirst(5) { try server.export([readAll], at: path) }
            try server.export([handlers], at: manager)
            try server.export([handlers], at: manager + "Sibling/o")
            try server.export([readAll], at: "/elsewhere")

            func properties(_ path: String) -> DBusValue {
                // In declared order, as the service reads them.
                let handled = DBusValue.dictionary(
                    key: "s", value: "v", [.init(.string("Leaf"), .variant(.string(leaf(path)))), .init(.string("Any"), .variant(any(path)))])
                let read = DBusValue.dictionary(
                    key: "s", value: "v",
                    [.init(.string("Path"), .variant(.objectPath(path))), .init(.string("Count"), .variant(.uint64(UInt64(path.utf8.count))))])
                let withHandlers = below.prefix(5).contains(path)
                return .dictionary(
                    key: "s", value: "a{sv}",
                    (withHandlers ? [.init(.string("org.widgethost.Test.Handlers"), handled)] : [])
                        + [.init(.string("org.widgethost.Test.ReadAll"), read)])
            }
            let expected = DBusValue.dictionary(
                key: "o", value: "a{sa{sv}}", below.sorted().map { .init(.objectPath($0), properties($0)) })
            let destination = try #require(server.uniqueName)
            let reply = try await client.call(
                Message.methodCall(
                    destination: destination, path: manager, interface: StandardInterfaces.objectManager,
                    member: StandardInterfaces.getManagedObjects))
            #expect(reply.arguments() == [expected])
            let built = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [expected])
            #expect(body(reply) == body(built), "the bytes of the reply built from values")
            guard case .dictionary(_, _, let entries)? = reply.arguments().first else { return }
            #expect(entries.map(\.key) == below.sorted().map { .objectPath($0) }, "by path, nothing outside the manager nor the manager itself")
        }
    }

    @Test("what a service gives back after a large GetManagedObjects runs after a reply of that size, not after a smaller one")
    func afterLargeReply() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let manager = "/org/widgethost/Test/Large"
            server.addObjectManager(at: manager)
            let runs = Counter()
            server.afterLargeReply(ofAtLeast: 4096) { runs.increment() }
            var item = ExportedInterface(
                try interface(#"<node><interface name="org.widgethost.Test.Text"><property name="Text" type="s" access="read"/></interface></node>"#))
            item.property("Text", PropertyHandler(get: { .string(String(repeating: "t", count: 1000)) }))
            let destination = try #require(server.uniqueName)
            func managedObjects() async throws {
                _ = try await client.call(
                    destination: destination, path: manager, interface: StandardInterfaces.objectManager, member: StandardInterfaces.getManagedObjects)
            }
            // Three objects: about 3,100 bytes.
            for n in 1...3 { try server.export([item], at: "\(manager)/o\(n)") }
            try await managedObjects()
            #expect(runs.count == 0)
            // Five: about 5,200 bytes.
            for n in 4...5 { try server.export([item], at: "\(manager)/o\(n)") }
            try await managedObjects()
            // It runs on the server's thread just after the reply is queued.
            for _ in 0..<100 where runs.count == 0 { try await Task.sleep(for: .milliseconds(10)) }
            #expect(runs.count == 1)
        }
    }
}
