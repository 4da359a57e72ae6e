#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a Live Activity is in its life (the `State` property, docs/live-activities.md).
///
/// The raw values are the names used on the bus.
public enum ActivityState: String, Sendable, CaseIterable {
    /// Started and up to date.
    case active
    /// Past its stale date: still shown, but its content is out of date. An update
    /// with a later `stale_date` makes it active again.
    case stale
    /// Ended by the app or by the host 8 hours after it started; still shown until it
    /// is removed, and no longer updated.
    case ended
}

/// Limits that keep one app's Live Activities from exhausting the host.
public struct ActivityLimits: Sendable, Equatable {
    /// How many activities one app may have at once, counting ended ones that are
    /// still shown.
    public var maxPerApp = HostDefaults.maxActivitiesPerApp
    /// How many bytes `attributes` and `state` may take together, serialized as
    /// described at ``LiveActivityStore/payloadSize(attributes:state:)`` (docs/live-activities.md#limits: 4096).
    public var maxPayloadBytes = 4096
    /// Limits on the content JSON and its view trees.
    public var content = ViewTreeLimits()

    public init() {}
}

/// When an ended Live Activity disappears (the `dismissal` option of `End`).
public enum ActivityDismissal: String, Sendable, CaseIterable {
    /// Stays up to ``LiveActivity/maximumDismissalDelay`` (4 hours) after ending, then disappears.
    case `default`
    /// Disappears at once.
    case immediate
    /// Disappears at `dismissal_date`, at most 4 hours after ending.
    case after
}

/// A Live Activity: an app's ongoing event, shown in several presentations (docs/live-activities.md).
///
/// Its dates are absolute; ``activityState(at:)`` says where it is in its life at a
/// given moment. A ``LiveActivityStore`` creates and changes activities.
public struct LiveActivity: Sendable, Equatable {
    /// How long an activity may run: the host ends it 8 hours after it started.
    public static let maximumDuration: TimeInterval = 8 * 3600
    /// How long an ended activity may stay shown: 4 hours at most.
    public static let maximumDismissalDelay: TimeInterval = 4 * 3600

    /// `a1`, `a2`, …: the last element of its object path.
    public internal(set) var id: String
    /// The app the activity belongs to.
    public internal(set) var appID: String
    /// The name of the app's attributes type (ActivityKit's `ActivityAttributes`),
    /// e.g. `DeliveryAttributes`.
    public internal(set) var attributesType: String
    /// The current view trees.
    public internal(set) var content: ActivityContent
    /// The static attributes, fixed when the activity started.
    public internal(set) var attributes: [String: OptionValue]
    /// The dynamic content state, replaced by updates.
    public internal(set) var state: [String: OptionValue]
    /// When the content goes out of date, if ever.
    public internal(set) var staleDate: Date?
    /// How prominently renderers should show it relative to the app's other
    /// activities; higher is more prominent (default 0). See ``LiveActivityStore/ordered(now:)``.
    public internal(set) var relevance: Double
    /// When it started.
    public internal(set) var startedAt: Date
    /// When it ended, once ended by the app (`End`) or by ``LiveActivityStore/advance(to:)``.
    public internal(set) var endedAt: Date?
    /// When it disappears, once ended.
    public internal(set) var removeAt: Date?

    /// The start order: 1 for `a1`.
    let number: UInt64

    /// When the host ends the activity unless the app ends it first:
    /// ``maximumDuration`` after ``startedAt``.
    public var automaticEndDate: Date { startedAt.addingTimeInterval(Self.maximumDuration) }

    /// When the activity disappears at the latest: ``removeAt`` once ended, else
    /// ``maximumDismissalDelay`` after ``automaticEndDate``.
    public var removalDate: Date { removeAt ?? automaticEndDate.addingTimeInterval(Self.maximumDismissalDelay) }

    /// Where the activity is in its life at `now`: `ended` once ended (by the app, or
    /// because ``automaticEndDate`` has come); else `stale` from ``staleDate`` on; else
    /// `active`.
    public func activityState(at now: Date) -> ActivityState {
        if endedAt != nil || now >= automaticEndDate { return .ended }
        if let staleDate, now >= staleDate { return .stale }
        return .active
    }

