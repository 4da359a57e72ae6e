import DBus
import Foundation
import WidgetHostCore
import WidgetHostWire

/// An app's side of WidgetHost: its registration, its widgets' content, its
/// Live Activities, its timeline provider, and the deliveries of taps.
///
/// ```swift
/// let app = WidgetHostApp(appID: "org.example.TapMe", schemes: ["tap-me-widget"], bundle: bundleJSON)
/// app.onOpenURL { url, context in show(url, raisingWith: context.activationToken) }
/// try await app.connect()
/// try await app.setContent("w1", .vstack(widgetURL: "tap-me-widget://show-red", [.text("Red")]))
/// ```
///
/// `connect()` serves `org.widgethost.App1` (and `org.widgethost.Provider1`
/// when a provider is set) on a private connection, takes the app's bus name
/// (`appID`; it fails if another process owns it), registers, and publishes
/// the bundle; whenever the host's name gets a new owner — the host restarted
/// — it registers and publishes again by itself.
public final class WidgetHostApp: @unchecked Sendable {
    public let appID: String
    public let schemes: [String]
    public let bundle: String?

    private let lock = NSLock()
    private var connection: Connection?
    private var watch: Task<Void, Never>?
    private var openURL: @Sendable (String, DeliveryContext) async throws -> Void = { _, _ in }
    private var continueActivity: @Sendable (UserActivity, DeliveryContext) async throws -> Void = { _, _ in }
    private var performAction: @Sendable (String, OptionValue?, DeliveryContext) async throws -> Void = { _, _, _ in }
    private var provider: (any WidgetTimelineProvider)?
    private var registered = 0

    /// - Parameters:
    ///   - appID: the desktop-file id without `.desktop`, e.g. `org.example.TapMe`.
    ///   - schemes: URL schemes the app handles.
    ///   - bundle: the widget bundle JSON to publish at every registration (`RegisterWidgets`), or nil.
    public init(appID: String, schemes: [String] = [], bundle: String? = nil) {
        self.appID = appID
        self.schemes = schemes
        self.bundle = bundle
    }

    /// The object path of the app's handler: `/` + app id with `.` → `/` and `-` → `_`.
    public var objectPath: String { "/" + appID.replacingOccurrences(of: ".", with: "/").replacingOccurrences(of: "-", with: "_") }
    /// Where the provider is served.
    public var providerPath: String { objectPath + "/Provider" }

    // MARK: Handlers (set before connect)

    /// Called for a URL to open (a link, a widgetURL, or a URL routed by the host's OpenURL), like SwiftUI's `onOpenURL`.
    public func onOpenURL(_ handler: @escaping @Sendable (String, DeliveryContext) async throws -> Void) {
        lock.withLock { openURL = handler }
    }

    /// Called for a user activity to continue, like SwiftUI's `onContinueUserActivity`.
    public func onContinueUserActivity(_ handler: @escaping @Sendable (UserActivity, DeliveryContext) async throws -> Void) {
        lock.withLock { continueActivity = handler }
    }

    /// Called for a button's or toggle's action, like an App Intent's `perform()`; the app is not to raise a window.
    public func onPerformAction(_ handler: @escaping @Sendable (String, OptionValue?, DeliveryContext) async throws -> Void) {
        lock.withLock { performAction = handler }
    }

    /// Serves timelines and dynamic options (`org.widgethost.Provider1`); registers `provider_path`.
    public func provideTimelines(with provider: any WidgetTimelineProvider) {
        lock.withLock { self.provider = provider }
    }

    // MARK: Connection

