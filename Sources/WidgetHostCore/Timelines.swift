#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The values that travel between a provider's `GetTimeline` reply (docs/timelines.md)
// and ``TimelineEngine``: reasons, policies, entries, timelines, options, and
// what the engine tells the service to do.

/// Why the host asks a provider for a timeline (docs/timelines.md).
///
/// The raw value is the name used in logs and by `widget-host timeline`.
///
/// ## The reload budget
///
/// Each widget may be reloaded ``TimelineOptions/dailyBudget`` times in a
/// sliding ``TimelineOptions/budgetWindow`` (70 in 24 h by default). A reload
/// is *exempt* — it neither needs nor takes a slot — only when it is
/// ``appRequested`` and the app holds a live registration (docs/timelines.md#reload-budget).
///
/// Everything else is budgeted: ``added`` (a new widget's window is empty, so it
/// always runs), ``configured``, ``policy``, ``requested``, ``action`` (taps are
/// anyone's to make, so a renderer tapping a control in a loop could otherwise
/// make the host call the app's provider without end; an app that wants its
/// widget to show an action's result at once reloads it itself while
/// registered), and ``appRequested`` from an app without a live registration. A ``retry`` inherits the standing of the reload
/// that failed. A budgeted reload that finds the budget spent is deferred, never
/// dropped: the engine fetches it when the window frees a slot.
public enum ReloadReason: String, Sendable, CaseIterable {
    /// The widget was placed (`AddWidget`).
    case added
    /// The widget's configuration changed (`Configure`).
    case configured
    /// The timeline's policy came due (`at-end` or `after`). Only the engine uses it.
    case policy
    /// The app asked: `ReloadTimelines` or `ReloadAllTimelines`.
    case appRequested = "app-requested"
    /// A button or toggle of the widget performed an action (docs/widgets.md#resolution-rules, rule `control`).
    case action
    /// An earlier fetch failed and its backoff delay has passed. Only the engine uses it.
    case retry
    /// Someone other than the app's live registration asked for this widget:
    /// the widget's `Reload` method (`widget-host reload`), or the host itself
    /// when the app's provider became reachable again after failed fetches.
    case requested

    /// Whether a reload for this reason is outside the daily budget.
    ///
    /// - Parameter appIsLive: whether the widget's app holds a live registration
    ///   (`RegisterApp` on a connection that is still open). Only ``appRequested`` looks at it.
    /// - Returns: `appIsLive` for ``appRequested``, `false` otherwise.
    ///   (A ``retry`` takes the standing of the reload it repeats; this answers `false` for it.)
    public func isBudgetExempt(appIsLive: Bool) -> Bool {
        switch self {
        case .appRequested: appIsLive
        case .added, .configured, .policy, .action, .retry, .requested: false
        }
    }

    /// Whether the service may pass this reason to ``TimelineEngine/requestReload(widgetID:reason:appIsLive:now:)``;
    /// ``policy`` and ``retry`` reloads come only from the engine.
    public var isRequestable: Bool { self != .policy && self != .retry }
}

/// When the host asks for the next timeline (docs/timelines.md).
public enum TimelinePolicy: Sendable, Equatable, CustomStringConvertible {
    /// Reload at the date of the timeline's last entry.
    case atEnd
    /// Reload at the given Unix time in milliseconds.
    case after(unixMs: Int64)
    /// Reload only when asked (an action, the app, a new configuration).
    case never

    /// The policy names of the contract, in documentation order.
    public static let names = ["at-end", "after", "never"]

    /// `at-end`, `after` or `never`.
    public var name: String {
        switch self {
        case .atEnd: "at-end"
        case .after: "after"
        case .never: "never"
        }
    }

    /// The name, with the date for `after`: `after 2023-11-14T22:18:20.000Z`.
    public var description: String {
        if case .after(let ms) = self { return "after \(UnixTime.iso8601(ms))" }
        return name
    }

    /// Parses the `(s policy, x reload_at)` pair of a `GetTimeline` reply.
    ///
    /// `reload_at` is read only for `after`, where it must be given: a value
    /// of 0 or less counts as missing (the wire always carries an `x`, and
    /// providers send 0 when they have no date). A `reload_at` in the past is
    /// valid; the engine treats it as "as soon as allowed".
    ///
    /// - Throws: `InvalidArgument` for an unknown name (listing the policies),
    ///   or for `after` without `reload_at`.
    public static func parse(_ name: String, reloadAtMs: Int64) throws(HostError) -> TimelinePolicy {
        switch name {
        case "at-end": return .atEnd
        case "never": return .never
        case "after":
            guard reloadAtMs > 0 else {
                throw .invalidArgument(
                    "the timeline policy 'after' needs reload_at, the Unix time in milliseconds of the next reload, but reload_at is \(reloadAtMs); "
                        + "send a date, or use the policy at-end or never")
            }
            return .after(unixMs: reloadAtMs)
        default:
            throw .invalidArgument(
                "'\(name.prefix(80))' is not a timeline policy; use \(names.joined(separator: ", ")) (after with reload_at in Unix milliseconds)")
        }
    }
}

