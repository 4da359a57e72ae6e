#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// What the host keeps across restarts (`--state-dir`): widget bundles, placed
// widgets with their configuration and content, Live Activities with their
// dates, and the timelines the providers returned. Live registrations are not
// kept: they belong to connections, and apps register again when the host's
// name gets a new owner.
//
// `DurableState` is the image on disk as a plain value: the journal's records
// are changes to it, a snapshot is it written as records, one per object. The
// service journals a record for every change it acknowledges and rebuilds its
// model from the image at start-up.

/// A placed widget as stored.
public struct StoredWidget: Codable, Sendable, Equatable {
    public var id: String
    public var appID: String
    public var kind: String
    public var family: String
    public var configuration: [String: OptionValue]
    /// The view tree JSON last set with `SetContent`; nil for none.
    public var content: String?

    public init(id: String, appID: String, kind: String, family: WidgetFamily, configuration: [String: OptionValue], content: String?) {
        self.id = id
        self.appID = appID
        self.kind = kind
        self.family = family.rawValue
        self.configuration = configuration
        self.content = content
    }

    public init(_ widget: PlacedWidget, content: String?) {
        id = widget.id
        appID = widget.appID
        kind = widget.kind
        family = widget.family.rawValue
        configuration = widget.configuration
        self.content = content
    }
}

/// A Live Activity as stored; dates in Unix milliseconds.
public struct StoredActivity: Codable, Sendable, Equatable {
    public var id: String
    public var appID: String
    public var attributesType: String
    public var content: String
    public var attributes: [String: OptionValue]
    public var state: [String: OptionValue]
    public var staleDate: Int64?
    public var relevance: Double
    public var startedAt: Int64
    public var endedAt: Int64?
    public var removeAt: Int64?

    public init(_ activity: LiveActivity) {
        id = activity.id
        appID = activity.appID
        attributesType = activity.attributesType
        content = activity.content.json
        attributes = activity.attributes
        state = activity.state
        staleDate = activity.staleDate.map(UnixTime.milliseconds)
        relevance = activity.relevance
        startedAt = UnixTime.milliseconds(activity.startedAt)
        endedAt = activity.endedAt.map(UnixTime.milliseconds)
        removeAt = activity.removeAt.map(UnixTime.milliseconds)
    }
}

/// A timeline as a provider returned it, with when it arrived.
public struct StoredTimeline: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        public var at: Int64
        public var content: String
    }
    public var widgetID: String
    public var entries: [Entry]
    public var policy: String
    public var reloadAt: Int64
    public var receivedAt: Int64

    public init(widgetID: String, timeline: Timeline, receivedAt: Date) {
        self.widgetID = widgetID
        entries = timeline.entries.map { Entry(at: $0.unixMs, content: $0.content.json) }
        policy = timeline.policy.name
        if case .after(let ms) = timeline.policy { reloadAt = ms } else { reloadAt = 0 }
        self.receivedAt = UnixTime.milliseconds(receivedAt)
    }

    /// The timeline, validated again (a stored file is input like any other).
    public func timeline(limits: ViewTreeLimits = ViewTreeLimits()) throws(HostError) -> Timeline {
        try Timeline.parse(
            entries: entries.map { ($0.at, $0.content) }, policy: policy, reloadAtMs: reloadAt, limits: limits,
            maxEntries: max(TimelineOptions.defaultMaxEntries, entries.count))
    }
}

/// One change to the durable state, as the journal records it.
public enum StateRecord: Codable, Sendable, Equatable {
    /// An app's bundle (RegisterWidgets), as the app sent it.
    case bundle(appID: String, json: String)
    /// An app's bundle forgotten: the app is gone and has no placed widget.
    case bundleRemoved(appID: String)
    /// A widget placed or changed (configuration, content): the whole widget.
    case widget(StoredWidget)
    /// A widget removed, with its timeline.
    case widgetRemoved(id: String)
    /// A Live Activity started or changed: the whole activity.
    case activity(StoredActivity)
    /// A Live Activity removed.
    case activityRemoved(id: String)
    /// A timeline that arrived for a widget.
    case timeline(StoredTimeline)
    /// The last widget and Live Activity ids minted (`w0`, `a0` for none): a
    /// snapshot holds it first and last, so that an id is never minted again
    /// even when the record of its object is lost.
    case minted(widget: String, activity: String)
}

