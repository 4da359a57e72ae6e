import DBus
import FoundationEssentials
import Synchronization
import WidgetHostCore
import WidgetHostInterfaces
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
public final class WidgetHostApp: Sendable {
    public let appID: String
    public let schemes: [String]
    public let bundle: String?

    private struct State {
        var connection: Connection?
        var watch: Task<Void, Never>?
        var handlers = Handlers()
        var registered = 0
    }
    private let state = Mutex(State())
    /// The tasks handling deliveries and provider calls: `close()` cancels those still running.
    fileprivate let running = OwnedTasks()

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
    public var objectPath: String { "/" + String(appID.map { $0 == "." ? "/" : $0 == "-" ? "_" : $0 }) }
    /// Where the provider is served.
    public var providerPath: String { objectPath + "/Provider" }

    // MARK: Handlers (set before connect)

    /// Called for a URL to open (a link, a widgetURL, or a URL routed by the host's OpenURL), like SwiftUI's `onOpenURL`.
    public func onOpenURL(_ handler: @escaping @Sendable (String, DeliveryContext) async throws -> Void) {
        state.withLock { $0.handlers.openURL = handler }
    }

    /// Called for a user activity to continue, like SwiftUI's `onContinueUserActivity`.
    public func onContinueUserActivity(_ handler: @escaping @Sendable (UserActivity, DeliveryContext) async throws -> Void) {
        state.withLock { $0.handlers.continueActivity = handler }
    }

    /// Called for a button's or toggle's action, like an App Intent's `perform()`; the app is not to raise a window.
    /// The parameter is the control's own; a toggle's new state is the context's ``DeliveryContext/toggleIsOn``.
    public func onPerformAction(_ handler: @escaping @Sendable (String, OptionValue?, DeliveryContext) async throws -> Void) {
        state.withLock { $0.handlers.performAction = handler }
    }

    /// Serves timelines and dynamic options (`org.widgethost.Provider1`); registers `provider_path`.
    public func provideTimelines(with provider: any WidgetTimelineProvider) {
        state.withLock { $0.handlers.provider = provider }
    }

    // MARK: Connection

    /// Connects, serves the handlers, registers and publishes the bundle, and
    /// keeps doing so after every restart of the host.
    public func connect(_ bus: BusAddress = .session) async throws {
        let connection = try await Connection.connect(bus, label: appID)
        do {
            let served = Served(app: self)
            try connection.export([App1.exported(served)], at: objectPath)
            if state.withLock({ $0.handlers.provider }) != nil { try connection.export([Provider1.exported(served)], at: providerPath) }
            let restarts = try await connection.nameOwnerChanges(for: Host1Apps.busName)
            // Protocol widgethost delivers taps to this connection, so it must own the
            // app's bus name — the proof that it is the app — as GApplication does.
            switch try await connection.requestName(appID) {
            case .primaryOwner, .alreadyOwner: break
            case .exists, .inQueue:
                let owner = try? await connection.nameOwner(appID)
                throw DBusError.failed(
                    "the bus name \(appID) is owned by another connection\(owner.map { " (\($0))" } ?? ""); is the app already running?")
            }
            state.withLock { $0.connection = connection }
            try await register(on: connection)
            let task = Task { [weak self] in
                for await change in restarts where !change.newOwner.isEmpty {
                    try? await self?.register(on: connection)
                }
            }
            state.withLock { $0.watch = task }
        } catch {
            connection.close()
            throw error
        }
    }

    /// How many times the app has registered (1 after `connect`, one more after each host restart).
    public var registrationCount: Int { state.withLock { $0.registered } }

    /// Ends the registration (by closing the connection), stops watching the
    /// host, and cancels the handlers still running: their answers could not
    /// reach the host any more.
    public func close() {
        let (connection, watch) = state.withLock { ($0.connection, $0.watch) }
        watch?.cancel()
        connection?.close()
        running.cancelAll()
    }