    /// Whether the activity is gone at `now` (``removalDate`` has come).
    public func isRemoved(at now: Date) -> Bool { now >= removalDate }
}

/// What ``LiveActivityStore/advance(to:)`` changed.
public struct ActivityChanges: Sendable, Equatable {
    /// One activity's new lifecycle state.
    public struct StateChange: Sendable, Equatable {
        public var id: String
        public var state: ActivityState

        public init(id: String, state: ActivityState) {
            self.id = id
            self.state = state
        }
    }

    /// Activities whose ``LiveActivity/activityState(at:)`` changed, in start order.
    /// An activity removed in the same step appears only in ``removed``.
    public var stateChanges: [StateChange] = []
    /// Activities that disappeared (their objects are to be unexported), in start order.
    public var removed: [String] = []

    public init(stateChanges: [StateChange] = [], removed: [String] = []) {
        self.stateChanges = stateChanges
        self.removed = removed
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { stateChanges.isEmpty && removed.isEmpty }
}

/// What ``LiveActivityStore/end(id:options:now:)`` did.
public struct ActivityEndResult: Sendable, Equatable {
    /// The activity as ended (with ``LiveActivity/endedAt`` and ``LiveActivity/removeAt`` set).
    public var activity: LiveActivity
    /// Whether it has already disappeared (dismissal `immediate`, or `after` with a
    /// date that has passed): its object is to be unexported at once.
    public var isRemoved: Bool
}

/// Every Live Activity of every app, and their lifecycle (docs/live-activities.md).
///
/// The store never reads a clock: every call that depends on time takes `now`, which
/// the service reads from its injected ``WallClock``. Deadlines — stale dates, the
/// automatic end 8 hours after the start, and removal — take effect for
/// ``LiveActivity/activityState(at:)`` as soon as they pass, and are recorded (and
/// reported) by ``advance(to:)``; ``nextDeadline(after:)`` says when to call it next.
public struct LiveActivityStore: Sendable {
    /// The limits applied to every start, update and end.
    public var limits: ActivityLimits

    private struct Entry: Sendable {
        var activity: LiveActivity
        /// The state last returned to the caller (by a start, update, end or advance).
        var reported: ActivityState
    }

    private var entries: [String: Entry] = [:]
    /// How many entries each app has, so that a start need not scan every activity.
    private var countsByApp: [String: Int] = [:]
    private var nextNumber: UInt64 = 1
    /// What the change under way (``changing(_:)``) has replaced so far.
    var recorder: ChangeRecorder?


    public init(limits: ActivityLimits = ActivityLimits()) {
        self.limits = limits
    }

    // MARK: - Lookup

    /// The activity with `id`, if the store holds it.
    public func activity(_ id: String) -> LiveActivity? { entries[id]?.activity }

    /// Every activity the store holds, in start order.
    public var all: [LiveActivity] { entries.values.map(\.activity).sorted { $0.number < $1.number } }

    /// The activities of `appID` the store holds, in start order.
    public func activities(of appID: String) -> [LiveActivity] {
        entries.values.map(\.activity).filter { $0.appID == appID }.sorted { $0.number < $1.number }
    }

    /// The ids of the activities shown at `now`, most prominent first: by
    /// ``LiveActivity/relevance`` descending, then the earlier start first, then the
    /// lower id (`a2` before `a10`). Activities whose ``LiveActivity/removalDate`` has
    /// come are left out even before ``advance(to:)`` removes them; ended activities
    /// still shown are included. Renderers show activities in this order.
    public func ordered(now: Date) -> [String] {
        entries.values.map(\.activity).filter { !$0.isRemoved(at: now) }.sorted { a, b in
            if a.relevance != b.relevance { return a.relevance > b.relevance }
            if a.startedAt != b.startedAt { return a.startedAt < b.startedAt }
            return a.number < b.number
        }.map(\.id)
    }

    // MARK: - Start, update, end, remove

