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

    /// Where the value holds a double that is NaN or infinite — `""` for the
    /// value itself, else a path such as `.speed` or `[2]` — or nil when it holds
    /// none. JSON, the state directory's format and every renderer's parser have
    /// no such numbers, so the host takes none (see ``Validate/storable(_:_:)``).
    public var nonFinitePath: String? {
        switch self {
        case .double(let d): return d.isFinite ? nil : ""
        case .array(_, let items):
            for (index, item) in items.enumerated() {
                if let inner = item.nonFinitePath { return "[\(index)]" + inner }
            }
            return nil
        case .dict(let entries):
            for key in entries.keys.sorted() {
                if let inner = entries[key]!.nonFinitePath { return "." + Validate.prefix(key, 32) + inner }
            }
            return nil
        default: return nil
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

// MARK: - D-Bus wire size

extension OptionValue {
    /// Whether the value can be marshalled as the single complete D-Bus type `signature`.
    ///
    /// ``string(_:)`` fits `s`; ``objectPath(_:)`` fits `o`; ``bool(_:)`` fits `b`;
    /// ``int(_:)`` fits every integer type it stands for (`y`, `n`, `q`, `i`, `u`,
    /// `x`); ``uint(_:)`` fits `t`; ``double(_:)`` fits `d`; ``dict(_:)`` fits
    /// `a{sv}` when all its values fit `v`; an ``array(elementSignature:_:)`` fits
    /// `a` + its element signature when every item fits that signature; every value
    /// that fits its own ``signature`` fits `v`. ``other(signature:)`` fits nothing,
    /// nor does anything that contains it.
    public func isMarshallable(as signature: String) -> Bool {
        switch (signature, self) {
        case ("s", .string), ("o", .objectPath), ("b", .bool), ("t", .uint), ("d", .double):
            return true
        case ("y", .int), ("n", .int), ("q", .int), ("i", .int), ("u", .int), ("x", .int):
            return true
        case ("v", _):
            if case .other = self { return false }
            return isMarshallable(as: self.signature)
        case ("a{sv}", .dict(let dict)):
            return dict.values.allSatisfy { $0.isMarshallable(as: "v") }
        case (_, .array(let element, let items)):
            return signature == "a" + element && Self.isSingleCompleteType(element)
                && items.allSatisfy { $0.isMarshallable(as: element) }
        default:
            return false
        }
    }

    /// Whether `signature` is exactly one complete D-Bus type, such as `s`, `as`,
    /// `a{sv}` or `(ii)`.
    public static func isSingleCompleteType(_ signature: String) -> Bool {
        let codes = Array(signature.utf8)
        return completeTypeEnd(codes, from: 0, depth: 0) == codes.count
    }

    /// The index just past the complete type starting at `start`, or `nil`.
    private static func completeTypeEnd(_ codes: [UInt8], from start: Int, depth: Int) -> Int? {
        guard start < codes.count, depth < 64 else { return nil }
        let basic = Array("ybnqiuxtdsogh".utf8)
        switch codes[start] {
        case let code where basic.contains(code) || code == UInt8(ascii: "v"):
            return start + 1
        case UInt8(ascii: "a"):
            let next = start + 1
            if next < codes.count, codes[next] == UInt8(ascii: "{") {
                guard next + 1 < codes.count, basic.contains(codes[next + 1]),
                    let valueEnd = completeTypeEnd(codes, from: next + 2, depth: depth + 1),
                    valueEnd < codes.count, codes[valueEnd] == UInt8(ascii: "}")
                else { return nil }
                return valueEnd + 1
            }
            return completeTypeEnd(codes, from: next, depth: depth + 1)
        case UInt8(ascii: "("):
            var at = start + 1
            guard at < codes.count, codes[at] != UInt8(ascii: ")") else { return nil }
            while at < codes.count, codes[at] != UInt8(ascii: ")") {
                guard let end = completeTypeEnd(codes, from: at, depth: depth + 1) else { return nil }
                at = end
            }
            return at < codes.count ? at + 1 : nil
        default:
            return nil
        }
    }

    /// The signature of the first part of the value that cannot be marshalled as
    /// `signature` (the value itself or something inside it), or `nil` exactly when
    /// ``isMarshallable(as:)`` is true. Used to name the offending type in error messages.
    public func unmarshallablePart(as signature: String) -> String? {
        switch (signature, self) {
        case ("v", .other(let inner)):
            return inner
        case ("v", _):
            return unmarshallablePart(as: self.signature)
        case ("a{sv}", .dict(let dict)):
            for key in dict.keys.sorted() {
                if let part = dict[key]!.unmarshallablePart(as: "v") { return part }
            }
            return nil
        case (_, .array(let element, let items)) where signature == "a" + element && Self.isSingleCompleteType(element):
            for item in items {
                if let part = item.unmarshallablePart(as: element) { return part }
            }
            return nil
        default:
            return isMarshallable(as: signature) ? nil : self.signature
        }
    }

    /// The offset just past the value when it is marshalled as the D-Bus type
    /// `signature` starting at byte `offset` of a message body, or `nil` when the value
    /// cannot be marshalled as that type (see ``isMarshallable(as:)``).
    ///
    /// This follows the D-Bus specification's marshalling exactly, the byte order
    /// making no difference to sizes: every value first pads to its alignment (1 for
    /// `y`, `g` and `v`; 2 for `n` and `q`; 4 for `b`, `i`, `u`, `s`, `o` and arrays;
    /// 8 for `x`, `t`, `d`, structs and dict entries); a string or object path is a
    /// 4-byte length, the UTF-8 bytes and a NUL; a variant is its signature (1-byte
    /// length, the signature, NUL) followed by the value at its own alignment; an array
    /// is a 4-byte length, padding to its element type's alignment (present even when
    /// the array is empty), then the elements; a dictionary entry is 8-aligned. An
    /// ``int(_:)`` inside a variant is marshalled as `x` and a ``uint(_:)`` as `t`, as
    /// ``signature`` reports.
    public func marshalledEnd(as signature: String, from offset: Int) -> Int? {
        guard isMarshallable(as: signature) else { return nil }
        return Self.end(self, as: signature, from: offset)
    }

    /// The D-Bus wire size of `dictionaries`, each an `a{sv}`, marshalled one after
    /// another as a struct that starts at offset 0 — for two dictionaries, the body of
    /// a message with signature `a{sv}a{sv}` (or the struct `(a{sv}a{sv})`). Keys are
    /// marshalled in sorted order (the size does not depend on the order).
    ///
    /// Returns `nil` when a value cannot be marshalled (see ``isMarshallable(as:)``).
    /// For example, one empty dictionary is 8 bytes (a 4-byte length and 4 bytes of
    /// padding to the 8-byte alignment of its entries), two empty ones 16, and
    /// `{"a": <"b">}` is 26.
    public static func serializedSize(ofDictionaries dictionaries: [[String: OptionValue]]) -> Int? {
        var offset = 0
        for dictionary in dictionaries {
            guard let end = OptionValue.dict(dictionary).marshalledEnd(as: "a{sv}", from: offset) else { return nil }
            offset = end
        }
        return offset
    }

    /// The alignment of the D-Bus type `signature` (decided by its first character).
    static func alignment(ofSignature signature: String) -> Int {
        switch signature.utf8.first {
        case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
        case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "s"), UInt8(ascii: "o"),
            UInt8(ascii: "a"), UInt8(ascii: "h"):
            4
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
        default: 1
        }
    }

    private static func align(_ offset: Int, _ alignment: Int) -> Int {
        (offset + alignment - 1) / alignment * alignment
    }

    /// ``marshalledEnd(as:from:)`` for a value already known to fit `signature`.
    private static func end(_ value: OptionValue, as signature: String, from offset: Int) -> Int {
        switch (signature, value) {
        case ("y", _): return offset + 1
        case ("n", _), ("q", _): return align(offset, 2) + 2
        case ("b", _), ("i", _), ("u", _): return align(offset, 4) + 4
        case ("x", _), ("t", _), ("d", _): return align(offset, 8) + 8
        case ("s", .string(let s)), ("o", .objectPath(let s)): return align(offset, 4) + 4 + s.utf8.count + 1
        case ("v", _):
            let inner = value.signature
            return end(value, as: inner, from: offset + 1 + inner.utf8.count + 1)
        case ("a{sv}", .dict(let dict)):
            var at = align(align(offset, 4) + 4, 8)
            for key in dict.keys.sorted() {
                at = end(.string(key), as: "s", from: align(at, 8))
                at = end(dict[key]!, as: "v", from: at)
            }
            return at
        case (_, .array(let element, let items)):
            var at = align(align(offset, 4) + 4, alignment(ofSignature: element))
            for item in items { at = end(item, as: element, from: at) }
            return at
        default:
            // Unreachable: callers check isMarshallable(as:) first.
            return offset
        }
    }
}
