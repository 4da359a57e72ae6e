// The durable state as JSON, both ways. Each value the state files hold is
// a ``DurableValue``, whose writing and reading (`init(reading:)`) sit side by
// side. A record of fixed members (a widget, a Live Activity, a timeline) is
// a ``DurableRecord``: its members are named once, in ``DurableRecord/fields(_:)``,
// which writing and reading both go through, so the two cannot disagree on a
// key, a type or an order (docs/interfaces.md#durable-records says how to
// add a kind of record).
//
// Both directions run on the host's thread for every change it
// acknowledges, and reading runs over the 100,000 widgets of a snapshot
// before the host owns its name: the writer fills one buffer, the reader
// steps through the text a value at a time (``StateReader``) and builds no
// value a record does not keep.

/// A value of the durable state: how it is written as JSON and read back.
protocol DurableValue {
    /// Writes the value as JSON.
    /// - Throws: ``JSONWriter/NotFinite`` for a NaN or infinite double, which JSON cannot hold.
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite)
    /// Reads the value `reader` is at.
    /// - Throws: `JSONSyntaxError` for text that is not JSON, ``StateFormatError`` for JSON of another shape.
    init(reading reader: StateReader) throws
    /// Whether a member holding this value is left out (a nil optional).
    var isAbsent: Bool { get }
    /// What a member left out reads as; nil when the member is required.
    static var absent: Self? { get }
}

extension DurableValue {
    var isAbsent: Bool { false }
    static var absent: Self? { nil }

    /// The value as one line of JSON.
    /// - Throws: ``JSONWriter/NotFinite`` for a NaN or infinite double, which JSON cannot hold.
    func durableJSON() throws(JSONWriter.NotFinite) -> String {
        var writer = JSONWriter()
        try write(to: &writer)
        return writer.text
    }

    /// The value JSON `text` holds, and nothing after it.
    /// - Throws: `JSONSyntaxError` for text that is not JSON, ``StateFormatError`` for JSON of another shape.
    init(durableJSON text: String) throws {
        var text = text
        self = try text.withUTF8 { bytes in
            let reader = StateReader(JSONParser(bytes: bytes, lenient: false))
            let value = try Self(reading: reader)
            try reader.end()
            return value
        }
    }
}

/// A value of fixed members, each named once by ``fields(_:)``.
protocol DurableRecord: DurableValue {
    /// A value whose every field reading replaces, or throws: never seen outside.
    init()
    /// Hands `fields` each member — its key and the property that holds it —
    /// in the order they are written. Writing reads the properties; reading
    /// sets those whose member it finds, then checks that every member that is
    /// not optional was there.
    mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure)
}

/// What ``DurableRecord/fields(_:)`` hands the members to: a writer, or one of the reader's steps.
protocol DurableFields {
    associatedtype Failure: Error
    mutating func field<Value: DurableValue>(_ key: StaticString, _ value: inout Value) throws(Failure)
}

extension DurableRecord {
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        var record = self
        try writer.object { (members: inout JSONWriter.Members) throws(JSONWriter.NotFinite) in try record.fields(&members) }
    }

    init(reading reader: StateReader) throws {
        self.init()
        var found: UInt64 = 0
        try reader.members { key in
            var match = FieldMatch(key: key, reader: reader)
            try fields(&match)
            guard let index = match.found else { return try reader.skip() }
            found |= 1 << index
        }
        var check = FieldCheck(found: found)
        try fields(&check)
    }
}

extension JSONWriter.Members: DurableFields {
    /// `"key":value`, unless the value is left out (a nil optional).
    mutating func field<Value: DurableValue>(_ key: StaticString, _ value: inout Value) throws(JSONWriter.NotFinite) {
        guard !value.isAbsent else { return }
        try member(key) { (writer: inout JSONWriter) throws(JSONWriter.NotFinite) in try value.write(to: &writer) }
    }
}

/// Reads the value of the member `key` into the field of that key, if the record has one.
private struct FieldMatch: DurableFields {
    let key: String
    let reader: StateReader
    private var index = 0
    /// The field's number, once read.
    private(set) var found: Int?

    init(key: String, reader: StateReader) {
        self.key = key
        self.reader = reader
    }

    mutating func field<Value: DurableValue>(_ name: StaticString, _ value: inout Value) throws {
        defer { index += 1 }
        guard found == nil, name.utf8CodeUnitCount == key.utf8.count, name.withUTF8Buffer({ key.utf8.elementsEqual($0) }) else { return }
        precondition(index < 64, "a record has at most 64 fields")
        value = try Value(reading: reader)
        found = index
    }
}

/// Gives each field whose member was not found its absent value, or says which is missing.
private struct FieldCheck: DurableFields {
    let found: UInt64
    private var index = 0

    init(found: UInt64) { self.found = found }

