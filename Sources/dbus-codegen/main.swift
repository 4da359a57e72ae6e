import DBus
import Foundation

// dbus-codegen [--options] OUTPUT DIRECTORY|XML...
//
// Generates Swift from introspection XML, in the spirit of gdbus-codegen and
// zbus: for each interface, an enum named after it holding its name, its
// XML and parsed description, its members as enums, a typed server
// protocol with the binder that serves it, typed signals and properties,
// and a typed client proxy. With --options, only the structs of the methods'
// a{sv} options (see Options.swift), plain Swift for the model. Used by the
// DBusCodegen build plugin; see docs/interfaces.md for what it generates and
// how to use it.

var arguments = CommandLine.arguments.dropFirst()
let optionsOnly = arguments.first == "--options"
if optionsOnly { arguments = arguments.dropFirst() }
guard let output = arguments.first, arguments.count > 1 else {
    FileHandle.standardError.write(Data("usage: dbus-codegen [--options] OUTPUT DIRECTORY|XML...\n".utf8))
    exit(2)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("dbus-codegen: error: \(message)\n".utf8))
    exit(1)
}

var paths: [String] = []
for argument in arguments.dropFirst() {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
        paths += names.filter { $0.hasSuffix(".xml") }.sorted().map { argument + "/" + $0 }
    } else {
        paths.append(argument)
    }
}

// MARK: Names

let keywords: Set<String> = [
    "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout", "internal", "let",
    "open", "operator", "private", "protocol", "public", "rethrows", "static", "struct", "subscript", "typealias", "var", "break",
    "case", "continue", "default", "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "switch",
    "where", "while", "as", "Any", "catch", "false", "is", "nil", "super", "self", "Self", "throw", "throws", "true", "try",
]
let acronyms: Set<String> = ["id", "url", "uri", "json", "dbus", "xml"]

/// Words of a D-Bus name: `element_id` → element, id; `OpenURL` → Open, URL.
func words(_ name: String) -> [String] {
    var result: [String] = []
    for part in name.split(separator: "_") {
        var current = ""
        let chars = Array(part)
        for (i, c) in chars.enumerated() {
            let startsWord =
                !current.isEmpty && c.isUppercase
                && (!(chars[i - 1].isUppercase) || (i + 1 < chars.count && chars[i + 1].isLowercase))
            if startsWord {
                result.append(current)
                current = ""
            }
            current.append(c)
        }
        if !current.isEmpty { result.append(current) }
    }
    return result
}

/// `element_id` → `elementID`, `OpenURL` → `openURL`, `AppId` → `appID`.
func lowerCamel(_ name: String) -> String {
    let parts = words(name)
    guard let first = parts.first else { return "value" }
    var result = first.lowercased()
    for word in parts.dropFirst() {
        result += acronyms.contains(word.lowercased()) ? word.uppercased() : word.prefix(1).uppercased() + word.dropFirst()
    }
    return result
}

func upperCamel(_ name: String) -> String {
    let camel = lowerCamel(name)
    return camel.prefix(1).uppercased() + camel.dropFirst()
}

func identifier(_ name: String) -> String { keywords.contains(name) ? "`\(name)`" : name }

func literal(_ text: String) -> String {
    var hashes = "#"
    while text.contains("\"" + hashes) { hashes += "#" }
    return "\(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes)"
}

func quoted(_ text: String) -> String {
    "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
}

func doc(_ annotations: [InterfaceDescription.Annotation], indent: String) -> String {
    guard let text = annotations.first(where: { $0.name == "org.gtk.GDBus.DocString" })?.value else { return "" }
    return text.split(separator: "\n").map { "\(indent)/// \($0)\n" }.joined()
}

// MARK: Types

