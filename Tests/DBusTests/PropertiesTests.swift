import PrivateBus
import DBus
import Testing

let propsInterface = "org.widgethost.Test.Props"
let propertiesInterface = "org.freedesktop.DBus.Properties"

/// An object with one property of each kind, backed by boxes the test can read.
final class PropsObject: Sendable {
    static let xml = """
        <node>
          <interface name="\(propsInterface)">
            <property name="Name" type="s" access="read"/>
            <property name="Level" type="i" access="readwrite"/>
            <property name="Mode" type="s" access="readwrite">
              <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="invalidates"/>
            </property>
            <property name="Serial" type="u" access="read">
              <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="const"/>
            </property>
            <property name="Quiet" type="b" access="readwrite">
              <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="false"/>
            </property>
            <property name="Secret" type="s" access="write"/>
          </interface>
        </node>
        """
    let name = Box("widget")
    let level = Box<Int32>(42)
    let mode = Box("fast")
    let quiet = Box(false)
    let secret = Box("")
    let sets = Counter()

    init(on connection: Connection, at path: String) throws {
        var exported = ExportedInterface(try interface(Self.xml))
        let (name, level, mode, quiet, secret, sets) = (self.name, self.level, self.mode, self.quiet, self.secret, self.sets)
        exported.property("Name", PropertyHandler(get: { .string(name.get()) }))
        exported.property(
            "Level",
            PropertyHandler(
                get: { .int32(level.get()) },
                set: { value in
                    sets.increment()
                    guard case .int32(let v) = value else { throw DBusError.invalidArgs("not an int32") }
                    guard v < 1000 else { throw DBusError(name: "org.widgethost.Test.Error.OutOfRange", message: "\(v) is too high") }
                    level.set(v)
                }))
        exported.property(
            "Mode",
            PropertyHandler(get: { .string(mode.get()) }, set: { value in sets.increment(); mode.set(value.stringValue ?? "?") }))
        // A setter on a read-only property must never be called.
        exported.property("Serial", PropertyHandler(get: { .uint32(7) }, set: { _ in sets.increment() }))
        exported.property(
            "Quiet", PropertyHandler(get: { .bool(quiet.get()) }, set: { value in sets.increment(); quiet.set(value.boolValue ?? false) }))
        exported.property(
            "Secret", PropertyHandler(get: { .string("never read") }, set: { value in sets.increment(); secret.set(value.stringValue ?? "?") }))
        try connection.export([exported], at: path)
    }
}

@Suite("Properties and ObjectManager")
struct PropertiesTests {
    static let path = "/org/widgethost/Test/Props"