    mutating func field<Value: DurableValue>(_ name: StaticString, _ value: inout Value) throws(StateFormatError) {
        defer { index += 1 }
        guard found & (1 << index) == 0 else { return }
        guard let absent = Value.absent else { throw StateFormatError(path: "$", problem: "the member '\(name)' is missing") }
        value = absent
    }
}

// MARK: - Values

extension String: DurableValue {
    func write(to writer: inout JSONWriter) { writer.string(self) }
    init(reading reader: StateReader) throws { self = try reader.string() }
}

extension Int64: DurableValue {
    func write(to writer: inout JSONWriter) { writer.integer(self) }
    init(reading reader: StateReader) throws { self = try reader.integer() }
}

extension UInt64: DurableValue {
    func write(to writer: inout JSONWriter) { writer.integer(self) }
    init(reading reader: StateReader) throws { self = try reader.unsigned() }
}

extension Double: DurableValue {
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) { try writer.double(self) }
    init(reading reader: StateReader) throws { self = try reader.double() }
}

extension Bool: DurableValue {
    func write(to writer: inout JSONWriter) { writer.bool(self) }
    init(reading reader: StateReader) throws { self = try reader.bool() }
}

/// A member that may be left out: written only when there is a value, read as nil when it is missing or `null`.
extension Optional: DurableValue where Wrapped: DurableValue {
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        if let self { try self.write(to: &writer) } else { writer.null() }
    }

    init(reading reader: StateReader) throws {
        self = try reader.null() ? nil : Wrapped(reading: reader)
    }

    var isAbsent: Bool { self == nil }
    static var absent: Self? { .some(nil) }
}

extension Array: DurableValue where Element: DurableValue {
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        try writer.array(self) { (writer: inout JSONWriter, item: Element) throws(JSONWriter.NotFinite) in try item.write(to: &writer) }
    }

    init(reading reader: StateReader) throws {
        self = []
        try reader.items { self.append(try Element(reading: reader)) }
    }
}

extension Dictionary: DurableValue where Key == String, Value: DurableValue {
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        try writer.object(self) { (writer: inout JSONWriter, value: Value) throws(JSONWriter.NotFinite) in try value.write(to: &writer) }
    }

    init(reading reader: StateReader) throws {
        self = [:]
        try reader.members { key in self[key] = try Value(reading: reader) }
    }
}

/// An option value is an object whose one member says its D-Bus type and
/// holds it: `{"s":"text"}`, `{"x":-1}`, `{"element":"s","array":[…]}`, `{"dict":{…}}`.
extension OptionValue: DurableValue {
    /// The members, for both directions; `element` goes with `array`.
    private enum Member: String {
        case s, o, b, x, t, d, element, array, dict, other
    }

    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        try writer.object { (o: inout JSONWriter.Members) throws(JSONWriter.NotFinite) in
            switch self {
            case .string(let s): try o.member(Member.s.rawValue, s)
            case .objectPath(let path): try o.member(Member.o.rawValue, path)
            case .bool(let b): try o.member(Member.b.rawValue, b)
            case .int(let x): try o.member(Member.x.rawValue, x)
            case .uint(let t): try o.member(Member.t.rawValue, t)
            case .double(let d): try o.member(Member.d.rawValue, d)
            case .array(let element, let items):
                try o.member(Member.element.rawValue, element)
                try o.member(Member.array.rawValue, items)
            case .dict(let fields): try o.member(Member.dict.rawValue, fields)
            case .other(let signature): try o.member(Member.other.rawValue, signature)
            }
        }
    }

    init(reading reader: StateReader) throws {
        var value: OptionValue?
        var element: String?
        var items: [OptionValue]?
        var types: [String] = []
        try reader.members { key in
            guard let member = Member(rawValue: key) else { return try reader.skip() }
            if member != .element { types.append(key) }
            switch member {
            case .s: value = .string(try reader.string())
            case .o: value = .objectPath(try reader.string())
            case .b: value = .bool(try reader.bool())
            case .x: value = .int(try reader.integer())
            case .t: value = .uint(try reader.unsigned())
            case .d: value = .double(try reader.double())
            case .element: element = try reader.string()
            case .array: items = try [OptionValue](reading: reader)
            case .dict: value = .dict(try [String: OptionValue](reading: reader))
            case .other: value = .other(signature: try reader.string())
            }
        }
        guard types.count == 1 else {
            throw StateFormatError(
                path: "$",
                problem: types.isEmpty
                    ? "an option value holds one of the members s, o, b, x, t, d, array, dict and other; it has none"
                    : "an option value holds one of the members s, o, b, x, t, d, array, dict and other; it has \(types.joined(separator: ", "))")
        }
        if let items {
            guard let element else { throw StateFormatError(path: "$", problem: "the member 'element' is missing: an array says the signature of its items") }
            value = .array(elementSignature: element, items)
        }
        self = value!
    }
}