/// The Swift type of one complete D-Bus type, and the coding functions
/// generated for it.
indirect enum WireType {
    case basic(Character)
    case variant
    case array(WireType)
    case dictionary(WireType, WireType)
    case structure([WireType])
    /// Kept as `DBusValue` (file descriptors, one-field structures, dictionaries with Bool keys).
    case opaque(String)

    init(_ signature: String) {
        let chars = Array(signature)
        switch chars.first {
        case "a" where chars.count > 1 && chars[1] == "{":
            let inner = String(chars[2..<(chars.count - 1)])
            let key = String(inner.prefix(1))
            let value = WireType(String(inner.dropFirst()))
            if key == "b" || key == "h" { self = .opaque(signature) } else { self = .dictionary(WireType(key), value) }
        case "a":
            self = .array(WireType(String(chars.dropFirst())))
        case "(":
            let fields = Signature.split(String(chars.dropFirst().dropLast())) ?? []
            self = fields.count < 2 ? .opaque(signature) : .structure(fields.map(WireType.init))
        case "v":
            self = .variant
        case "h":
            self = .opaque(signature)
        case let c?:
            self = .basic(c)
        case nil:
            self = .opaque(signature)
        }
    }

    var signature: String {
        switch self {
        case .basic(let c): return String(c)
        case .variant: return "v"
        case .array(let element): return "a" + element.signature
        case .dictionary(let key, let value): return "a{" + key.signature + value.signature + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        case .opaque(let signature): return signature
        }
    }

    static let basics: [Character: (swift: String, case: String)] = [
        "y": ("UInt8", "byte"), "b": ("Bool", "bool"), "n": ("Int16", "int16"), "q": ("UInt16", "uint16"),
        "i": ("Int32", "int32"), "u": ("UInt32", "uint32"), "x": ("Int64", "int64"), "t": ("UInt64", "uint64"),
        "d": ("Double", "double"), "s": ("String", "string"), "o": ("String", "objectPath"), "g": ("String", "signature"),
    ]

    var swift: String {
        switch self {
        case .basic(let c): return Self.basics[c]?.swift ?? "DBusValue"
        case .variant, .opaque: return "DBusValue"
        case .array(let element): return "[\(element.swift)]"
        case .dictionary(let key, let value): return "[\(key.swift): \(value.swift)]"
        case .structure(let fields): return "(" + fields.map(\.swift).joined(separator: ", ") + ")"
        }
    }

    /// The suffix of this type's coding functions: the signature with brackets spelled out.
    var mangled: String {
        String(signature.map { c -> Character in ["{": "E", "}": "F", "(": "R", ")": "T"][c] ?? c })
    }

    var encoder: String { "Coding.encode_\(mangled)" }
    var decoder: String { "Coding.decode_\(mangled)" }
    var reader: String { "Coding.read_\(mangled)" }
    var writer: String { "Coding.write_\(mangled)" }

    /// The reader's and writer's methods for each basic type.
    static let basicCoding: [Character: (read: String, write: String)] = [
        "y": ("readByte()", "append(value)"), "b": ("readBool()", "append(value)"), "n": ("readInt16()", "append(value)"),
        "q": ("readUInt16()", "append(value)"), "i": ("readInt32()", "append(value)"), "u": ("readUInt32()", "append(value)"),
        "x": ("readInt64()", "append(value)"), "t": ("readUInt64()", "append(value)"), "d": ("readDouble()", "append(value)"),
        "s": ("readString()", "append(value)"), "o": ("readObjectPath()", "append(objectPath: value)"),
        "g": ("readSignature()", "append(signature: value)"),
    ]

    /// Reading this type from a `MessageReader` and writing it to a
    /// `MessageWriter`, with no `DBusValue` in between but for variants and
    /// the types kept as `DBusValue`.
    func readingFunctions() -> String {
        var read: String
        var write: String
        switch self {
        case .basic(let c):
            if let coding = Self.basicCoding[c] {
                read = "try reader.\(coding.read)"
                write = "try writer.\(coding.write)"
            } else {
                read = "try reader.readValue()"
                write = "try writer.append(value: value)"
            }
        case .variant:
            read = "try reader.readVariant()"
            write = "try writer.appendVariant(value)"
        case .opaque:
            read = """
                let value = try reader.readValue()
                        guard value.signature == \(quoted(signature)) else { throw typeMismatch("a value", expected: \(quoted(signature)), got: value) }
                        return value
                """
            write = "try writer.append(value: value)"
        case .array(let element):
            read = """
                var result: \(swift) = []
                        try reader.readArray { result.append(try \(element.reader)(&$0)) }
                        return result
                """
            write = "try writer.appendArray(of: \(quoted(element.signature))) { writer in for element in value { try \(element.writer)(&writer, element) } }"
        case .dictionary(.basic("s"), .variant):
            read = "try reader.readVardict()"
            write = "try writer.appendVardict(value)"
        case .dictionary(let key, let valueType):
            read = """
                var result: \(swift) = [:]
                        try reader.readDictionary { entry in
                            let key = try \(key.reader)(&entry)
                            result[key] = try \(valueType.reader)(&entry)
                        }
                        return result
                """
            write = """
                try writer.appendDictionary(value, entry: \(quoted("{" + key.signature + valueType.signature + "}"))) { writer, key, value in
                            try \(key.writer)(&writer, key)
                            try \(valueType.writer)(&writer, value)
                        }
                """
        case .structure(let fields):
            read = "try reader.readStruct { (" + fields.map { "try \($0.reader)(&$0)" }.joined(separator: ", ") + ") }"
            write =
                "try writer.appendStruct { writer in "
                + fields.enumerated().map { "try \($1.writer)(&writer, value.\($0))" }.joined(separator: "; ") + " }"
        }
        return """
                static func read_\(mangled)(_ reader: inout MessageReader) throws -> \(swift) {
                    \(read)
                }

                static func write_\(mangled)(_ writer: inout MessageWriter, _ value: \(swift)) throws {
                    \(write)
                }


            """
    }

    /// Every type this one is made of, itself last.
    var closure: [WireType] {
        switch self {
        case .array(let element): return element.closure + [self]
        case .dictionary(let key, let value): return key.closure + value.closure + [self]
        case .structure(let fields): return fields.flatMap(\.closure) + [self]
        default: return [self]
        }
    }

    func codingFunctions() -> String {
        let mismatch = "throw typeMismatch(what(), expected: \(quoted(signature)), got: value)"
        var encode: String
        var decode: String
        switch self {
        case .basic(let c):
            let name = Self.basics[c]?.case ?? "string"
            encode = ".\(name)(value)"
            decode = "guard case .\(name)(let result) = value else { \(mismatch) }\n        return result"
        case .variant:
            encode = ".variant(value)"
            decode = "guard case .variant(let result) = value else { \(mismatch) }\n        return result"
        case .opaque:
            encode = "value"
            decode = "guard value.signature == \(quoted(signature)) else { \(mismatch) }\n        return value"
        case .array(let element):
            encode = ".array(element: \(quoted(element.signature)), value.map(\(element.encoder)))"
            decode =
                "guard case .array(_, let elements) = value else { \(mismatch) }\n        return try elements.map { try \(element.decoder)($0, what()) }"
        case .dictionary(let key, let valueType):
            let sorted = key.isComparable ? ".sorted { $0.key < $1.key }" : ""
            encode =
                ".dictionary(key: \(quoted(key.signature)), value: \(quoted(valueType.signature)), value\(sorted).map { .init(\(key.encoder)($0.key), \(valueType.encoder)($0.value)) })"
            decode = """
                guard case .dictionary(_, _, let entries) = value else { \(mismatch) }
                        var result: \(swift) = [:]
                        for entry in entries { result[try \(key.decoder)(entry.key, what())] = try \(valueType.decoder)(entry.value, what()) }
                        return result
                """
        case .structure(let fields):
            encode = ".structure([" + fields.enumerated().map { "\($1.encoder)(value.\($0))" }.joined(separator: ", ") + "])"
            decode =
                "guard case .structure(let fields) = value, fields.count == \(fields.count) else { \(mismatch) }\n        return ("
                + fields.enumerated().map { "try \($1.decoder)(fields[\($0)], what())" }.joined(separator: ", ") + ")"
        }
        return """
                static func encode_\(mangled)(_ value: \(swift)) -> DBusValue {
                    \(encode)
                }

                static func decode_\(mangled)(_ value: DBusValue, _ what: @autoclosure () -> String) throws -> \(swift) {
                    \(decode)
                }


            """
    }

    /// `a{sv}`.
    var isVardict: Bool {
        if case .dictionary(.basic("s"), .variant) = self { return true }
        return false
    }

    var isComparable: Bool {
        if case .basic(let c) = self { return c != "b" }
        return false
    }
}

