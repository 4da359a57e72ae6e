import DBus
import Foundation

// The `a{sv}` options of the methods, generated with --options into the
// model (WidgetHostCore), which knows no D-Bus: one struct per options
// argument that the XML annotates, in the spirit of zvariant's dictionary
// structs. docs/interfaces.md#options describes the annotations:
//
//   org.widgethost.Options               the struct's name (without "Options"); an
//                                        argument that gives only this takes the
//                                        options another argument declares
//   org.widgethost.Option.<key>          the key's signature: s, o, x, d, as or a{sv}
//   org.widgethost.Option.<key>.Range    for x: the integers it takes, MIN...MAX
//   org.widgethost.Option.<key>.Unit     for x: what it counts, for messages
//   org.widgethost.Option.<key>.Default  the value an absent key stands for, in GVariant text

/// One declared key and how the generated code reads and writes it.
struct OptionKey {
    var key: String
    var signature: String
    var range: (Int64, Int64)?
    var unit: String?
    var defaultText: String?

    /// The Swift type and the `OptionReading` function of each signature.
    static let kinds: [String: (swift: String, reader: String)] = [
        "s": ("String", "string"), "o": ("String", "objectPath"), "x": ("Int64", "integer"), "d": ("Double", "number"),
        "as": ("[String]", "strings"), "a{sv}": ("[String: OptionValue]", "dictionary"),
    ]

    var label: String { identifier(lowerCamel(key)) }
    var swift: String { Self.kinds[signature]!.swift }

    /// The default as a Swift literal of the key's type.
    func defaultSwift(_ what: String) -> String? {
        guard let text = defaultText?.trimmingCharacters(in: .whitespaces) else { return nil }
        func string(_ text: Substring) -> String {
            guard text.count >= 2, text.first == "'", text.last == "'", !text.dropFirst().dropLast().contains(where: { $0 == "'" || $0 == "\\" })
            else { fail("\(what): the default \(text) must be a string in single quotes, like 'desktop'") }
            return quoted(String(text.dropFirst().dropLast()))
        }
        switch signature {
        case "s", "o":
            return string(Substring(text))
        case "x":
            guard let value = Int64(text) else { fail("\(what): the default \(text) is not a 64-bit integer") }
            if let range, !(range.0...range.1).contains(value) { fail("\(what): the default \(text) is outside its range") }
            return text
        case "d":
            guard let value = Double(text), value.isFinite else { fail("\(what): the default \(text) is not a finite number") }
            return text
        case "as":
            guard text.hasPrefix("["), text.hasSuffix("]") else { fail("\(what): the default \(text) must be a list like ['a', 'b']") }
            let items = text.dropFirst().dropLast().split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return "[" + items.map { string(Substring($0)) }.joined(separator: ", ") + "]"
        default:
            guard text == "{}" else { fail("\(what): the default of an a{sv} can only be {}") }
            return "[:]"
        }
    }

    var declaration: String {
        var out = "DeclaredOption(\(quoted(key)), \(quoted(signature))"
        if let range { out += ", range: \(range.0)...\(range.1)" }
        if let unit { out += ", unit: \(quoted(unit))" }
        if let defaultText { out += ", default: \(quoted(defaultText))" }
        return out + ")"
    }
}

/// The options of one or more methods: declared on one argument, taken by every argument that names them.
struct OptionsDeclaration {
    var name: String
    var keys: [OptionKey]?
    /// `interface.Method` of every method that takes them, the declaring one first.
    var members: [String]
    var doc: [InterfaceDescription.Annotation]

    var typeName: String { upperCamel(name) + "Options" }

    /// `"Tap and Resolve"`: the methods' names, for messages.
    var methods: String {
        var names: [String] = []
        for member in members {
            let name = String(member.split(separator: ".").last!)
            if !names.contains(name) { names.append(name) }
        }
        return names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " and " + names.last!
    }
}

