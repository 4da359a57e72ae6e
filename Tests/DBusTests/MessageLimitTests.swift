import Foundation
import Testing

@testable import DBus

/// A peer (dbus-daemon first) drops a connection that sends a message over
/// D-Bus's limits, so the binding refuses to build one and a handler's reply
/// that would pass them becomes a LimitsExceeded error.
@Suite("Messages stay within D-Bus's limits")
struct MessageLimitTests {
    @Test("the size the binding works out is the body length libdbus marshals, for values of every type")
    func sizeMatchesLibdbus() throws {
        for value in sampleValues {
            for lead in [[DBusValue](), [.byte(1)], [.int16(2), .byte(3)], [.byte(1), .int32(5), .byte(2)]] {
                let message = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: lead + [value])
                #expect(try DBusValue.wireSize(of: lead + [value]) == message.bodyLength, "\(lead + [value])")
            }
        }
    }

    @Test("an object's entry in GetManagedObjects, sized without building it, is the body libdbus marshals for it")
    func managedObjectSize() throws {
        let description = try interface(
            """
            <node><interface name="org.example.Shapes">
              <property name="A" type="s" access="read"/>
              <property name="Secret" type="s" access="write"/>
              <property name="B" type="v" access="readwrite"/>
            </interface></node>
            """)
        for path in ["/o", "/org/example/shapes/w12345"] {
            for (a, b) in zip(sampleValues, sampleValues.reversed()) {
                for also in [[DBusValue](), [.objectPath(path)], [.array(element: "(xs)", [.structure([.int64(1), .string("x")])])]] {
                    let entry = DBusValue.dictionary(
                        key: "o", value: "a{sa{sv}}",
                        [.init(.objectPath(path), .dictionary(key: "s", value: "a{sv}", [.init(.string(description.name), description.readableProperties([a, b]))]))])
                    guard let message = try? Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [entry] + also) else {
                        // Too deep once inside the entry: refused the same way.
                        #expect(throws: DBusEncodingError.self) { try description.managedObjectSize(path: path, values: [a, b], also: also) }
                        continue
                    }
                    #expect(try description.managedObjectSize(path: path, values: [a, b], also: also) == message.bodyLength, "\(a), \(b)")
                }
            }
        }
    }

    @Test("an array over 64 MiB, or a body over 128 MiB, is LimitsExceeded before libdbus sees it")
    func refused() throws {
        let fourMiB = String(repeating: "x", count: 4 << 20)
        // 17 strings of 4 MiB: 68 MiB in one array.
        let bigArray = DBusValue.strings(Array(repeating: fourMiB, count: 17))
        do {
            _ = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [bigArray])
            Issue.record("a 68 MiB array was accepted")
        } catch let error as DBusError {
            #expect(error.name == DBusError.limitsExceededName)
            #expect(error.message.contains("at most 67108864 bytes in one array"), "\(error.message)")
        }
        // Two arrays of 15 strings (60 MiB each) fit the array limit, not the message limit.
        let fits = DBusValue.strings(Array(repeating: fourMiB, count: 15))
        let one = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [fits])
        #expect(one.bodyLength > 60 << 20)
        do {
            _ = try Message.signal(path: "/", interface: "org.example.I", member: "S", arguments: [fits, fits, fits])
            Issue.record("a 180 MiB body was accepted")
        } catch let error as DBusError {
            #expect(error.name == DBusError.limitsExceededName)
            #expect(error.message.contains("at most 134217728 bytes in one message"), "\(error.message)")
        }
    }

    @Test("a reply over the limits is a LimitsExceeded error, GetManagedObjects too, and the connection stays")
    func oversizeReply() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let manager = "/org/widgethost/Test/Big"
            server.addObjectManager(at: manager)
            var item = ExportedInterface(
                try interface(
                    """
                    <node><interface name="org.widgethost.Test.Big">
                      <method name="Huge"><arg type="as" direction="out"/></method>
                      <method name="Small"><arg type="s" direction="out"/></method>
                      <property name="Blob" type="s" access="read"/>
                    </interface></node>
                    """))
            let twentyMiB = String(repeating: "y", count: 20 << 20)
            item.method("Huge", .immediate { _ in [.strings(Array(repeating: twentyMiB, count: 4))] })
            item.method("Small", .immediate { _ in [.string("fine")] })
            item.property("Blob", PropertyHandler(get: { .string(twentyMiB) }))
            // Four objects of 20 MiB each: every one fits a message, all of them not.
            for n in 1...4 { try server.export([item], at: "\(manager)/o\(n)") }
            let destination = try #require(server.uniqueName)

            await #expect(throws: DBusError.limitsExceeded("the reply of org.widgethost.Test.Big.Huge is too large to send: an array would hold 83886109 bytes; D-Bus allows at most 67108864 bytes in one array")) {
                try await client.call(destination: destination, path: manager + "/o1", interface: "org.widgethost.Test.Big", member: "Huge")
            }
            do {
                _ = try await client.call(
                    destination: destination, path: manager, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
                Issue.record("an 80 MiB GetManagedObjects reply was sent")
            } catch let error as DBusError {
                #expect(error.name == DBusError.limitsExceededName)
                #expect(error.message.hasPrefix("the reply of org.freedesktop.DBus.ObjectManager.GetManagedObjects is too large to send"))
            }
            // One object's properties fit.
            let all = try await client.call(
                destination: destination, path: manager + "/o2", interface: "org.freedesktop.DBus.Properties", member: "GetAll",
                [.string("org.widgethost.Test.Big")])
            #expect(all == [.vardict(["Blob": .string(twentyMiB)])])
            // The bus did not drop the server.
            #expect(server.isConnected)
            #expect(try await client.call(destination: destination, path: manager + "/o1", interface: "org.widgethost.Test.Big", member: "Small") == [.string("fine")])
        }
    }
}
