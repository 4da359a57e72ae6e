#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Any JSON value, kept as it was so renderers get unknown keys untouched.
public indirect enum JSONValue: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .integer(i)
        } else if let d = try? container.decode(Double.self) {
            self = .number(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .integer(let i): try container.encode(i)
        case .number(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The value of a number (whole or not), or nil.
    public var numberValue: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .number(let d): return d
        default: return nil
        }
    }

    public var isNumber: Bool { numberValue != nil }

    /// A short name of the JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .integer, .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

/// One element of a view tree (docs/widgets.md).
public struct ViewElement: Sendable, Equatable {
    public var type: String
    public var id: String?
    public var children: [ViewElement]
    /// The `widgetURL` modifier, when the element carries one.
    public var widgetURL: String?
    /// Every key of the element as given, for renderers.
    public var fields: [String: JSONValue]

    public var url: String? { fields["url"]?.stringValue }
    public var action: String? { fields["action"]?.stringValue }
    public var parameter: JSONValue? { fields["parameter"] }
    public var isControl: Bool { type == "button" || type == "toggle" }
    /// A toggle's state as the tree shows it: its `isOn` key, false when absent.
    public var isOn: Bool { if case .bool(let on)? = fields["isOn"] { on } else { false } }

    /// What a tap on this toggle turns it to, the opposite of ``isOn``; nil
    /// for any other element (docs/widgets.md#toggles). It travels beside the
    /// action's parameter, which a toggle sends as given like a button, so an
    /// app's action takes the same parameter whichever control performs it.
    public var isOnAfterTap: Bool? { type == "toggle" ? !isOn : nil }
    public var isLink: Bool { type == "link" }
}

/// Limits on view trees, so one app's content cannot exhaust the host.
public struct ViewTreeLimits: Sendable, Equatable {
    public var maxBytes = HostDefaults.maxContentBytes
    public var maxDepth = HostDefaults.maxContentDepth
    public var maxElements = HostDefaults.maxContentElements
    public var maxURLLength = HostDefaults.maxURLLength
    public init() {}

    /// For what the host stored itself: what it acknowledged under its limits
    /// then is read back under any limits now (only the nesting stays bounded,
    /// for the parser's stack).
    public static let stored: ViewTreeLimits = {
        var limits = ViewTreeLimits()
        limits.maxBytes = .max
        limits.maxDepth = 1024
        limits.maxElements = .max
        limits.maxURLLength = .max
        return limits
    }()
}

/// A problem ``ViewTree/parseRecovering(_:limits:)`` went on past, with the
/// lint code that reports it (`duplicate-key`, `duplicate-id`, `invalid-url`).
public struct ContentProblem: Sendable, Equatable {
    public var code: LintCode
    /// What SetContent would refuse the tree with.
    public var error: HostError
}

/// A validated view tree, kept as its JSON text alone.
///
/// The elements cost several times their text in memory, and the host holds
/// every widget's content while a tap needs only a little of them, derived
/// when the content is stored (``TapIndex``): ``root`` parses them again each
/// time it is read (microseconds for a widget's tree). The text was validated
/// when the tree was made, so the parse cannot fail.
public struct ViewTree: Sendable, Equatable {
    /// The JSON text as given.
    public let json: String

    /// The root element, parsed from ``json``; read it once per use.
    public var root: ViewElement {
        Self.root(of: (try? JSONValue.decode(json, lenient: true).value) ?? .object([:]))
    }

    /// The root element of a tree decoded from validated text.
    static func root(of value: JSONValue) -> ViewElement {
        // Parsed as it was accepted: a tree a linter or a restore took while
        // recovering from a problem reads back the same way.
        var problems: [ContentProblem]? = []
        var ids = Set<String>()
        var count = 0
        var path = ElementPath("$")
        guard let root = try? Self.element(value, at: &path, depth: 1, limits: .stored, ids: &ids, count: &count, problems: &problems) else {
            // Unreachable: only validated text makes a ViewTree.
            return ViewElement(type: "vstack", id: nil, children: [], widgetURL: nil, fields: [:])
        }
        return root
    }

    /// Validates an already decoded tree whose root sits at `path` (`"$.lockScreen"`
    /// inside a Live Activity's content) and returns its root element. `count`
    /// carries the number of elements seen so far, so that several trees of one
    /// document share ``ViewTreeLimits/maxElements``.
    static func root(of value: JSONValue, at path: String, limits: ViewTreeLimits, count: inout Int) throws(HostError) -> ViewElement {
        var strict: [ContentProblem]? = nil
        var ids = Set<String>()
        var path = ElementPath(path)
        return try element(value, at: &path, depth: 1, limits: limits, ids: &ids, count: &count, problems: &strict)
    }

    /// Text already validated: by ``parse(_:limits:)``, or before the host
    /// stored it. A restore takes stored content back without parsing it
    /// again: the state files are checksummed, and a restore of 100,000
    /// widgets would otherwise parse every tree before the host owns its
    /// name. What an earlier host took under other rules reads back as
    /// ``root`` reads every tree, leniently.
    init(validated json: String) {
        self.json = json
    }

    /// Parses content JSON. Invalid content is `InvalidContent` saying where
    /// and what to fix; a tree over a limit is `LimitExceeded` naming it.
    public static func parse(_ json: String, limits: ViewTreeLimits = ViewTreeLimits()) throws(HostError) -> ViewTree {
        try parseWithRoot(json, limits: limits).tree
    }

    /// ``parse(_:limits:)``, with the root element the check built, for a
    /// caller that reads it at once: ``root`` would parse the text again.
    static func parseWithRoot(_ json: String, limits: ViewTreeLimits) throws(HostError) -> (tree: ViewTree, root: ViewElement) {
        var strict: [ContentProblem]? = nil
        return try parse(json, limits: limits, recovering: &strict)
    }

    /// Parses content JSON for a linter: duplicate ids and bad URLs are
    /// collected (in pre-order) instead of ending the parse, so every one of
    /// them can be reported. A duplicated id is dropped from the later element
    /// and a bad widgetURL from its element; other problems still throw.
    public static func parseRecovering(_ json: String, limits: ViewTreeLimits = ViewTreeLimits()) throws(HostError)
        -> (tree: ViewTree, problems: [ContentProblem])
    {
        var problems: [ContentProblem]? = []
        let tree = try parse(json, limits: limits, recovering: &problems).tree
        return (tree, problems ?? [])
    }

    private static func parse(_ json: String, limits: ViewTreeLimits, recovering problems: inout [ContentProblem]?) throws(HostError)
        -> (tree: ViewTree, root: ViewElement)
    {
        guard json.utf8.count <= limits.maxBytes else {
            throw .limitExceeded("content is \(json.utf8.count) bytes; the limit max-content-bytes is \(limits.maxBytes) bytes — send a smaller view tree")
        }
        guard depthOfNesting(json) <= limits.maxDepth * 2 + 2 else {
            throw .limitExceeded("content nests deeper than \(limits.maxDepth) elements (the limit max-content-depth); flatten the view tree")
        }
        let value: JSONValue
        let duplicates: [JSONDuplicateKey]
        do {
            (value, duplicates) = try JSONValue.decode(json, lenient: limits == .stored)
        } catch {
            throw .invalidContent("content is not valid JSON (\(error)); send a JSON object such as {\"type\":\"text\"}")
        }
        for duplicate in duplicates { try report(.invalidContent(duplicate.message(in: "content")), .duplicateKey, &problems) }
        var count = 0, ids = Set<String>()
        var path = ElementPath("$")
        let root = try element(value, at: &path, depth: 1, limits: limits, ids: &ids, count: &count, problems: &problems)
        return (ViewTree(validated: json), root)
    }

    /// Bracket depth of JSON text, computed without parsing (strings skipped).
    static func depthOfNesting(_ json: String) -> Int {
        var depth = 0, maximum = 0
        var inString = false, escaped = false
        for byte in json.utf8 {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                maximum = max(maximum, depth)
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
        }
        return maximum
    }

    /// Throws `error`, or records it when recovering.
    private static func report(_ error: HostError, _ code: LintCode, _ problems: inout [ContentProblem]?) throws(HostError) {
        guard problems != nil else { throw error }
        problems!.append(ContentProblem(code: code, error: error))
    }

    /// Where an element is, written out only for a message: validation
    /// passes every element, and building each one's path text cost more
    /// than checking it.
    private struct ElementPath: CustomStringConvertible {
        let root: String
        var indices: [Int] = []
        init(_ root: String) { self.root = root }
        var description: String { indices.reduce(root) { $0 + ".children[\($1)]" } }
    }

    private static func element(
        _ value: JSONValue, at path: inout ElementPath, depth: Int, limits: ViewTreeLimits, ids: inout Set<String>, count: inout Int,
        problems: inout [ContentProblem]?
    ) throws(HostError) -> ViewElement {
        guard case .object(let fields) = value else {
            throw .invalidContent("\(path) must be an element object with a \"type\", not \(value.typeName)")
        }
        count += 1
        guard count <= limits.maxElements else {
            throw .limitExceeded("content has more than \(limits.maxElements) elements (the limit max-content-elements); simplify the view tree")
        }
        guard depth <= limits.maxDepth else {
            throw .limitExceeded("content nests deeper than \(limits.maxDepth) elements (the limit max-content-depth); flatten the view tree")
        }
        guard case .string(let type)? = fields["type"], !type.isEmpty else {
            throw .invalidContent("\(path) needs a \"type\" string, e.g. \"text\", \"link\" or \"button\"")
        }
        var id: String?
        if let raw = fields["id"] {
            guard case .string(let s) = raw, !s.isEmpty else {
                throw .invalidContent("\(path) (\(type)): \"id\" must be a non-empty string, not \(raw.typeName)")
            }
            if ids.insert(s).inserted {
                id = s
            } else {
                try report(
                    .invalidContent("\(path) (\(type)): the id '\(Validate.prefix(s))' is used twice; ids must be unique within a tree"),
                    .duplicateID, &problems)
            }
        }
        var label: String { id.map { "\(path) (\(type) '\($0)')" } ?? "\(path) (\(type))" }
        var widgetURL: String?
        if let raw = fields["widgetURL"] {
            guard case .string(let s) = raw else { throw .invalidContent("\(label): \"widgetURL\" must be a string") }
            do {
                try checkURL(s, what: "\(label): widgetURL", limits: limits)
                widgetURL = s
            } catch {
                try report(error, .invalidURL, &problems)
            }
        }
        if type == "link" {
            guard case .string(let url)? = fields["url"] else {
                throw .invalidContent("\(label): a link needs a \"url\" string, e.g. \"tap-me-widget://show-red\"")
            }
            do { try checkURL(url, what: "\(label): url", limits: limits) } catch { try report(error, .invalidURL, &problems) }
        }
        if type == "button" || type == "toggle" {
            guard case .string(let action)? = fields["action"], !action.isEmpty else {
                throw .invalidContent("\(label): a \(type) needs an \"action\" string naming what it does")
            }
            if type == "toggle", let isOn = fields["isOn"] {
                guard case .bool = isOn else {
                    throw .invalidContent("\(label): a toggle's \"isOn\" must be true or false (the state it shows)")
                }
            }
        }
        var children: [ViewElement] = []
        if let raw = fields["children"] {
            guard case .array(let items) = raw else { throw .invalidContent("\(label): \"children\" must be an array of elements") }
            children.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                path.indices.append(index)
                children.append(try element(item, at: &path, depth: depth + 1, limits: limits, ids: &ids, count: &count, problems: &problems))
                path.indices.removeLast()
            }
        }
        return ViewElement(type: type, id: id, children: children, widgetURL: widgetURL, fields: fields)
    }

    /// Checks that `url` is an absolute URL (a scheme, ':' and more).
    public static func checkURL(_ url: String, what: String, limits: ViewTreeLimits) throws(HostError) {
        guard url.utf8.count <= limits.maxURLLength else {
            throw .limitExceeded("\(what) is \(url.utf8.count) bytes; URLs may be at most \(limits.maxURLLength) bytes (the limit max-url-length)")
        }
        guard URLParts.scheme(of: url) != nil else {
            throw .invalidContent("\(what) '\(url.prefix(80))' is not an absolute URL; give a scheme, like tap-me-widget://show-red")
        }
    }

    /// Elements from the root down to the element with `id`, or nil.
    public func path(to id: String) -> [ViewElement]? { root.path(to: id) }

    /// Every element in depth-first pre-order.
    public var elements: [ViewElement] { root.elements }

    /// The `widgetURL`s in depth-first pre-order.
    public var widgetURLs: [String] { root.widgetURLs }
}

