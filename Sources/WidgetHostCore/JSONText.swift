#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// JSON text in and out, in one pass over UTF-8 bytes: every view tree, bundle
// and journal line goes through here on the host's thread, so neither side
// builds the intermediate containers a general `Codable` coder does.

/// A key given more than once in one JSON object. RFC 8259 leaves the meaning
/// of such an object to the parser and I-JSON (RFC 7493) forbids it: this host's
/// parser keeps the first value while GLib, Python and JavaScript — every
/// renderer — keep the last, so one document could show one URL and open another.
public struct JSONDuplicateKey: Sendable, Equatable {
    /// Where the object is, like `$.children[2]`.
    public var path: String
    public var key: String

    /// `InvalidContent`'s message, for the document named `what` ("content", "the bundle").
    public func message(in what: String) -> String {
        "\(what): \(path) has the key '\(Validate.prefix(key, 32))' more than once; parsers disagree on which value counts (renderers keep the last), so give each key once"
    }
}

/// Text that is not JSON (RFC 8259): where, and what was found instead.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 1-based line and column (in bytes) of the problem.
    public var line: Int
    public var column: Int
    public var problem: String

    public var description: String { "line \(line), column \(column): \(problem)" }
}

extension JSONValue {
    /// Parses JSON text (RFC 8259, strict: no trailing commas, no comments) and
    /// lists every key given twice in one object, in the order they appear; of
    /// such keys the first value is kept. `lenient` also takes a comma before a
    /// closing bracket, as text this host stored before it was strict may have.
    public static func decode(_ text: String, lenient: Bool = false) throws(JSONSyntaxError) -> (
        value: JSONValue, duplicateKeys: [JSONDuplicateKey]
    ) {
        var text = text
        let result = text.withUTF8 { bytes in
            var parser = JSONParser(bytes: bytes, lenient: lenient)
            return Result { () throws(JSONSyntaxError) in (try parser.document(), parser.duplicates) }
        }
        return try result.get()
    }

    /// The value as compact JSON text. Object keys come in the dictionary's
    /// order; a number that is not finite (which JSON cannot hold) is `null`.
    public var jsonText: String {
        var writer = JSONWriter()
        writer.value(self)
        return writer.text
    }

    /// The value as JSON text that reads the same each time, for people and
    /// scripts: object keys sorted; `pretty` puts each item and member on a line
    /// of its own, two spaces deeper per level, and writes an empty array or
    /// object as `[]` or `{}`. A number that is not finite is `null`.
    public func stableJSONText(pretty: Bool = false) -> String {
        var writer = JSONWriter()
        writer.stableValue(self, level: pretty ? 0 : nil)
        return writer.text
    }
}

/// The parser behind ``JSONValue/decode(_:lenient:)``: recursive descent over
/// the bytes, nesting at most ``maxDepth`` deep (callers check their own, lower
/// limits first), paths built only when a duplicate key is found.
struct JSONParser {
    /// Deeper text is refused rather than risking the stack.
    static let maxDepth = 512

    private enum Step { case key(String), index(Int) }

    private let bytes: UnsafeBufferPointer<UInt8>
    private let lenient: Bool
    private var at = 0
    private var path: [Step] = []
    private(set) var duplicates: [JSONDuplicateKey] = []

    init(bytes: UnsafeBufferPointer<UInt8>, lenient: Bool) {
        self.bytes = bytes
        self.lenient = lenient
    }

    mutating func document() throws(JSONSyntaxError) -> JSONValue {
        // A byte order mark may lead the text (RFC 8259 §8.1 lets parsers ignore it).
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { at = 3 }
        let value = try self.value(depth: 0)
        skipSpace()
        guard at == bytes.count else { throw fail("unexpected \(found) after the value; a document holds one value") }
        return value
    }

