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
public struct StoredWidget: Sendable, Equatable {
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

extension StoredWidget: DurableRecord {
    init() {
        (id, appID, kind, family, configuration, content) = ("", "", "", "", [:], nil)
    }

    mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
        try fields.field("id", &id)
        try fields.field("appID", &appID)
        try fields.field("kind", &kind)
        try fields.field("family", &family)
        try fields.field("configuration", &configuration)
        try fields.field("content", &content)
    }
}

/// A Live Activity as stored; dates in Unix milliseconds.
public struct StoredActivity: Sendable, Equatable {
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

extension StoredActivity: DurableRecord {
    init() {
        (id, appID, attributesType, content, attributes, state) = ("", "", "", "", [:], [:])
        (staleDate, relevance, startedAt, endedAt, removeAt) = (nil, 0, 0, nil, nil)
    }

    mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
        try fields.field("id", &id)
        try fields.field("appID", &appID)
        try fields.field("attributesType", &attributesType)
        try fields.field("content", &content)
        try fields.field("attributes", &attributes)
        try fields.field("state", &state)
        try fields.field("staleDate", &staleDate)
        try fields.field("relevance", &relevance)
        try fields.field("startedAt", &startedAt)
        try fields.field("endedAt", &endedAt)
        try fields.field("removeAt", &removeAt)
    }
}

/// A timeline as a provider returned it, with when it arrived.
public struct StoredTimeline: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
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

extension StoredTimeline: DurableRecord {
    init() {
        (widgetID, entries, policy, reloadAt, receivedAt) = ("", [], "", 0, 0)
    }

    mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
        try fields.field("widgetID", &widgetID)
        try fields.field("entries", &entries)
        try fields.field("policy", &policy)
        try fields.field("reloadAt", &reloadAt)
        try fields.field("receivedAt", &receivedAt)
    }
}

extension StoredTimeline.Entry: DurableRecord {
    init() { (at, content) = (0, "") }

    mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
        try fields.field("at", &at)
        try fields.field("content", &content)
    }
}

/// One change to the durable state, as the journal records it.
public enum StateRecord: Sendable, Equatable {
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

// A record is an object with one member, its kind, whose value holds the
// record's values: `{"bundle":{"appID":…,"json":…}}`, and a stored object
// under `_0`: `{"widget":{"_0":{…}}}`, as the first hosts' `Codable`
// conformances wrote an unlabelled value.
extension StateRecord: DurableValue {
    /// The kinds of records, as their member is named.
    private enum Kind: String {
        case bundle, bundleRemoved, widget, widgetRemoved, activity, activityRemoved, timeline, minted
    }

    /// A stored object, under `_0`.
    private struct Unlabelled<Value: DurableRecord>: DurableRecord {
        var value = Value()

        mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
            try fields.field("_0", &value)
        }
    }

    private struct Bundle: DurableRecord {
        var appID = "", json = ""

        mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
            try fields.field("appID", &appID)
            try fields.field("json", &json)
        }
    }

    private struct BundleRemoved: DurableRecord {
        var appID = ""

        mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
            try fields.field("appID", &appID)
        }
    }

    private struct Removed: DurableRecord {
        var id = ""

        mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
            try fields.field("id", &id)
        }
    }

    private struct Minted: DurableRecord {
        var widget = "", activity = ""

        mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
            try fields.field("widget", &widget)
            try fields.field("activity", &activity)
        }
    }

    func write(to writer: inout JSONWriter) throws(JSONWriter.NotFinite) {
        try writer.object { (o: inout JSONWriter.Members) throws(JSONWriter.NotFinite) in
            switch self {
            case .bundle(let appID, let json): try o.member(Kind.bundle.rawValue, Bundle(appID: appID, json: json))
            case .bundleRemoved(let appID): try o.member(Kind.bundleRemoved.rawValue, BundleRemoved(appID: appID))
            case .widget(let widget): try o.member(Kind.widget.rawValue, Unlabelled(value: widget))
            case .widgetRemoved(let id): try o.member(Kind.widgetRemoved.rawValue, Removed(id: id))
            case .activity(let activity): try o.member(Kind.activity.rawValue, Unlabelled(value: activity))
            case .activityRemoved(let id): try o.member(Kind.activityRemoved.rawValue, Removed(id: id))
            case .timeline(let timeline): try o.member(Kind.timeline.rawValue, Unlabelled(value: timeline))
            case .minted(let widget, let activity): try o.member(Kind.minted.rawValue, Minted(widget: widget, activity: activity))
            }
        }
    }

    init(reading reader: StateReader) throws {
        var record: StateRecord?
        var kinds = 0
        try reader.members { name in
            kinds += 1
            guard kinds == 1 else { return try reader.skip() }
            guard let kind = Kind(rawValue: name) else { throw StateFormatError(path: "$", problem: "'\(name)' is not a kind of record") }
            switch kind {
            case .bundle:
                let bundle = try Bundle(reading: reader)
                record = .bundle(appID: bundle.appID, json: bundle.json)
            case .bundleRemoved: record = .bundleRemoved(appID: try BundleRemoved(reading: reader).appID)
            case .widget: record = .widget(try Unlabelled<StoredWidget>(reading: reader).value)
            case .widgetRemoved: record = .widgetRemoved(id: try Removed(reading: reader).id)
            case .activity: record = .activity(try Unlabelled<StoredActivity>(reading: reader).value)
            case .activityRemoved: record = .activityRemoved(id: try Removed(reading: reader).id)
            case .timeline: record = .timeline(try Unlabelled<StoredTimeline>(reading: reader).value)
            case .minted:
                let minted = try Minted(reading: reader)
                record = .minted(widget: minted.widget, activity: minted.activity)
            }
        }
        guard kinds == 1, let record else { throw Self.notOneKind }
        self = record
    }

    private static let notOneKind = StateFormatError(path: "$", problem: "a record is an object with exactly one member, its kind")

    /// The record as one line of JSON.
    /// - Throws: ``JSONWriter/NotFinite`` for a NaN or infinite double, which JSON cannot hold.
    public func jsonText() throws(JSONWriter.NotFinite) -> String { try durableJSON() }

    /// The record one line's JSON holds.
    /// - Throws: `JSONSyntaxError` for text that is not JSON, ``StateFormatError`` for JSON of another shape.
    public init(jsonText text: String) throws { try self.init(durableJSON: text) }
}

