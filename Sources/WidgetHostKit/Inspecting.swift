import DBus
import FoundationEssentials
import WidgetHostCore
import WidgetHostInterfaces
import WidgetHostWire

@_exported import enum DBus.BusAddress
@_exported import struct DBus.DBusError
@_exported import enum WidgetHostCore.LintSeverity
@_exported import enum WidgetHostCore.UnixTime
@_exported import enum WidgetHostCore.WidgetHostVersion

/// The host is not on the bus and D-Bus activation could not start it.
public struct WidgetHostUnavailable: Error, Sendable, CustomStringConvertible {
    /// What the bus answered.
    public var underlying: DBusError
    public var description: String {
        "no WidgetHost service on this bus: \(Host1Apps.busName) is not running and could not be started (\(underlying.message)). "
            + "Start it with `widget-hostd`, or install packaging/org.widgethost.Host1.service for D-Bus activation."
    }

    /// `error` as this error when it says the host is not there and cannot be started, else nil.
    init?(_ error: any Error) {
        guard let error = error as? DBusError,
            [DBusError.serviceUnknownName, DBusError.nameHasNoOwnerName].contains(error.name)
                || Self.activationFailures.contains(where: error.name.hasPrefix)
        else { return nil }
        underlying = error
    }

    /// What the bus answers when activation could not start the host: dbus-daemon
    /// starting it itself, or through systemd (a unit missing, masked or failing).
    static let activationFailures = ["org.freedesktop.DBus.Error.Spawn.", "org.freedesktop.systemd1."]
}

/// Makes a call to the host; "the host is not there" comes back as ``WidgetHostUnavailable``.
func callingHost<T>(_ call: () async throws -> T) async throws -> T {
    do {
        return try await call()
    } catch {
        throw WidgetHostUnavailable(error) ?? error
    }
}

/// An app the host knows, as `ListApps` describes it (docs/interfaces.md).
public struct KnownApp: Sendable, Equatable {
    public var appID: String
    /// `freedesktop` or `widgethost`.
    public var `protocol`: String
    /// `registration` (a live registration) or `desktop-entry`.
    public var source: String
    /// The registering connection, for a live registration.
    public var registeredBy: String?
    /// What the kernel says the registering process is: `none`, `flatpak` or `snap`.
    public var sandbox: String?
    /// The Flatpak or Snap app id of a sandboxed registration.
    public var sandboxAppID: String?
    public var schemes: [String]
    public var surfaces: [String]
    /// Every detail as sent, including keys added later.
    public var details: [String: OptionValue]

    init(appID: String, details: [String: OptionValue]) {
        self.appID = appID
        self.details = details
        `protocol` = details["protocol"]?.stringValue ?? ""
        source = details["source"]?.stringValue ?? ""
        registeredBy = details["registered_by"]?.stringValue
        sandbox = details["sandbox"]?.stringValue
        sandboxAppID = details["sandbox_app_id"]?.stringValue
        schemes = details["schemes"]?.stringArrayValue ?? []
        surfaces = details["surfaces"]?.stringArrayValue ?? []
    }
}

/// One finding of `LintContent`/`LintAppContent`.
public struct LintFinding: Sendable, Equatable {
    /// Nil for a severity this version does not know; `severityName` has it.
    public var severity: LintSeverity? { LintSeverity(rawValue: severityName) }
    /// `error`, `warning` or `info`, as sent.
    public var severityName: String
    /// A code of docs/widgets.md's lint table, e.g. `ignored-link`.
    public var code: String
    public var message: String
}

/// What a budgeted `Reload` will do (docs/timelines.md).
public struct ReloadAnswer: Sendable, Equatable {
    /// `fetching`, `queued`, `budget-exhausted`, `backoff` or `failed`.
    public var state: String
    /// When the reload runs, for `budget-exhausted` and `backoff`.
    public var runsAt: Date? { runsAtMs.map(UnixTime.date) }
    /// The same in Unix milliseconds, as sent.
    public var runsAtMs: Int64?
}

