/// A neutral image of a D-Bus variant's value, so that the model never imports D-Bus.
///
/// The service converts incoming variants to this type (anything it does not map
/// becomes ``other(signature:)``) and converts the model's answers back.
public indirect enum OptionValue: Sendable, Equatable {
    /// `s`
    case string(String)
    /// `o`
    case objectPath(String)
    /// `b`
    case bool(Bool)
    /// Any signed integer (`n`, `i`, `x`); the signature reported is `x`.
    case int(Int64)
    /// Any unsigned integer (`y`, `q`, `u`, `t`); the signature reported is `t`.
    case uint(UInt64)
    /// `d`
    case double(Double)
    /// An array whose elements have D-Bus signature `elementSignature` (e.g. `"s"` for `as`).
    case array(elementSignature: String, [OptionValue])
    /// A string-keyed dictionary of variants, `a{sv}`.
    case dict([String: OptionValue])
    /// Any other value; kept only so that errors can name its type.
    case other(signature: String)

    /// The D-Bus signature of the value, e.g. `"s"`, `"as"`, `"o"`, `"a{sv}"`.
    public var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .bool: "b"
        case .int: "x"
        case .uint: "t"
        case .double: "d"
        case .array(let element, _): "a" + element
        case .dict: "a{sv}"
        case .other(let signature): signature
        }
    }

    /// An `as` value holding `strings`.
    public static func strings(_ strings: [String]) -> OptionValue {
        .array(elementSignature: "s", strings.map { .string($0) })
    }

    /// The string payload of a `.string` value, else `nil`.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The payload of an `as` value, else `nil`.
    ///
    /// An empty array counts as `as` only when its element signature is `s`.
    public var stringArrayValue: [String]? {
        guard case .array(let element, let items) = self, element == "s" else { return nil }
        var out: [String] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard case .string(let s) = item else { return nil }
            out.append(s)
        }
        return out
    }

    /// The path of an `.objectPath` value, else `nil`.
    public var objectPathValue: String? {
        if case .objectPath(let p) = self { return p }
        return nil
    }

    /// Describes a D-Bus signature for error messages, e.g. `"an array of strings (as)"`.
    public static func describe(signature: String) -> String {
        switch signature {
        case "s": "a string (s)"
        case "o": "an object path (o)"
        case "b": "a boolean (b)"
        case "x": "a 64-bit integer (x)"
        case "t": "an unsigned 64-bit integer (t)"
        case "d": "a double (d)"
        case "as": "an array of strings (as)"
        case "a{sv}": "a dictionary (a{sv})"
        default: "a value of type \(signature)"
        }
    }
}
