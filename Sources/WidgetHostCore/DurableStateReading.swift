// Reading what `StateRecord.jsonText()` wrote, and the whole-state JSON of a
// version 1 snapshot, by hand from a parsed ``JSONValue``: the snapshot of
// 100,000 widgets is read before the host owns its name, and a general
// `Codable` decoder builds a container for every value of it. The shape is the one the synthesized
// `Codable` conformances read (which still read anything this cannot).

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

extension DurableState {
    /// The state a version 1 snapshot's JSON text holds, read one widget,
    /// activity or timeline at a time (the document is never held whole as values).
    /// - Throws: `JSONSyntaxError` for text that is not JSON, ``StateFormatError`` for JSON of another shape.
    public init(jsonText text: String) throws {
        self.init()
        var text = text
        var state = self
        try text.withUTF8 { bytes in
            var parser = JSONParser(bytes: bytes, lenient: false)
            try parser.members { parser, key in
                switch key {
                case "bundles": try Self.each(&parser, key) { (id, r) throws(StateFormatError) in state.bundles[id] = try r.string() }
                case "widgets": try Self.each(&parser, key) { (id, r) throws(StateFormatError) in state.widgets[id] = try StoredWidget(r) }
                case "activities": try Self.each(&parser, key) { (id, r) throws(StateFormatError) in state.activities[id] = try StoredActivity(r) }
                case "timelines": try Self.each(&parser, key) { (id, r) throws(StateFormatError) in state.timelines[id] = try StoredTimeline(r) }
                case "nextWidgetNumber": state.nextWidgetNumber = try Self.one(&parser, key) { r throws(StateFormatError) in try r.unsigned() }
                case "nextActivityNumber": state.nextActivityNumber = try Self.one(&parser, key) { r throws(StateFormatError) in try r.unsigned() }
                default: _ = try parser.memberValue()
                }
            }
            try parser.end()
        }
        self = state
    }

    /// Each member of the object at `name`, read as a value on its own.
    private static func each(_ parser: inout JSONParser, _ name: String, _ read: (String, StateReader) throws(StateFormatError) -> Void) throws {
        try parser.members { parser, key in
            let value = try parser.memberValue()
            do throws(StateFormatError) { try read(key, StateReader(value)) } catch {
                throw error.under("." + name + "." + key)
            }
        }
    }

    /// The value at `name`.
    private static func one<T>(_ parser: inout JSONParser, _ name: String, _ read: (StateReader) throws(StateFormatError) -> T) throws -> T {
        let value = try parser.memberValue()
        do throws(StateFormatError) { return try read(StateReader(value)) } catch {
            throw error.under("." + name)
        }
    }
}

extension StateRecord {
    /// The record one line's JSON holds. The objects around a widget,
    /// activity or timeline (its kind, `_0`) are read as they stream by, not
    /// built as values: a snapshot of 100,000 widgets is 100,000 records.
    /// - Throws: `JSONSyntaxError` for text that is not JSON, ``StateFormatError`` for JSON of another shape.
    public init(jsonText text: String) throws {
        var text = text
        var record: StateRecord?
        try text.withUTF8 { bytes in
            var parser = JSONParser(bytes: bytes, lenient: false)
            try parser.members { parser, name in
                guard record == nil else { throw Self.notOneKind }
                record = try Self.read(name, &parser)
            }
            try parser.end()
        }
        guard let record else { throw Self.notOneKind }
        self = record
    }

    private static let notOneKind = StateFormatError(path: "$", problem: "a record is an object with exactly one member, its kind")

    /// The record of kind `name`, whose value `parser` reads next.
    private static func read(_ name: String, _ parser: inout JSONParser) throws -> StateRecord {
        switch name {
        case "widget": return .widget(try unlabelled(name, &parser) { r throws(StateFormatError) in try StoredWidget(r) })
        case "activity": return .activity(try unlabelled(name, &parser) { r throws(StateFormatError) in try StoredActivity(r) })
        case "timeline": return .timeline(try unlabelled(name, &parser) { r throws(StateFormatError) in try StoredTimeline(r) })
        default:
            let reader = StateReader(try parser.memberValue())
            do throws(StateFormatError) { return try read(name, reader) } catch { throw error.under("." + name) }
        }
    }

