import DBus
import Testing

@Suite("Introspection XML parser")
struct XMLParserTests {
    @Test("prolog, DOCTYPE, comments, CRLF, single quotes, self-closing tags and text are all accepted")
    func lenientSyntax() throws {
        do {
            let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\r\n"
                + "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\r\n"
                + " \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\r\n"
                + "<!-- leading comment with <tags> & ampersands -->\r\n"
                + "<node name=\"/org/example\">\r\n"
                + "  some stray text\r\n"
                + "  <!-- a comment between elements -->\r\n"
                + "  <interface name='org.example.Single'>\r\n"
                + "\t<method name=\"Empty\"/>\r\n"
                + "\t<method   name = \"Spaced\"  >\r\n"
                + "\t  <arg type=\"s\" name=\"in_default\"/>\r\n"
                + "\t  <arg type='a{sv}' direction='out'></arg>\r\n"
                + "\t</method >\r\n"
                + "\t<signal name=\"S\"><arg type=\"(ii)\"/></signal>\r\n"
                + "\t<property name=\"P\" type=\"as\" access=\"readwrite\"></property>\r\n"
                + "  </interface>\r\n"
                + "  <interface name=\"org.example.Empty\"/>\r\n"
                + "  <node name=\"child\"/>\r\n"
                + "  <node name=\"other\"><interface name=\"org.example.Nested\"/></node>\r\n"
                + "</node>\r\n"
                + "<!-- trailing comment -->\r\n"
            let node = try InterfaceDescription.parseNode(xml: xml)
            #expect(node.interfaces.map(\.name) == ["org.example.Single", "org.example.Empty"])
            #expect(node.children == ["child", "other"])
            let single = node.interfaces[0]
            #expect(single.methods.map(\.name) == ["Empty", "Spaced"])
            #expect(single.method("Empty")?.args.isEmpty == true)
            // An arg without direction is "in" in a method and "out" in a signal.
            #expect(single.method("Spaced")?.inSignature == "s")
            #expect(single.method("Spaced")?.outSignature == "a{sv}")
            #expect(single.method("Spaced")?.args.map(\.name) == ["in_default", nil])
            #expect(single.signal("S")?.args.map(\.direction) == [.out])
            #expect(single.property("P")?.type == "as")
            #expect(single.property("P")?.access == .readwrite)
            #expect(node.interfaces[1].methods.isEmpty && node.interfaces[1].properties.isEmpty)
            #expect(try InterfaceDescription.parse(xml: "<node/>").isEmpty)
            #expect(try InterfaceDescription.parseNode(xml: "<node></node>").children.isEmpty)
        }
    }

