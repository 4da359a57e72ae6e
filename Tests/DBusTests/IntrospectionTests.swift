import PrivateBus
import DBus
import Testing

/// An interface that uses every part of the introspection format, with
/// annotations on every element and values that need escaping.
let introspectedXML = """
    <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
    <!-- A comment before the root. -->
    <node>
      <interface name="org.widgethost.Test.Introspected">
        <annotation name="org.widgethost.Test.Owner" value="tests &amp; &quot;friends&quot;"/>
        <method name="Frobnicate">
          <annotation name="org.freedesktop.DBus.Deprecated" value="true"/>
          <arg name="options" type="a{sv}" direction="in"/>
          <arg name="count" type="u" direction="in">
            <annotation name="org.widgethost.Test.Doc" value="first line&#10;second &lt;line&gt;"/>
          </arg>
          <arg name="result" type="(sa(ii))" direction="out"/>
        </method>
        <method name="NoArgs"/>
        <!-- Comments inside an interface are skipped. -->
        <signal name="Changed">
          <annotation name="org.widgethost.Test.Since" value="2"/>
          <annotation name="org.widgethost.Test.Whitespace" value="tab&#9;cr&#13;end"/>
          <arg name="what" type="s"/>
          <arg type="av"/>
        </signal>
        <property name="Name" type="s" access="read">
          <annotation name="org.freedesktop.DBus.Property.EmitsChangedSignal" value="const"/>
        </property>
        <property name="Level" type="i" access="readwrite"/>
        <property name="Secret" type="ay" access="write"/>
      </interface>
    </node>
    """

/// Exports `org.widgethost.Test.Introspected` at `path`.
func exportIntrospected(on connection: Connection, at path: String) throws -> InterfaceDescription {
    let description = try interface(introspectedXML)
    var exported = ExportedInterface(description)
    exported.method("Frobnicate", .immediate { _ in [.structure([.string("ok"), .array(element: "(ii)", [])])] })
    exported.method("NoArgs", .immediate { _ in [] })
    exported.property("Name", PropertyHandler(get: { .string("widget") }))
    let level = Box<Int32>(42)
    exported.property("Level", PropertyHandler(get: { .int32(level.get()) }, set: { if case .int32(let v) = $0 { level.set(v) } }))
    exported.property("Secret", PropertyHandler(get: { .array(element: "y", []) }, set: { _ in }))
    try connection.export([exported], at: path)
    return description
}

/// Annotations as [name, value] pairs (their memberwise initializer is internal).
func pairs(_ annotations: [InterfaceDescription.Annotation]) -> [[String]] { annotations.map { [$0.name, $0.value] } }

@Suite("Introspection")
struct IntrospectionTests {
    static let path = "/org/widgethost/Test/Tree/leaf"

    @Test("the declared description parses as written, annotations and escapes included")
    func declaredDescription() throws {
        let description = try interface(introspectedXML)
        #expect(description.name == "org.widgethost.Test.Introspected")
        #expect(pairs(description.annotations) == [["org.widgethost.Test.Owner", "tests & \"friends\""]])
        let frobnicate = try #require(description.method("Frobnicate"))
        #expect(frobnicate.inSignature == "a{sv}u")
        #expect(frobnicate.outSignature == "(sa(ii))")
        #expect(pairs(frobnicate.annotations) == [["org.freedesktop.DBus.Deprecated", "true"]])
        #expect(frobnicate.args.map(\.name) == ["options", "count", "result"])
        #expect(pairs(frobnicate.args[1].annotations) == [["org.widgethost.Test.Doc", "first line\nsecond <line>"]])
        let changed = try #require(description.signal("Changed"))
        #expect(changed.signature == "sav")
        #expect(changed.args.map(\.name) == ["what", nil])
        #expect(pairs(changed.annotations) == [["org.widgethost.Test.Since", "2"], ["org.widgethost.Test.Whitespace", "tab\tcr\rend"]])
        #expect(description.properties.map(\.name) == ["Name", "Level", "Secret"])
        #expect(description.properties.map(\.access) == [.read, .readwrite, .write])
        #expect(description.property("Name")?.emitsChangedSignal == "const")
        #expect(description.property("Level")?.emitsChangedSignal == "true")
    }

    @Test("Introspect returns XML that parses back to the declared interface")
    func roundTrip() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            let declared = try exportIntrospected(on: server, at: Self.path)
            let destination = try #require(server.uniqueName)