    /// Reads an object member by member, handing `body` each key with the
    /// parser at its value, which `body` must read (``memberValue()``, or
    /// ``members(_:)`` again): a large document is then never held whole as
    /// ``JSONValue``s. Keys given twice are read twice.
    mutating func members(_ body: (inout JSONParser, String) throws -> Void) throws {
        skipSpace()
        guard peek(UInt8(ascii: "{")) else { throw fail("expected an object, found \(found)") }
        skipSpace()
        if peek(UInt8(ascii: "}")) { return }
        while true {
            skipSpace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a key in double quotes, found \(found)") }
            let key = try string()
            skipSpace()
            guard peek(UInt8(ascii: ":")) else { throw fail("expected ':' after the key \"\(Validate.prefix(key, 32))\", found \(found)") }
            try body(&self, key)
            skipSpace()
            if peek(UInt8(ascii: "}")) { return }
            guard peek(UInt8(ascii: ",")) else { throw fail("expected ',' or '}' after a value in an object, found \(found)") }
        }
    }

    /// The value the parser is at, within ``members(_:)``.
    mutating func memberValue() throws(JSONSyntaxError) -> JSONValue { try value(depth: 1) }

    /// After the document's value: nothing but space may follow.
    mutating func end() throws(JSONSyntaxError) {
        skipSpace()
        guard at == bytes.count else { throw fail("unexpected \(found) after the value; a document holds one value") }
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        skipSpace()
        guard at < bytes.count else { throw fail("the text ends where a value should be") }
        switch bytes[at] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail("expected a value (an object, array, string, number, true, false or null), found \(found)")
        }
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= Self.maxDepth else { throw fail("the text nests deeper than \(Self.maxDepth) levels") }
        at += 1
        skipSpace()
        if peek(UInt8(ascii: "}")) { return .object([:]) }
        // Room for an element's few keys at once: growing by one rehashes every key.
        var fields = [String: JSONValue](minimumCapacity: 4)
        while true {
            skipSpace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else {
                throw fail("expected a key in double quotes, found \(found)")
            }
            let key = try string()
            skipSpace()
            guard peek(UInt8(ascii: ":")) else { throw fail("expected ':' after the key \"\(Validate.prefix(key, 32))\", found \(found)") }
            path.append(.key(key))
            let mark = duplicates.count
            let item = try value(depth: depth)
            path.removeLast()
            // One lookup for the common case; a key given twice keeps its first value,
            // and is listed before the keys its second value repeats.
            if let first = fields.updateValue(item, forKey: key) {
                fields[key] = first
                duplicates.insert(JSONDuplicateKey(path: pathText, key: key), at: mark)
            }
            skipSpace()
            if peek(UInt8(ascii: "}")) { return .object(fields) }
            guard peek(UInt8(ascii: ",")) else { throw fail("expected ',' or '}' after a value in an object, found \(found)") }
            if try trailingComma(before: UInt8(ascii: "}")) { return .object(fields) }
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= Self.maxDepth else { throw fail("the text nests deeper than \(Self.maxDepth) levels") }
        at += 1
        var items: [JSONValue] = []
        skipSpace()
        if peek(UInt8(ascii: "]")) { return .array(items) }
        while true {
            path.append(.index(items.count))
            items.append(try value(depth: depth))
            path.removeLast()
            skipSpace()
            if peek(UInt8(ascii: "]")) { return .array(items) }
            guard peek(UInt8(ascii: ",")) else { throw fail("expected ',' or ']' after a value in an array, found \(found)") }
            if try trailingComma(before: UInt8(ascii: "]")) { return .array(items) }
        }
    }

