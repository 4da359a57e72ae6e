/// A D-Bus value of any type, with the type it carries.
///
/// Every D-Bus type has a case: the basic types `y b n q i u x t d s o g h`,
/// arrays, dictionaries (`a{..}`), structs and variants. Containers carry the
/// signature of their elements, so an empty array still has a type.
///
/// Only a variant holds its value in a box of its own (containers hold theirs
/// in their arrays): a string or a number is a value, not an allocation.
public enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case bool(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// A file descriptor. A value read from a message owns a fresh descriptor
    /// that the reader must close; appending one sends a duplicate.
    case unixFD(Int32)
    /// An array whose elements all have `element` as their signature.
    case array(element: String, [DBusValue])
    /// A dictionary `a{kv}`; entries keep their order.
    case dictionary(key: String, value: String, [DictEntry])
    case structure([DBusValue])
    indirect case variant(DBusValue)

    /// One entry of a `.dictionary`.
    public struct DictEntry: Sendable, Hashable {
        public var key: DBusValue
        public var value: DBusValue
        public init(_ key: DBusValue, _ value: DBusValue) {
            self.key = key
            self.value = value
        }
    }

    /// The single complete type signature of this value.
    public var signature: String {
        switch self {
        case .byte: return "y"
        case .bool: return "b"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .unixFD: return "h"
        case .array(let element, _): return "a" + element
        case .dictionary(let key, let value, _): return "a{" + key + value + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        case .variant: return "v"
        }
    }
}

// MARK: - Signature matching without building the signature

extension DBusValue {
    /// Whether the values' signatures, one after another, spell `signature`
    /// (a method's in- or out-signature), without building any string.
    static func signatures(of values: [DBusValue], equal signature: String) -> Bool {
        var signature = signature
        return signature.withUTF8 { bytes in
            var index = 0
            for value in values where !value.match(bytes, &index) { return false }
            return index == bytes.count
        }
    }

    /// Whether this value's signature equals `signature`.
    func hasSignature(_ signature: String) -> Bool {
        var signature = signature
        return signature.withUTF8 { bytes in
            var index = 0
            return match(bytes, &index) && index == bytes.count
        }
    }

    /// Consumes this value's signature from `bytes` at `index`; false on a mismatch.
    func match(_ bytes: UnsafeBufferPointer<UInt8>, _ index: inout Int) -> Bool {
        func take(_ c: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == c else { return false }
            index += 1
            return true
        }
        func take(_ text: String) -> Bool {
            for c in text.utf8 where !take(c) { return false }
            return true
        }
        switch self {
        case .byte: return take(UInt8(ascii: "y"))
        case .bool: return take(UInt8(ascii: "b"))
        case .int16: return take(UInt8(ascii: "n"))
        case .uint16: return take(UInt8(ascii: "q"))
        case .int32: return take(UInt8(ascii: "i"))
        case .uint32: return take(UInt8(ascii: "u"))
        case .int64: return take(UInt8(ascii: "x"))
        case .uint64: return take(UInt8(ascii: "t"))
        case .double: return take(UInt8(ascii: "d"))
        case .string: return take(UInt8(ascii: "s"))
        case .objectPath: return take(UInt8(ascii: "o"))
        case .signature: return take(UInt8(ascii: "g"))
        case .unixFD: return take(UInt8(ascii: "h"))
        case .variant: return take(UInt8(ascii: "v"))
        case .array(let element, _): return take(UInt8(ascii: "a")) && take(element)
        case .dictionary(let key, let value, _):
            return take(UInt8(ascii: "a")) && take(UInt8(ascii: "{")) && take(key) && take(value) && take(UInt8(ascii: "}"))
        case .structure(let fields):
            guard take(UInt8(ascii: "(")) else { return false }
            for field in fields where !field.match(bytes, &index) { return false }
            return take(UInt8(ascii: ")"))
        }
    }

    /// The length in bytes of this value's signature, without building it.
    var signatureLength: Int {
        switch self {
        case .array(let element, _): return 1 + element.utf8.count
        case .dictionary(let key, let value, _): return 3 + key.utf8.count + value.utf8.count
        case .structure(let fields): return fields.reduce(2) { $0 + $1.signatureLength }
        default: return 1
        }
    }
}

// MARK: - Convenience constructors and accessors

extension DBusValue {
    /// `a{sv}` from a Swift dictionary, sorted by key so output is stable.
    public static func vardict(_ entries: [String: DBusValue]) -> DBusValue {
        .dictionary(
            key: "s", value: "v",
            entries.sorted { $0.key < $1.key }.map { DictEntry(.string($0.key), .variant($0.value)) })
    }

    /// `as` from strings.
    public static func strings(_ values: [String]) -> DBusValue {
        .array(element: "s", values.map(DBusValue.string))
    }