    /// Starts an activity (`StartActivity`).
    ///
    /// - `appID` must be a valid app id and `attributesType` a type name (ASCII
    ///   letters, digits, `_`, `-` and `.`-separated elements, starting with a letter
    ///   or `_`, at most 255 bytes); else `InvalidArgument`.
    /// - `contentJSON` is parsed by ``ActivityContent/parse(_:limits:)``.
    /// - Options: `attributes` (a{sv}), `state` (a{sv}), `stale_date` (x: Unix
    ///   seconds; a `t` is accepted too), `relevance` (d; integers are accepted too; it
    ///   must be finite). An unknown option or a wrong type is `InvalidArgument`.
    /// - `attributes` and `state` are checked by ``checkPayload(attributes:state:)``.
    /// - An app that already has ``ActivityLimits/maxPerApp`` activities not yet
    ///   removed at `now` gets `LimitExceeded`.
    ///
    /// A `stale_date` at or before `now` starts the activity `stale`.
    public mutating func start(
        appID: String, attributesType: String, contentJSON: String, options: [String: OptionValue], now: Date
    ) throws(HostError) -> LiveActivity {
        try Validate.appID(appID)
        try Self.checkAttributesType(attributesType)
        let parsed = try Self.options(options, StartActivityOptions.self)
        let attributes = parsed.attributes ?? [:]
        let state = parsed.state ?? [:]
        let staleDate = parsed.staleDate.map(Self.date)
        let relevance = parsed.relevance
        try checkPayload(attributes: attributes, state: state)
        if countsByApp[appID, default: 0] >= limits.maxPerApp {
            // Only at the limit is it worth a scan for activities whose removal date has passed.
            let current = entries.values.count(where: { $0.activity.appID == appID && !$0.activity.isRemoved(at: now) })
            guard current < limits.maxPerApp else {
                throw .limitExceeded(
                    "\(appID) already has \(current) Live Activities; an app may have at most \(limits.maxPerApp) at once (the limit max-activities-per-app) — end some (End with dismissal 'immediate' removes one at once) before starting another")
            }
        }
        let content = try ActivityContent.parse(contentJSON, limits: limits.content)

        let activity = LiveActivity(
            id: "a\(nextNumber)", appID: appID, attributesType: attributesType, content: content, attributes: attributes,
            state: state, staleDate: staleDate, relevance: relevance, startedAt: now, endedAt: nil, removeAt: nil,
            number: nextNumber)
        nextNumber += 1
        willChange(activity.id)
        entries[activity.id] = Entry(activity: activity, reported: activity.activityState(at: now))
        countsByApp[appID, default: 0] += 1
        return activity
    }

    /// Updates an activity that has not ended (`Update`).
    ///
    /// - `contentJSON` replaces the content; `""` keeps the current content.
    /// - Options: `state` (a{sv}: replaces the whole content state), `stale_date` (x),
    ///   `relevance` (d). An absent option keeps the current value. `attributes` is
    ///   refused: attributes are fixed when the activity starts.
    /// - An ended activity (by `End`, or 8 hours after it started) → `InvalidArgument`.
    ///
    /// A `stale_date` after `now` makes a stale activity active again; one at or
    /// before `now` makes it stale.
    public mutating func update(id: String, contentJSON: String, options: [String: OptionValue], now: Date) throws(HostError)
        -> LiveActivity
    {
        guard var entry = entries[id] else { throw Self.noActivity(id) }
        if entry.activity.activityState(at: now) == .ended {
            throw .invalidArgument(
                "Live Activity \(id) has ended (\(Self.describe(entry.activity.endedAt ?? entry.activity.automaticEndDate))) and can no longer be updated; start a new activity with StartActivity to show new content")
        }
        let parsed = try Self.options(options, UpdateActivityOptions.self)
        let state = parsed.state
        let staleDate = parsed.staleDate.map(Self.date)
        let relevance = parsed.relevance
        if let state { try checkPayload(attributes: entry.activity.attributes, state: state) }
        if !contentJSON.isEmpty {
            entry.activity.content = try ActivityContent.parse(contentJSON, limits: limits.content)
        }
        if let state { entry.activity.state = state }
        if let staleDate { entry.activity.staleDate = staleDate }
        if let relevance { entry.activity.relevance = relevance }
        entry.reported = entry.activity.activityState(at: now)
        willChange(id)
        entries[id] = entry
        return entry.activity
    }

