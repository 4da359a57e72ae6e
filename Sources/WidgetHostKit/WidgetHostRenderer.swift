import DBus
import FoundationEssentials
import WidgetHostCore
import WidgetHostInterfaces
import WidgetHostWire

/// A renderer's side of WidgetHost: mirror the placed widgets and Live
/// Activities, place widgets, and report taps.
///
/// ```swift
/// let renderer = try await WidgetHostRenderer.connect()
/// for widget in try await renderer.widgets() { draw(widget.content) }
/// let result = try await renderer.tap(widget.id, element: "show-red", activationToken: token)
/// for await change in try await renderer.changes() { redraw(change) }
/// ```
public final class WidgetHostRenderer: Sendable {
    public let connection: Connection

    init(connection: Connection) { self.connection = connection }

    /// Connects to the bus (the session bus by default).
    public static func connect(_ bus: BusAddress = .session) async throws -> WidgetHostRenderer {
        WidgetHostRenderer(connection: try await Connection.connect(bus, label: "renderer"))
    }

    public func close() { connection.close() }

    // MARK: Mirroring

    /// Every placed widget, in placement order.
    public func widgets() async throws -> [RenderedWidget] {
        try await objects().compactMap(\.widget).sorted { MintedID.areInOrder($0.id, $1.id) }
    }

    /// Every Live Activity.
    public func activities() async throws -> [RenderedActivity] {
        try await objects().compactMap(\.activity).sorted { MintedID.areInOrder($0.id, $1.id) }
    }

    /// Changes from now on: widgets and activities added, changed (the whole
    /// object as it is now) and removed, built on ObjectManager's
    /// InterfacesAdded/InterfacesRemoved and PropertiesChanged.
    public func changes() async throws -> AsyncStream<RendererChange> {
        let signals = try await connection.signals(MatchRule(sender: Host1Apps.busName, pathNamespace: Host1Apps.objectPath))
        let connection = self.connection
        return Self.reading(signals) { message -> RendererChange? in
            switch StandardSignal(message) {
            case .interfacesAdded(let path, let interfaces)?:
                return MirroredObject(path: path, interfaces: interfaces).added
            case .interfacesRemoved(let path, _)?:
                return Host1Widget.id(inPath: path).map(RendererChange.widgetRemoved)
                    ?? Host1LiveActivity.id(inPath: path).map(RendererChange.activityRemoved)
            case .propertiesChanged(let path, let interface, _, _)?:
                guard path != Host1Apps.objectPath,
                    let properties = try? await connection.allProperties(destination: Host1Apps.busName, path: path, interface: interface)
                else { return nil }
                return MirroredObject(path: path, interfaces: [interface: properties]).updated
            case nil:
                return nil
            }
        }
    }