// MARK: Arguments

struct Parameter {
    var wireName: String
    var label: String
    var type: WireType

    /// A method's in- and out-arguments.
    static func of(_ method: InterfaceDescription.Method) -> (ins: [Parameter], outs: [Parameter]) {
        (list(method.args.filter { $0.direction == .in }, fallback: "argument"),
         list(method.args.filter { $0.direction == .out }, fallback: "value"))
    }

    static func list(_ args: [InterfaceDescription.Arg], fallback: String) -> [Parameter] {
        args.enumerated().map { index, arg in
            let name = arg.name ?? "\(fallback)\(index)"
            return Parameter(wireName: name, label: lowerCamel(name), type: WireType(arg.type))
        }
    }
}

/// The Swift type of out-arguments: Void, the one type, or a labelled tuple.
func resultType(_ outs: [Parameter]) -> String {
    switch outs.count {
    case 0: return "Void"
    case 1: return outs[0].type.swift
    default: return "(" + outs.map { "\($0.label): \($0.type.swift)" }.joined(separator: ", ") + ")"
    }
}

/// The closure a `TypedReply` writes its value with.
func writeResult(_ outs: [Parameter]) -> String {
    switch outs.count {
    case 0: return "{ _, _ in }"
    case 1: return "{ writer, value in try \(outs[0].type.writer)(&writer, value) }"
    default:
        return "{ writer, value in " + outs.map { "try \($0.type.writer)(&writer, value.\(identifier($0.label)))" }.joined(separator: "; ") + " }"
    }
}