    /// Ends an activity that has not ended (`End`).
    ///
    /// Options:
    /// - `dismissal` (s): `default` — it stays shown 4 hours, then disappears;
    ///   `immediate` — it disappears now; `after` — it disappears at `dismissal_date`.
    /// - `dismissal_date` (x: Unix seconds; a `t` is accepted too): required with
    ///   `after`, refused otherwise. A date more than 4 hours after `now` is clamped to
    ///   4 hours (ActivityKit, too, dismisses an ended activity after four hours at the
    ///   most); a date at or before `now` means now.
    /// - `content` (s): final content JSON (`""` keeps the current content).
    /// - `state` (a{sv}): the final content state.
    ///
    /// An activity that has already ended → `InvalidArgument`. When the activity
    /// disappears at once, it is removed from the store and the result says so.
    public mutating func end(id: String, options: [String: OptionValue], now: Date) throws(HostError) -> ActivityEndResult {
        guard var entry = entries[id] else { throw Self.noActivity(id) }
        if entry.activity.activityState(at: now) == .ended {
            let activity = entry.activity
            throw .invalidArgument(
                "Live Activity \(id) has already ended (\(Self.describe(activity.endedAt ?? activity.automaticEndDate))) and disappears by itself (\(Self.describe(activity.removalDate))); there is nothing to end — start a new activity to show something new")
        }
        let parsed = try Self.options(options, EndActivityOptions.self)
        guard let dismissal = ActivityDismissal(rawValue: parsed.dismissal) else {
            throw .invalidArgument(
                "option 'dismissal' is '\(parsed.dismissal)', which is not a dismissal; use 'default' (shown up to 4 hours after ending), 'immediate' (removed at once) or 'after' (removed at dismissal_date)")
        }
        let dismissalDate = parsed.dismissalDate.map(Self.date)
        if dismissal == .after && dismissalDate == nil {
            throw .invalidArgument(
                "option 'dismissal' is 'after' but no 'dismissal_date' says when; add dismissal_date (x, Unix seconds, at most 4 hours away) or use another dismissal")
        }
        if let dismissalDate, dismissal != .after {
            throw .invalidArgument(
                "option 'dismissal_date' (\(Self.describe(dismissalDate))) applies only with dismissal 'after', but dismissal is '\(dismissal.rawValue)'; add dismissal='after' or drop dismissal_date")
        }
        let contentJSON = parsed.content
        let state = parsed.state
        if let state { try checkPayload(attributes: entry.activity.attributes, state: state) }
        if !contentJSON.isEmpty {
            entry.activity.content = try ActivityContent.parse(contentJSON, limits: limits.content)
        }
        if let state { entry.activity.state = state }

        let latest = now.addingTimeInterval(LiveActivity.maximumDismissalDelay)
        let removal: Date
        switch dismissal {
        case .default: removal = latest
        case .immediate: removal = now
        case .after: removal = max(now, min(dismissalDate!, latest))
        }
        entry.activity.endedAt = now
        entry.activity.removeAt = removal
        entry.reported = .ended
        willChange(id)
        if removal <= now {
            removeEntry(id)
            return ActivityEndResult(activity: entry.activity, isRemoved: true)
        }
        entries[id] = entry
        return ActivityEndResult(activity: entry.activity, isRemoved: false)
    }

    /// Removes an activity at once, whatever its state; returns it, or `nil` when the
    /// store does not hold `id`.
    @discardableResult
    public mutating func remove(_ id: String) -> LiveActivity? {
        removeEntry(id)
    }

    /// Puts back an activity read from the state directory.
    mutating func insertRestored(_ activity: LiveActivity, now: Date, nextNumber next: UInt64) {
        willChange(activity.id)
        if entries[activity.id] == nil { countsByApp[activity.appID, default: 0] += 1 }
        entries[activity.id] = Entry(activity: activity, reported: activity.activityState(at: now))
        nextNumber = max(nextNumber, next)
    }

