import PrivateBus
import DBus
import Testing

/// An object with `Takes(s text, i number) → s`, counting its invocations.
struct TakesObject {
    static let xml = """
        <node>
          <interface name="\(testInterface)">
            <method name="Takes">
              <arg name="text" type="s" direction="in"/><arg name="number" type="i" direction="in"/>
              <arg name="joined" type="s" direction="out"/>
            </method>
            <method name="Nothing"/>
          </interface>
        </node>
        """
    let invocations = Counter()

    init(on connection: Connection, path: String = testPath) throws {
        var exported = ExportedInterface(try interface(Self.xml))
        let invocations = self.invocations
        exported.method(
            "Takes",
            .immediate { call in
                invocations.increment()
                guard case .string(let text) = call.arguments[0], case .int32(let number) = call.arguments[1] else {
                    throw DBusError.failed("the binding let a wrong signature through: \(call.arguments)")
                }
                return [.string("\(text)=\(number)")]
            })
        exported.method("Nothing", .immediate { _ in invocations.increment(); return [] })
        try connection.export([exported], at: path)
    }
}

@Suite("Signature checking and unknown targets")
struct DispatchErrorTests {
    @Test("wrong argument signatures get InvalidArgs from busctl, gdbus and the binding; the handler never runs")
    func wrongSignature() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try TakesObject(on: server)
            let destination = try #require(server.uniqueName)
            let address = fixture.address

