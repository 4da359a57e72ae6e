// A dictionary of option values packed into bytes, for values the host holds
// by the hundred thousand and reads only now and then: a placed widget's
// configuration. A `[String: OptionValue]` of one entry takes two allocations
// (the table and the boxed value) of 160 bytes; packed, the same entry takes
// a few bytes in its widget's own allocation (docs/daemon.md#footprint).
//
// The format is private to one process — nothing packed is stored or sent —
// so it needs no version: keys in order, each a length and its UTF-8, then a
// tag byte and the value; numbers and lengths as LEB128, signed numbers
// zigzagged, doubles as their 8 bytes.

extension OptionValue {
    private enum Tag: UInt8 {
        case string, objectPath, falseValue, trueValue, int, uint, double, array, dict, other
    }

    /// `dictionary` as bytes (keys sorted, so equal dictionaries pack the same), appended to `bytes`.
    static func pack(_ dictionary: [String: OptionValue], into bytes: inout [UInt8]) {
        appendNumber(UInt64(dictionary.count), to: &bytes)
        for (key, value) in dictionary.sorted(by: { $0.key < $1.key }) {
            appendString(key, to: &bytes)
            value.pack(into: &bytes)
        }
    }

    /// `dictionary` as bytes: none for an empty one, the most common.
    static func packed(_ dictionary: [String: OptionValue]) -> [UInt8] {
        var bytes: [UInt8] = []
        if !dictionary.isEmpty { pack(dictionary, into: &bytes) }
        return bytes
    }

    /// The dictionary ``pack(_:into:)`` or ``packed(_:)`` wrote at the start of `bytes`.
    static func unpack(_ bytes: UnsafeRawBufferPointer) -> [String: OptionValue] {
        guard !bytes.isEmpty else { return [:] }
        var reader = PackedReader(bytes: bytes)
        return reader.dictionary()
    }

    private var tag: Tag {
        switch self {
        case .string: .string
        case .objectPath: .objectPath
        case .bool(let b): b ? .trueValue : .falseValue
        case .int: .int
        case .uint: .uint
        case .double: .double
        case .array: .array
        case .dict: .dict
        case .other: .other
        }
    }

    private func pack(into bytes: inout [UInt8]) {
        bytes.append(tag.rawValue)
        switch self {
        case .string(let text), .objectPath(let text), .other(signature: let text): Self.appendString(text, to: &bytes)
        case .bool: break
        case .int(let x): Self.appendNumber(UInt64(bitPattern: (x << 1) ^ (x >> 63)), to: &bytes)
        case .uint(let t): Self.appendNumber(t, to: &bytes)
        case .double(let d): withUnsafeBytes(of: d.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        case .array(let element, let items):
            Self.appendString(element, to: &bytes)
            Self.appendNumber(UInt64(items.count), to: &bytes)
            for item in items { item.pack(into: &bytes) }
        case .dict(let entries): Self.pack(entries, into: &bytes)
        }
    }

    static func appendNumber(_ number: UInt64, to bytes: inout [UInt8]) {
        var rest = number
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    private static func appendString(_ string: String, to bytes: inout [UInt8]) {
        appendNumber(UInt64(string.utf8.count), to: &bytes)
        bytes.append(contentsOf: string.utf8)
    }

    /// Reads what `pack` (or another packing of these numbers and strings,
    /// such as ``TapIndex``'s) wrote; only ever given bytes it wrote, so it
    /// does not check them.
    struct PackedReader {
        let bytes: UnsafeRawBufferPointer
        var at = 0

        mutating func number() -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = bytes[at]
                at += 1
                result |= UInt64(byte & 0x7f) << shift
                if byte < 0x80 { return result }
                shift += 7
            }
        }

        var atEnd: Bool { at == bytes.count }

        mutating func byte() -> UInt8 {
            defer { at += 1 }
            return bytes[at]
        }

        /// The bytes of a string (or any run of bytes) packed with its length.
        mutating func counted() -> UnsafeRawBufferPointer {
            let count = Int(number())
            defer { at += count }
            return UnsafeRawBufferPointer(rebasing: bytes[at..<at + count])
        }

        mutating func string() -> String { String(decoding: counted(), as: UTF8.self) }

        mutating func dictionary() -> [String: OptionValue] {
            let count = Int(number())
            var result: [String: OptionValue] = [:]
            result.reserveCapacity(count)
            for _ in 0..<count {
                let key = string()
                result[key] = value()
            }
            return result
        }

        mutating func value() -> OptionValue {
            let tag = Tag(rawValue: bytes[at])!
            at += 1
            switch tag {
            case .string: return .string(string())
            case .objectPath: return .objectPath(string())
            case .falseValue: return .bool(false)
            case .trueValue: return .bool(true)
            case .int:
                let zigzag = number()
                return .int(Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1))
            case .uint: return .uint(number())
            case .double:
                var pattern: UInt64 = 0
                withUnsafeMutableBytes(of: &pattern) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[at..<at + 8])) }
                at += 8
                return .double(Double(bitPattern: UInt64(littleEndian: pattern)))
            case .array:
                let element = string()
                let count = Int(number())
                var items: [OptionValue] = []
                items.reserveCapacity(count)
                for _ in 0..<count { items.append(value()) }
                return .array(elementSignature: element, items)
            case .dict: return .dict(dictionary())
            case .other: return .other(signature: string())
            }
        }
    }
}
