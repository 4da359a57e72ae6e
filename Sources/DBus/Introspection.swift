/// One D-Bus interface as introspection XML declares it: the single source
/// from which dispatch, signature checks, Properties and Introspect follow.
public struct InterfaceDescription: Sendable, Equatable {
    public struct Annotation: Sendable, Equatable {
        public var name: String
        public var value: String
    }

    public struct Arg: Sendable, Equatable {
        public enum Direction: String, Sendable { case `in`, out }
        public var name: String?
        public var type: String
        public var direction: Direction
        public var annotations: [Annotation]
    }

    public struct Method: Sendable, Equatable {
        public var name: String
        public var args: [Arg] {
            didSet { (inSignature, outSignature) = Self.signatures(args) }
        }
        public var annotations: [Annotation]
        /// Kept with the arguments, not joined again for each call that is checked against them.
        public private(set) var inSignature: String
        public private(set) var outSignature: String

        public init(name: String, args: [Arg], annotations: [Annotation]) {
            self.name = name
            self.args = args
            self.annotations = annotations
            (inSignature, outSignature) = Self.signatures(args)
        }

        private static func signatures(_ args: [Arg]) -> (in: String, out: String) {
            (args.filter { $0.direction == .in }.map(\.type).joined(), args.filter { $0.direction == .out }.map(\.type).joined())
        }
        /// Whether a call may carry unix file descriptors: its arguments
        /// declare an `h`, or the method carries GDBus's annotation for one
        /// that takes them elsewhere (inside a variant), `org.gtk.GDBus.C.UnixFD`.
        public var takesUnixFDs: Bool {
            inSignature.utf8.contains(UInt8(ascii: "h"))
                || annotations.contains { $0.name == "org.gtk.GDBus.C.UnixFD" && !$0.value.isEmpty }
        }
    }

    public struct Signal: Sendable, Equatable {
        public var name: String
        public var args: [Arg] {
            didSet { signature = args.map(\.type).joined() }
        }
        public var annotations: [Annotation]
        /// Kept with the arguments, not joined again for each emission checked against it.
        public private(set) var signature: String

        public init(name: String, args: [Arg], annotations: [Annotation]) {
            self.name = name
            self.args = args
            self.annotations = annotations
            signature = args.map(\.type).joined()
        }
    }

    public struct Property: Sendable, Equatable {
        public enum Access: String, Sendable { case read, write, readwrite }
        public var name: String
        public var type: String
        public var access: Access
        public var annotations: [Annotation]

        /// Whether `Get` and `GetAll` read it (it is not write-only).
        public var isReadable: Bool { access != .write }

        /// `org.freedesktop.DBus.Property.EmitsChangedSignal`: "true" (default), "invalidates", "const" or "false".
        public var emitsChangedSignal: String {
            annotations.first { $0.name == "org.freedesktop.DBus.Property.EmitsChangedSignal" }?.value ?? "true"
        }
    }

    public var name: String
    public var methods: [Method]
    public var signals: [Signal]
    public var properties: [Property]
    public var annotations: [Annotation]

    public func method(_ name: String) -> Method? { methods.first { $0.name == name } }
    public func signal(_ name: String) -> Signal? { signals.first { $0.name == name } }
    public func property(_ name: String) -> Property? { properties.first { $0.name == name } }

    /// Parses every interface in an introspection document.
    public static func parse(xml: String) throws -> [InterfaceDescription] {
        let root = try XMLElement.parse(xml)
        guard root.name == "node" else { throw DBusEncodingError("introspection XML must have <node> as its root, not <\(root.name)>") }
        return try root.children.filter { $0.name == "interface" }.map(interface(from:))
    }

    /// Parses a document and returns its child node names too.
    public static func parseNode(xml: String) throws -> (interfaces: [InterfaceDescription], children: [String]) {
        let root = try XMLElement.parse(xml)
        guard root.name == "node" else { throw DBusEncodingError("introspection XML must have <node> as its root, not <\(root.name)>") }
        let interfaces = try root.children.filter { $0.name == "interface" }.map(interface(from:))
        let children = root.children.filter { $0.name == "node" }.compactMap { $0.attributes["name"] }
        return (interfaces, children)
    }

