import DBus
import Foundation
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
        try await objects().compactMap(\.widget).sorted { $0.number < $1.number }
    }

    /// Every Live Activity.
    public func activities() async throws -> [RenderedActivity] {
        try await objects().compactMap(\.activity).sorted { $0.id < $1.id }
    }

    /// Changes from now on: widgets and activities added, changed (the whole
    /// object as it is now) and removed, built on ObjectManager's
    /// InterfacesAdded/InterfacesRemoved and PropertiesChanged.
    public func changes() async throws -> AsyncStream<RendererChange> {
        let signals = try await connection.signals(MatchRule(sender: WidgetHostNames.busName, pathNamespace: WidgetHostNames.rootPath))
        let connection = self.connection
        return AsyncStream { continuation in
            let task = Task {
                for await message in signals {
                    let args = message.arguments()
                    switch (message.interface, message.member) {
                    case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
                        let path = args[0].stringValue ?? ""
                        let properties = Self.merge(args[1])
                        if let change = MirroredObject(path: path, properties: properties).added { continuation.yield(change) }
                    case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
                        let path = args[0].stringValue ?? ""
                        let id = String(path.split(separator: "/").last ?? "")
                        continuation.yield(path.contains("/widgets/") ? .widgetRemoved(id) : .activityRemoved(id))
                    case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
                        let path = message.path ?? ""
                        guard path != WidgetHostNames.rootPath,
                            let reply = try? await connection.call(
                                destination: WidgetHostNames.busName, path: path, interface: "org.freedesktop.DBus.Properties",
                                member: "GetAll", [.string(args[0].stringValue ?? "")])
                        else { continue }
                        if let change = MirroredObject(path: path, properties: Self.flatten(reply.first)).updated { continuation.yield(change) }
                    default:
                        continue
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func objects() async throws -> [MirroredObject] {
        let reply = try await connection.call(
            destination: WidgetHostNames.busName, path: WidgetHostNames.rootPath, interface: "org.freedesktop.DBus.ObjectManager",
            member: "GetManagedObjects")
        return (reply.first?.stringKeyedEntries ?? [:]).map { MirroredObject(path: $0.key, properties: Self.merge($0.value)) }
    }

    /// `a{sa{sv}}` → every property of every interface.
    static func merge(_ value: DBusValue) -> [String: DBusValue] {
        var merged: [String: DBusValue] = [:]
        for (_, properties) in value.stringKeyedEntries ?? [:] { merged.merge(flatten(properties)) { _, new in new } }
        return merged
    }

    static func flatten(_ value: DBusValue?) -> [String: DBusValue] {
        (value?.stringKeyedEntries ?? [:]).mapValues(\.unwrapped)
    }

    // MARK: Acting

    /// Places a widget; returns it.
    public func addWidget(
        appID: String, kind: String, family: WidgetFamily, configuration: [String: OptionValue] = [:]
    ) async throws -> RenderedWidget {
        let reply = try await connection.call(
            destination: WidgetHostNames.busName, path: WidgetHostNames.rootPath, interface: WidgetHostNames.widgets, member: "AddWidget",
            [.string(appID), .string(kind), .string(family.rawValue), configuration.dbusValue])
        let path = reply.first?.stringValue ?? ""
        let all = try await connection.call(
            destination: WidgetHostNames.busName, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
            [.string(WidgetHostNames.widget)])
        guard let widget = MirroredObject(path: path, properties: Self.flatten(all.first)).widget else {
            throw DBusError.failed("the host placed \(path) but it has no widget properties")
        }
        return widget
    }

    /// Taps a widget (id or path) on `element` (`""` for the background) and returns the outcome once the app has answered.
    /// - Parameter deliver: false resolves only (`Resolve`): nothing reaches the app.
    public func tap(
        _ widget: String, element: String = "", surface: Surface = .desktop, activationToken: String? = nil, deliver: Bool = true
    ) async throws -> TapResult {
        try await tap(WidgetHostNames.widgetPath(widget), WidgetHostNames.widget, [.string(element)], surface, activationToken, deliver)
    }

    /// Taps a presentation of a Live Activity (id or path).
    public func tapActivity(
        _ activity: String, presentation: ActivityPresentation, element: String = "", surface: Surface = .desktop,
        activationToken: String? = nil, deliver: Bool = true
    ) async throws -> TapResult {
        try await tap(
            WidgetHostNames.activityPath(activity), WidgetHostNames.liveActivity, [.string(presentation.rawValue), .string(element)], surface,
            activationToken, deliver)
    }

    private func tap(
        _ path: String, _ interface: String, _ arguments: [DBusValue], _ surface: Surface, _ token: String?, _ deliver: Bool
    ) async throws -> TapResult {
        var options: [String: DBusValue] = ["surface": .string(surface.rawValue)]
        if let token { options["activation_token"] = .string(token) }
        let reply = try await connection.call(
            destination: WidgetHostNames.busName, path: path, interface: interface, member: deliver ? "Tap" : "Resolve",
            arguments + [.vardict(options)])
        return TapResult(outcome: reply[0].stringValue ?? "", details: OptionValue.dictionary(reply[1]))
    }
}

/// A placed widget as a renderer sees it.
public struct RenderedWidget: Sendable, Equatable {
    public var id: String
    public var path: String
    public var appID: String
    public var kind: String
    public var family: WidgetFamily?
    public var configuration: [String: OptionValue]
    /// The view tree JSON as the host holds it; `""` before the app gave one.
    public var contentJSON: String
    /// The view tree, decoded; nil before the app gave one.
    public var content: ViewNode? { contentJSON.isEmpty ? nil : try? ViewNode.decode(contentJSON) }

    var number: Int { Int(id.dropFirst()) ?? 0 }
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
    public var relevance: Double
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
    var properties: [String: DBusValue]

    var widget: RenderedWidget? {
        guard path.contains("/widgets/"), let id = properties["Id"]?.stringValue else { return nil }
        return RenderedWidget(
            id: id, path: path, appID: properties["AppId"]?.stringValue ?? "", kind: properties["Kind"]?.stringValue ?? "",
            family: WidgetFamily(rawValue: properties["Family"]?.stringValue ?? ""),
            configuration: properties["Configuration"].map(OptionValue.dictionary) ?? [:],
            contentJSON: properties["Content"]?.stringValue ?? "")
    }

    var activity: RenderedActivity? {
        guard path.contains("/activities/"), let id = properties["Id"]?.stringValue else { return nil }
        var relevance = 0.0
        if case .double(let d)? = properties["Relevance"] { relevance = d }
        return RenderedActivity(
            id: id, path: path, appID: properties["AppId"]?.stringValue ?? "", attributesType: properties["AttributesType"]?.stringValue ?? "",
            state: properties["State"]?.stringValue ?? "", contentJSON: properties["Content"]?.stringValue ?? "", relevance: relevance)
    }

    var added: RendererChange? { widget.map(RendererChange.widgetAdded) ?? activity.map(RendererChange.activityAdded) }
    var updated: RendererChange? { widget.map(RendererChange.widgetChanged) ?? activity.map(RendererChange.activityChanged) }
}

/// The interface files of `dbus/`, embedded at build time.
enum InterfaceFiles {
    static func description(_ name: String) throws -> InterfaceDescription {
        guard let xml = InterfaceXML.files[name], let parsed = try InterfaceDescription.parse(xml: xml).first else {
            throw DBusEncodingError("dbus/\(name).xml is missing")
        }
        return parsed
    }
}