            // busctl sends exactly the signature it is given.
            for (signature, args) in [("s", ["hello"]), ("is", ["1", "hello"]), ("sis", ["a", "1", "b"]), ("", [String]()), ("su", ["a", "1"])] {
                let result = try await busctl(address, ["call", destination, testPath, testInterface, "Takes", signature] + args)
                #expect(!result.succeeded, "busctl Takes \(signature) succeeded: \(result)")
                #expect(receivedErrorName(result) == DBusError.invalidArgsName, "busctl Takes \(signature): \(result)")
                // The message names the expected and the received signature.
                #expect(
                    result.stderr.contains("takes arguments of type 'si', but the call carried '\(signature)'"),
                    "busctl Takes \(signature): \(result)")
            }
            // gdbus introspects first and fills in the types; too few or too many arguments still go out wrong.
            for args in [["'hello'"], ["'hello'", "5", "'extra'"]] {
                let result = try await runCommand(
                    "gdbus", ["call", "--address", address, "--dest", destination, "--object-path", testPath, "--method", "\(testInterface).Takes"] + args)
                #expect(!result.succeeded, "gdbus Takes \(args) succeeded: \(result)")
                #expect(result.stderr.contains("org.freedesktop.DBus.Error.InvalidArgs"), "gdbus Takes \(args): \(result)")
            }
            // The binding as a client, sending a hand-made message.
            for args: [DBusValue] in [[.int32(5), .string("x")], [.string("x")], [], [.string("x"), .int64(5)], [.variant(.string("x")), .int32(1)]] {
                let message = try Message.methodCall(
                    destination: destination, path: testPath, interface: testInterface, member: "Takes", arguments: args)
                let error = await expectDBusError(DBusError.invalidArgsName) { _ = try await client.call(message) }
                let sent = args.map(\.signature).joined()
                #expect(error?.message.contains("'\(sent)'") == true, "\(error.map(String.init(describing:)) ?? "")")
            }
            #expect(object.invocations.count == 0)

            // The right signature works through all three, and is counted.
            let viaBusctl = try await runCommand(
                "busctl", ["--address=\(address)", "call", destination, testPath, testInterface, "Takes", "si", "hello", "5"])
            #expect(viaBusctl.succeeded, "\(viaBusctl)")
            #expect(viaBusctl.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "s \"hello=5\"")
            let viaGdbus = try await runCommand(
                "gdbus", ["call", "--address", address, "--dest", destination, "--object-path", testPath, "--method", "\(testInterface).Takes", "'hi'", "7"])
            #expect(viaGdbus.succeeded, "\(viaGdbus)")
            #expect(viaGdbus.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "('hi=7',)")
            let viaBinding = try await client.call(
                destination: destination, path: testPath, interface: testInterface, member: "Takes", [.string("x"), .int32(-1)])
            #expect(viaBinding == [.string("x=-1")])
            #expect(object.invocations.count == 3)
        }
    }

    @Test("unknown object, interface and method get their standard errors")
    func unknownTargets() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try TakesObject(on: server)
            let destination = try #require(server.uniqueName)

            func call(_ path: String, _ interface: String?, _ member: String, _ args: [DBusValue] = []) async throws {
                _ = try await client.call(
                    Message.methodCall(destination: destination, path: path, interface: interface, member: member, arguments: args))
            }
            await expectDBusError(DBusError.unknownObjectName) { try await call("/no/such/object", testInterface, "Nothing") }
            await expectDBusError(DBusError.unknownObjectName) { try await call("/", testInterface, "Nothing") }
            // A parent of an exported object is a node, not an object.
            await expectDBusError(DBusError.unknownObjectName) { try await call("/org/widgethost", testInterface, "Nothing") }
            await expectDBusError(DBusError.unknownObjectName) {
                try await call("/no/such/object", "org.freedesktop.DBus.Properties", "GetAll", [.string(testInterface)])
            }
            await expectDBusError(DBusError.unknownObjectName) {
                try await call("/no/such/object", "org.freedesktop.DBus.Introspectable", "Introspect")
            }
            await expectDBusError(DBusError.unknownInterfaceName) { try await call(testPath, "org.widgethost.Test.Nope", "Nothing") }
            await expectDBusError(DBusError.unknownInterfaceName) {
                try await call(testPath, "org.freedesktop.DBus.Properties", "GetAll", [.string("org.widgethost.Test.Nope")])
            }
            await expectDBusError(DBusError.unknownMethodName) { try await call(testPath, testInterface, "Missing") }
            await expectDBusError(DBusError.unknownMethodName) { try await call(testPath, nil, "Missing") }
            await expectDBusError(DBusError.unknownMethodName) { try await call(testPath, "org.freedesktop.DBus.Properties", "Frob") }
            await expectDBusError(DBusError.unknownMethodName) { try await call(testPath, "org.freedesktop.DBus.Introspectable", "Frob") }
            // Without an interface the method is found by name.
            try await call(testPath, nil, "Nothing")
            #expect(object.invocations.count == 1)

            // The same through gdbus, which prints the error's name.
            let address = fixture.address
            let cases: [(String, String, String)] = [
                ("/no/such/object", "\(testInterface).Nothing", DBusError.unknownObjectName),
                (testPath, "org.widgethost.Test.Nope.Nothing", DBusError.unknownInterfaceName),
                (testPath, "\(testInterface).Missing", DBusError.unknownMethodName),
            ]
            for (path, method, name) in cases {
                let result = try await runCommand(
                    "gdbus", ["call", "--address", address, "--dest", destination, "--object-path", path, "--method", method])
                #expect(!result.succeeded)
                #expect(result.stderr.contains(name), "gdbus \(path) \(method): \(result)")
            }
            // And through busctl.
            for (path, interface, member, name) in [
                ("/no/such/object", testInterface, "Nothing", DBusError.unknownObjectName),
                (testPath, "org.widgethost.Test.Nope", "Nothing", DBusError.unknownInterfaceName),
                (testPath, testInterface, "Missing", DBusError.unknownMethodName),
            ] {
                let result = try await busctl(address, ["call", destination, path, interface, member])
                #expect(!result.succeeded)
                #expect(receivedErrorName(result) == name, "busctl \(path) \(interface).\(member): \(result)")
            }
            // Peer is answered by libdbus for every path.
            let ping = try await runCommand(
                "busctl", ["--address=\(address)", "call", destination, "/anything", "org.freedesktop.DBus.Peer", "Ping"])
            #expect(ping.succeeded, "\(ping)")
            #expect(object.invocations.count == 1)
        }
    }
}
