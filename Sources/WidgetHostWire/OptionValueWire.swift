import DBus
import WidgetHostCore

// The model's values on the wire: shared by the service and WidgetHostKit,
// so both convert D-Bus values the same way.

extension OptionValue {
    /// The model's image of a D-Bus value.
    public init(_ value: DBusValue) {
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
    public var dbusValue: DBusValue {
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

    /// `a{sv}` arguments, decoded by generated code, as the model's dictionary.
    public static func dictionary(_ values: [String: DBusValue]) -> [String: OptionValue] {
        values.mapValues(OptionValue.init)
    }
}