    public var stringValue: String? {
        switch self {
        case .string(let s), .objectPath(let s), .signature(let s): return s
        default: return nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// Any integer type widened to Int64 (a uint64 above Int64.max gives nil).
    public var integerValue: Int64? {
        switch self {
        case .byte(let v): return Int64(v)
        case .int16(let v): return Int64(v)
        case .uint16(let v): return Int64(v)
        case .int32(let v): return Int64(v)
        case .uint32(let v): return Int64(v)
        case .int64(let v): return v
        case .uint64(let v): return v <= UInt64(Int64.max) ? Int64(v) : nil
        case .unixFD(let v): return Int64(v)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        if case .double(let d) = self { return d }
        return nil
    }

    /// The content of a variant; other values are returned as they are.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    /// Array elements, or nil for non-arrays.
    public var arrayElements: [DBusValue]? {
        if case .array(_, let elements) = self { return elements }
        return nil
    }

    /// The entries of an `a{s?}` dictionary keyed by string, or nil.
    public var stringKeyedEntries: [String: DBusValue]? {
        guard case .dictionary(let k, _, let entries) = self, k == "s" || k == "o" || k == "g" else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            if let key = entry.key.stringValue { result[key] = entry.value }
        }
        return result
    }
}

// MARK: - Signatures

/// Parsing and validation of D-Bus type signatures.
public enum Signature {
    /// Splits a signature into its single complete types, or nil when invalid.
    public static func split(_ signature: String) -> [String]? {
        var signature = signature
        return signature.withUTF8 { bytes -> [String]? in
            guard bytes.count <= 255 else { return nil }
            var result: [String] = []
            var index = 0
            while index < bytes.count {
                guard let end = completeTypeEnd(bytes, index, arrayDepth: 0, structDepth: 0) else { return nil }
                result.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<end]), as: UTF8.self))
                index = end
            }
            return result
        }
    }

    /// True when `signature` is a valid sequence of complete types.
    public static func isValid(_ signature: String) -> Bool {
        var signature = signature
        return signature.withUTF8 { bytes in
            guard bytes.count <= 255 else { return false }
            var index = 0
            while index < bytes.count {
                guard let end = completeTypeEnd(bytes, index, arrayDepth: 0, structDepth: 0) else { return false }
                index = end
            }
            return true
        }
    }

    /// True when `signature` is exactly one complete type.
    public static func isSingleCompleteType(_ signature: String) -> Bool {
        var signature = signature
        return signature.withUTF8 { bytes in
            // The common element types ("s", "v", "{sv}" inside "a{sv}") are one byte.
            if bytes.count == 1 { return isBasic(bytes[0]) || bytes[0] == UInt8(ascii: "v") }
            guard bytes.count <= 255 else { return false }
            return completeTypeEnd(bytes, 0, arrayDepth: 0, structDepth: 0) == bytes.count
        }
    }

    static func isBasic(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"),
            UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "x"), UInt8(ascii: "t"),
            UInt8(ascii: "d"), UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"),
            UInt8(ascii: "h"):
            return true
        default:
            return false
        }
    }

    /// The end index of the complete type that starts at `start`.
    static func completeTypeEnd(_ b: UnsafeBufferPointer<UInt8>, _ start: Int, arrayDepth: Int, structDepth: Int) -> Int? {
        guard start < b.count, arrayDepth <= 32, structDepth <= 32 else { return nil }
        let c = b[start]
        if isBasic(c) || c == UInt8(ascii: "v") { return start + 1 }
        switch c {
        case UInt8(ascii: "a"):
            let next = start + 1
            guard next < b.count else { return nil }
            if b[next] == UInt8(ascii: "{") {
                // dict entry: basic key, one complete value, '}'
                let keyIndex = next + 1
                guard keyIndex < b.count, isBasic(b[keyIndex]) else { return nil }
                guard let valueEnd = completeTypeEnd(b, keyIndex + 1, arrayDepth: arrayDepth + 1, structDepth: structDepth + 1),
                    valueEnd < b.count, b[valueEnd] == UInt8(ascii: "}")
                else { return nil }
                return valueEnd + 1
            }
            return completeTypeEnd(b, next, arrayDepth: arrayDepth + 1, structDepth: structDepth)
        case UInt8(ascii: "("):
            var index = start + 1
            guard index < b.count, b[index] != UInt8(ascii: ")") else { return nil }
            while index < b.count, b[index] != UInt8(ascii: ")") {
                guard let end = completeTypeEnd(b, index, arrayDepth: arrayDepth, structDepth: structDepth + 1) else { return nil }
                index = end
            }
            guard index < b.count else { return nil }
            return index + 1
        default:
            return nil
        }
    }
}

/// Object path validation (the D-Bus specification's rules).
public enum ObjectPath {
    public static func isValid(_ path: String) -> Bool {
        let bytes = path.utf8
        guard let first = bytes.first, first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousSlash = true
        for c in bytes.dropFirst() {
            if c == UInt8(ascii: "/") {
                if previousSlash { return false }
                previousSlash = true
            } else {
                guard isPathElementByte(c) else { return false }
                previousSlash = false
            }
        }
        return true
    }

    static func isPathElementByte(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "_")
    }

    /// True when `path` is `ancestor` or lies below it.
    public static func isDescendant(_ path: String, of ancestor: String) -> Bool {
        if ancestor == "/" { return true }
        return path == ancestor || path.hasPrefix(ancestor + "/")
    }
}