/// A widget's timeline as `DescribeTimeline` tells it (docs/timelines.md).
public struct TimelineDescription: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        /// When the entry shows, in Unix milliseconds, as sent.
        public var unixMs: Int64
        public var date: Date { UnixTime.date(unixMs) }
        public var contentJSON: String
    }
    /// Whether the widget has a timeline (its app names a provider).
    public var tracked: Bool
    public var entries: [Entry]
    /// Index in `entries` of the entry shown; nil while none is due yet.
    public var current: Int?
    /// `at-end`, `after`, `never`, or `""` before the first timeline.
    public var policy: String
    public var nextReloadReason: String?
    public var waitsForBudget: Bool
    /// The reason of the provider call in flight.
    public var fetching: String?
    /// The reason of the reload that follows the call in flight.
    public var queued: String?
    public var budgetLimit: Int
    public var budgetLeft: Int
    /// Failed calls since the last success.
    public var failures: Int
    public var lastFailure: String?
    /// Its dates in Unix milliseconds, as sent; nil where there is none.
    public var reloadAtMs, receivedMs, nextReloadMs, fetchStartedMs, budgetFreesAtMs, lastFailureAtMs: Int64?
    /// Every detail as sent except the entries, including keys added later.
    public var details: [String: OptionValue]

    /// For the `after` policy.
    public var reloadAt: Date? { reloadAtMs.map(UnixTime.date) }
    /// When the timeline arrived.
    public var received: Date? { receivedMs.map(UnixTime.date) }
    /// The planned reload, when there is one.
    public var nextReload: Date? { nextReloadMs.map(UnixTime.date) }
    public var fetchStarted: Date? { fetchStartedMs.map(UnixTime.date) }
    /// When a spent budget gets a slot back.
    public var budgetFreesAt: Date? { budgetFreesAtMs.map(UnixTime.date) }
    public var lastFailureAt: Date? { lastFailureAtMs.map(UnixTime.date) }

    init(_ info: [String: DBusValue]) {
        func ms(_ key: String) -> Int64? { info[key]?.integerValue.flatMap { $0 > 0 ? $0 : nil } }
        tracked = info["tracked"]?.boolValue == true
        entries = (info["entries"]?.arrayElements ?? []).compactMap { entry in
            guard case .structure(let fields) = entry.unwrapped, fields.count == 2, let ms = fields[0].integerValue,
                let json = fields[1].stringValue
            else { return nil }
            return Entry(unixMs: ms, contentJSON: json)
        }
        current = info["current"]?.integerValue.flatMap { $0 >= 0 ? Int($0) : nil }
        policy = info["policy"]?.stringValue ?? ""
        nextReloadReason = info["next_reload_reason"]?.stringValue
        waitsForBudget = info["waits_for_budget"]?.boolValue == true
        fetching = info["fetching"]?.stringValue
        queued = info["queued"]?.stringValue
        budgetLimit = Int(info["budget_limit"]?.integerValue ?? 0)
        budgetLeft = Int(info["budget_left"]?.integerValue ?? 0)
        failures = Int(info["failures"]?.integerValue ?? 0)
        lastFailure = info["last_failure"]?.stringValue
        reloadAtMs = ms("reload_at")
        receivedMs = ms("received")
        nextReloadMs = ms("next_reload")
        fetchStartedMs = ms("fetch_started")
        budgetFreesAtMs = ms("budget_frees_at")
        lastFailureAtMs = ms("last_failure_at")
        details = OptionValue.dictionary(info.filter { $0.key != "entries" })
    }
}

/// A tap the host resolved, as its `Tapped` signal reports it.
public struct ObservedTap: Sendable, Equatable {
    /// The tapped widget's or Live Activity's object path.
    public var target: String
    public var result: TapResult
}

extension WidgetHostRenderer {
    /// Every app the host knows: live registrations and DBusActivatable desktop entries.
    public func apps() async throws -> [KnownApp] {
        try await callingHost { try await Host1Apps.Proxy(connection).listApps() }.map {
            KnownApp(appID: $0.0, details: OptionValue.dictionary($0.1))
        }
    }

    /// Every widget bundle the host knows, by app id (`ListBundles`): what a widget gallery offers.
    public func bundles() async throws -> [(appID: String, bundle: WidgetBundle)] {
        try await callingHost { try await Host1Widgets.Proxy(connection).listBundles() }.map {
            (appID: $0.0, bundle: try WidgetBundle.parse($0.1, stored: true))
        }
    }

    /// Every Live Activity, most relevant first (`LiveActivities.Order`).
    public func activitiesByRelevance() async throws -> [RenderedActivity] {
        let order = try await callingHost { try await Host1LiveActivities.Proxy(connection).properties().order }
        let byPath = Dictionary(try await activities().map { ($0.path, $0) }) { a, _ in a }
        return order.compactMap { byPath[$0] }
    }

    /// Checks a view tree for `family`; with `appID`, also its URL schemes against those the app declares.
    public func lint(_ contentJSON: String, family: WidgetFamily, appID: String? = nil) async throws -> [LintFinding] {
        let widgets = Host1Widgets.Proxy(connection)
        let findings = try await callingHost {
            if let appID {
                try await widgets.lintAppContent(appID: appID, family: family.rawValue, contentJSON: contentJSON)
            } else {
                try await widgets.lintContent(family: family.rawValue, contentJSON: contentJSON)
            }
        }
        return findings.map { LintFinding(severityName: $0.0, code: $0.1, message: $0.2) }
    }

    /// A budgeted reload of a widget's timeline (id or path).
    public func reloadTimeline(_ widget: String) async throws -> ReloadAnswer {
        let (state, ms) = try await callingHost {
            try await Host1Widget.Proxy(connection, path: Host1Widget.objectPath(idOrPath: widget)).reload()
        }
        return ReloadAnswer(state: state, runsAtMs: ms > 0 ? ms : nil)
    }

    /// A widget's timeline (id or path): its entries, the one shown, the next reload and the budget.
    public func describeTimeline(_ widget: String) async throws -> TimelineDescription {
        TimelineDescription(
            try await callingHost {
                try await Host1Widget.Proxy(connection, path: Host1Widget.objectPath(idOrPath: widget)).describeTimeline()
            })
    }

    /// The choices an app provides for a dynamic configuration parameter.
    public func configurationOptions(
        appID: String, kind: String, parameter: String, configuration: [String: OptionValue] = [:]
    ) async throws -> [ConfigurationOption] {
        try await callingHost {
            try await Host1Widgets.Proxy(connection).getConfigurationOptions(
                appID: appID, kind: kind, parameter: parameter, configuration: configuration.mapValues(\.dbusValue))
        }.map { ConfigurationOption(id: $0.0, display: $0.1) }
    }

    /// Taps from now on, on every widget and Live Activity, as the host resolves them.
    public func taps() async throws -> AsyncStream<ObservedTap> {
        let signals = try await connection.signals(Host1Widgets.Tapped.rule(sender: Host1Apps.busName, path: Host1Widgets.objectPath))
        return Self.reading(signals) { message in
            Host1Widgets.Tapped(message).map { ObservedTap(target: $0.target, result: TapResult(($0.outcome, $0.details))) }
        }
    }
}