/// The durable state: everything `--state-dir` holds.
public struct DurableState: Codable, Sendable, Equatable {
    /// The version of the snapshot's layout: 2 is a record per line, 1 (read,
    /// never written) the whole state as one JSON document.
    public static let formatVersion = 2

    public var bundles: [String: String] = [:]
    public var widgets: [String: StoredWidget] = [:]
    public var activities: [String: StoredActivity] = [:]
    public var timelines: [String: StoredTimeline] = [:]
    /// The next widget number: ids are never reused, even after a removal.
    public var nextWidgetNumber: UInt64 = 1
    /// The next Live Activity number.
    public var nextActivityNumber: UInt64 = 1

    public init() {}

    public mutating func apply(_ record: StateRecord) {
        switch record {
        case .bundle(let appID, let json):
            bundles[appID] = json
        case .bundleRemoved(let appID):
            bundles[appID] = nil
        case .widget(let widget):
            widgets[widget.id] = widget
            named(widget: widget.id)
        case .widgetRemoved(let id):
            widgets[id] = nil
            timelines[id] = nil
            named(widget: id)
        case .activity(let activity):
            activities[activity.id] = activity
            named(activity: activity.id)
        case .activityRemoved(let id):
            activities[id] = nil
            named(activity: id)
        case .timeline(let timeline):
            if widgets[timeline.widgetID] != nil { timelines[timeline.widgetID] = timeline }
        case .minted(let widget, let activity):
            named(widget: widget)
            named(activity: activity)
        }
    }

    /// The record ``StateRecord/minted(widget:activity:)`` of this state's counters.
    public var minted: StateRecord {
        .minted(widget: "w\(max(nextWidgetNumber, 1) - 1)", activity: "a\(max(nextActivityNumber, 1) - 1)")
    }

    /// Every id a record names was minted: the next ones come after it.
    private mutating func named(widget id: String) {
        nextWidgetNumber = max(nextWidgetNumber, MintedID.after(MintedID.number(id, prefix: "w")))
    }

    private mutating func named(activity id: String) {
        nextActivityNumber = max(nextActivityNumber, MintedID.after(MintedID.number(id, prefix: "a")))
    }

    /// Takes the ids `scan` found as minted; the highest of those that moved a counter.
    public mutating func reserve(_ scan: MintedIDScan) -> [String] {
        var moved: [String] = []
        if MintedID.after(scan.widget) > nextWidgetNumber {
            nextWidgetNumber = MintedID.after(scan.widget)
            moved.append("w\(scan.widget)")
        }
        if MintedID.after(scan.activity) > nextActivityNumber {
            nextActivityNumber = MintedID.after(scan.activity)
            moved.append("a\(scan.activity)")
        }
        return moved
    }
}

// MARK: - Rebuilding the model

extension WidgetStore {
    /// Puts back a stored widget under its id; ids already used stay used.
    /// Its content is taken as stored (``ViewTree/init(validated:)``): what the
    /// host acknowledged is read back under any limits now, past rules added since.
    /// - Throws: `InvalidContent` for a family that does not parse.
    public mutating func restore(_ stored: StoredWidget, nextNumber atLeast: UInt64) throws(HostError) {
        let family = try WidgetFamily.parse(stored.family)
        let content = stored.content.map(ViewTree.init(validated:))
        // Thousands of widgets share a few apps and kinds: each keeps the bundle's
        // copy of those names rather than one of its own.
        let bundle = bundles.index(forKey: stored.appID)
        let appID = bundle.map { bundles.keys[$0] } ?? stored.appID
        let kind = bundle.flatMap { bundles.values[$0].kind(stored.kind)?.kind } ?? stored.kind
        if widgets[stored.id] == nil { countRestored(appID) }
        widgets[stored.id] = PlacedWidget(
            id: stored.id, appID: appID, kind: kind, family: family, configuration: stored.configuration, content: content)
        reserveNumbers(upTo: max(atLeast, MintedID.number(stored.id, prefix: "w") + 1))
    }