    /// After a comma: true (and past the bracket) when `close` follows and the
    /// parser is lenient; a strict parser names the comma.
    private mutating func trailingComma(before close: UInt8) throws(JSONSyntaxError) -> Bool {
        skipSpace()
        guard at < bytes.count, bytes[at] == close else { return false }
        guard lenient else { throw fail("a ',' before '\(Character(Unicode.Scalar(close)))': remove the trailing comma") }
        at += 1
        return true
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        at += 1
        let start = at
        // Most strings hold no escape: take their bytes as they are.
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                defer { at += 1 }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            at += 1
        }
        var out = Array(bytes[start..<at])
        while at < bytes.count {
            let byte = bytes[at]
            switch byte {
            case UInt8(ascii: "\""):
                at += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                at += 1
                guard at < bytes.count else { break }
                let escape = bytes[at]
                at += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): out.append(contentsOf: String(try unicodeEscape()).utf8)
                default:
                    at -= 2
                    throw fail("'\\\(Character(Unicode.Scalar(escape)))' is not a JSON escape; use \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX")
                }
            default:
                guard byte >= 0x20 else { throw fail("a control character (U+\(hex4(UInt16(byte)))) inside a string; write it as an escape such as \\n or \\u00XX") }
                out.append(byte)
                at += 1
            }
        }
        throw fail("the text ends inside a string; close it with '\"'")
    }

    /// The scalar of `\uXXXX` (the `\u` just read), with its low surrogate when it is a high one.
    private mutating func unicodeEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
        let escapeStart = at - 2
        let unit = try hexUnit()
        switch unit {
        case 0xD800...0xDBFF:
            guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else {
                at = escapeStart
                throw fail("\\u\(hex4(unit)) is half of a surrogate pair, and the other half does not follow")
            }
            at += 2
            let low = try hexUnit()
            guard (0xDC00...0xDFFF).contains(low) else {
                at = escapeStart
                throw fail("\\u\(hex4(unit)) is half of a surrogate pair, and \\u\(hex4(low)) is not its other half")
            }
            return Unicode.Scalar(0x10000 + (UInt32(unit - 0xD800) << 10) + UInt32(low - 0xDC00))!
        case 0xDC00...0xDFFF:
            at = escapeStart
            throw fail("\\u\(hex4(unit)) is the second half of a surrogate pair without the first")
        default:
            return Unicode.Scalar(unit)!
        }
    }

    private mutating func hexUnit() throws(JSONSyntaxError) -> UInt16 {
        var unit: UInt16 = 0
        for _ in 0..<4 {
            guard at < bytes.count else { throw fail("the text ends inside a \\u escape") }
            let byte = bytes[at]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw fail("a \\u escape takes four hexadecimal digits, found \(found)")
            }
            unit = unit << 4 | UInt16(digit)
            at += 1
        }
        return unit
    }

    /// A number (`-? int frac? exp?`). Whole values that fit are integers, as
    /// the rest of the host reads them (`1.0` and `1e2` too); others doubles.
    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = at
        var whole = true
        if bytes[at] == UInt8(ascii: "-") { at += 1 }
        guard at < bytes.count, isDigit(bytes[at]) else { throw fail("a '-' must be followed by digits") }
        if bytes[at] == UInt8(ascii: "0") {
            at += 1
            if at < bytes.count, isDigit(bytes[at]) { throw fail("a number must not start with 0 unless it is 0 (found a leading zero)") }
        } else {
            while at < bytes.count, isDigit(bytes[at]) { at += 1 }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            whole = false
            at += 1
            guard at < bytes.count, isDigit(bytes[at]) else { throw fail("a '.' in a number must be followed by digits") }
            while at < bytes.count, isDigit(bytes[at]) { at += 1 }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            whole = false
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard at < bytes.count, isDigit(bytes[at]) else { throw fail("an exponent in a number must have digits") }
            while at < bytes.count, isDigit(bytes[at]) { at += 1 }
        }
        let digits = UnsafeBufferPointer(rebasing: bytes[start..<at])
        if whole {
            if let integer = Self.integer(digits) { return .integer(integer) }
        }
        let text = String(decoding: digits, as: UTF8.self)
        guard let double = Double(text), double.isFinite else {
            at = start
            throw fail("the number \(Validate.prefix(text, 32)) is too large for a double")
        }
        // 1.0, 1e2 and 1e-400 are whole; a whole literal too large for Int64 stays a double.
        if !whole, double == double.rounded(.towardZero), double >= -9_223_372_036_854_775_808.0, double < 9_223_372_036_854_775_808.0 {
            return .integer(Int64(double))
        }
        return .number(double)
    }

    /// The integer an optionally negative run of digits spells, if it fits Int64.
    private static func integer(_ digits: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = digits[0] == UInt8(ascii: "-")
        var magnitude: UInt64 = 0
        for byte in digits.dropFirst(negative ? 1 : 0) {
            let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            magnitude = sum
        }
        if negative { return magnitude <= UInt64(Int64.max) + 1 ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    private mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        let matches =
            at + count <= bytes.count
            && word.withUTF8Buffer { expected in (0..<count).allSatisfy { bytes[at + $0] == expected[$0] } }
        guard matches else { throw fail("expected a value (an object, array, string, number, true, false or null), found \(found)") }
        at += count
    }

    private mutating func skipSpace() {
        while at < bytes.count {
            switch bytes[at] {
            case 0x20, 0x09, 0x0A, 0x0D: at += 1
            default: return
            }
        }
    }

    /// Steps past `byte` if it is next.
    private mutating func peek(_ byte: UInt8) -> Bool {
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private func hex4(_ unit: UInt16) -> String {
        let digits = String(unit, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// What is at the current position, for messages.
    private var found: String {
        guard at < bytes.count else { return "the end of the text" }
        let byte = bytes[at]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        if byte == 0x20 { return "a space" }
        return byte < 0x80 ? "the byte 0x\(String(byte, radix: 16, uppercase: true))" : "a non-ASCII character"
    }

    private var pathText: String {
        var text = "$"
        for step in path {
            switch step {
            case .key(let key): text += "." + Validate.prefix(key, 32)
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }

    private func fail(_ problem: String) -> JSONSyntaxError {
        var line = 1
        var lineStart = 0
        for index in 0..<min(at, bytes.count) where bytes[index] == 0x0A {
            line += 1
            lineStart = index + 1
        }
        return JSONSyntaxError(line: line, column: at - lineStart + 1, problem: problem)
    }
}

// MARK: - Reading value by value

/// What the state files' reader (`StateReader`) steps through a document
/// with: a value at a time, building only the values it asks for. Each
/// method reads the value the parser is at; the caller looks at
/// ``nextValueByte()`` first to know which kind it is.
extension JSONParser {
    /// The first byte of the next value, past any space (nil at the end of the text).
    mutating func nextValueByte() -> UInt8? {
        skipSpace()
        return at < bytes.count ? bytes[at] : nil
    }

    /// Steps into the object that is next; ``nextKey(first:)`` then reads its members.
    mutating func openObject() throws(JSONSyntaxError) {
        skipSpace()
        guard peek(UInt8(ascii: "{")) else { throw fail("expected an object, found \(found)") }
    }

    /// The key of the object's next member, the parser then at its value;
    /// nil, past the `}`, when the object ends. `first` before its first member.
    mutating func nextKey(first: Bool) throws(JSONSyntaxError) -> String? {
        skipSpace()
        if peek(UInt8(ascii: "}")) { return nil }
        if !first {
            guard peek(UInt8(ascii: ",")) else { throw fail("expected ',' or '}' after a value in an object, found \(found)") }
            skipSpace()
        }
        guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a key in double quotes, found \(found)") }
        let key = try string()
        skipSpace()
        guard peek(UInt8(ascii: ":")) else { throw fail("expected ':' after the key \"\(Validate.prefix(key, 32))\", found \(found)") }
        return key
    }

    /// Steps into the array that is next; ``nextItem(first:)`` then reads its items.
    mutating func openArray() throws(JSONSyntaxError) {
        skipSpace()
        guard peek(UInt8(ascii: "[")) else { throw fail("expected an array, found \(found)") }
    }

    /// Whether the array has another item, the parser then at it; false,
    /// past the `]`, when it ends. `first` before its first item.
    mutating func nextItem(first: Bool) throws(JSONSyntaxError) -> Bool {
        skipSpace()
        if peek(UInt8(ascii: "]")) { return false }
        if !first {
            guard peek(UInt8(ascii: ",")) else { throw fail("expected ',' or ']' after a value in an array, found \(found)") }
        }
        return true
    }

    /// The string that is next.
    mutating func stringValue() throws(JSONSyntaxError) -> String {
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail("expected a string, found \(found)") }
        return try string()
    }

    /// The number that is next, as ``JSONValue/decode(_:lenient:)`` reads it.
    mutating func numberValue() throws(JSONSyntaxError) -> JSONValue {
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: "-") || isDigit(bytes[at]) else { throw fail("expected a number, found \(found)") }
        return try number()
    }

    /// The number that is next when it is a whole number from 0 to
    /// `UInt64.max`, read exactly (a ``JSONValue`` holds those past
    /// `Int64.max` only as doubles); nil for any other number.
    mutating func unsignedValue() throws(JSONSyntaxError) -> UInt64? {
        skipSpace()
        let start = at
        if case .integer(let integer) = try numberValue() { return integer >= 0 ? UInt64(integer) : nil }
        var value: UInt64 = 0
        for byte in bytes[start..<at] {
            guard isDigit(byte) else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return nil }
            value = sum
        }
        return value
    }

    /// `true`, `false` or `null`, whichever is next.
    mutating func literalValue() throws(JSONSyntaxError) -> JSONValue {
        try value(depth: 0)
    }

    /// Steps over the value that is next, nested at most ``maxDepth`` deeper.
    mutating func skipValue() throws(JSONSyntaxError) {
        _ = try value(depth: 0)
    }

    /// Where the parser is, in bytes from the start of the text.
    var offset: Int { at }

    /// Steps over the value that is next without building any of it, in text
    /// this parser has read before (a view tree the host stored): brackets
    /// and quotes are matched, nothing else is checked again, but that it
    /// nests at most `limit` deep.
    mutating func skipReadValue(within limit: Int) throws(JSONSyntaxError) {
        skipSpace()
        var depth = 0
        repeat {
            guard at < bytes.count else { throw fail("the text ends inside a value") }
            switch bytes[at] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                guard depth <= limit else { throw fail("the text nests deeper than \(limit) levels here") }
                at += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                at += 1
            case UInt8(ascii: "\""):
                _ = try readString()
            case UInt8(ascii: ","), UInt8(ascii: ":"), 0x20, 0x09, 0x0A, 0x0D:
                at += 1
            default:
                // A number or a literal, up to what ends it.
                while at < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) {
                    at += 1
                }
            }
        } while depth > 0
    }

    /// Steps over the string that is next, in text this parser has read
    /// before, without building it: the range of its bytes between the
    /// quotes, and whether it holds an escape (when they are not its text).
    mutating func readString() throws(JSONSyntaxError) -> (bytes: Range<Int>, escaped: Bool) {
        skipSpace()
        guard peek(UInt8(ascii: "\"")) else { throw fail("expected a string, found \(found)") }
        let start = at
        var escaped = false
        while at < bytes.count {
            switch bytes[at] {
            case UInt8(ascii: "\""):
                at += 1
                return (start..<at - 1, escaped)
            case UInt8(ascii: "\\"):
                escaped = true
                at += 2
            default:
                at += 1
            }
        }
        throw fail("the text ends inside a string; close it with '\"'")
    }
}