/// Reads out-arguments from the reader `values`.
func readResult(_ outs: [Parameter], _ values: String) -> String {
    switch outs.count {
    case 0: return "()"
    case 1: return "try \(outs[0].type.reader)(&\(values))"
    default: return "(" + outs.map { "\(identifier($0.label)): try \($0.type.reader)(&\(values))" }.joined(separator: ", ") + ")"
    }
}

/// The closure that writes `params` (arguments named by their labels, or
/// fields of `owner`) into a message; with `vardicts`, each `a{sv}` is a
/// `VardictWritable`.
func writeArguments(_ params: [Parameter], of owner: String = "", vardicts: Bool = false) -> String {
    guard !params.isEmpty else { return "{ _ in }" }
    return "{ writer in "
        + params.map {
            vardicts && $0.type.isVardict
                ? "try writer.appendVardict(\(owner)\(identifier($0.label)))" : "try \($0.type.writer)(&writer, \(owner)\(identifier($0.label)))"
        }.joined(separator: "; ") + " }"
}

func declarations(_ params: [Parameter], vardicts: String? = nil) -> String {
    params.map { "\(identifier($0.label)): \($0.type.isVardict ? vardicts ?? $0.type.swift : $0.type.swift)" }.joined(separator: ", ")
}

/// The stored properties of a struct and its memberwise initializer.
func memberwise(_ fields: [Parameter], docs: [[InterfaceDescription.Annotation]]) -> String {
    var out = ""
    for (field, annotations) in zip(fields, docs) {
        out += doc(annotations, indent: "        ") + "        public var \(identifier(field.label)): \(field.type.swift)\n"
    }
    out += "\n        public init(\(declarations(fields))) {\n"
    for field in fields { out += "            self.\(identifier(field.label)) = \(identifier(field.label))\n" }
    return out + "        }\n\n"
}