    /// The value at `_0` in the object `parser` reads next: a record's unlabelled value.
    private static func unlabelled<T>(_ name: String, _ parser: inout JSONParser, _ read: (StateReader) throws(StateFormatError) -> T) throws -> T {
        var value: T?
        try parser.members { parser, key in
            let member = try parser.memberValue()
            guard key == "_0" else { return }
            do throws(StateFormatError) { value = try read(StateReader(member)) } catch { throw error.under("." + name + "._0") }
        }
        guard let value else { throw StateFormatError(path: "$", problem: "the member '_0' is missing").under("." + name) }
        return value
    }

    private static func read(_ name: String, _ reader: StateReader) throws(StateFormatError) -> StateRecord {
        switch name {
        case "bundle": .bundle(appID: try reader.string("appID"), json: try reader.string("json"))
        case "bundleRemoved": .bundleRemoved(appID: try reader.string("appID"))
        case "widgetRemoved": .widgetRemoved(id: try reader.string("id"))
        case "activityRemoved": .activityRemoved(id: try reader.string("id"))
        case "minted": .minted(widget: try reader.string("widget"), activity: try reader.string("activity"))
        default: throw StateFormatError(path: "$", problem: "'\(name)' is not a kind of record")
        }
    }
}

extension StoredWidget {
    init(_ reader: StateReader) throws(StateFormatError) {
        id = try reader.string("id")
        appID = try reader.string("appID")
        kind = try reader.string("kind")
        family = try reader.string("family")
        configuration = try reader.options("configuration")
        content = try reader.optional("content") { r throws(StateFormatError) in try r.string() }
    }
}

extension StoredActivity {
    init(_ reader: StateReader) throws(StateFormatError) {
        id = try reader.string("id")
        appID = try reader.string("appID")
        attributesType = try reader.string("attributesType")
        content = try reader.string("content")
        attributes = try reader.options("attributes")
        state = try reader.options("state")
        staleDate = try reader.optionalInteger("staleDate")
        relevance = try reader.double("relevance")
        startedAt = try reader.integer("startedAt")
        endedAt = try reader.optionalInteger("endedAt")
        removeAt = try reader.optionalInteger("removeAt")
    }
}

extension StoredTimeline {
    init(_ reader: StateReader) throws(StateFormatError) {
        widgetID = try reader.string("widgetID")
        entries = try reader.member("entries") { r throws(StateFormatError) in
            try r.array { (entry: StateReader) throws(StateFormatError) in Entry(at: try entry.integer("at"), content: try entry.string("content")) }
        }
        policy = try reader.string("policy")
        reloadAt = try reader.integer("reloadAt")
        receivedAt = try reader.integer("receivedAt")
    }
}

extension OptionValue {
    init(_ reader: StateReader) throws(StateFormatError) {
        guard case .object(let members) = reader.value else { throw reader.wrong("an object such as {\"s\":\"text\"}") }
        if members["s"] != nil {
            self = .string(try reader.string("s"))
        } else if members["o"] != nil {
            self = .objectPath(try reader.string("o"))
        } else if case .bool(let b)? = members["b"] {
            self = .bool(b)
        } else if members["x"] != nil {
            self = .int(try reader.integer("x"))
        } else if members["t"] != nil {
            self = .uint(try reader.unsigned("t"))
        } else if members["d"] != nil {
            self = .double(try reader.double("d"))
        } else if members["array"] != nil {
            self = .array(
                elementSignature: try reader.string("element"), try reader.member("array") { r throws(StateFormatError) in try r.array { item throws(StateFormatError) in try OptionValue(item) } })
        } else if members["dict"] != nil {
            self = .dict(try reader.options("dict"))
        } else {
            self = .other(signature: try reader.string("other"))
        }
    }
}