/// Compact JSON text built in one buffer: what the journal, snapshots and
/// re-encoded view trees are written with.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// A string, quoted; `"`, `\` and control characters escaped, nothing else.
    public mutating func string(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func integer(_ value: some BinaryInteger) { raw(String(value)) }

    /// A double as the shortest text that reads back the same.
    /// - Throws: ``NotFinite`` for NaN and the infinities, which JSON cannot hold.
    public mutating func double(_ value: Double) throws(NotFinite) {
        guard value.isFinite else { throw NotFinite(value: value) }
        raw(value.description)
    }

    public mutating func bool(_ value: Bool) { raw(value ? "true" : "false") }

    public mutating func null() { raw("null") }

    /// A JSON value; a number that is not finite is written `null`.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let b): bool(b)
        case .integer(let i): integer(i)
        case .number(let d): if d.isFinite { raw(d.description) } else { null() }
        case .string(let s): string(s)
        case .array(let items): array(items) { $0.value($1) }
        case .object(let fields): object(fields) { $0.value($1) }
        }
    }

    /// ``value(_:)`` with object keys sorted; with a `level`, spread over
    /// lines and indented to that level (``JSONValue/stableJSONText(pretty:)``).
    mutating func stableValue(_ value: JSONValue, level: Int?) {
        func newline(_ depth: Int) {
            guard level != nil else { return }
            bytes.append(0x0A)
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
        }
        let depth = level ?? 0
        switch value {
        case .array(let items) where !items.isEmpty:
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(depth + 1)
                stableValue(item, level: level.map { $0 + 1 })
            }
            newline(depth)
            bytes.append(UInt8(ascii: "]"))
        case .object(let fields) where !fields.isEmpty:
            bytes.append(UInt8(ascii: "{"))
            for (index, key) in fields.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(depth + 1)
                string(key)
                raw(level == nil ? ":" : ": ")
                stableValue(fields[key]!, level: level.map { $0 + 1 })
            }
            newline(depth)
            bytes.append(UInt8(ascii: "}"))
        default:
            self.value(value)
        }
    }

    /// `[` items `]`, each written by `item`.
    public mutating func array<Items: Sequence, E: Error>(_ items: Items, _ item: (inout JSONWriter, Items.Element) throws(E) -> Void) throws(E) {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for element in items {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            try item(&self, element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// `{` key: value `}` for every entry, each value written by `value`.
    public mutating func object<V, E: Error>(_ fields: [String: V], _ value: (inout JSONWriter, V) throws(E) -> Void) throws(E) {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for (key, field) in fields {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            string(key)
            bytes.append(UInt8(ascii: ":"))
            try value(&self, field)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// An object with fixed keys: `body` writes its members with ``member(_:)``.
    public mutating func object<E: Error>(_ body: (inout Members) throws(E) -> Void) throws(E) {
        bytes.append(UInt8(ascii: "{"))
        var members = Members(writer: self)
        bytes = []
        defer { self = members.writer }
        try body(&members)
        members.writer.bytes.append(UInt8(ascii: "}"))
    }

    /// Members of an object being written: each `member` writes `"key":` and
    /// hands the writer over for its value.
    public struct Members {
        fileprivate var writer: JSONWriter
        private var first = true

        fileprivate init(writer: JSONWriter) { self.writer = writer }

        public mutating func member<E: Error>(_ key: StaticString, _ value: (inout JSONWriter) throws(E) -> Void) throws(E) {
            key.withUTF8Buffer { self.key($0) }
            try value(&writer)
        }

        /// ``member(_:_:)`` for a key known only when it runs (one of a table
        /// of keys), which, like a literal one, needs no escape.
        mutating func member<E: Error>(named key: String, _ value: (inout JSONWriter) throws(E) -> Void) throws(E) {
            var key = key
            key.withUTF8 { self.key($0) }
            try value(&writer)
        }

        /// `"key":`, after a comma unless it is the first member.
        private mutating func key(_ utf8: UnsafeBufferPointer<UInt8>) {
            if !first { writer.bytes.append(UInt8(ascii: ",")) }
            first = false
            writer.bytes.append(UInt8(ascii: "\""))
            writer.bytes.append(contentsOf: utf8)
            writer.bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        }

        /// `"key":"value"`.
        public mutating func string(_ key: StaticString, _ value: String) { member(key) { $0.string(value) } }

        /// `"key":value` for an integer.
        public mutating func integer(_ key: StaticString, _ value: some BinaryInteger) { member(key) { $0.integer(value) } }
    }

    private mutating func raw(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// A number JSON cannot hold.
    public struct NotFinite: Error, Sendable, CustomStringConvertible {
        public var value: Double
        public var description: String { "\(value) is not a finite number, which JSON cannot hold" }
    }
}