/// One entry of a timeline: content to show from a date on.
public struct TimelineEntry: Sendable, Equatable {
    /// When the entry becomes current, in Unix milliseconds.
    public var unixMs: Int64
    /// The view tree to show.
    public var content: ViewTree

    /// Creates an entry from an already parsed view tree.
    public init(unixMs: Int64, content: ViewTree) {
        self.unixMs = unixMs
        self.content = content
    }

    /// ``unixMs`` as a date.
    public var date: Date { UnixTime.date(unixMs) }
    /// The content as the provider sent it.
    public var contentJSON: String { content.json }
}

/// A provider's answer to `GetTimeline`, validated: every entry's content is a
/// view tree and the policy is known. Entries keep the order the provider sent;
/// ``TimelineEngine`` orders them (see ``normalizedEntries``).
public struct Timeline: Sendable, Equatable {
    /// The entries as sent.
    public var entries: [TimelineEntry]
    /// When to reload.
    public var policy: TimelinePolicy

    /// Creates a timeline from parsed entries.
    public init(entries: [TimelineEntry], policy: TimelinePolicy) {
        self.entries = entries
        self.policy = policy
    }

    /// Validates the `(a(xs) entries, s policy, x reload_at)` reply of `GetTimeline`.
    ///
    /// Checks, in this order: the number of entries (at most `maxEntries`), the
    /// policy (``TimelinePolicy/parse(_:reloadAtMs:)``), then each entry's
    /// content with ``ViewTree/parse(_:limits:)``. Pure: nothing is kept when it throws.
    ///
    /// - Parameters:
    ///   - entries: `(Unix ms, content JSON)` pairs, in the order sent.
    ///   - policy: `at-end`, `after` or `never`.
    ///   - reloadAtMs: the reply's `reload_at`; read only for `after`.
    ///   - limits: limits on each entry's view tree.
    ///   - maxEntries: the most entries a timeline may hold.
    /// - Throws: `LimitExceeded` for too many entries; `InvalidArgument` for the
    ///   policy; for an entry, the view-tree error (`InvalidContent`, or
    ///   `LimitExceeded` for an oversized tree) with a message that starts with the
    ///   entry's index as sent and its date, e.g.
    ///   `timeline entry 2 (2023-11-14T22:14:20.000Z, 1700000060000 ms): …`.
    public static func parse(
        entries: [(Int64, String)], policy: String, reloadAtMs: Int64,
        limits: ViewTreeLimits = ViewTreeLimits(), maxEntries: Int = TimelineOptions.defaultMaxEntries
    ) throws(HostError) -> Timeline {
        guard entries.count <= maxEntries else {
            throw .limitExceeded(
                "the timeline has \(entries.count) entries; the limit is \(maxEntries) — send fewer entries and ask for the rest later with the policy at-end or after")
        }
        let parsedPolicy = try TimelinePolicy.parse(policy, reloadAtMs: reloadAtMs)
        var parsed: [TimelineEntry] = []
        parsed.reserveCapacity(entries.count)
        for (index, (ms, json)) in entries.enumerated() {
            do {
                parsed.append(TimelineEntry(unixMs: ms, content: try ViewTree.parse(json, limits: limits)))
            } catch {
                throw HostError(error.name, "timeline entry \(index) (\(UnixTime.iso8601(ms)), \(ms) ms): \(error.message)")
            }
        }
        return Timeline(entries: parsed, policy: parsedPolicy)
    }

    /// The entries as the engine uses them: sorted by date, stably; of entries
    /// with the same date only the one sent last is kept.
    public var normalizedEntries: [TimelineEntry] {
        let order = entries.indices.sorted { a, b in
            entries[a].unixMs != entries[b].unixMs ? entries[a].unixMs < entries[b].unixMs : a < b
        }
        var result: [TimelineEntry] = []
        result.reserveCapacity(entries.count)
        for index in order {
            if let last = result.last, last.unixMs == entries[index].unixMs {
                result[result.count - 1] = entries[index]
            } else {
                result.append(entries[index])
            }
        }
        return result
    }
}

/// The settings of ``TimelineEngine``; the daemon exposes them as options.
///
/// Durations are seconds; the engine works in whole milliseconds (the contract's unit).
public struct TimelineOptions: Sendable, Equatable {
    /// 1000 entries.
    public static let defaultMaxEntries = 1000