    /// Puts back an app's bundle without dropping any widget.
    public mutating func restoreBundle(appID: String, json: String) throws(HostError) {
        setBundle(appID: appID, try WidgetBundle.parse(json, stored: true))
    }
}

extension LiveActivityStore {
    /// Puts back a stored activity under its id.
    /// - Throws: `InvalidContent` for content that does not parse.
    public mutating func restore(_ stored: StoredActivity, nextNumber atLeast: UInt64, now: Date) throws(HostError) {
        let activity = LiveActivity(
            id: stored.id, appID: stored.appID, attributesType: stored.attributesType,
            content: try ActivityContent.parse(stored.content, stored: true), attributes: stored.attributes,
            state: stored.state, staleDate: stored.staleDate.map(UnixTime.date), relevance: stored.relevance,
            startedAt: UnixTime.date(stored.startedAt), endedAt: stored.endedAt.map(UnixTime.date),
            removeAt: stored.removeAt.map(UnixTime.date), number: MintedID.number(stored.id, prefix: "a"))
        insertRestored(activity, now: now, nextNumber: max(atLeast, activity.number + 1))
    }
}

// MARK: - OptionValue as JSON

extension OptionValue: Codable {
    private enum Key: String, CodingKey {
        case s, o, b, x, t, d, array, element, dict, other
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .string(let s): try container.encode(s, forKey: .s)
        case .objectPath(let o): try container.encode(o, forKey: .o)
        case .bool(let b): try container.encode(b, forKey: .b)
        case .int(let x): try container.encode(x, forKey: .x)
        case .uint(let t): try container.encode(t, forKey: .t)
        case .double(let d): try container.encode(d, forKey: .d)
        case .array(let element, let items):
            try container.encode(element, forKey: .element)
            try container.encode(items, forKey: .array)
        case .dict(let fields): try container.encode(fields, forKey: .dict)
        case .other(let signature): try container.encode(signature, forKey: .other)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        if let s = try container.decodeIfPresent(String.self, forKey: .s) {
            self = .string(s)
        } else if let o = try container.decodeIfPresent(String.self, forKey: .o) {
            self = .objectPath(o)
        } else if let b = try container.decodeIfPresent(Bool.self, forKey: .b) {
            self = .bool(b)
        } else if let x = try container.decodeIfPresent(Int64.self, forKey: .x) {
            self = .int(x)
        } else if let t = try container.decodeIfPresent(UInt64.self, forKey: .t) {
            self = .uint(t)
        } else if let d = try container.decodeIfPresent(Double.self, forKey: .d) {
            self = .double(d)
        } else if let items = try container.decodeIfPresent([OptionValue].self, forKey: .array) {
            self = .array(elementSignature: try container.decode(String.self, forKey: .element), items)
        } else if let fields = try container.decodeIfPresent([String: OptionValue].self, forKey: .dict) {
            self = .dict(fields)
        } else {
            self = .other(signature: try container.decode(String.self, forKey: .other))
        }
    }
}

// MARK: - Writing records and states as JSON

// Written by hand with ``JSONWriter`` in exactly the shape the synthesized
// `Codable` conformances read back (an enum case is `{"case":{"label":…}}`,
// `_0` for an unlabelled value; nil optionals are left out): every
// acknowledged change is encoded on the host's thread, so this is its cost.