    /// Puts activity `id` back as it was before a change the disk refused:
    /// `old`, or no activity at all, giving its number back when it was the
    /// last one minted (changes are put back newest first).
    public mutating func putBack(_ id: String, _ old: LiveActivity?, now: Date) {
        if let old {
            insertRestored(old, now: now, nextNumber: nextNumber)
        } else if let removed = removeEntry(id), removed.number + 1 == nextNumber {
            nextNumber -= 1
        }
    }

    /// The number the next activity started will get.
    public var nextActivityNumber: UInt64 { nextNumber }

    /// Makes sure the next activity started gets a number of at least `next`.
    public mutating func reserveNumbers(upTo next: UInt64) { nextNumber = max(nextNumber, next) }

    /// Notes, while a change is under way, what activity `id` is before the change touches it.
    private mutating func willChange(_ id: String) { recorder?.note(.activity(id: id, entries[id]?.activity)) }

    @discardableResult
    private mutating func removeEntry(_ id: String) -> LiveActivity? {
        willChange(id)
        guard let activity = entries.removeValue(forKey: id)?.activity else { return nil }
        let remaining = countsByApp[activity.appID, default: 1] - 1
        countsByApp[activity.appID] = remaining > 0 ? remaining : nil
        return activity
    }

    // MARK: - Time

    /// Applies every deadline that has come by `now` and reports what changed.
    ///
    /// An activity 8 hours past its start is ended (at ``LiveActivity/automaticEndDate``,
    /// to disappear 4 hours later); an activity whose ``LiveActivity/removalDate`` has
    /// come is removed; every other activity whose ``LiveActivity/activityState(at:)``
    /// differs from the state last returned (by a start, update, end or earlier
    /// advance) is reported with its new state. Runs in time linear in the number of
    /// activities.
    public mutating func advance(to now: Date) -> ActivityChanges {
        var stateChanges: [(number: UInt64, change: ActivityChanges.StateChange)] = []
        var removed: [(number: UInt64, id: String)] = []
        for id in Array(entries.keys) {
            var entry = entries[id]!
            if entry.activity.endedAt == nil && now >= entry.activity.automaticEndDate {
                entry.activity.endedAt = entry.activity.automaticEndDate
                entry.activity.removeAt = entry.activity.automaticEndDate.addingTimeInterval(LiveActivity.maximumDismissalDelay)
            }
            if entry.activity.isRemoved(at: now) {
                removeEntry(id)
                removed.append((entry.activity.number, id))
                continue
            }
            let state = entry.activity.activityState(at: now)
            willChange(id)
            if state != entry.reported {
                entry.reported = state
                stateChanges.append((entry.activity.number, .init(id: id, state: state)))
            }
            entries[id] = entry
        }
        return ActivityChanges(
            stateChanges: stateChanges.sorted { $0.number < $1.number }.map(\.change),
            removed: removed.sorted { $0.number < $1.number }.map(\.id))
    }

    /// When ``advance(to:)`` next has something to do: the earliest stale date of an
    /// active activity, automatic end or removal date. A deadline that has already
    /// passed without ``advance(to:)`` applying it gives `now`. `nil` when the store
    /// is empty. The service arms one timer for this date.
    public func nextDeadline(after now: Date) -> Date? {
        var earliest: Date?
        for entry in entries.values {
            let activity = entry.activity
            var next = activity.removalDate
            if activity.endedAt == nil {
                next = min(next, activity.automaticEndDate)
                if entry.reported == .active, let staleDate = activity.staleDate { next = min(next, staleDate) }
            }
            earliest = earliest.map { min($0, next) } ?? next
        }
        return earliest.map { max($0, now) }
    }

    // MARK: - Payload

    /// The size that ``ActivityLimits/maxPayloadBytes`` limits: the D-Bus wire size of
    /// `attributes` and `state` marshalled as the struct `(a{sv}a{sv})` starting at
    /// offset 0 (see ``OptionValue/serializedSize(ofDictionaries:)``), integers being
    /// marshalled as `x` or `t` as the host keeps them. `nil` when a value cannot be
    /// marshalled (an ``OptionValue/other(signature:)`` somewhere).
    public static func payloadSize(attributes: [String: OptionValue], state: [String: OptionValue]) -> Int? {
        OptionValue.serializedSize(ofDictionaries: [attributes, state])
    }