            let reply = try await client.call(
                destination: destination, path: Self.path, interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
            guard case .string(let xml)? = reply.first else {
                Issue.record("Introspect answered \(reply)")
                return
            }
            #expect(xml.hasPrefix("<!DOCTYPE node PUBLIC"))
            let node = try InterfaceDescription.parseNode(xml: xml)
            #expect(node.children == [])
            #expect(
                node.interfaces.map(\.name)
                    == [
                        "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Peer", "org.freedesktop.DBus.Properties",
                        "org.widgethost.Test.Introspected",
                    ])
            #expect(node.interfaces.last == declared)
            // The standard interfaces are described in full.
            let properties = try #require(node.interfaces.first { $0.name == "org.freedesktop.DBus.Properties" })
            #expect(properties.method("Get")?.inSignature == "ss")
            #expect(properties.method("GetAll")?.outSignature == "a{sv}")
            #expect(properties.signal("PropertiesChanged")?.signature == "sa{sv}as")
        }
    }

    @Test("intermediate paths list their child nodes; unknown paths are UnknownObject")
    func childNodes() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            let client = try await fixture.connect("client")
            _ = try exportIntrospected(on: server, at: "/org/widgethost/Test/Tree/leaf")
            _ = try exportIntrospected(on: server, at: "/org/widgethost/Test/Tree/branch/one")
            _ = try exportIntrospected(on: server, at: "/org/widgethost/Test/Tree/branch/two")
            _ = try exportIntrospected(on: server, at: "/org/widgethost/Other")
            _ = try exportIntrospected(on: server, at: "/Top")
            let destination = try #require(server.uniqueName)

            func introspect(_ path: String) async throws -> (interfaces: [String], children: [String]) {
                let reply = try await client.call(
                    destination: destination, path: path, interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
                guard case .string(let xml)? = reply.first else { throw DBusEncodingError("Introspect answered \(reply)") }
                let node = try InterfaceDescription.parseNode(xml: xml)
                return (node.interfaces.map(\.name), node.children)
            }
            let standard = ["org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Peer"]
            let expected: [(String, [String])] = [
                ("/", ["Top", "org"]),
                ("/org", ["widgethost"]),
                ("/org/widgethost", ["Other", "Test"]),
                ("/org/widgethost/Test", ["Tree"]),
                ("/org/widgethost/Test/Tree", ["branch", "leaf"]),
                ("/org/widgethost/Test/Tree/branch", ["one", "two"]),
            ]
            for (path, children) in expected {
                let node = try await introspect(path)
                #expect(node.children == children, "children of \(path)")
                #expect(node.interfaces == standard, "interfaces of \(path)")
            }
            #expect(try await introspect("/Top").interfaces.last == "org.widgethost.Test.Introspected")
            let leaf = try await introspect("/org/widgethost/Test/Tree/branch/two")
            #expect(leaf.children == [])
            #expect(leaf.interfaces.last == "org.widgethost.Test.Introspected")
            await expectDBusError(DBusError.unknownObjectName) { _ = try await introspect("/org/widgethost/Test/Tree/nothing") }
            await expectDBusError(DBusError.unknownObjectName) { _ = try await introspect("/org/widget") }

            // After unexporting, the branch disappears from its parent.
            server.unexport("/org/widgethost/Test/Tree/branch/one")
            server.unexport("/org/widgethost/Test/Tree/branch/two")
            #expect(try await introspect("/org/widgethost/Test/Tree").children == ["leaf"])

            // busctl walks the same tree.
            let tree = try await runCommand("busctl", ["--address=\(fixture.address)", "tree", "--list", destination])
            #expect(tree.succeeded, "\(tree)")
            let paths = tree.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(
                paths == ["/", "/Top", "/org", "/org/widgethost", "/org/widgethost/Other", "/org/widgethost/Test", "/org/widgethost/Test/Tree", "/org/widgethost/Test/Tree/leaf"],
                "\(tree)")
        }
    }

    @Test("busctl introspect shows the declared members, types, values and flags")
    func busctlIntrospect() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            _ = try exportIntrospected(on: server, at: Self.path)
            let destination = try #require(server.uniqueName)
            let result = try await runCommand(
                "busctl", ["--address=\(fixture.address)", "introspect", "--no-legend", destination, Self.path, "org.widgethost.Test.Introspected"])
            #expect(result.succeeded, "\(result)")
            let rows = result.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
            func row(_ name: String) -> [String]? { rows.first { $0.first == name } }
            #expect(row(".Frobnicate") == [".Frobnicate", "method", "a{sv}u", "(sa(ii))", "deprecated"], "\(result.stdout)")
            #expect(row(".NoArgs") == [".NoArgs", "method", "-", "-", "-"], "\(result.stdout)")
            #expect(row(".Changed") == [".Changed", "signal", "sav", "-", "-"], "\(result.stdout)")
            #expect(row(".Name") == [".Name", "property", "s", "\"widget\"", "const"], "\(result.stdout)")
            #expect(row(".Level") == [".Level", "property", "i", "42", "emits-change", "writable"], "\(result.stdout)")
            // A write-only property has no value to show.
            #expect(row(".Secret") == [".Secret", "property", "ay", "-", "emits-change", "writable"], "\(result.stdout)")
            #expect(rows.count == 6, "\(result.stdout)")
        }
    }

    @Test("gdbus introspect shows the declared methods, signals and properties")
    func gdbusIntrospect() async throws {
        try await withBus { fixture in
            let server = try await fixture.connect("server")
            _ = try exportIntrospected(on: server, at: Self.path)
            let destination = try #require(server.uniqueName)
            let result = try await runCommand(
                "gdbus", ["introspect", "--address", fixture.address, "--dest", destination, "--object-path", Self.path])
            #expect(result.succeeded, "\(result)")
            let text = result.stdout
            let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            for expected in [
                "interface org.widgethost.Test.Introspected {",
                "@org.freedesktop.DBus.Deprecated(\"true\")",
                "Frobnicate(in  a{sv} options,",
                "in  u count,",
                "out (sa(ii)) result);",
                "NoArgs();",
                "Changed(s what,",
                "av arg_1);",
                "readonly s Name = 'widget';",
                "readwrite i Level = 42;",
                "writeonly ay Secret;",
                "interface org.freedesktop.DBus.Properties {",
                "interface org.freedesktop.DBus.Introspectable {",
            ] {
                #expect(lines.contains(expected), "no line '\(expected)' in:\n\(text)")
            }
            // gdbus prints annotation values as it decoded them: entities, newlines, tabs and carriage returns intact.
            for annotation in [
                "@org.widgethost.Test.Owner(\"tests & \"friends\"\")",
                "@org.widgethost.Test.Doc(\"first line\nsecond <line>\")",
                "@org.widgethost.Test.Whitespace(\"tab\tcr\rend\")",
                "@org.freedesktop.DBus.Property.EmitsChangedSignal(\"const\")",
            ] {
                #expect(text.contains(annotation), "no \(annotation.debugDescription) in:\n\(text.debugDescription)")
            }
        }
    }
}