extension StateRecord {
    /// The record as one line of JSON.
    /// - Throws: ``JSONWriter/NotFinite`` for a NaN or infinite double, which JSON cannot hold.
    public func jsonText() throws(JSONWriter.NotFinite) -> String {
        var writer = JSONWriter()
        try write(to: &writer)
        return writer.text
    }

    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        try writer.object { (o: inout JSONWriter.Members) throws(JSONWriter.NotFinite) in
            switch self {
            case .bundle(let appID, let json):
                o.member("bundle") { $0.object { o in o.string("appID", appID); o.string("json", json) } }
            case .bundleRemoved(let appID):
                o.member("bundleRemoved") { $0.object { o in o.string("appID", appID) } }
            case .widget(let widget):
                try o.member("widget") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in try w.unlabelled(widget.write) }
            case .widgetRemoved(let id):
                o.member("widgetRemoved") { $0.object { o in o.string("id", id) } }
            case .activity(let activity):
                try o.member("activity") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in try w.unlabelled(activity.write) }
            case .activityRemoved(let id):
                o.member("activityRemoved") { $0.object { o in o.string("id", id) } }
            case .timeline(let timeline):
                o.member("timeline") { $0.unlabelled(timeline.write) }
            case .minted(let widget, let activity):
                o.member("minted") { $0.object { o in o.string("widget", widget); o.string("activity", activity) } }
            }
        }
    }
}

extension JSONWriter {
    /// `{"_0":…}`: how a synthesized `Codable` enum holds an unlabelled value.
    fileprivate mutating func unlabelled<E: Error>(_ write: (inout JSONWriter) throws(E) -> Void) throws(E) {
        try object { (o: inout Members) throws(E) in try o.member("_0", write) }
    }

    fileprivate mutating func options(_ options: [String: OptionValue]) throws(NotFinite) {
        try object(options) { (w: inout JSONWriter, value: OptionValue) throws(NotFinite) in try value.write(to: &w) }
    }
}

extension StoredWidget {
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        try writer.object { (o: inout JSONWriter.Members) throws(JSONWriter.NotFinite) in
            o.string("id", id); o.string("appID", appID); o.string("kind", kind); o.string("family", family)
            try o.member("configuration") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in try w.options(configuration) }
            if let content { o.string("content", content) }
        }
    }
}

extension StoredActivity {
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        try writer.object { (o: inout JSONWriter.Members) throws(JSONWriter.NotFinite) in
            o.string("id", id); o.string("appID", appID); o.string("attributesType", attributesType); o.string("content", content)
            try o.member("attributes") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in try w.options(attributes) }
            try o.member("state") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in try w.options(state) }
            if let staleDate { o.integer("staleDate", staleDate) }
            try o.member("relevance") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in try w.double(relevance) }
            o.integer("startedAt", startedAt)
            if let endedAt { o.integer("endedAt", endedAt) }
            if let removeAt { o.integer("removeAt", removeAt) }
        }
    }
}

extension StoredTimeline {
    func write(to writer: inout JSONWriter) {
        writer.object { o in
            o.string("widgetID", widgetID)
            o.member("entries") {
                $0.array(entries) { w, entry in
                    w.object { o in
                        o.integer("at", entry.at)
                        o.string("content", entry.content)
                    }
                }
            }
            o.string("policy", policy)
            o.integer("reloadAt", reloadAt)
            o.integer("receivedAt", receivedAt)
        }
    }
}

extension OptionValue {
    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        try writer.object { (o: inout JSONWriter.Members) throws(JSONWriter.NotFinite) in
            switch self {
            case .string(let s): o.string("s", s)
            case .objectPath(let p): o.string("o", p)
            case .bool(let b): o.member("b") { $0.bool(b) }
            case .int(let x): o.integer("x", x)
            case .uint(let t): o.integer("t", t)
            case .double(let d): try o.member("d") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in try w.double(d) }
            case .array(let element, let items):
                o.string("element", element)
                try o.member("array") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in
                    try w.array(items) { (w: inout JSONWriter, item: OptionValue) throws(JSONWriter.NotFinite) in try item.write(to: &w) }
                }
            case .dict(let fields): try o.member("dict") { (w: inout JSONWriter) throws(JSONWriter.NotFinite) in try w.options(fields) }
            case .other(let signature): o.string("other", signature)
            }
        }
    }
}