    private func register(on connection: Connection) async throws {
        var options: [String: DBusValue] = ["protocol": .string("widgethost"), "schemes": .strings(schemes)]
        if state.withLock({ $0.handlers.provider }) != nil { options["provider_path"] = .objectPath(providerPath) }
        try await Host1Apps.Proxy(connection).registerApp(appID: appID, options: options)
        if let bundle { try await Host1Widgets.Proxy(connection).registerWidgets(appID: appID, bundleJSON: bundle) }
        state.withLock { $0.registered += 1 }
    }

    private func live() throws -> Connection {
        guard let connection = state.withLock({ $0.connection }) else {
            throw DBusError.failed("\(appID) is not connected; call connect() first")
        }
        return connection
    }

    private func widgets() throws -> Host1Widgets.Proxy { Host1Widgets.Proxy(try live()) }

    // MARK: What the app does

    /// Sets a widget's view tree (`SetContent`); `widget` is its id or path.
    public func setContent(_ widget: String, _ tree: ViewNode?) async throws {
        try await Host1Widget.Proxy(try live(), path: Host1Widget.objectPath(idOrPath: widget)).setContent(contentJSON: tree?.json ?? "")
    }

    /// Reloads the timelines of every placed widget of `kind` (outside the daily budget).
    public func reloadTimelines(ofKind kind: String) async throws {
        try await widgets().reloadTimelines(appID: appID, kind: kind)
    }

    /// Reloads the timelines of all the app's widgets.
    public func reloadAllTimelines() async throws {
        try await widgets().reloadAllTimelines(appID: appID)
    }

    /// The app's placed widgets, like WidgetCenter's current configurations.
    public func currentConfigurations() async throws -> [PlacedWidgetInfo] {
        try await widgets().currentConfigurations(appID: appID).map { path, kind, family, id, configuration in
            PlacedWidgetInfo(
                path: path, kind: kind, family: WidgetFamily(rawValue: family), id: id, configuration: OptionValue.dictionary(configuration))
        }
    }

    /// Starts a Live Activity; returns its id (`a1`). `content` maps each presentation to its tree.
    public func startActivity(
        attributesType: String, content: ActivityViews, attributes: [String: OptionValue] = [:], state: [String: OptionValue] = [:],
        staleDate: Date? = nil, relevance: Double = 0
    ) async throws -> String {
        var options: [String: DBusValue] = ["attributes": attributes.dbusValue, "state": state.dbusValue, "relevance": .double(relevance)]
        if let staleDate { options["stale_date"] = .int64(Int64(staleDate.timeIntervalSince1970)) }
        let path = try await Host1LiveActivities.Proxy(try live()).startActivity(
            appID: appID, attributesType: attributesType, contentJSON: content.json, options: options)
        return Host1LiveActivity.id(inPath: path) ?? path
    }

    /// Updates a Live Activity's content (nil keeps it) and state.
    public func updateActivity(_ activity: String, content: ActivityViews? = nil, state: [String: OptionValue]) async throws {
        try await Host1LiveActivity.Proxy(try live(), path: Host1LiveActivity.objectPath(idOrPath: activity)).update(
            contentJSON: content?.json ?? "", options: ["state": state.dbusValue])
    }

    /// Ends a Live Activity: `dismissal` is `default`, `immediate`, or `after` with `at`.
    public func endActivity(_ activity: String, dismissal: String = "default", at: Date? = nil) async throws {
        var options: [String: DBusValue] = ["dismissal": .string(dismissal)]
        if let at { options["dismissal_date"] = .int64(Int64(at.timeIntervalSince1970)) }
        try await Host1LiveActivity.Proxy(try live(), path: Host1LiveActivity.objectPath(idOrPath: activity)).end(options: options)
    }

    // MARK: Serving

    var handlers: Handlers { state.withLock { $0.handlers } }

