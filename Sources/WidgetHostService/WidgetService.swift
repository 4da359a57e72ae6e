import DBus
import WidgetHostCore

/// The answer to a tap: what it meant and its details.
public typealias TapReply = TypedReply<(outcome: String, details: [String: DBusValue])>

/// `org.widgethost.Host1.Widget`, one placed widget (docs/widgets.md,
/// docs/delivery.md, docs/timelines.md). One exported value serves every
/// widget object (``ObjectInterfaces``): the handlers read the widget's id
/// from the path they are called on.
struct WidgetServer: Host1Widget.Server {
    let dispatcher: Dispatcher<WidgetHandlers>

    func setContent(_ call: MethodCall, contentJSON: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { widget, identity in
            try widget.setContent(Self.widgetID(call.path), contentJSON, call.sender, identity)
        }
    }

    func configure(_ call: MethodCall, configuration: [String: DBusValue], reply: TypedReply<Void>) {
        dispatcher.answer(call, reply) { widget in try widget.configure(Self.widgetID(call.path), configuration) }
    }

    func remove(_ call: MethodCall, reply: TypedReply<Void>) {
        dispatcher.answer(call, reply) { widget in try widget.remove(Self.widgetID(call.path)) }
    }

    func tap(_ call: MethodCall, elementID: String, options: [String: DBusValue], reply: TapReply) {
        dispatcher.inOrder(call) { widget in widget.tap(call.path, elementID, options, reply, deliver: true) }
    }

    func resolve(_ call: MethodCall, elementID: String, options: [String: DBusValue], reply: TapReply) {
        dispatcher.inOrder(call) { widget in widget.tap(call.path, elementID, options, reply, deliver: false) }
    }

    func reload(_ call: MethodCall, reply: TypedReply<(state: String, date: Int64)>) {
        dispatcher.answer(call, reply) { widget in try widget.reload(Self.widgetID(call.path)) }
    }

    func describeTimeline(_ call: MethodCall, reply: TypedReply<[String: DBusValue]>) {
        dispatcher.answer(call, reply) { widget in try widget.describeTimeline(Self.widgetID(call.path)) }
    }

    func properties(at path: String) -> Host1Widget.Properties {
        dispatcher.read { widget in widget.properties(Self.widgetID(path)) } ?? Self.noWidget
    }

    /// What a getter reads after its widget went away.
    static let noWidget = Host1Widget.Properties(id: "", appID: "", kind: "", family: "", configuration: [:], content: "")

    /// The widget id in a widget object's path.
    static func widgetID(_ path: String) -> String { Host1Widget.id(inPath: path) ?? "" }
}

/// What a widget object's calls do, over the stores they need: the widgets,
/// the apps (read: who may act for one, who receives its taps), its timeline
/// and the deliveries of its taps.
final class WidgetHandlers {
    private let widgets: Widgets
    private let apps: any AppDirectory
    private let timelines: Timelines
    private let deliveries: Deliveries
    private let context: HostContext

    init(widgets: Widgets, apps: any AppDirectory, timelines: Timelines, deliveries: Deliveries, context: HostContext) {
        self.widgets = widgets
        self.apps = apps
        self.timelines = timelines
        self.deliveries = deliveries
        self.context = context
    }

    func properties(_ id: String) -> Host1Widget.Properties? {
        widgets.widget(id).map(Host1Widget.Properties.init)
    }

    func setContent(_ id: String, _ json: String, _ sender: String, _ identity: CallerIdentity) throws {
        let widget = try widgets.existing(id)
        try apps.requireOwner(widget.appID, sender, identity, doing: "set the content of its widgets")
        try widgets.setContent(id, json: json, entries: timelines.entries(of: id))
    }

    func configure(_ id: String, _ values: [String: DBusValue]) throws {
        try widgets.configure(id, values, entries: timelines.entries(of: id))
        timelines.requestReload(id, .configured)
    }

    func remove(_ id: String) throws {
        try widgets.remove(id)
        timelines.gone(id)
    }

    /// A tap on the widget at `path` (the object path it was called on, which
    /// `Tapped` names).
    func tap(_ path: String, _ elementID: String, _ options: [String: DBusValue], _ reply: TapReply, deliver: Bool) {
        let id = WidgetServer.widgetID(path)
        do {
            let widget = try widgets.existing(id)
            let (surface, token, deadline) = try Delivery.tapOptions(options)
            guard let app = apps.app(widget.appID) else {
                throw HostError.unknownApp("\(widget.appID) is not running and has no desktop entry, so nothing can receive the tap")
            }
            let context = widgets.tapContext(id, app: app.options)!
            let resolution = try WidgetTapRules.resolve(
                elementID: elementID, surface: surface, policy: self.context.configuration.linkPolicy, context)
            let source = Delivery.TapSource(
                tapped: .widget(id: id, kind: widget.kind, family: widget.family.rawValue), elementID: elementID, surface: surface)
            deliveries.deliverTap(
                path, resolution, app: app, token: token, deadline: deadline, source: source, reply: reply, deliver: deliver,
                afterAction: reloadAfterAction(id, resolution))
        } catch {
            reply.fail(error)
        }
    }

    /// docs/widgets.md#resolution-rules, rule control: after a control's
    /// action the widget's timeline is reloaded; nothing for other taps.
    private func reloadAfterAction(_ id: String, _ resolution: TapResolution) -> (@Sendable () -> Void)? {
        guard case .performAction = resolution.outcome else { return nil }
        let timelines = Confined(timelines, on: context.connection)
        return { timelines.run { _ = $0.requestReload(id, .action) } }
    }

    func reload(_ id: String) throws -> (state: String, date: Int64) {
        try timelines.reloadWidget(id)
    }

    func describeTimeline(_ id: String) throws -> [String: DBusValue] {
        try timelines.describe(id)
    }
}

extension Host1Widget.Properties {
    /// A widget object's properties: what its getters read and what its
    /// footprint measures (see Budgets.swift).
    init(_ widget: PlacedWidget) { self.init(widget, showing: widget.content) }

    /// The properties of `widget` were it showing `content` (a budget's
    /// measure of a timeline entry), without deriving anything from it.
    init(_ widget: PlacedWidget, showing content: ViewTree?) {
        self.init(
            id: widget.id, appID: widget.appID, kind: widget.kind, family: widget.family.rawValue,
            configuration: widget.configuration.mapValues(\.dbusValue), content: content?.json ?? "")
    }
}
