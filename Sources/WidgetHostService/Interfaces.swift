import DBus
import WidgetHostCore

/// The host's names (CONTRACT §1).
public enum HostNames {
    public static let busName = "org.widgethost.Host1"
    public static let rootPath = "/org/widgethost/Host1"
    public static let apps = "org.widgethost.Host1.Apps"
    public static let app1 = "org.widgethost.App1"
}

/// The interfaces of `dbus/*.xml`, parsed once from the copies the build
/// embeds. These files are the only declaration of every interface.
public enum HostInterfaces {
    /// Every interface file by interface name.
    public static func all() throws -> [String: InterfaceDescription] {
        var result: [String: InterfaceDescription] = [:]
        for (name, xml) in InterfaceXML.files {
            let parsed = try InterfaceDescription.parse(xml: xml)
            guard parsed.count == 1, parsed[0].name == name else {
                throw DBusEncodingError("dbus/\(name).xml must declare exactly the interface \(name)")
            }
            result[name] = parsed[0]
        }
        return result
    }

    /// The text of `dbus/<name>.xml`.
    public static func xml(_ name: String) -> String? { InterfaceXML.files[name] }

    /// The names of the interfaces the host itself serves (the app-side ones are excluded).
    public static var hostInterfaceNames: [String] {
        InterfaceXML.files.keys.filter { $0.hasPrefix("org.widgethost.Host1.") }.sorted()
    }
}

extension HostError: DBusErrorConvertible {
    public var dbusError: DBusError { DBusError(name: dbusName, message: message) }
}

extension OptionValue {
    /// The model's image of a D-Bus value.
    init(_ value: DBusValue) {
        switch value {
        case .string(let s): self = .string(s)
        case .objectPath(let p): self = .objectPath(p)
        case .bool(let b): self = .bool(b)
        case .byte, .int16, .int32, .int64, .uint16, .uint32:
            self = .int(value.integerValue ?? 0)
        case .uint64(let u): self = .uint(u)
        case .double(let d): self = .double(d)
        case .variant(let inner): self = OptionValue(inner)
        case .array(let element, let items):
            // Elements keep their D-Bus type as the model stores it (integers widened), so
            // the value goes back out with the signature its items have.
            guard let stored = Self.storedSignature(element) else {
                self = .other(signature: value.signature)
                return
            }
            self = .array(elementSignature: stored, items.map(OptionValue.init))
        case .dictionary("s", "v", let entries):
            var dict: [String: OptionValue] = [:]
            for entry in entries {
                if let key = entry.key.stringValue { dict[key] = OptionValue(entry.value) }
            }
            self = .dict(dict)
        default: self = .other(signature: value.signature)
        }
    }

    /// The D-Bus value for this model value.
    var dbusValue: DBusValue {
        switch self {
        case .string(let s): return .string(s)
        case .objectPath(let p): return .objectPath(p)
        case .bool(let b): return .bool(b)
        case .int(let i): return .int64(i)
        case .uint(let u): return .uint64(u)
        case .double(let d): return .double(d)
        case .array("v", let items): return .array(element: "v", items.map { .variant($0.dbusValue) })
        case .array(let element, let items): return .array(element: element, items.map(\.dbusValue))
        case .dict(let dict): return .vardict(dict.mapValues(\.dbusValue))
        case .other: return .string("")
        }
    }

    /// The signature an array element of type `element` has in the model: signed
    /// and narrower integers become `x`, `t` stays, `v` and `a{sv}` and the
    /// basic types keep theirs; nil for what the model does not hold (structures,
    /// other dictionaries), which then stays `.other`.
    static func storedSignature(_ element: String) -> String? {
        switch element {
        case "s", "o", "b", "d", "v", "t", "a{sv}": return element
        case "y", "n", "q", "i", "u", "x": return "x"
        default:
            guard element.hasPrefix("a"), let inner = storedSignature(String(element.dropFirst())) else { return nil }
            return "a" + inner
        }
    }

    /// `a{sv}` arguments as the model's dictionary.
    static func dictionary(_ value: DBusValue) -> [String: OptionValue] {
        var result: [String: OptionValue] = [:]
        for (key, v) in value.stringKeyedEntries ?? [:] { result[key] = OptionValue(v) }
        return result
    }
}