    /// Checks `attributes` and `state`: every value must be one the host keeps
    /// (strings, object paths, booleans, integers, doubles, arrays of these and
    /// dictionaries; else `InvalidArgument` naming the key and the type), and
    /// together they may take at most ``ActivityLimits/maxPayloadBytes`` bytes as
    /// measured by ``payloadSize(attributes:state:)`` (else `LimitExceeded` naming the size
    /// and the limit).
    public func checkPayload(attributes: [String: OptionValue], state: [String: OptionValue]) throws(HostError) {
        try Validate.storable(attributes, "attributes")
        try Validate.storable(state, "state")
        guard let size = Self.payloadSize(attributes: attributes, state: state) else {
            // Unreachable after the checks above, which find every value that has no size.
            throw .invalidArgument("attributes or state hold a value that cannot be sent over D-Bus; use strings, integers, doubles, booleans, arrays and a{sv} dictionaries")
        }
        guard size <= limits.maxPayloadBytes else {
            throw .limitExceeded(
                "attributes and state together are \(size) bytes serialized; the limit is \(limits.maxPayloadBytes) bytes — keep only what the presentations show in them and leave the rest in the app")
        }
    }

    // MARK: - Helpers

    /// Checks a Live Activity attributes type name.
    public static func checkAttributesType(_ s: String) throws(HostError) {
        let example = "like DeliveryAttributes or org.example.TapMe.DeliveryAttributes"
        if s.isEmpty {
            throw .invalidArgument("the attributes type must not be empty; name the activity's attributes type, \(example)")
        }
        if s.utf8.count > 255 {
            throw .invalidArgument("the attributes type '\(s.prefix(40))…' is \(s.utf8.count) bytes long, but at most 255 are allowed; use a shorter name, \(example)")
        }
        for element in s.split(separator: ".", omittingEmptySubsequences: false) {
            guard let first = element.unicodeScalars.first else {
                throw .invalidArgument("the attributes type '\(s)' has an empty element (a leading, trailing or doubled '.'); \(example)")
            }
            if !(Validate.isASCIILetter(first) || first == "_") {
                throw .invalidArgument("the attributes type '\(s)' has the element '\(element)', which does not start with an ASCII letter or '_'; \(example)")
            }
            for scalar in element.unicodeScalars where !(Validate.isASCIIAlphanumeric(scalar) || scalar == "_" || scalar == "-") {
                throw .invalidArgument("the attributes type '\(s)' contains \(Validate.quoted(scalar)), which is not allowed; use ASCII letters, digits, '_', '-' and '.', \(example)")
            }
        }
    }

    static func noActivity(_ id: String) -> HostError {
        .invalidArgument("there is no Live Activity '\(id)'; use an id StartActivity returned that has not been removed")
    }

    /// `"Unix time 1700000000"`, for messages.
    static func describe(_ date: Date) -> String {
        "Unix time \(Int64(date.timeIntervalSince1970.rounded(.down)))"
    }

    /// One method's options; `attributes` outside `StartActivity` gets its own message.
    static func options<Options: MethodOptions>(_ values: [String: OptionValue], _: Options.Type) throws(HostError) -> Options {
        if values["attributes"] != nil && !Options.declared.contains(where: { $0.key == "attributes" }) {
            throw .invalidArgument(
                "\(Options.methods) does not take 'attributes': attributes are fixed when the activity starts (as ActivityKit's are static); put values that change in 'state', or end this activity and start a new one")
        }
        return try Options(values)
    }

    /// The date of a date option: Unix seconds within the range the XML
    /// declares (from 1970 to the end of the year 9999, as far as a date
    /// written as ISO 8601 reaches). Every date the host keeps fits in whole
    /// seconds and milliseconds of `Int64`, so nothing computed from one (a
    /// deadline, a property, a record) can overflow.
    static func date(_ seconds: Int64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