func passing(_ params: [Parameter]) -> String {
    params.map { "\(identifier($0.label)): \(identifier($0.label))" }.joined(separator: ", ")
}

// MARK: One interface

var usedTypes: [String: WireType] = [:]
@MainActor func use(_ type: WireType) {
    for part in type.closure { usedTypes[part.mangled] = part }
}

func swiftName(_ interface: InterfaceDescription) -> String {
    if let name = interface.annotations.first(where: { $0.name == "org.gtk.GDBus.C.Name" })?.value { return name }
    return interface.name.split(separator: ".").dropFirst(2).map { upperCamel(String($0)) }.joined()
}

@MainActor func generate(_ interface: InterfaceDescription, xml: String) -> String {
    let type = swiftName(interface)
    let name = interface.name
    func annotation(_ key: String) -> String? { interface.annotations.first { $0.name == key }?.value }
    var out = doc(interface.annotations, indent: "")
    out += "public enum \(type) {\n"
    out += "    /// The interface's name on the bus.\n    public static let name = \(quoted(name))\n"
    out += "    /// The declaration, exactly as the XML file gives it.\n    public static let xml = \(literal(xml))\n"
    out += "    public static let description = InterfaceDescription.declared(xml)\n"
    if let bus = annotation("org.widgethost.BusName") {
        out += "    /// The well-known name of the service that serves this interface.\n"
        out += "    public static let busName = \(quoted(bus))\n"
    }
    if let path = annotation("org.widgethost.ObjectPath") {
        if path.hasSuffix("{id}") {
            let prefix = String(path.dropLast(4))
            out += """
                    /// The path of the object with `id`.
                    public static func objectPath(_ id: String) -> String { \(quoted(prefix)) + id }
                    /// `idOrPath` when it is a path already, else the path of the object with that id.
                    public static func objectPath(idOrPath: String) -> String { idOrPath.hasPrefix("/") ? idOrPath : objectPath(idOrPath) }
                    /// The id in the path of one of these objects, or nil when `path` is not one.
                    public static func id(inPath path: String) -> String? {
                        path.hasPrefix(\(quoted(prefix))) ? String(path.dropFirst(\(prefix.utf8.count))) : nil
                    }

                """
        } else {
            out += "    /// The path this interface is served at.\n    public static let objectPath = \(quoted(path))\n"
        }
    }

    // Members
    func memberEnum(_ kind: String, _ names: [String]) {
        guard !names.isEmpty else { return }
        out += "\n    public enum \(kind): String, Sendable, CaseIterable {\n"
        for member in names { out += "        case \(identifier(lowerCamel(member))) = \(quoted(member))\n" }
        out += "    }\n"
    }
    memberEnum("Method", interface.methods.map(\.name))
    memberEnum("Signal", interface.signals.map(\.name))
    memberEnum("Property", interface.properties.map(\.name))

    let readable = interface.properties.filter(\.isReadable)
    if interface.properties.contains(where: { $0.access != .read }) {
        fail("\(name): writable properties are not supported by the generator")
    }

    // Server protocol
    out += "\n    /// What serves \(name): one method per D-Bus method, called on the connection's thread.\n"
    out += "    /// Answer through `reply`, at once or later; never block.\n"
    out += "    public protocol Server: Sendable {\n"
    for method in interface.methods {
        let (ins, outs) = Parameter.of(method)
        if ins.contains(where: { $0.label == "call" || $0.label == "reply" }) {
            fail("\(name).\(method.name): an argument may not be named 'call' or 'reply'")
        }
        (ins + outs).forEach { use($0.type) }
        out += doc(method.annotations, indent: "        ")
        let params = ins.isEmpty ? "" : ", " + declarations(ins)
        out += "        func \(identifier(lowerCamel(method.name)))(_ call: MethodCall\(params), reply: TypedReply<\(resultType(outs))>)\n"
    }
    if !readable.isEmpty {
        out += """
                    /// The properties of the object at `path`, read for Get, GetAll,
                    /// GetManagedObjects and PropertiesChanged.
                    func properties(at path: String) -> Properties

            """
    }
    out += """
            }

            /// The interface as the object server serves it, every member bound to `server`.
            public static func exported(_ server: some Server) -> ExportedInterface {
                var exported = ExportedInterface(description)

        """
    for method in interface.methods {
        let (ins, outs) = Parameter.of(method)
        let member = identifier(lowerCamel(method.name))
        out += "        exported.method(Method.\(member).rawValue, .reading { call, \(ins.isEmpty ? "_" : "arguments"), reply in\n"
        // The in-signature is checked before this runs: each read finds its type.
        for (index, param) in ins.enumerated() {
            out += "            let a\(index) = try \(param.type.reader)(&arguments)\n"
        }
        let args = ins.enumerated().map { ", \(identifier($1.label)): a\($0)" }.joined()
        out += "            server.\(member)(call\(args), reply: TypedReply(reply, writing: \(writeResult(outs))))\n"
        out += "        })\n"
    }
    for property in readable {
        out += "        exported.property(\n"
        out += "            Property.\(identifier(lowerCamel(property.name))).rawValue,\n"
        out += "            PropertyHandler(getAt: { server.properties(at: $0).value(of: .\(identifier(lowerCamel(property.name)))) }))\n"
    }
    if !readable.isEmpty { out += "        exported.readAll { server.properties(at: $0).values }\n" }
    out += "        return exported\n    }\n"

    // Properties
    if !readable.isEmpty {
        let props = readable.map { Parameter(wireName: $0.name, label: lowerCamel($0.name), type: WireType($0.type)) }
        props.forEach { use($0.type) }
        out += "\n    /// The properties of one object, as Swift values.\n"
        out += "    public struct Properties: Sendable {\n"
        out += memberwise(props, docs: readable.map(\.annotations))
        out += "        /// Reads the answer of GetAll (variants unwrapped); a property missing or of another type is an error.\n"
        out += "        public init(_ values: [String: DBusValue]) throws {\n"
        for p in props {
            out += "            \(identifier(p.label)) = try \(p.type.decoder)(Coding.property(values, \(quoted(p.wireName))), \(quoted(name + "." + p.wireName)))\n"
        }
        out += "        }\n\n"
        out += "        /// Every property's value, in declared order.\n"
        out += "        public var values: [DBusValue] { [" + props.map { "\($0.type.encoder)(\(identifier($0.label)))" }.joined(separator: ", ") + "] }\n\n"
        out += "        public func value(of property: Property) -> DBusValue {\n            switch property {\n"
        for p in props { out += "            case .\(identifier(p.label)): return \(p.type.encoder)(\(identifier(p.label)))\n" }
        out += "            }\n        }\n    }\n"
        out += """

                /// Emits `PropertiesChanged` for `properties` of the object at `path`.
                public static func emitPropertiesChanged(on connection: Connection, path: String, _ properties: [Property]) throws {
                    try connection.emitPropertiesChanged(path: path, interface: name, properties: properties.map(\\.rawValue))
                }

            """
    }

    // Signals
    for signal in interface.signals {
        let fields = Parameter.list(signal.args, fallback: "argument")
        fields.forEach { use($0.type) }
        let typeName = upperCamel(signal.name)
        if interface.methods.contains(where: { upperCamel($0.name) == typeName }) || typeName == "Proxy" || typeName == "Properties" {
            fail("\(name).\(signal.name): a signal's name may not be that of a method or Proxy/Properties")
        }
        out += "\n" + doc(signal.annotations, indent: "    ")
        out += "    public struct \(typeName): Sendable {\n"
        out += memberwise(fields, docs: signal.args.map(\.annotations))
        out += "        /// The signal `message` carries, or nil when it is another message or its arguments do not match.\n"
        out += "        public init?(_ message: Message) {\n"
        out += "            guard message.interface == \(type).name, message.member == Signal.\(identifier(lowerCamel(signal.name))).rawValue,\n"
        out += "                message.hasSignature(\(quoted(signal.signature)))\n"
        out += "            else { return nil }\n"
        if !fields.isEmpty { out += "            var arguments = MessageReader(message)\n" }
        for (index, f) in fields.enumerated() {
            out += "            guard let a\(index) = try? \(f.type.reader)(&arguments) else { return nil }\n"
        }
        out += "            self.init(" + fields.enumerated().map { "\(identifier($1.label)): a\($0)" }.joined(separator: ", ") + ")\n"
        out += "        }\n\n"
        let member = "Signal.\(identifier(lowerCamel(signal.name))).rawValue"
        let encoded = fields.map { "\($0.type.encoder)(self.\(identifier($0.label)))" }.joined(separator: ", ")
        out += """
                    public var arguments: [DBusValue] { [\(encoded)] }

                    /// Emits the signal from the object at `path`.
                    public func emit(on connection: Connection, path: String) throws {
                        try connection.emit(path: path, interface: \(type).name, member: \(member), writing: \(writeArguments(fields, of: "self.")))
                    }

                    /// The match rule for this signal.
                    public static func rule(sender: String? = nil, path: String? = nil, pathNamespace: String? = nil) -> MatchRule {
                        MatchRule(sender: sender, interface: \(type).name, member: \(member), path: path, pathNamespace: pathNamespace)
                    }
                }

            """
    }

    // Proxy
    let defaultDestination = annotation("org.widgethost.BusName").map { _ in " = busName" } ?? ""
    let fixedPath = annotation("org.widgethost.ObjectPath").flatMap { $0.hasSuffix("{id}") ? nil : $0 }
    out += """

            /// A client of \(name) on one object.
            public struct Proxy: Sendable {
                public let connection: Connection
                public let destination: String
                public let path: String
                /// How long a call waits for its answer; nil is the binding's default.
                public var timeout: Duration?

                public init(_ connection: Connection, destination: String\(defaultDestination), path: String\(fixedPath != nil ? " = objectPath" : ""), timeout: Duration? = nil) {
                    self.connection = connection
                    self.destination = destination
                    self.path = path
                    self.timeout = timeout
                }

        """
    for method in interface.methods {
        let (ins, outs) = Parameter.of(method)
        let member = lowerCamel(method.name)
        let result = resultType(outs)
        let what = "the reply of \(name).\(method.name):"
        let reading = outs.isEmpty ? "" : "var values = MessageReader(reply)\n            "
        // Where the call takes an a{sv}, a flavour that takes any VardictWritable:
        // an a{sv} only sent need not be built as a dictionary first.
        var vardictMessage = ""
        if ins.contains(where: \.type.isVardict) {
            vardictMessage = "/// The call of \(method.name), its `a{sv}` written by what is given for it.\n"
            vardictMessage += "        public func \(member)Message(\(declarations(ins, vardicts: "some VardictWritable"))) throws -> Message {\n"
            vardictMessage += "            try Message.methodCall(\n"
            vardictMessage += "                destination: destination, path: path, interface: \(type).name, member: Method.\(identifier(member)).rawValue,\n"
            vardictMessage += "                writing: \(writeArguments(ins, vardicts: true)))\n"
            vardictMessage += "        }\n\n        "
        }
        out += """

                    /// The call of \(method.name), to send as it is.
                    public func \(member)Message(\(declarations(ins))) throws -> Message {
                        try Message.methodCall(
                            destination: destination, path: path, interface: \(type).name, member: Method.\(identifier(member)).rawValue,
                            writing: \(writeArguments(ins)))
                    }

                    \(vardictMessage)/// The typed answer in a reply to \(method.name).
                    public static func \(member)Result(_ reply: Message) throws -> \(result) {
                        guard reply.hasSignature(\(quoted(method.outSignature))) else {
                            throw typeMismatch(\(quoted(what)), expected: \(quoted(method.outSignature)), got: .structure(reply.arguments()))
                        }
                        \(reading)return \(readResult(outs, "values"))
                    }

            """
        out += doc(method.annotations, indent: "        ")
        out += """
                    public nonisolated(nonsending) func \(identifier(member))(\(declarations(ins))) async throws -> \(result) {
                        try Self.\(member)Result(await connection.call(\(member)Message(\(passing(ins))), timeout: timeout))
                    }

                    /// \(method.name) for code on the connection's thread: `completion` runs there with the answer.
                    public func \(identifier(member))(\(declarations(ins))\(ins.isEmpty ? "" : ", ")completion: @escaping @Sendable (Result<\(result), any Error>) -> Void) {
                        let message: Message
                        do { message = try \(member)Message(\(passing(ins))) } catch { return completion(.failure(error)) }
                        connection.send(message, timeout: timeout) { result in
                            completion(result.flatMap { reply in Result { try Self.\(member)Result(reply) } })
                        }
                    }

            """
    }
    if !readable.isEmpty {
        out += """

                    /// Every property of the object (GetAll).
                    public nonisolated(nonsending) func properties() async throws -> Properties {
                        try Properties(await connection.allProperties(destination: destination, path: path, interface: \(type).name, timeout: timeout))
                    }

            """
    }
    out += "    }\n}\n\n"
    return out
}