    private static func interface(from element: XMLElement) throws -> InterfaceDescription {
        guard let name = element.attributes["name"], Names.isValidInterface(name) else {
            throw DBusEncodingError("an <interface> needs a valid name attribute")
        }
        var result = InterfaceDescription(name: name, methods: [], signals: [], properties: [], annotations: [])
        for child in element.children {
            switch child.name {
            case "annotation": result.annotations.append(try annotation(child))
            case "method":
                guard let m = child.attributes["name"], Names.isValidMember(m) else {
                    throw DBusEncodingError("a <method> of \(name) needs a valid name")
                }
                let (args, annotations) = try argsAndAnnotations(child, defaultDirection: .in, context: "\(name).\(m)")
                result.methods.append(Method(name: m, args: args, annotations: annotations))
            case "signal":
                guard let s = child.attributes["name"], Names.isValidMember(s) else {
                    throw DBusEncodingError("a <signal> of \(name) needs a valid name")
                }
                let (args, annotations) = try argsAndAnnotations(child, defaultDirection: .out, context: "\(name).\(s)")
                result.signals.append(Signal(name: s, args: args, annotations: annotations))
            case "property":
                guard let p = child.attributes["name"], let type = child.attributes["type"],
                    Signature.isSingleCompleteType(type), let access = child.attributes["access"].flatMap(Property.Access.init)
                else {
                    throw DBusEncodingError("a <property> of \(name) needs name, a single complete type and access")
                }
                result.properties.append(
                    Property(name: p, type: type, access: access, annotations: try child.children.filter { $0.name == "annotation" }.map(annotation)))
            default:
                throw DBusEncodingError("unexpected <\(child.name)> in interface \(name)")
            }
        }
        return result
    }

    private static func annotation(_ element: XMLElement) throws -> Annotation {
        guard let name = element.attributes["name"], let value = element.attributes["value"] else {
            throw DBusEncodingError("an <annotation> needs name and value")
        }
        return Annotation(name: name, value: value)
    }

    private static func argsAndAnnotations(_ element: XMLElement, defaultDirection: Arg.Direction, context: String) throws
        -> ([Arg], [Annotation])
    {
        var args: [Arg] = []
        var annotations: [Annotation] = []
        for child in element.children {
            switch child.name {
            case "arg":
                guard let type = child.attributes["type"], Signature.isSingleCompleteType(type) else {
                    throw DBusEncodingError("an <arg> of \(context) needs a single complete type")
                }
                let direction = try child.attributes["direction"].map {
                    guard let d = Arg.Direction(rawValue: $0) else { throw DBusEncodingError("bad direction '\($0)' in \(context)") }
                    return d
                } ?? defaultDirection
                args.append(
                    Arg(
                        name: child.attributes["name"], type: type, direction: direction,
                        annotations: try child.children.filter { $0.name == "annotation" }.map(annotation)))
            case "annotation":
                annotations.append(try annotation(child))
            default:
                throw DBusEncodingError("unexpected <\(child.name)> in \(context)")
            }
        }
        return (args, annotations)
    }

    // MARK: Writing

    /// The interface as introspection XML, indented by `indent` spaces.
    public func xml(indent: Int = 2) -> String {
        let pad = String(repeating: " ", count: indent)
        var out = "\(pad)<interface name=\"\(escape(name))\">\n"
        for a in annotations { out += annotationXML(a, pad + "  ") }
        for m in methods {
            out += "\(pad)  <method name=\"\(escape(m.name))\">\n"
            for a in m.annotations { out += annotationXML(a, pad + "    ") }
            for arg in m.args { out += argXML(arg, pad + "    ", withDirection: true) }
            out += "\(pad)  </method>\n"
        }
        for s in signals {
            out += "\(pad)  <signal name=\"\(escape(s.name))\">\n"
            for a in s.annotations { out += annotationXML(a, pad + "    ") }
            for arg in s.args { out += argXML(arg, pad + "    ", withDirection: false) }
            out += "\(pad)  </signal>\n"
        }
        for p in properties {
            let open = "\(pad)  <property name=\"\(escape(p.name))\" type=\"\(escape(p.type))\" access=\"\(p.access.rawValue)\""
            if p.annotations.isEmpty {
                out += open + "/>\n"
            } else {
                out += open + ">\n"
                for a in p.annotations { out += annotationXML(a, pad + "    ") }
                out += "\(pad)  </property>\n"
            }
        }
        out += "\(pad)</interface>\n"
        return out
    }

    private func annotationXML(_ a: Annotation, _ pad: String) -> String {
        "\(pad)<annotation name=\"\(escape(a.name))\" value=\"\(escape(a.value))\"/>\n"
    }

    private func argXML(_ arg: Arg, _ pad: String, withDirection: Bool) -> String {
        var open = "\(pad)<arg"
        if let name = arg.name { open += " name=\"\(escape(name))\"" }
        open += " type=\"\(escape(arg.type))\""
        if withDirection { open += " direction=\"\(arg.direction.rawValue)\"" }
        if arg.annotations.isEmpty { return open + "/>\n" }
        var out = open + ">\n"
        for a in arg.annotations { out += annotationXML(a, pad + "  ") }
        return out + "\(pad)</arg>\n"
    }
}

/// The DOCTYPE line every introspection document starts with.
public let introspectionDocType =
    "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\"\n \"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n"

func escape(_ s: String) -> String {
    var out = ""
    out.reserveCapacity(s.utf8.count)
    for c in s.unicodeScalars {
        switch c {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "\n": out += "&#10;"
        // Raw tabs and carriage returns in an attribute become spaces to an XML parser.
        case "\t": out += "&#9;"
        case "\r": out += "&#13;"
        default: out.unicodeScalars.append(c)
        }
    }
    return out
}

// MARK: - A small XML reader for introspection documents