    @Test("busctl get-property and set-property; Set on a read-only property fails")
    func busctlProperties() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let object = try PropsObject(on: server, at: Self.path)
            let destination = try #require(server.uniqueName)
            let busctl = ["--address=\(fixture.address)"]
            func get(_ property: String) async throws -> CommandResult {
                try await runCommand("busctl", busctl + ["get-property", destination, Self.path, propsInterface, property])
            }
            func trimmed(_ r: CommandResult) -> String { r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) }

            #expect(try await trimmed(get("Name")) == "s \"widget\"")
            #expect(try await trimmed(get("Level")) == "i 42")
            #expect(try await trimmed(get("Serial")) == "u 7")
            #expect(try await trimmed(get("Quiet")) == "b false")

            let set = try await runCommand("busctl", busctl + ["--", "set-property", destination, Self.path, propsInterface, "Level", "i", "-7"])
            #expect(set.succeeded, "\(set)")
            #expect(object.level.get() == -7)
            #expect(try await trimmed(get("Level")) == "i -7")

            let setMode = try await runCommand("busctl", busctl + ["set-property", destination, Self.path, propsInterface, "Mode", "s", "slow"])
            #expect(setMode.succeeded, "\(setMode)")
            #expect(object.mode.get() == "slow")

            let readOnly = try await DBusTests.busctl(fixture.address, ["set-property", destination, Self.path, propsInterface, "Name", "s", "renamed"])
            #expect(!readOnly.succeeded)
            #expect(receivedErrorName(readOnly) == DBusError.propertyReadOnlyName, "\(readOnly)")
            #expect(readOnly.stderr.contains("read-only"), "\(readOnly)")
            #expect(object.name.get() == "widget")

            let wrongType = try await runCommand("busctl", busctl + ["set-property", destination, Self.path, propsInterface, "Level", "s", "x"])
            #expect(!wrongType.succeeded)
            #expect(wrongType.stderr.contains("has type 'i'"), "\(wrongType)")

            let unknown = try await DBusTests.busctl(fixture.address, ["get-property", destination, Self.path, propsInterface, "Nope"])
            #expect(!unknown.succeeded)
            #expect(receivedErrorName(unknown) == DBusError.unknownPropertyName, "\(unknown)")
            #expect(unknown.stderr.contains("has no property 'Nope'"), "\(unknown)")

            // The setter's own error comes back with its name (gdbus prints names).
            let outOfRange = try await runCommand(
                "gdbus",
                ["call", "--address", fixture.address, "--dest", destination, "--object-path", Self.path, "--method",
                 "\(propertiesInterface).Set", propsInterface, "Level", "<int32 5000>"])
            #expect(!outOfRange.succeeded)
            #expect(outOfRange.stderr.contains("org.widgethost.Test.Error.OutOfRange"), "\(outOfRange)")
            #expect(object.level.get() == -7)
            // Two accepted sets (Level, Mode), one refused by the setter; read-only and mistyped never reach a setter.
            #expect(object.sets.count == 3)
        }
    }

    @Test("Get, GetAll and Set through the binding, with their errors")
    func bindingProperties() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try PropsObject(on: server, at: Self.path)
            let destination = try #require(server.uniqueName)
            func properties(_ member: String, _ args: [DBusValue]) async throws -> [DBusValue] {
                try await client.call(destination: destination, path: Self.path, interface: propertiesInterface, member: member, args)
            }

            #expect(try await properties("Get", [.string(propsInterface), .string("Name")]) == [.variant(.string("widget"))])
            #expect(try await properties("Get", [.string(propsInterface), .string("Serial")]) == [.variant(.uint32(7))])
            // Every readable property, in declared order; the write-only one is left out.
            let all = try await properties("GetAll", [.string(propsInterface)])
            #expect(
                all == [
                    .dictionary(
                        key: "s", value: "v",
                        [
                            .init(.string("Name"), .variant(.string("widget"))), .init(.string("Level"), .variant(.int32(42))),
                            .init(.string("Mode"), .variant(.string("fast"))), .init(.string("Serial"), .variant(.uint32(7))),
                            .init(.string("Quiet"), .variant(.bool(false))),
                        ])
                ])

            #expect(try await properties("Set", [.string(propsInterface), .string("Level"), .variant(.int32(9))]) == [])
            #expect(object.level.get() == 9)
            #expect(try await properties("Get", [.string(propsInterface), .string("Level")]) == [.variant(.int32(9))])
            #expect(try await properties("Set", [.string(propsInterface), .string("Secret"), .variant(.string("hidden"))]) == [])
            #expect(object.secret.get() == "hidden")

            await expectDBusError(DBusError.propertyReadOnlyName) {
                _ = try await properties("Set", [.string(propsInterface), .string("Name"), .variant(.string("x"))])
            }
            await expectDBusError(DBusError.propertyReadOnlyName) {
                _ = try await properties("Set", [.string(propsInterface), .string("Serial"), .variant(.uint32(8))])
            }
            await expectDBusError(DBusError.invalidArgsName) {
                _ = try await properties("Set", [.string(propsInterface), .string("Level"), .variant(.int64(9))])
            }
            await expectDBusError(DBusError.invalidArgsName) {
                _ = try await properties("Set", [.string(propsInterface), .string("Level"), .int32(9)])
            }
            await expectDBusError("org.widgethost.Test.Error.OutOfRange") {
                _ = try await properties("Set", [.string(propsInterface), .string("Level"), .variant(.int32(1000))])
            }
            await expectDBusError(DBusError.unknownPropertyName) {
                _ = try await properties("Get", [.string(propsInterface), .string("Missing")])
            }
            await expectDBusError(DBusError.unknownPropertyName) {
                _ = try await properties("Set", [.string(propsInterface), .string("Missing"), .variant(.int32(1))])
            }
            await expectDBusError(DBusError.unknownInterfaceName) { _ = try await properties("GetAll", [.string("org.widgethost.Nope")]) }
            await expectDBusError(DBusError.invalidArgsName) { _ = try await properties("Get", [.string(propsInterface)]) }
            // A write-only property cannot be read.
            do {
                _ = try await properties("Get", [.string(propsInterface), .string("Secret")])
                Issue.record("a write-only property was read")
            } catch let error as DBusError {
                #expect(error.message.contains("write-only"))
            }
            #expect(object.name.get() == "widget")
            #expect(object.level.get() == 9)
            // Level twice (9, then 1000 refused by the setter) and Secret; never Serial, Name or a mistyped value.
            #expect(object.sets.count == 3)
        }
    }

    @Test("PropertiesChanged reaches a subscriber: changed values, invalidations, nothing for const and false")
    func propertiesChanged() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let object = try PropsObject(on: server, at: Self.path)
            // A second interface on the same path, filtered out by arg0.
            var other = ExportedInterface(
                try interface(#"<node><interface name="org.widgethost.Test.Other"><property name="X" type="i" access="read"/></interface></node>"#))
            other.property("X", PropertyHandler(get: { .int32(1) }))
            try server.export([other], at: Self.path + "/other")
            let destination = try #require(server.uniqueName)
            let recorder = Recorder(
                try await client.signals(
                    MatchRule(interface: propertiesInterface, member: "PropertiesChanged", pathNamespace: Self.path, arg0: propsInterface)))

            func change(_ changed: [String: DBusValue], _ invalidated: [String]) -> [DBusValue] {
                [.string(propsInterface), .vardict(changed), .strings(invalidated)]
            }

            // Explicit emission: Level changes, Mode is invalidated, Serial (const) and Quiet (false) are left out.
            object.level.set(5)
            try server.emitPropertiesChanged(path: Self.path, interface: propsInterface, properties: ["Serial", "Level", "Quiet", "Mode"])
            // Emission for the other interface on another path does not match arg0.
            try server.emitPropertiesChanged(path: Self.path + "/other", interface: "org.widgethost.Test.Other", properties: ["X"])
            // Nothing to say: no signal at all.
            try server.emitPropertiesChanged(path: Self.path, interface: propsInterface, properties: ["Serial", "Quiet"])
            // Set through the binding emits by itself.
            _ = try await client.call(
                destination: destination, path: Self.path, interface: propertiesInterface, member: "Set",
                [.string(propsInterface), .string("Level"), .variant(.int32(6))])
            // Set of a property that does not signal changes: nothing.
            _ = try await client.call(
                destination: destination, path: Self.path, interface: propertiesInterface, member: "Set",
                [.string(propsInterface), .string("Quiet"), .variant(.bool(true))])
            // Set through busctl of an invalidating property.
            let busctl = try await runCommand(
                "busctl", ["--address=\(fixture.address)", "set-property", destination, Self.path, propsInterface, "Mode", "s", "slow"])
            #expect(busctl.succeeded, "\(busctl)")

            let received = try await recorder.wait(count: 3)
            #expect(received.map { $0.arguments() } == [change(["Level": .int32(5)], ["Mode"]), change(["Level": .int32(6)], []), change([:], ["Mode"])])
            #expect(received.allSatisfy { $0.path == Self.path && $0.sender == server.uniqueName })
            #expect(object.quiet.get() == true)

            // Unknown names are refused.
            #expect(throws: DBusEncodingError.self) {
                try server.emitPropertiesChanged(path: Self.path, interface: propsInterface, properties: ["Nope"])
            }
            #expect(throws: DBusEncodingError.self) {
                try server.emitPropertiesChanged(path: "/not/exported", interface: propsInterface, properties: ["Level"])
            }
            // Nothing else arrived.
            try await Task.sleep(for: .milliseconds(100))
            #expect(recorder.received.count == 3)
        }
    }

    @Test("One interface value exported at many paths: getters and handlers are told which object they serve")
    func sharedAcrossPaths() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let manager = "/org/widgethost/Test/Shared"
            server.addObjectManager(at: manager)
            var shared = ExportedInterface(
                try interface(
                    """
                    <node><interface name="org.widgethost.Test.Item">
                      <method name="Where"><arg type="s" direction="out"/></method>
                      <property name="Leaf" type="s" access="read"/>
                    </interface></node>
                    """))
            shared.method("Where", .immediate { call in [.string(call.path)] })
            shared.property("Leaf", PropertyHandler(getAt: { path in .string(String(path.split(separator: "/").last ?? "")) }))
            let destination = try #require(server.uniqueName)
            let recorder = Recorder(
                try await client.signals(MatchRule(sender: destination, interface: "org.freedesktop.DBus.ObjectManager", path: manager)))
            // Served together, as a service puts its objects back before owning its name: checked once, announced never.
            try server.export([shared], at: (1...2).map { "\(manager)/i\($0)" })
            try server.export([shared], at: "\(manager)/i3")
            let announced = try await recorder.wait(count: 1)
            #expect(announced.map { $0.arguments().first } == [.objectPath("\(manager)/i3")], "only the object exported alone is announced")
            #expect(throws: DBusEncodingError.self) { try server.export([shared], at: ["\(manager)/ok", "not a path"]) }
            #expect(throws: DBusEncodingError.self) { try server.export([ExportedInterface(shared.description)], at: ["\(manager)/i9"]) }
            for n in 1...3 {
                let path = "\(manager)/i\(n)"
                #expect(try await client.call(destination: destination, path: path, interface: "org.widgethost.Test.Item", member: "Where") == [.string(path)])
                #expect(
                    try await client.call(
                        destination: destination, path: path, interface: propertiesInterface, member: "Get",
                        [.string("org.widgethost.Test.Item"), .string("Leaf")]) == [.variant(.string("i\(n)"))])
            }
            let objects = try await client.call(
                destination: destination, path: manager, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
            let busctl = try await runCommand(
                "busctl", ["--address=\(fixture.address)", "get-property", destination, manager + "/i2", "org.widgethost.Test.Item", "Leaf"])
            #expect(busctl.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "s \"i2\"", "\(busctl)")
            guard case .dictionary(_, _, let entries)? = objects.first else {
                Issue.record("GetManagedObjects gave \(objects)")
                return
            }
            #expect(entries.count == 3)
            for entry in entries {
                guard case .objectPath(let path) = entry.key else { continue }
                let leaf = String(path.split(separator: "/").last ?? "")
                #expect(entry.value == .dictionary(key: "s", value: "a{sv}", [.init(.string("org.widgethost.Test.Item"), .vardict(["Leaf": .string(leaf)]))]))
            }
        }
    }

    @Test("ObjectManager: InterfacesAdded/Removed on export/unexport, GetManagedObjects lists the children")
    func objectManager() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let manager = "/org/widgethost/Test/Managed"
            server.addObjectManager(at: manager)
            let destination = try #require(server.uniqueName)
            let recorder = Recorder(
                try await client.signals(MatchRule(sender: destination, interface: "org.freedesktop.DBus.ObjectManager", path: manager)))
            func managedObjects() async throws -> [DBusValue] {
                try await client.call(
                    destination: destination, path: manager, interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
            }
            #expect(try await managedObjects() == [.dictionary(key: "o", value: "a{sa{sv}}", [])])

            func exported(_ name: String) throws -> ExportedInterface {
                var e = ExportedInterface(
                    try interface(
                        """
                        <node><interface name="org.widgethost.Test.Child">
                          <method name="Poke"/>
                          <property name="Name" type="s" access="read"/>
                          <property name="Hidden" type="s" access="write"/>
                        </interface></node>
                        """))
                e.method("Poke", .immediate { _ in [] })
                e.property("Name", PropertyHandler(get: { .string(name) }))
                e.property("Hidden", PropertyHandler(get: { .string("") }, set: { _ in }))
                return e
            }
            func props(_ name: String) -> DBusValue {
                .dictionary(key: "s", value: "a{sv}", [.init(.string("org.widgethost.Test.Child"), .vardict(["Name": .string(name)]))])
            }

            try server.export([try exported("one")], at: manager + "/one")
            try server.export([try exported("deep")], at: manager + "/two/deep")
            try server.export([try exported("outside")], at: "/org/widgethost/Test/Unmanaged")
            let added = try await recorder.wait(count: 2)
            #expect(added.map(\.member) == ["InterfacesAdded", "InterfacesAdded"])
            #expect(added[0].arguments() == [.objectPath(manager + "/one"), props("one")])
            #expect(added[1].arguments() == [.objectPath(manager + "/two/deep"), props("deep")])

            #expect(
                try await managedObjects() == [
                    .dictionary(
                        key: "o", value: "a{sa{sv}}",
                        [.init(.objectPath(manager + "/one"), props("one")), .init(.objectPath(manager + "/two/deep"), props("deep"))])
                ])

            server.unexport(manager + "/one")
            server.unexport("/org/widgethost/Test/Unmanaged")
            let removed = try await recorder.wait(count: 3)
            #expect(removed[2].member == "InterfacesRemoved")
            #expect(removed[2].arguments() == [.objectPath(manager + "/one"), .strings(["org.widgethost.Test.Child"])])
            #expect(
                try await managedObjects() == [
                    .dictionary(key: "o", value: "a{sa{sv}}", [.init(.objectPath(manager + "/two/deep"), props("deep"))])
                ])

            // The manager node introspects with the ObjectManager interface; busctl reads the same content.
            let xml = try await client.call(
                destination: destination, path: manager, interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
            let node = try InterfaceDescription.parseNode(xml: xml.first?.stringValue ?? "")
            #expect(node.interfaces.contains { $0.name == "org.freedesktop.DBus.ObjectManager" })
            #expect(node.children == ["two"])
            let busctl = try await runCommand(
                "busctl",
                ["--address=\(fixture.address)", "call", destination, manager, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"])
            #expect(
                busctl.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                    == "a{oa{sa{sv}}} 1 \"\(manager)/two/deep\" 1 \"org.widgethost.Test.Child\" 1 \"Name\" s \"deep\"",
                "\(busctl)")
            try await Task.sleep(for: .milliseconds(100))
            #expect(recorder.received.count == 3)
        }
    }
}