extension StateRecord {
    /// What the record is about, for the log: "widget w7", "the bundle of org.example.A".
    public var subject: String {
        switch self {
        case .bundle(let appID, _): "the bundle of \(appID)"
        case .bundleRemoved(let appID): "the removal of the bundle of \(appID)"
        case .widget(let widget): "widget \(widget.id)"
        case .widgetRemoved(let id): "the removal of widget \(id)"
        case .activity(let activity): "Live Activity \(activity.id)"
        case .activityRemoved(let id): "the removal of Live Activity \(id)"
        case .timeline(let timeline): "the timeline of widget \(timeline.widgetID)"
        case .minted(let widget, let activity): "the last ids minted (\(widget), \(activity))"
        }
    }
}

/// The durable state: everything `--state-dir` holds.
public struct DurableState: Sendable, Equatable {
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

    /// Hands `body` the state as records, each object's, in the order
    /// ``apply(_:)`` rebuilds it from them: the ids minted first and last (the
    /// last record closes a snapshot), and each timeline after the widgets,
    /// since a timeline is taken only for a widget the state holds. One at a
    /// time: a snapshot of 100,000 widgets holds no array of them.
    public func forEachRecord(_ body: (StateRecord) throws -> Void) rethrows {
        try body(minted)
        for (appID, json) in bundles { try body(.bundle(appID: appID, json: json)) }
        for widget in widgets.values { try body(.widget(widget)) }
        for activity in activities.values { try body(.activity(activity)) }
        for timeline in timelines.values { try body(.timeline(timeline)) }
        try body(minted)
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

// A version 1 snapshot is the whole state as one JSON document, its members
// these fields. The host reads it and writes a version 2 snapshot instead
// (``StateFile/snapshot(_:)``), a record per line.
extension DurableState: DurableRecord {
    mutating func fields<Fields: DurableFields>(_ fields: inout Fields) throws(Fields.Failure) {
        try fields.field("bundles", &bundles)
        try fields.field("widgets", &widgets)
        try fields.field("activities", &activities)
        try fields.field("timelines", &timelines)
        try fields.field("nextWidgetNumber", &nextWidgetNumber)
        try fields.field("nextActivityNumber", &nextActivityNumber)
    }

    /// The state a version 1 snapshot's JSON text holds, read a widget,
    /// activity or timeline at a time (the document is never held whole as values).
    /// - Throws: `JSONSyntaxError` for text that is not JSON, ``StateFormatError`` for JSON of another shape.
    public init(jsonText text: String) throws { try self.init(durableJSON: text) }
}

// MARK: - The model and its records

extension WidgetStore: RecordingStore {
    /// Makes `change` and hands back, with what it returns, the records that
    /// journal it and what it replaced (``DurableChange``). `change` checks
    /// before it changes: when it throws, nothing has changed.
    public mutating func changing<T, E: Error>(_ change: (inout WidgetStore) throws(E) -> T) throws(E) -> (T, DurableChange) {
        try recordingChange(change)
    }

    /// Puts back, newest first, the bundles and widgets `change` replaced,
    /// as if it had never been made (its Live Activities are another store's).
    public mutating func undo(_ change: DurableChange) {
        for prior in change.priors.reversed() {
            switch prior {
            case .bundle(let appID, let old): putBackBundle(appID: appID, old)
            case .widget(let id, let old): putBack(id, old)
            case .activity: continue
            }
        }
    }

    func record(after prior: DurableChange.Prior) -> StateRecord? {
        switch prior {
        case .bundle(let appID, let old):
            bundles[appID].map { .bundle(appID: appID, json: $0.json) } ?? old.map { _ in .bundleRemoved(appID: appID) }
        case .widget(let id, let old):
            widgets[id].map { .widget(StoredWidget($0, content: $0.content?.json)) } ?? old.map { _ in .widgetRemoved(id: id) }
        case .activity: nil
        }
    }
}

extension LiveActivityStore: RecordingStore {
    /// Makes `change` and hands back, with what it returns, the records that
    /// journal it and what it replaced (``DurableChange``). `change` checks
    /// before it changes: when it throws, nothing has changed.
    public mutating func changing<T, E: Error>(_ change: (inout LiveActivityStore) throws(E) -> T) throws(E) -> (T, DurableChange) {
        try recordingChange(change)
    }

    /// Puts back, newest first, the Live Activities `change` replaced, as if
    /// it had never been made, their states as at `now`.
    public mutating func undo(_ change: DurableChange, now: Date) {
        for case .activity(let id, let old) in change.priors.reversed() { putBack(id, old, now: now) }
    }

    func record(after prior: DurableChange.Prior) -> StateRecord? {
        guard case .activity(let id, let old) = prior else { return nil }
        return activity(id).map { .activity(StoredActivity($0)) } ?? old.map { _ in .activityRemoved(id: id) }
    }
}

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
        willChange(widget: stored.id)
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