/// An element of an XML document: just enough XML for introspection data
/// (elements, attributes, comments, a prolog and a DOCTYPE; text is ignored).
struct XMLElement {
    var name: String
    var attributes: [String: String]
    var children: [XMLElement]

    static func parse(_ text: String) throws -> XMLElement {
        var reader = XMLReader(Array(text.utf8))
        return try reader.document()
    }
}

private struct XMLReader {
    let b: [UInt8]
    var i = 0
    init(_ bytes: [UInt8]) { b = bytes }

    mutating func document() throws -> XMLElement {
        try skipMisc()
        guard let root = try element() else { throw DBusEncodingError("XML: no root element") }
        try skipMisc()
        guard i == b.count else { throw DBusEncodingError("XML: content after the root element at byte \(i)") }
        return root
    }

    private func peek(_ s: String) -> Bool {
        let u = Array(s.utf8)
        return i + u.count <= b.count && Array(b[i..<(i + u.count)]) == u
    }

    private mutating func skipUntil(_ s: String) throws {
        while i < b.count, !peek(s) { i += 1 }
        guard i < b.count else { throw DBusEncodingError("XML: missing '\(s)'") }
        i += s.utf8.count
    }

    private mutating func skipSpace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x09 || b[i] == 0x0D { i += 1 }
    }

    /// Skips whitespace, comments, processing instructions and DOCTYPE.
    private mutating func skipMisc() throws {
        while true {
            skipSpace()
            if peek("<!--") { try skipUntil("-->") } else if peek("<?") { try skipUntil("?>") } else if peek("<!DOCTYPE") {
                try skipUntil(">")
            } else {
                return
            }
        }
    }

    private mutating func name() throws -> String {
        let start = i
        while i < b.count, !(b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x09 || b[i] == 0x0D || b[i] == UInt8(ascii: "/")
            || b[i] == UInt8(ascii: ">") || b[i] == UInt8(ascii: "="))
        {
            i += 1
        }
        guard i > start else { throw DBusEncodingError("XML: expected a name at byte \(start)") }
        return String(decoding: b[start..<i], as: UTF8.self)
    }

    private mutating func element() throws -> XMLElement? {
        guard i < b.count, b[i] == UInt8(ascii: "<") else { return nil }
        i += 1
        let tag = try name()
        var attributes: [String: String] = [:]
        while true {
            skipSpace()
            guard i < b.count else { throw DBusEncodingError("XML: unterminated <\(tag)>") }
            if peek("/>") {
                i += 2
                return XMLElement(name: tag, attributes: attributes, children: [])
            }
            if b[i] == UInt8(ascii: ">") {
                i += 1
                break
            }
            let key = try name()
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: "=") else { throw DBusEncodingError("XML: expected '=' after \(key)") }
            i += 1
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: "\"") || b[i] == UInt8(ascii: "'") else {
                throw DBusEncodingError("XML: expected a quoted value for \(key)")
            }
            let quote = b[i]
            i += 1
            let start = i
            while i < b.count, b[i] != quote { i += 1 }
            guard i < b.count else { throw DBusEncodingError("XML: unterminated value of \(key)") }
            attributes[key] = try unescape(b[start..<i])
            i += 1
        }
        var children: [XMLElement] = []
        while true {
            // Text between elements is ignored.
            while i < b.count, b[i] != UInt8(ascii: "<") { i += 1 }
            guard i < b.count else { throw DBusEncodingError("XML: <\(tag)> is not closed") }
            if peek("<!--") {
                try skipUntil("-->")
            } else if peek("</") {
                i += 2
                let closing = try name()
                guard closing == tag else { throw DBusEncodingError("XML: </\(closing)> closes <\(tag)>") }
                skipSpace()
                guard i < b.count, b[i] == UInt8(ascii: ">") else { throw DBusEncodingError("XML: bad closing tag") }
                i += 1
                return XMLElement(name: tag, attributes: attributes, children: children)
            } else if let child = try element() {
                children.append(child)
            }
        }
    }

    private func unescape(_ bytes: ArraySlice<UInt8>) throws -> String {
        let s = String(decoding: bytes, as: UTF8.self)
        guard s.contains("&") else { return s }
        var out = ""
        var rest = Substring(s)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semi = rest[amp...].firstIndex(of: ";") else { throw DBusEncodingError("XML: bad entity in '\(s)'") }
            let entity = rest[rest.index(after: amp)..<semi]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                let scalar: UInt32?
                if entity.hasPrefix("#x") {
                    scalar = UInt32(entity.dropFirst(2), radix: 16)
                } else if entity.hasPrefix("#") {
                    scalar = UInt32(entity.dropFirst())
                } else {
                    scalar = nil
                }
                guard let scalar, let u = Unicode.Scalar(scalar) else { throw DBusEncodingError("XML: unknown entity &\(entity);") }
                out.unicodeScalars.append(u)
            }
            rest = rest[rest.index(after: semi)...]
        }
        return out + rest
    }
}