    @Test("entities in attribute values are decoded")
    func entities() throws {
        do {
            let xml = """
                <node><interface name="org.example.Entities">
                  <annotation name="a" value="&amp;"/>
                  <annotation name="b" value="&quot;quoted&quot; &apos;single&apos;"/>
                  <annotation name="c" value="line one&#10;line two"/>
                  <annotation name="d" value="&lt;tag&gt; &#x263A; &#9731; &#x1F389;"/>
                  <annotation name="e" value="a &amp;amp; b"/>
                  <annotation name="f" value=""/>
                </interface></node>
                """
            let parsed = try interface(xml)
            #expect(
                pairs(parsed.annotations) == [
                    ["a", "&"], ["b", "\"quoted\" 'single'"], ["c", "line one\nline two"], ["d", "<tag> ☺ ☃ 🎉"], ["e", "a &amp; b"],
                    ["f", ""],
                ])
        }
    }

    @Test("xml() writes what parse() reads back, whatever the annotation values hold")
    func writeAndReadBack() throws {
        do {
            var description = try interface(introspectedXML)
            let tricky = "<&>\"' \n\ttab ☃ &amp; &#10;"
            let xml = description.xml().replacingOccurrences(of: "value=\"2\"", with: "value=\"\(escapeForTest(tricky))\"")
            description = try interface("<node>\n\(xml)</node>")
            #expect(description.signal("Changed")?.annotations.first?.value == tricky)
            let again = try interface("<node>\n\(description.xml(indent: 4))</node>")
            #expect(again == description)
        }
    }

    /// Documents the parser must refuse, with why.
    static let malformed: [(String, String)] = [
        ("empty document", ""),
        ("only a comment", "<!-- nothing -->"),
        ("only a DOCTYPE", "<!DOCTYPE node>"),
        ("unclosed root", "<node>"),
        ("unclosed child", "<node><interface name=\"a.b\"></node>"),
        ("mismatched closing tag", "<node></nod>"),
        ("two roots", "<node/><node/>"),
        ("text after the root", "<node/>trailing"),
        ("unterminated comment", "<node><!-- never closed </node>"),
        ("unterminated DOCTYPE", "<!DOCTYPE node"),
        ("unterminated prolog", "<?xml version=\"1.0\""),
        ("unquoted attribute", "<node><interface name=a.b/></node>"),
        ("attribute without a value", "<node><interface name/></node>"),
        ("unterminated attribute", "<node><interface name=\"a.b/></node>"),
        ("unterminated tag", "<node><interface name=\"a.b\""),
        ("empty tag name", "<node>< interface name=\"a.b\"/></node>"),
        ("unknown entity", "<node><interface name=\"a.b\"><annotation name=\"x\" value=\"&bogus;\"/></interface></node>"),
        ("entity without a semicolon", "<node><interface name=\"a.b\"><annotation name=\"x\" value=\"&amp\"/></interface></node>"),
        ("bad hex entity", "<node><interface name=\"a.b\"><annotation name=\"x\" value=\"&#xZZ;\"/></interface></node>"),
        ("entity beyond Unicode", "<node><interface name=\"a.b\"><annotation name=\"x\" value=\"&#1114112;\"/></interface></node>"),
        ("a root that is not <node>", "<interface name=\"a.b\"/>"),
        // Valid XML, invalid introspection data.
        ("an arg of unknown type", #"<node><interface name="a.b"><method name="M"><arg type="z"/></method></interface></node>"#),
        ("an arg of two types", #"<node><interface name="a.b"><method name="M"><arg type="ii"/></method></interface></node>"#),
        ("an arg of empty type", #"<node><interface name="a.b"><method name="M"><arg type=""/></method></interface></node>"#),
        ("an arg with a bare array", #"<node><interface name="a.b"><method name="M"><arg type="a"/></method></interface></node>"#),
        ("an arg with a dict outside an array", #"<node><interface name="a.b"><signal name="S"><arg type="{sv}"/></signal></interface></node>"#),
        ("an arg without a type", #"<node><interface name="a.b"><method name="M"><arg name="x"/></method></interface></node>"#),
        ("an arg with a bad direction", #"<node><interface name="a.b"><method name="M"><arg type="s" direction="sideways"/></method></interface></node>"#),
        ("a property of an unclosed struct", #"<node><interface name="a.b"><property name="P" type="(i" access="read"/></interface></node>"#),
        ("a property without access", #"<node><interface name="a.b"><property name="P" type="s"/></interface></node>"#),
        ("a property with a bad access", #"<node><interface name="a.b"><property name="P" type="s" access="readonly"/></interface></node>"#),
        ("an interface without a dot", #"<node><interface name="nodots"/></node>"#),
        ("an interface with an empty element", #"<node><interface name="a..b"/></node>"#),
        ("an interface without a name", #"<node><interface/></node>"#),
        ("a method name with a dot", #"<node><interface name="a.b"><method name="a.b"/></interface></node>"#),
        ("a method name starting with a digit", #"<node><interface name="a.b"><method name="1M"/></interface></node>"#),
        ("a signal without a name", #"<node><interface name="a.b"><signal/></interface></node>"#),
        ("an unknown element in an interface", #"<node><interface name="a.b"><frob/></interface></node>"#),
        ("an unknown element in a method", #"<node><interface name="a.b"><method name="M"><property name="P" type="s" access="read"/></method></interface></node>"#),
        ("an annotation without a value", #"<node><interface name="a.b"><annotation name="x"/></interface></node>"#),
    ]

    @Test("malformed XML and invalid introspection data are rejected with an error")
    func rejects() throws {
        do {
            for (why, xml) in Self.malformed {
                #expect(throws: DBusEncodingError.self, "parse: \(why)") { _ = try InterfaceDescription.parse(xml: xml) }
                #expect(throws: DBusEncodingError.self, "parseNode: \(why)") { _ = try InterfaceDescription.parseNode(xml: xml) }
            }
        }
    }

    @Test("ExportedInterface.validate refuses a declared method without a handler and an undeclared handler")
    func validateHandlers() throws {
        do {
            // A handler for an undeclared method, or a declared method without one, is refused too.
            var exported = ExportedInterface(try interface(#"<node><interface name="a.b"><method name="M"/></interface></node>"#))
            #expect(throws: DBusEncodingError.self) { try exported.validate() }
            exported.method("M", .immediate { _ in [] })
            try exported.validate()
            exported.method("N", .immediate { _ in [] })
            #expect(throws: DBusEncodingError.self) { try exported.validate() }
        }
    }
}

/// Escapes a value the way introspection XML needs it, independently of the binding's writer.
func escapeForTest(_ s: String) -> String {
    var out = ""
    for c in s.unicodeScalars {
        switch c {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "\n": out += "&#10;"
        case "\t": out += "&#9;"
        default: out.unicodeScalars.append(c)
        }
    }
    return out
}