    /// Connects, serves the handlers, registers and publishes the bundle, and
    /// keeps doing so after every restart of the host.
    public func connect(_ bus: BusAddress = .session) async throws {
        let connection = try await Connection.connect(bus, label: appID)
        do {
            try connection.export(try interfaces(), at: objectPath)
            if lock.withLock({ provider }) != nil { try connection.export([try providerInterface()], at: providerPath) }
            let restarts = try await connection.nameOwnerChanges(for: WidgetHostNames.busName)
            // Protocol widgethost delivers taps to this connection, so it must own the
            // app's bus name — the proof that it is the app — as GApplication does.
            switch try await connection.requestName(appID) {
            case .primaryOwner, .alreadyOwner: break
            case .exists, .inQueue:
                let owner = try? await connection.nameOwner(appID)
                throw DBusError.failed(
                    "the bus name \(appID) is owned by another connection\(owner.map { " (\($0))" } ?? ""); is the app already running?")
            }
            lock.withLock { self.connection = connection }
            try await register(on: connection)
            let task = Task { [weak self] in
                for await change in restarts where !change.newOwner.isEmpty {
                    try? await self?.register(on: connection)
                }
            }
            lock.withLock { watch = task }
        } catch {
            connection.close()
            throw error
        }
    }

    /// How many times the app has registered (1 after `connect`, one more after each host restart).
    public var registrationCount: Int { lock.withLock { registered } }

    /// Ends the registration (by closing the connection) and stops watching the host.
    public func close() {
        let (connection, watch) = lock.withLock { (self.connection, self.watch) }
        watch?.cancel()
        connection?.close()
    }

    private func register(on connection: Connection) async throws {
        var options: [String: DBusValue] = ["protocol": .string("widgethost"), "schemes": .strings(schemes)]
        if lock.withLock({ provider }) != nil { options["provider_path"] = .objectPath(providerPath) }
        _ = try await host(connection, WidgetHostNames.apps, "RegisterApp", [.string(appID), .vardict(options)])
        if let bundle { _ = try await host(connection, WidgetHostNames.widgets, "RegisterWidgets", [.string(appID), .string(bundle)]) }
        lock.withLock { registered += 1 }
    }

    private func live() throws -> Connection {
        guard let connection = lock.withLock({ connection }) else {
            throw DBusError.failed("\(appID) is not connected; call connect() first")
        }
        return connection
    }

    private func host(_ connection: Connection, _ interface: String, _ member: String, _ args: [DBusValue], path: String? = nil)
        async throws -> [DBusValue]
    {
        try await connection.call(
            destination: WidgetHostNames.busName, path: path ?? WidgetHostNames.rootPath, interface: interface, member: member, args)
    }

    // MARK: What the app does

    /// Sets a widget's view tree (`SetContent`); `widget` is its id or path.
    public func setContent(_ widget: String, _ tree: ViewNode?) async throws {
        _ = try await host(try live(), WidgetHostNames.widget, "SetContent", [.string(tree?.json ?? "")], path: WidgetHostNames.widgetPath(widget))
    }

    /// Reloads the timelines of every placed widget of `kind` (outside the daily budget).
    public func reloadTimelines(ofKind kind: String) async throws {
        _ = try await host(try live(), WidgetHostNames.widgets, "ReloadTimelines", [.string(appID), .string(kind)])
    }

    /// Reloads the timelines of all the app's widgets.
    public func reloadAllTimelines() async throws {
        _ = try await host(try live(), WidgetHostNames.widgets, "ReloadAllTimelines", [.string(appID)])
    }

    /// The app's placed widgets, like WidgetCenter's current configurations.
    public func currentConfigurations() async throws -> [PlacedWidgetInfo] {
        let reply = try await host(try live(), WidgetHostNames.widgets, "CurrentConfigurations", [.string(appID)])
        return (reply.first?.arrayElements ?? []).compactMap { row in
            guard case .structure(let f) = row, f.count == 5 else { return nil }
            return PlacedWidgetInfo(
                path: f[0].stringValue ?? "", kind: f[1].stringValue ?? "", family: WidgetFamily(rawValue: f[2].stringValue ?? ""),
                id: f[3].stringValue ?? "", configuration: OptionValue.dictionary(f[4]))
        }
    }