extension JSONWriter.Members {
    /// `"key":value` for a key of a table of keys.
    mutating func member<Value: DurableValue>(_ key: String, _ value: Value) throws(JSONWriter.NotFinite) {
        try member(named: key) { (writer: inout JSONWriter) throws(JSONWriter.NotFinite) in try value.write(to: &writer) }
    }
}

// MARK: - Reading

/// What in a state file is not the shape the host writes.
public struct StateFormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where, as a JSON path (`$.widgets.w7.configuration`).
    public var path: String
    public var problem: String
    public var description: String { "\(path): \(problem)" }

    /// The same problem, met inside the value at `step` (".name", "[3]").
    func under(_ step: String) -> StateFormatError {
        StateFormatError(path: "$" + step + path.dropFirst(), problem: problem)
    }
}

/// Steps through the JSON of a state file a value at a time, as the
/// ``DurableValue``s ask for them. Where a problem is (its path) is put
/// together only when one is thrown, as it unwinds.
///
/// A reference, so that the members of a record can be read in whatever
/// order they come, each by the field of its key, through one parser.
final class StateReader {
    private var parser: JSONParser
    /// How deep the value being read is nested: deeper than the parser
    /// allows is refused rather than risking the stack.
    private var depth = 0

    init(_ parser: JSONParser) { self.parser = parser }

    /// After the document's value: nothing but space may follow.
    func end() throws { try parser.end() }

    /// Hands `read` the key of each member of the object that is next, the
    /// reader then at the member's value, which `read` must read (or ``skip()``).
    func members(_ read: (String) throws -> Void) throws {
        guard parser.nextValueByte() == UInt8(ascii: "{") else { throw wrong("an object") }
        try nested { () throws in
            try parser.openObject()
            var first = true
            while let key = try parser.nextKey(first: first) {
                first = false
                do { try read(key) } catch let error as StateFormatError { throw error.under("." + key) }
            }
        }
    }

    /// Calls `read` for each item of the array that is next, the reader then at the item.
    func items(_ read: () throws -> Void) throws {
        guard parser.nextValueByte() == UInt8(ascii: "[") else { throw wrong("an array") }
        try nested { () throws in
            try parser.openArray()
            var index = 0
            while try parser.nextItem(first: index == 0) {
                do { try read() } catch let error as StateFormatError { throw error.under("[\(index)]") }
                index += 1
            }
        }
    }

    private func nested(_ read: () throws -> Void) throws {
        depth += 1
        defer { depth -= 1 }
        guard depth <= JSONParser.maxDepth else { throw StateFormatError(path: "$", problem: "the value nests deeper than \(JSONParser.maxDepth) levels") }
        try read()
    }

    func string() throws -> String {
        guard parser.nextValueByte() == UInt8(ascii: "\"") else { throw wrong("a string") }
        return try parser.stringValue()
    }

    func integer() throws -> Int64 {
        guard case .integer(let integer) = try number(expected: "a whole number") else { throw Self.notWhole }
        return integer
    }

    func unsigned() throws -> UInt64 {
        let expected = "a whole number from 0 to \(UInt64.max)"
        guard isNumber else { throw wrong(expected) }
        guard let unsigned = try parser.unsignedValue() else { throw StateFormatError(path: "$", problem: "expected \(expected), found another number") }
        return unsigned
    }

    func double() throws -> Double {
        switch try number(expected: "a number") {
        case .integer(let integer): return Double(integer)
        case .number(let number): return number
        default: throw wrong("a number")
        }
    }

    private static let notWhole = StateFormatError(path: "$", problem: "expected a whole number, found a number with a fraction or too large")

    /// The number that is next.
    private func number(expected: String) throws -> JSONValue {
        guard isNumber else { throw wrong(expected) }
        return try parser.numberValue()
    }

    func bool() throws -> Bool {
        let byte = parser.nextValueByte()
        guard byte == UInt8(ascii: "t") || byte == UInt8(ascii: "f") else { throw wrong("true or false") }
        return try parser.literalValue() == .bool(true)
    }

    /// Steps past a `null` that is next: whether there was one.
    func null() throws -> Bool {
        guard parser.nextValueByte() == UInt8(ascii: "n") else { return false }
        _ = try parser.literalValue()
        return true
    }

    /// Steps over the value that is next, which no field reads.
    func skip() throws { try parser.skipValue() }

    private var isNumber: Bool {
        guard let byte = parser.nextValueByte() else { return false }
        return byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// That the value that is next is not `expected`, naming what it is.
    func wrong(_ expected: String) -> StateFormatError {
        let found: String
        switch parser.nextValueByte() {
        case UInt8(ascii: "{"): found = "an object"
        case UInt8(ascii: "["): found = "an array"
        case UInt8(ascii: "\""): found = "a string"
        case UInt8(ascii: "t"), UInt8(ascii: "f"): found = "a boolean"
        case UInt8(ascii: "n"): found = "null"
        case nil: found = "the end of the text"
        default: found = "a number"
        }
        return StateFormatError(path: "$", problem: "expected \(expected), found \(found)")
    }
}