/// One value of a state file, read member by member. Where a problem is
/// (its path) is put together only when one is thrown, as it unwinds.
struct StateReader {
    let value: JSONValue

    init(_ value: JSONValue) { self.value = value }

    func wrong(_ expected: String) -> StateFormatError {
        StateFormatError(path: "$", problem: "expected \(expected), found \(value.typeName)")
    }

    /// Reads `value` with `read`, the problems it throws placed under `step` (".name", "[3]").
    private static func under<T>(_ step: String, _ value: JSONValue, _ read: (StateReader) throws(StateFormatError) -> T)
        throws(StateFormatError) -> T
    {
        do { return try read(StateReader(value)) } catch { throw error.under(step) }
    }

    func member<T>(_ name: String, _ read: (StateReader) throws(StateFormatError) -> T) throws(StateFormatError) -> T {
        guard case .object(let members) = value else { throw wrong("an object") }
        guard let found = members[name] else { throw StateFormatError(path: "$", problem: "the member '\(name)' is missing") }
        return try Self.under("." + name, found, read)
    }

    func optional<T>(_ name: String, _ read: (StateReader) throws(StateFormatError) -> T) throws(StateFormatError) -> T? {
        guard case .object(let members) = value else { throw wrong("an object") }
        guard let found = members[name], found != .null else { return nil }
        return try Self.under("." + name, found, read)
    }

    func string() throws(StateFormatError) -> String {
        guard case .string(let s) = value else { throw wrong("a string") }
        return s
    }

    func integer() throws(StateFormatError) -> Int64 {
        guard case .integer(let i) = value else { throw wrong("a whole number") }
        return i
    }

    /// An unsigned 64-bit number. The parser keeps whole numbers past
    /// `Int64.max` only as doubles, so those are refused rather than rounded.
    func unsigned() throws(StateFormatError) -> UInt64 {
        guard case .integer(let i) = value, i >= 0 else { throw wrong("a whole number from 0 to \(Int64.max)") }
        return UInt64(i)
    }

    func double() throws(StateFormatError) -> Double {
        switch value {
        case .integer(let i): return Double(i)
        case .number(let d): return d
        default: throw wrong("a number")
        }
    }

    func array<T>(_ read: (StateReader) throws(StateFormatError) -> T) throws(StateFormatError) -> [T] {
        guard case .array(let items) = value else { throw wrong("an array") }
        var result: [T] = []
        result.reserveCapacity(items.count)
        for (index, item) in items.enumerated() { result.append(try Self.under("[\(index)]", item, read)) }
        return result
    }

    func map<T>(_ read: (StateReader) throws(StateFormatError) -> T) throws(StateFormatError) -> [String: T] {
        guard case .object(let members) = value else { throw wrong("an object") }
        var result: [String: T] = [:]
        result.reserveCapacity(members.count)
        for (key, item) in members { result[key] = try Self.under("." + key, item, read) }
        return result
    }

    func string(_ name: String) throws(StateFormatError) -> String { try member(name) { r throws(StateFormatError) in try r.string() } }
    func integer(_ name: String) throws(StateFormatError) -> Int64 { try member(name) { r throws(StateFormatError) in try r.integer() } }
    func unsigned(_ name: String) throws(StateFormatError) -> UInt64 { try member(name) { r throws(StateFormatError) in try r.unsigned() } }
    func double(_ name: String) throws(StateFormatError) -> Double { try member(name) { r throws(StateFormatError) in try r.double() } }
    func map<T>(_ name: String, _ read: (StateReader) throws(StateFormatError) -> T) throws(StateFormatError) -> [String: T] {
        try member(name) { r throws(StateFormatError) in try r.map(read) }
    }
    func options(_ name: String) throws(StateFormatError) -> [String: OptionValue] {
        try map(name) { r throws(StateFormatError) in try OptionValue(r) }
    }
    func optionalInteger(_ name: String) throws(StateFormatError) -> Int64? {
        try optional(name) { r throws(StateFormatError) in try r.integer() }
    }
}