// MARK: The file

var body = ""
var names: [String] = []
var seen: Set<String> = []
var declared: [InterfaceDescription] = []
for path in paths {
    let url = URL(fileURLWithPath: path)
    guard let xml = try? String(contentsOf: url, encoding: .utf8) else { fail("cannot read \(path)") }
    let parsed: [InterfaceDescription]
    do { parsed = try InterfaceDescription.parse(xml: xml) } catch { fail("\(path): \(error)") }
    let fileName = url.deletingPathExtension().lastPathComponent
    guard parsed.count == 1, parsed[0].name == fileName else {
        fail("\(path) must declare exactly one interface, named \(fileName) like the file")
    }
    let type = swiftName(parsed[0])
    guard seen.insert(type).inserted else { fail("two interfaces are both named \(type) in Swift") }
    names.append(type)
    declared.append(parsed[0])
    if !optionsOnly { body += generate(parsed[0], xml: xml) }
}

/// The interfaces' Swift: the enums, then the coding functions they use.
@MainActor func interfacesFile() -> String {
    var swift = """
        // Generated by dbus-codegen from the interface files (dbus/*.xml and the
        // peers' interfaces the host calls). Do not edit: change the XML instead.
        // What is generated and how to use it: docs/interfaces.md.

        import DBus

        /// Every interface generated here.
        public enum DeclaredInterfaces {
            public static let all: [InterfaceDescription] = [\(names.map { "\($0).description" }.joined(separator: ", "))]
        }


        """
    swift += body
    swift += """
        /// The coding of each D-Bus type the interfaces use.
        enum Coding {
            static func property(_ values: [String: DBusValue], _ name: String) throws -> DBusValue {
                guard let value = values[name] else { throw DBusError.invalidArgs("the property \\(name) is missing") }
                return value
            }


        """
    for key in usedTypes.keys.sorted() { swift += usedTypes[key]!.codingFunctions() + usedTypes[key]!.readingFunctions() }
    swift += "}\n"
    return swift
}

let swift = optionsOnly ? optionsFile(declared) : interfacesFile()
let data = Data(swift.utf8)
if (try? Data(contentsOf: URL(fileURLWithPath: output))) != data {
    do { try data.write(to: URL(fileURLWithPath: output), options: .atomic) } catch { fail("cannot write \(output): \(error)") }
}