/// The options an argument declares or names, or nil when it carries no option annotations.
func options(of arg: InterfaceDescription.Arg, member: String, method: String) -> OptionsDeclaration? {
    let prefix = "org.widgethost.Option."
    let named = arg.annotations.first { $0.name == "org.widgethost.Options" }?.value
    let annotations = arg.annotations.filter { $0.name.hasPrefix(prefix) }
    guard named != nil || !annotations.isEmpty else { return nil }
    let what = "\(member)(\(arg.name ?? "?"))"
    guard arg.type == "a{sv}", arg.direction == .in else { fail("\(what): only an a{sv} in-argument takes options") }
    var keys: [OptionKey] = []
    for annotation in annotations {
        let parts = annotation.name.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let key = parts[0]
        if parts.count == 1 {
            guard OptionKey.kinds[annotation.value] != nil else {
                fail("\(what): option '\(key)' has type \(annotation.value); the generator reads s, o, x, d, as and a{sv}")
            }
            guard !keys.contains(where: { $0.key == key }) else { fail("\(what): option '\(key)' is declared twice") }
            keys.append(OptionKey(key: key, signature: annotation.value))
            continue
        }
        guard parts.count == 2, let index = keys.firstIndex(where: { $0.key == key }) else {
            fail("\(what): \(annotation.name) must follow \(prefix)\(key), which declares the key's type")
        }
        let facet = "\(what): option '\(key)'"
        switch parts[1] {
        case "Range":
            let bounds = annotation.value.components(separatedBy: "...")
            guard keys[index].signature == "x", bounds.count == 2, let low = Int64(bounds[0]), let high = Int64(bounds[1]), low <= high else {
                fail("\(facet): a Range is MIN...MAX, for an x")
            }
            keys[index].range = (low, high)
        case "Unit":
            guard keys[index].signature == "x" else { fail("\(facet): a Unit is for an x") }
            keys[index].unit = annotation.value
        case "Default":
            keys[index].defaultText = annotation.value
        default:
            fail("\(facet): \(parts[1]) is not Range, Unit or Default")
        }
    }
    return OptionsDeclaration(name: named ?? method, keys: annotations.isEmpty ? nil : keys, members: [member], doc: arg.annotations)
}

/// Every options declaration of `interfaces`, those that name another's merged into it.
func optionsDeclarations(_ interfaces: [InterfaceDescription]) -> [OptionsDeclaration] {
    var found: [String: OptionsDeclaration] = [:]
    var references: [OptionsDeclaration] = []
    for interface in interfaces {
        for method in interface.methods {
            for arg in method.args {
                guard let declaration = options(of: arg, member: interface.name + "." + method.name, method: method.name) else { continue }
                guard declaration.keys != nil else {
                    references.append(declaration)
                    continue
                }
                if let other = found[declaration.name] {
                    fail("\(declaration.members[0]) and \(other.members[0]) both declare options named \(declaration.name); name one with org.widgethost.Options")
                }
                found[declaration.name] = declaration
            }
        }
    }
    for reference in references {
        guard found[reference.name] != nil else { fail("\(reference.members[0]) takes options \(reference.name), which no argument declares") }
        found[reference.name]!.members += reference.members
    }
    return found.values.sorted { $0.name < $1.name }
}

func generateOptions(_ declaration: OptionsDeclaration) -> String {
    let keys = declaration.keys!
    let type = declaration.typeName
    var out = doc(declaration.doc, indent: "")
    out += (out.isEmpty ? "" : "///\n") + "/// Generated from the options argument of \(declaration.members.joined(separator: ", ")).\n"
    out += "public struct \(type): MethodOptions {\n"
    out += "    public static let methods = \(quoted(declaration.methods))\n"
    out += "    /// `interface.Method` of every method that takes these options.\n"
    out += "    public static let members = [" + declaration.members.map(quoted).joined(separator: ", ") + "]\n"
    out += "    public static let declared = [\n" + keys.map { "        \($0.declaration),\n" }.joined() + "    ]\n\n"
    let defaults = keys.map { $0.defaultSwift("\(declaration.members[0]) option '\($0.key)'") }
    for (key, value) in zip(keys, defaults) {
        out += "    public var \(key.label): \(key.swift)\(value == nil ? "?" : "")\n"
    }
    let parameters = zip(keys, defaults).map { "\($0.label): \($0.swift)\($1 == nil ? "? = nil" : " = \($1!)")" }
    out += "\n    public init(\(parameters.joined(separator: ", "))) {\n"
    for key in keys { out += "        self.\(key.label) = \(key.label)\n" }
    out += "    }\n\n"
    out += "    public init<Value>(_ values: [String: Value], as convert: (Value) -> OptionValue) throws(HostError) {\n"
    out += "        let read = try OptionReading(values, as: convert, for: Self.self)\n"
    for (index, (key, value)) in zip(keys, defaults).enumerated() {
        out += "        \(key.label) = try read.\(OptionKey.kinds[key.signature]!.reader)(\(index))\(value.map { " ?? \($0)" } ?? "")\n"
    }
    out += "    }\n}\n\n"
    return out
}

func optionsFile(_ interfaces: [InterfaceDescription]) -> String {
    let declarations = optionsDeclarations(interfaces)
    var swift = """
        // Generated by dbus-codegen --options from the options the interface files
        // (dbus/*.xml) declare. Do not edit: change the XML instead.
        // What is generated and how to use it: docs/interfaces.md#options.

        /// Every method's options generated here.
        public enum DeclaredOptions {
            public static let all: [any MethodOptions.Type] = [\(declarations.map { "\($0.typeName).self" }.joined(separator: ", "))]
        }


        """
    for declaration in declarations { swift += generateOptions(declaration) }
    return swift
}