    /// What the app set to handle deliveries and serve timelines.
    struct Handlers: Sendable {
        var openURL: @Sendable (String, DeliveryContext) async throws -> Void = { _, _ in }
        var continueActivity: @Sendable (UserActivity, DeliveryContext) async throws -> Void = { _, _ in }
        var performAction: @Sendable (String, OptionValue?, DeliveryContext) async throws -> Void = { _, _, _ in }
        var provider: (any WidgetTimelineProvider)?

        func requireProvider() throws -> any WidgetTimelineProvider {
            guard let provider else { throw DBusError.failed("no provider") }
            return provider
        }
    }
}

/// `org.widgethost.App1` and `org.widgethost.Provider1` as the app serves
/// them: each call runs the app's handler in a task the app holds, and answers
/// when it returns.
private struct Served: App1.Server, Provider1.Server {
    weak let app: WidgetHostApp?

    private func run<T>(_ reply: TypedReply<T>, _ body: @escaping @Sendable (WidgetHostApp.Handlers) async throws -> T) {
        guard let app else { return reply.fail(DBusError.failed("the app is closing")) }
        let handlers = app.handlers
        app.running.start {
            do { reply.succeed(try await body(handlers)) } catch { reply.fail(error) }
        }
    }

    /// A delivery the host stopped waiting for (its `org.widgethost.deadline`
    /// passed: the app was stopped or busy) is dropped, not acted on late —
    /// its tap was answered as failed long ago.
    private func deliver(_ reply: TypedReply<Void>, _ context: [String: DBusValue], _ body: @escaping @Sendable (WidgetHostApp.Handlers, DeliveryContext) async throws -> Void) {
        if case .int64(let deadline)? = context["org.widgethost.deadline"]?.unwrapped,
            Date().timeIntervalSince1970 * 1000 > Double(deadline)
        {
            return reply.fail(DBusError.failed("the delivery arrived after its deadline, when the host had stopped waiting for it; dropped"))
        }
        let delivery = DeliveryContext(OptionValue.dictionary(context))
        run(reply) { try await body($0, delivery) }
    }

    func openURL(_ call: MethodCall, url: String, context: [String: DBusValue], reply: TypedReply<Void>) {
        deliver(reply, context) { try await $0.openURL(url, $1) }
    }

    func continueUserActivity(
        _ call: MethodCall, activityType: String, userInfo: [String: DBusValue], context: [String: DBusValue], reply: TypedReply<Void>
    ) {
        let activity = UserActivity(activityType: activityType, userInfo: OptionValue.dictionary(userInfo))
        deliver(reply, context) { try await $0.continueActivity(activity, $1) }
    }

    func performAction(_ call: MethodCall, action: String, parameter: DBusValue, context: [String: DBusValue], reply: TypedReply<Void>) {
        // An empty av is a control without a parameter.
        let value: OptionValue? = parameter.unwrapped == .array(element: "v", []) ? nil : OptionValue(parameter)
        deliver(reply, context) { try await $0.performAction(action, value, $1) }
    }

    func getTimeline(
        _ call: MethodCall, kind: String, family: String, configuration: [String: DBusValue], context: [String: DBusValue],
        reply: TypedReply<(entries: [(Int64, String)], policy: String, reloadAt: Int64)>
    ) {
        run(reply) { handlers in
            let request = TimelineRequest(
                kind: kind, family: WidgetFamily(rawValue: family), configuration: OptionValue.dictionary(configuration),
                widgetID: context["widget_id"]?.stringValue ?? "", reason: context["reason"]?.stringValue ?? "")
            let timeline = try await handlers.requireProvider().timeline(for: request)
            return (
                timeline.entries.map { (UnixTime.milliseconds($0.date), $0.content.json) }, timeline.policy.name,
                timeline.policy.reloadAtMs
            )
        }
    }

    func provideOptions(
        _ call: MethodCall, kind: String, parameter: String, configuration: [String: DBusValue], reply: TypedReply<[(String, String)]>
    ) {
        run(reply) { handlers in
            try await handlers.requireProvider().options(
                kind: kind, parameter: parameter, configuration: OptionValue.dictionary(configuration)
            ).map { ($0.id, $0.display) }
        }
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