    /// Starts a Live Activity; returns its id (`a1`). `content` maps each presentation to its tree.
    public func startActivity(
        attributesType: String, content: ActivityViews, attributes: [String: OptionValue] = [:], state: [String: OptionValue] = [:],
        staleDate: Date? = nil, relevance: Double = 0
    ) async throws -> String {
        var options: [String: DBusValue] = ["attributes": attributes.dbusValue, "state": state.dbusValue, "relevance": .double(relevance)]
        if let staleDate { options["stale_date"] = .int64(Int64(staleDate.timeIntervalSince1970)) }
        let reply = try await host(
            try live(), WidgetHostNames.liveActivities, "StartActivity",
            [.string(appID), .string(attributesType), .string(content.json), .vardict(options)])
        return String((reply.first?.stringValue ?? "").split(separator: "/").last ?? "")
    }

    /// Updates a Live Activity's content (nil keeps it) and state.
    public func updateActivity(_ activity: String, content: ActivityViews? = nil, state: [String: OptionValue]) async throws {
        _ = try await host(
            try live(), WidgetHostNames.liveActivity, "Update", [.string(content?.json ?? ""), .vardict(["state": state.dbusValue])],
            path: WidgetHostNames.activityPath(activity))
    }

    /// Ends a Live Activity: `dismissal` is `default`, `immediate`, or `after` with `at`.
    public func endActivity(_ activity: String, dismissal: String = "default", at: Date? = nil) async throws {
        var options: [String: DBusValue] = ["dismissal": .string(dismissal)]
        if let at { options["dismissal_date"] = .int64(Int64(at.timeIntervalSince1970)) }
        _ = try await host(try live(), WidgetHostNames.liveActivity, "End", [.vardict(options)], path: WidgetHostNames.activityPath(activity))
    }

    // MARK: Serving

    private func interfaces() throws -> [ExportedInterface] {
        var app1 = ExportedInterface(try InterfaceFiles.description("org.widgethost.App1"))
        app1.method("OpenURL", .async { [weak self] call in
            let handler = self?.lock.withLock { self?.openURL }
            try await handler?(call.arguments[0].stringValue ?? "", DeliveryContext(OptionValue.dictionary(call.arguments[1])))
            return []
        })
        app1.method("ContinueUserActivity", .async { [weak self] call in
            let handler = self?.lock.withLock { self?.continueActivity }
            let activity = UserActivity(
                activityType: call.arguments[0].stringValue ?? "", userInfo: OptionValue.dictionary(call.arguments[1]))
            try await handler?(activity, DeliveryContext(OptionValue.dictionary(call.arguments[2])))
            return []
        })
        app1.method("PerformAction", .async { [weak self] call in
            let handler = self?.lock.withLock { self?.performAction }
            var parameter: OptionValue? = OptionValue(call.arguments[1])
            if case .array(_, let items)? = parameter, items.isEmpty, call.arguments[1].unwrapped.signature == "av" { parameter = nil }
            try await handler?(call.arguments[0].stringValue ?? "", parameter, DeliveryContext(OptionValue.dictionary(call.arguments[2])))
            return []
        })
        return [app1]
    }

    private func providerInterface() throws -> ExportedInterface {
        var exported = ExportedInterface(try InterfaceFiles.description("org.widgethost.Provider1"))
        exported.method("GetTimeline", .async { [weak self] call in
            guard let provider = self?.lock.withLock({ self?.provider }) else { throw DBusError.failed("no provider") }
            let context = OptionValue.dictionary(call.arguments[3])
            let request = TimelineRequest(
                kind: call.arguments[0].stringValue ?? "", family: WidgetFamily(rawValue: call.arguments[1].stringValue ?? ""),
                configuration: OptionValue.dictionary(call.arguments[2]), widgetID: context["widget_id"]?.stringValue ?? "",
                reason: context["reason"]?.stringValue ?? "")
            let timeline = try await provider.timeline(for: request)
            return [
                .array(
                    element: "(xs)",
                    timeline.entries.map { .structure([.int64(UnixTime.milliseconds($0.date)), .string($0.content.json)]) }),
                .string(timeline.policy.name), .int64(timeline.policy.reloadAtMs),
            ]
        })
        exported.method("ProvideOptions", .async { [weak self] call in
            guard let provider = self?.lock.withLock({ self?.provider }) else { throw DBusError.failed("no provider") }
            let choices = try await provider.options(
                kind: call.arguments[0].stringValue ?? "", parameter: call.arguments[1].stringValue ?? "",
                configuration: OptionValue.dictionary(call.arguments[2]))
            return [.array(element: "(ss)", choices.map { .structure([.string($0.id), .string($0.display)]) })]
        })
        return exported
    }
}