    /// Budgeted reloads allowed per widget within ``budgetWindow``. At least 1.
    public var dailyBudget: Int
    /// The length of the sliding budget window; 24 h.
    public var budgetWindow: TimeInterval
    /// The shortest time from receiving a timeline to its policy reload
    /// (``HostDefaults/minReloadInterval``). Keeps `after` with a past `reload_at`
    /// (and `at-end` with no future entries) from becoming a busy loop.
    public var minimumReloadInterval: TimeInterval
    /// The delay before the first retry of a failed fetch (``HostDefaults/reloadRetryDelay``). Each further
    /// consecutive failure doubles it, up to ``retryMaximumDelay``.
    public var retryInitialDelay: TimeInterval
    /// The longest delay between retries: 1 h.
    public var retryMaximumDelay: TimeInterval
    /// The most entries a timeline may hold.
    public var maxEntries: Int
    /// Limits on each entry's view tree.
    public var contentLimits: ViewTreeLimits

    /// Creates options; every parameter defaults to the documented default.
    public init(
        dailyBudget: Int = HostDefaults.dailyReloadBudget,
        budgetWindow: TimeInterval = 86_400,
        minimumReloadInterval: TimeInterval = HostDefaults.minReloadInterval,
        retryInitialDelay: TimeInterval = HostDefaults.reloadRetryDelay,
        retryMaximumDelay: TimeInterval = 3_600,
        maxEntries: Int = TimelineOptions.defaultMaxEntries,
        contentLimits: ViewTreeLimits = ViewTreeLimits()
    ) {
        self.dailyBudget = dailyBudget
        self.budgetWindow = budgetWindow
        self.minimumReloadInterval = minimumReloadInterval
        self.retryInitialDelay = retryInitialDelay
        self.retryMaximumDelay = retryMaximumDelay
        self.maxEntries = maxEntries
        self.contentLimits = contentLimits
    }

    /// Checks the options, for the daemon to report a bad command-line value.
    /// (``TimelineEngine`` itself raises out-of-range values to the nearest valid one.)
    ///
    /// - Throws: `InvalidArgument` naming the option and its valid range.
    public func validate() throws(HostError) {
        guard dailyBudget >= 1 else {
            throw .invalidArgument("the daily reload budget is \(dailyBudget); give at least 1 (the default is \(HostDefaults.dailyReloadBudget))")
        }
        for (name, value, minimum) in [
            ("budget window", budgetWindow, 0.001), ("minimum reload interval", minimumReloadInterval, 0),
            ("initial retry delay", retryInitialDelay, 0.001), ("maximum retry delay", retryMaximumDelay, retryInitialDelay),
        ] where !(value.isFinite && value >= minimum) {
            throw .invalidArgument("the \(name) is \(value) s; give a finite number of seconds of at least \(minimum)")
        }
        guard maxEntries >= 1 else {
            throw .invalidArgument("the timeline entry limit is \(maxEntries); give at least 1 (the default is \(Self.defaultMaxEntries))")
        }
    }
}

/// A fetch the engine asks for: call the provider's `GetTimeline` for the
/// widget, then report the outcome with ``TimelineEngine/fetchSucceeded(_:timeline:now:)``
/// or ``TimelineEngine/fetchFailed(_:error:now:)``.
public struct TimelineFetch: Sendable, Hashable {
    /// Unique within an engine; tells a current fetch from one the engine no longer waits for.
    public var id: UInt64
    /// The widget to fetch for.
    public var widgetID: String
    /// Why.
    public var reason: ReloadReason

    /// Creates a fetch value (the engine makes them; tests may too).
    public init(id: UInt64, widgetID: String, reason: ReloadReason) {
        self.id = id
        self.widgetID = widgetID
        self.reason = reason
    }
}

/// Something the service must do for the engine.
public enum TimelineEffect: Sendable, Equatable {
    /// Make `content` the widget's `Content` (an entry's date arrived).
    case show(widgetID: String, content: ViewTree)
    /// Start this fetch.
    case fetch(TimelineFetch)

    /// The widget concerned.
    public var widgetID: String {
        switch self {
        case .show(let id, _): id
        case .fetch(let fetch): fetch.widgetID
        }
    }
}

/// The answer to ``TimelineEngine/requestReload(widgetID:reason:appIsLive:now:)``.
public enum ReloadDecision: Sendable, Equatable {
    /// Why a reload waits.
    public enum Deferral: String, Sendable {
        /// The widget's budget is spent; the reload runs when a slot frees.
        case budgetExhausted = "budget-exhausted"
        /// The provider's last fetch failed; the reload is the pending retry.
        case backoff
    }

    /// Start this fetch now.
    case fetch(TimelineFetch)
    /// A fetch is in flight; one more fetch follows when it ends.
    case coalesced(with: TimelineFetch)
    /// Not now. The engine remembers the reload and emits its ``TimelineEffect/fetch(_:)``
    /// from ``TimelineEngine/advance(to:)`` at `until` (or earlier, if something else starts a fetch).
    case deferred(until: Date, because: Deferral)
}