// Walks of a parsed tree. Each reading of ``ViewTree/root`` parses the text,
// so whoever needs several walks reads the root once and walks it.
extension ViewElement {
    /// Elements from this one down to the element with `id`, or nil.
    public func path(to id: String) -> [ViewElement]? {
        if self.id == id { return [self] }
        for child in children {
            if let found = child.path(to: id) { return [self] + found }
        }
        return nil
    }

    /// This element and every one below it, in depth-first pre-order.
    public var elements: [ViewElement] {
        var result: [ViewElement] = []
        func walk(_ e: ViewElement) {
            result.append(e)
            e.children.forEach(walk)
        }
        walk(self)
        return result
    }

    /// The `widgetURL`s in depth-first pre-order (a tap reads them: walked
    /// without listing every element first).
    public var widgetURLs: [String] {
        var result: [String] = []
        func walk(_ e: ViewElement) {
            if let url = e.widgetURL { result.append(url) }
            e.children.forEach(walk)
        }
        walk(self)
        return result
    }
}

/// Minimal URL inspection (RFC 3986 scheme) without Foundation's URL parser.
public enum URLParts {
    /// The lowercased scheme of an absolute URL, or nil.
    public static func scheme(of url: String) -> String? {
        var url = url
        guard let length = url.withUTF8(schemeLength) else { return nil }
        return String(url.utf8.prefix(length))!.lowercased()
    }

    /// The length in bytes of the scheme of the absolute URL whose UTF-8 is
    /// `url`, or nil when it is not one: a scheme, ':', more, and no space or
    /// control character. Bytes, not characters: the Unicode property lookup
    /// cost more than the rest of a tap's rules, and a byte below 0x80 is
    /// the character it spells.
    static func schemeLength(_ url: UnsafeBufferPointer<UInt8>) -> Int? {
        func isLetter(_ c: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c | 0x20) }
        guard let colon = url.firstIndex(of: UInt8(ascii: ":")), colon > 0, isLetter(url[0]), colon + 1 < url.count else { return nil }
        for c in url[..<colon] {
            guard isLetter(c) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || c == UInt8(ascii: "+") || c == UInt8(ascii: "-")
                || c == UInt8(ascii: ".")
            else { return nil }
        }
        guard !url.contains(where: { $0 < 0x21 || $0 == 0x7F }) else { return nil }
        return colon
    }
}