    /// `signals` read one by one as `T`s (`read` answers nil to skip one), until the caller stops iterating.
    static func reading<T: Sendable>(
        _ signals: AsyncStream<Message>, _ read: @escaping @Sendable (Message) async -> T?
    ) -> AsyncStream<T> {
        AsyncStream { continuation in
            let task = Task {
                for await message in signals {
                    if let value = await read(message) { continuation.yield(value) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func objects() async throws -> [MirroredObject] {
        try await callingHost { try await connection.managedObjects(destination: Host1Apps.busName, path: Host1Apps.objectPath) }.map {
            MirroredObject(path: $0.key, interfaces: $0.value)
        }
    }

    // MARK: Acting

    /// Places a widget; returns it.
    public func addWidget(
        appID: String, kind: String, family: WidgetFamily, configuration: [String: OptionValue] = [:]
    ) async throws -> RenderedWidget {
        let (path, all) = try await callingHost {
            let path = try await Host1Widgets.Proxy(connection).addWidget(
                appID: appID, kind: kind, family: family.rawValue, configuration: configuration.mapValues(\.dbusValue))
            return (path, try await connection.allProperties(destination: Host1Apps.busName, path: path, interface: Host1Widget.name))
        }
        guard let widget = MirroredObject(path: path, interfaces: [Host1Widget.name: all]).widget else {
            throw DBusError.failed("the host placed \(path) but it has no widget properties")
        }
        return widget
    }

    /// Taps a widget (id or path) on `element` (`""` for the background) and returns the outcome once the app has answered.
    /// - Parameter deliver: false resolves only (`Resolve`): nothing reaches the app.
    public func tap(
        _ widget: String, element: String = "", surface: Surface = .desktop, activationToken: String? = nil, deliver: Bool = true
    ) async throws -> TapResult {
        let widget = Host1Widget.Proxy(connection, path: Host1Widget.objectPath(idOrPath: widget), timeout: Self.tapTimeout)
        let options = Self.tapOptions(surface, activationToken)
        return try await callingHost {
            TapResult(
                deliver
                    ? try await widget.tap(elementID: element, options: options)
                    : try await widget.resolve(elementID: element, options: options))
        }
    }

    /// Taps a presentation of a Live Activity (id or path).
    public func tapActivity(
        _ activity: String, presentation: ActivityPresentation, element: String = "", surface: Surface = .desktop,
        activationToken: String? = nil, deliver: Bool = true
    ) async throws -> TapResult {
        let activity = Host1LiveActivity.Proxy(connection, path: Host1LiveActivity.objectPath(idOrPath: activity), timeout: Self.tapTimeout)
        let options = Self.tapOptions(surface, activationToken)
        let presentation = presentation.rawValue
        return try await callingHost {
            TapResult(
                deliver
                    ? try await activity.tap(presentation: presentation, elementID: element, options: options)
                    : try await activity.resolve(presentation: presentation, elementID: element, options: options))
        }
    }

    /// How long a tap waits for its answer, as the project's renderers wait:
    /// longer than the host's delivery timeout (25 s by default), so that an
    /// app silent for all of it is told from one slower than the renderer.
    static let tapTimeout = Duration.seconds(30)

    /// A tap's options: its `deadline` is when its call stops waiting, so a
    /// host that reads it only later (stopped, or busy) delivers it to nobody
    /// (docs/delivery.md#the-renderers-deadline).
    static func tapOptions(_ surface: Surface, _ token: String?, now: Date = Date()) -> [String: DBusValue] {
        let deadline = UnixTime.milliseconds(now.addingTimeInterval(Double(tapTimeout.components.seconds)))
        var options: [String: DBusValue] = ["surface": .string(surface.rawValue), "deadline": .int64(deadline)]
        if let token { options["activation_token"] = .string(token) }
        return options
    }
}

/// A placed widget as a renderer sees it.
public struct RenderedWidget: Sendable, Equatable {
    public var id: String
    public var path: String
    public var appID: String
    public var kind: String
    /// Nil for a family this version does not know; `familyName` has it.
    public var family: WidgetFamily? { WidgetFamily(rawValue: familyName) }
    /// The family as sent.
    public var familyName: String
    public var configuration: [String: OptionValue]
    /// The view tree JSON as the host holds it; `""` before the app gave one.
    public var contentJSON: String
    /// The view tree, decoded; nil before the app gave one.
    public var content: ViewNode? { contentJSON.isEmpty ? nil : try? ViewNode.decode(contentJSON) }
    /// Every property as sent (`org.widgethost.Host1.Widget`), including ones added later.
    public var properties: [String: OptionValue]
}

/// A Live Activity as a renderer sees it.
public struct RenderedActivity: Sendable, Equatable {
    public var id: String
    public var path: String
    public var appID: String
    public var attributesType: String
    /// `active`, `stale` or `ended`.
    public var state: String
    public var contentJSON: String
    /// `ContentState`: the values texts bind to as `state.KEY`.
    public var contentState: [String: OptionValue]
    /// `Attributes`: the values texts bind to as `attributes.KEY`.
    public var attributes: [String: OptionValue]
    public var relevance: Double
    public var startDate: Date?
    /// When the content goes stale, if the app said.
    public var staleDate: Date?
    public var endDate: Date?
    /// When an ended activity is removed.
    public var dismissalDate: Date?
    /// Every property as sent (`org.widgethost.Host1.LiveActivity`), including ones added later.
    public var properties: [String: OptionValue]
}

/// What changed, as `WidgetHostRenderer.changes()` reports it.
public enum RendererChange: Sendable, Equatable {
    case widgetAdded(RenderedWidget)
    case widgetChanged(RenderedWidget)
    case widgetRemoved(String)
    case activityAdded(RenderedActivity)
    case activityChanged(RenderedActivity)
    case activityRemoved(String)
}

/// One object of GetManagedObjects, read as a widget or an activity.
struct MirroredObject {
    var path: String
    /// Its properties by interface.
    var interfaces: [String: [String: DBusValue]]

    var widget: RenderedWidget? {
        guard let values = interfaces[Host1Widget.name], let p = try? Host1Widget.Properties(values) else { return nil }
        return RenderedWidget(
            id: p.id, path: path, appID: p.appID, kind: p.kind, familyName: p.family,
            configuration: OptionValue.dictionary(p.configuration), contentJSON: p.content, properties: OptionValue.dictionary(values))
    }

    var activity: RenderedActivity? {
        guard let values = interfaces[Host1LiveActivity.name], let p = try? Host1LiveActivity.Properties(values) else { return nil }
        return RenderedActivity(
            id: p.id, path: path, appID: p.appID, attributesType: p.attributesType, state: p.state, contentJSON: p.content,
            contentState: OptionValue.dictionary(p.contentState), attributes: OptionValue.dictionary(p.attributes), relevance: p.relevance, startDate: Self.date(p.startDate), staleDate: Self.date(p.staleDate), endDate: Self.date(p.endDate),
            dismissalDate: Self.date(p.dismissalDate), properties: OptionValue.dictionary(values))
    }

    /// A date property in Unix seconds; 0 for none.
    static func date(_ seconds: Int64) -> Date? { seconds > 0 ? Date(timeIntervalSince1970: TimeInterval(seconds)) : nil }

    var added: RendererChange? { widget.map(RendererChange.widgetAdded) ?? activity.map(RendererChange.activityAdded) }
    var updated: RendererChange? { widget.map(RendererChange.widgetChanged) ?? activity.map(RendererChange.activityChanged) }
}