/// One placed widget of the app (`CurrentConfigurations`).
public struct PlacedWidgetInfo: Sendable, Equatable {
    public var path: String
    public var kind: String
    public var family: WidgetFamily?
    public var id: String
    public var configuration: [String: OptionValue]
}

/// The view trees of a Live Activity, one per presentation, and its widgetURL.
public struct ActivityViews: Sendable, Equatable {
    public var widgetURL: String?
    public var lockScreen, compactLeading, compactTrailing, minimal, expanded: ViewNode

    public init(
        widgetURL: String? = nil, lockScreen: ViewNode, compactLeading: ViewNode, compactTrailing: ViewNode, minimal: ViewNode,
        expanded: ViewNode
    ) {
        self.widgetURL = widgetURL
        self.lockScreen = lockScreen
        self.compactLeading = compactLeading
        self.compactTrailing = compactTrailing
        self.minimal = minimal
        self.expanded = expanded
    }

    var json: String {
        var parts = [
            ("lockScreen", lockScreen), ("compactLeading", compactLeading), ("compactTrailing", compactTrailing), ("minimal", minimal),
            ("expanded", expanded),
        ].map { "\"\($0.0)\":\($0.1.json)" }
        if let widgetURL, let quoted = try? JSONEncoder().encode(widgetURL) {
            parts.insert("\"widgetURL\":" + String(decoding: quoted, as: UTF8.self), at: 0)
        }
        return "{" + parts.joined(separator: ",") + "}"
    }
}

// MARK: - Timelines

/// What an app implements to provide its widgets' timelines and dynamic options
/// (`org.widgethost.Provider1`), like WidgetKit's TimelineProvider.
public protocol WidgetTimelineProvider: Sendable {
    func timeline(for request: TimelineRequest) async throws -> WidgetTimeline
    func options(kind: String, parameter: String, configuration: [String: OptionValue]) async throws -> [ConfigurationOption]
}

extension WidgetTimelineProvider {
    public func options(kind: String, parameter: String, configuration: [String: OptionValue]) async throws -> [ConfigurationOption] {
        throw AppError(name: "org.widgethost.Error.NoOptions", message: "\(kind) offers no options for \(parameter)")
    }
}

/// The host asking for a widget's timeline.
public struct TimelineRequest: Sendable, Equatable {
    public var kind: String
    public var family: WidgetFamily?
    public var configuration: [String: OptionValue]
    public var widgetID: String
    /// `added`, `configured`, `policy`, `app-requested`, `requested`, `action` or `retry`.
    public var reason: String
}

/// Entries to show from their dates on, and when to ask again.
public struct WidgetTimeline: Sendable {
    public struct Entry: Sendable {
        public var date: Date
        public var content: ViewNode
        public init(date: Date, content: ViewNode) {
            self.date = date
            self.content = content
        }
    }
    public enum Policy: Sendable, Equatable {
        case atEnd, after(Date), never
        var name: String {
            switch self {
            case .atEnd: "at-end"
            case .after: "after"
            case .never: "never"
            }
        }
        var reloadAtMs: Int64 {
            if case .after(let date) = self { return UnixTime.milliseconds(date) }
            return 0
        }
    }
    public var entries: [Entry]
    public var policy: Policy
    public init(entries: [Entry], policy: Policy) {
        self.entries = entries
        self.policy = policy
    }
}

/// One choice for a dynamic parameter: what goes in the configuration, and what the user reads.
public struct ConfigurationOption: Sendable, Equatable {
    public var id: String
    public var display: String
    public init(id: String, display: String) {
        self.id = id
        self.display = display
    }
}
