import DBus
import WidgetHostCore

/// The answer to a tap: what it meant and its details.
public typealias TapReply = TypedReply<(outcome: String, details: [String: DBusValue])>

/// `org.widgethost.Host1.Widget`, one placed widget (docs/widgets.md,
/// docs/delivery.md, docs/timelines.md). One exported value serves every
/// widget object (``ObjectInterfaces``): the handlers read the widget's id
/// from the path they are called on.
struct WidgetServer: Host1Widget.Server {
    let dispatcher: Dispatcher

    func setContent(_ call: MethodCall, contentJSON: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { host, identity in try host.setContent(Self.widgetID(call.path), contentJSON, call.sender, identity) }
    }

    func configure(_ call: MethodCall, configuration: [String: DBusValue], reply: TypedReply<Void>) {
        dispatcher.answer(call, reply) { host in try host.configure(Self.widgetID(call.path), configuration) }
    }

    func remove(_ call: MethodCall, reply: TypedReply<Void>) {
        dispatcher.answer(call, reply) { host in try host.removeWidget(Self.widgetID(call.path)) }
    }

    func tap(_ call: MethodCall, elementID: String, options: [String: DBusValue], reply: TapReply) {
        dispatcher.inOrder(call) { host in host.tap(call.path, elementID, options, reply, deliver: true) }
    }

    func resolve(_ call: MethodCall, elementID: String, options: [String: DBusValue], reply: TapReply) {
        dispatcher.inOrder(call) { host in host.tap(call.path, elementID, options, reply, deliver: false) }
    }

    func reload(_ call: MethodCall, reply: TypedReply<(state: String, date: Int64)>) {
        dispatcher.answer(call, reply) { host in try host.reloadWidget(Self.widgetID(call.path)) }
    }

    func describeTimeline(_ call: MethodCall, reply: TypedReply<[String: DBusValue]>) {
        dispatcher.answer(call, reply) { host in try host.describeTimeline(Self.widgetID(call.path)) }
    }

    func properties(at path: String) -> Host1Widget.Properties {
        dispatcher.read { host in host.widgets.widgets[Self.widgetID(path)].map(HostService.widgetProperties) } ?? Self.noWidget
    }

    /// What a getter reads after its widget went away.
    static let noWidget = Host1Widget.Properties(id: "", appID: "", kind: "", family: "", configuration: [:], content: "")

    /// The widget id in a widget object's path.
    static func widgetID(_ path: String) -> String { Host1Widget.id(inPath: path) ?? "" }
}

extension HostService {
    /// A widget object's properties: what its getters read and what its
    /// footprint measures (see FootprintService.swift).
    nonisolated static func widgetProperties(_ widget: PlacedWidget) -> Host1Widget.Properties {
        Host1Widget.Properties(
            id: widget.id, appID: widget.appID, kind: widget.kind, family: widget.family.rawValue,
            configuration: widget.configuration.mapValues(\.dbusValue), content: widget.content?.json ?? "")
    }

    // MARK: The methods

    func setContent(_ id: String, _ json: String, _ sender: String, _ identity: CallerIdentity) throws {
        guard let widget = widgets.widgets[id] else { throw DBusError(name: DBusError.unknownObjectName, message: "No widget \(id)") }
        try requireOwner(widget.appID, sender, identity, doing: "set the content of its widgets")
        let content = try widgets.content(json)
        var changed = widget
        changed.content = content
        let bytes = try checkFootprint(of: changed)
        try persist([.widget(StoredWidget(widget, content: content?.json))])
        widgets.setContent(id, tree: content)
        footprint.set(id, appID: widget.appID, bytes: bytes)
        propertiesChanged(Host1Widget.objectPath(id), Host1Widget.name, [Host1Widget.Property.content.rawValue])
    }

    func configure(_ id: String, _ values: [String: DBusValue]) throws {
        let configuration = OptionValue.dictionary(values)
        try widgets.checkConfiguration(id, configuration)
        var changed = widgets.widgets[id]!
        changed.configuration = configuration
        let bytes = try checkFootprint(of: changed)
        try persist([.widget(StoredWidget(changed, content: changed.content?.json))])
        widgets.setConfiguration(id, configuration)
        footprint.set(id, appID: changed.appID, bytes: bytes)
        propertiesChanged(Host1Widget.objectPath(id), Host1Widget.name, [Host1Widget.Property.configuration.rawValue])
        requestReload(id, .configured)
    }

    func removeWidget(_ id: String) throws {
        guard let widget = widgets.widgets[id] else { throw DBusError(name: DBusError.unknownObjectName, message: "No widget \(id)") }
        try persist([.widgetRemoved(id: id)])
        widgets.remove(id)
        connection.unexport(Host1Widget.objectPath(id))
        widgetGone(id)
        logger.info("widget removed", metadata: ["widget": "\(id)"])
        dropUnneededBundles(among: [widget.appID])
    }

    /// A tap on the widget at `path` (the object path it was called on, which
    /// `Tapped` names).
    func tap(_ path: String, _ elementID: String, _ options: [String: DBusValue], _ reply: TapReply, deliver: Bool) {
        let id = WidgetServer.widgetID(path)
        do {
            guard let widget = widgets.widgets[id] else {
                throw DBusError(name: DBusError.unknownObjectName, message: "No widget \(id)")
            }
            let (surface, token) = try Self.tapOptions(options)
            guard let app = registry.app(widget.appID) else {
                throw HostError.unknownApp("\(widget.appID) is not running and has no desktop entry, so nothing can receive the tap")
            }
            let context = widgets.tapContext(id, app: app.options)!
            let resolution = try WidgetTapRules.resolve(elementID: elementID, surface: surface, policy: configuration.linkPolicy, context)
            let source = Delivery.TapSource(
                tapped: .widget(id: id, kind: widget.kind, family: widget.family.rawValue), elementID: elementID, surface: surface)
            deliverTap(
                path, resolution, app: app, token: token, source: source, reply: reply, deliver: deliver)
        } catch {
            reply.fail(error)
        }
    }
}