/// The reload a widget waits for.
public struct PlannedReload: Sendable, Equatable {
    /// When.
    public var date: Date
    /// The reason the fetch will carry: ``ReloadReason/policy``, ``ReloadReason/retry``,
    /// or the reason of a request the budget deferred.
    public var reason: ReloadReason
    /// Whether it waits for a budget slot (the date is when one frees).
    public var waitsForBudget: Bool
}

/// A failed fetch, kept for ``TimelineSnapshot``.
public struct TimelineFailure: Sendable, Equatable {
    /// When the failure was reported.
    public var date: Date
    /// The reason of the fetch that failed.
    public var reason: ReloadReason
    /// What went wrong, as the service reported it.
    public var message: String
}

/// One widget's timeline state, for `widget-host timeline WIDGET`.
public struct TimelineSnapshot: Sendable, Equatable {
    /// The widget.
    public var widgetID: String
    /// The current timeline, normalized: sorted, deduplicated, and starting at
    /// the entry that was due when it arrived (earlier past entries are dropped).
    public var entries: [TimelineEntry]
    /// The index in ``entries`` of the entry shown; nil while none of this
    /// timeline's entries is due (the widget keeps showing what it showed before).
    public var currentIndex: Int?
    /// The policy of the current timeline; nil before the first timeline.
    public var policy: TimelinePolicy?
    /// When the current timeline arrived.
    public var timelineReceivedAt: Date?
    /// The date of the next entry to show, if any.
    public var nextEntryDate: Date?
    /// The reload the widget waits for; nil while a fetch is in flight or when
    /// nothing is planned (policy `never`).
    public var nextReload: PlannedReload?
    /// The fetch in flight, if any.
    public var fetchInFlight: TimelineFetch?
    /// When the fetch in flight started.
    public var fetchStartedAt: Date?
    /// The reason of a reload requested while the fetch was in flight; it follows the fetch.
    public var reloadQueued: ReloadReason?
    /// ``TimelineOptions/dailyBudget``.
    public var budgetLimit: Int
    /// Budgeted reloads within the window ending now.
    public var budgetUsed: Int
    /// When the budget is spent, when its next slot frees; nil otherwise.
    public var budgetFreesAt: Date?
    /// Failures since the last success.
    public var consecutiveFailures: Int
    /// The latest failure, kept after later successes (``consecutiveFailures`` tells whether it still holds).
    public var lastFailure: TimelineFailure?

    /// Slots left in the window.
    public var budgetLeft: Int { max(0, budgetLimit - budgetUsed) }
}

/// Conversions between `Date` and Unix milliseconds, the one place they are made.
public enum UnixTime {
    /// `date` in whole Unix milliseconds, rounded to the nearest (so that
    /// `milliseconds(date(ms)) == ms`), saturating at the ends of `Int64`.
    public static func milliseconds(_ date: Date) -> Int64 {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        guard ms.isFinite else { return ms > 0 ? .max : .min }
        if ms >= 9.2e18 { return .max }
        if ms <= -9.2e18 { return .min }
        return Int64(ms)
    }

    /// `seconds` as whole milliseconds, at least `minimum`.
    static func milliseconds(seconds: TimeInterval, minimum: Int64) -> Int64 {
        guard seconds.isFinite else { return seconds > 0 ? .max : minimum }
        let ms = (seconds * 1000).rounded()
        if ms >= 9.2e18 { return .max }
        return max(minimum, Int64(max(ms, -9.2e18)))
    }

    public static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }

    /// `a × b`, saturating.
    static func multiply(_ a: Int64, _ b: Int64) -> Int64 {
        let (product, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? ((a < 0) == (b < 0) ? .max : .min) : product
    }

    /// `a + b`, saturating.
    static func add(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? (b > 0 ? .max : .min) : sum
    }

    /// `2023-11-14T22:13:20.000Z`: UTC, proleptic Gregorian, without Foundation's formatters.
    public static func iso8601(_ ms: Int64) -> String {
        // Floor division, written so that no step can overflow at the ends of Int64.
        let seconds = ms / 1000 - (ms % 1000 < 0 ? 1 : 0)
        let millisecond = Int(((ms % 1000) + 1000) % 1000)
        let days = seconds / 86_400 - (seconds % 86_400 < 0 ? 1 : 0)
        let secondOfDay = Int(((seconds % 86_400) + 86_400) % 86_400)
        // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value.magnitude)
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(Int64(secondOfDay / 3600), 2)):"
            + "\(pad(Int64(secondOfDay / 60 % 60), 2)):\(pad(Int64(secondOfDay % 60), 2)).\(pad(Int64(millisecond), 3))Z"
    }
}
