import DBus
import WidgetHostCore

/// `org.widgethost.Host1.Widgets`: widget bundles, placing widgets, linting
/// content, and the app's side of timelines (docs/widgets.md, docs/timelines.md).
struct WidgetsServer: Host1Widgets.Server {
    let dispatcher: Dispatcher<WidgetsHandlers>

    func registerWidgets(_ call: MethodCall, appID: String, bundleJSON: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { widgets, identity in try widgets.registerWidgets(appID, bundleJSON, call.sender, identity) }
    }

    func listBundles(_ call: MethodCall, reply: TypedReply<[(String, String)]>) {
        dispatcher.answer(call, reply) { widgets in widgets.listBundles() }
    }

    func addWidget(
        _ call: MethodCall, appID: String, kind: String, family: String, configuration: [String: DBusValue], reply: TypedReply<String>
    ) {
        dispatcher.answer(call, reply) { widgets in try widgets.addWidget(appID, kind, family, configuration) }
    }

    func lintContent(_ call: MethodCall, family: String, contentJSON: String, reply: TypedReply<[(String, String, String)]>) {
        dispatcher.answer(call, reply) { widgets in try widgets.lint(family: family, json: contentJSON, schemes: nil) }
    }

    func lintAppContent(
        _ call: MethodCall, appID: String, family: String, contentJSON: String, reply: TypedReply<[(String, String, String)]>
    ) {
        dispatcher.answer(call, reply) { widgets in try widgets.lintAppContent(appID, family, contentJSON) }
    }

    func reloadTimelines(_ call: MethodCall, appID: String, kind: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { widgets, identity in try widgets.reloadTimelines(appID, kind: kind, call.sender, identity) }
    }

    func reloadAllTimelines(_ call: MethodCall, appID: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { widgets, identity in try widgets.reloadTimelines(appID, kind: nil, call.sender, identity) }
    }

    func getConfigurationOptions(
        _ call: MethodCall, appID: String, kind: String, parameter: String, configuration: [String: DBusValue],
        reply: TypedReply<[(String, String)]>
    ) {
        dispatcher.inOrder(call) { widgets in widgets.configurationOptions(appID, kind, parameter, configuration, reply) }
    }

    func currentConfigurations(
        _ call: MethodCall, appID: String, reply: TypedReply<[(String, String, String, String, [String: DBusValue])]>
    ) {
        dispatcher.answer(call, reply) { widgets in try widgets.currentConfigurations(appID) }
    }
}

/// What `Widgets`'s calls do, over the stores they need: the widgets and
/// their bundles, the apps (read: who may act for one), and the timelines (a
/// widget placed gets one; an app reloads them; a provider gives the choices
/// of a parameter).
final class WidgetsHandlers {
    private let widgets: Widgets
    private let apps: any AppDirectory
    private let timelines: Timelines
    private let context: HostContext

    init(widgets: Widgets, apps: any AppDirectory, timelines: Timelines, context: HostContext) {
        self.widgets = widgets
        self.apps = apps
        self.timelines = timelines
        self.context = context
    }

    func registerWidgets(_ appID: String, _ json: String, _ sender: String, _ identity: CallerIdentity) throws {
        try Validate.appID(appID)
        try apps.requireOwner(appID, sender, identity, doing: "register its widgets")
        for id in try widgets.registerBundle(appID, json: json, from: sender) { timelines.gone(id) }
    }

    func listBundles() -> [(String, String)] {
        widgets.bundles.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) }
    }

    func addWidget(_ appID: String, _ kind: String, _ family: String, _ configuration: [String: DBusValue]) throws -> String {
        let widget = try widgets.place(appID: appID, kind: kind, family: family, configuration: configuration)
        timelines.placed(widget.id)
        return Host1Widget.objectPath(widget.id)
    }

    func lintAppContent(_ appID: String, _ family: String, _ json: String) throws -> [(String, String, String)] {
        try Validate.appID(appID)
        guard let app = apps.app(appID) else {
            throw HostError.unknownApp(
                "\(appID) is not a known app; it becomes known by RegisterApp or by a desktop entry with DBusActivatable=true")
        }
        return try lint(family: family, json: json, schemes: app.options.schemes)
    }

    func lint(family name: String, json: String, schemes: [String]?) throws -> [(String, String, String)] {
        let family = try WidgetFamily.parse(name)
        // The limits SetContent applies, so the lint never passes what SetContent refuses.
        let configuration = context.configuration
        let findings = try ContentLint.lint(
            json: json, family: family, policy: configuration.linkPolicy, schemes: schemes, limits: configuration.contentLimits)
        return findings.map { ($0.severity.rawValue, $0.code.rawValue, $0.message) }
    }

    /// `ReloadTimelines(s app_id, s kind)` and `ReloadAllTimelines(s app_id)`: the app's live registration only; exempt from the budget.
    func reloadTimelines(_ appID: String, kind: String?, _ sender: String, _ identity: CallerIdentity) throws {
        try Validate.appID(appID)
        try apps.requireOwner(appID, sender, identity, doing: "reload its timelines")
        if let kind { _ = try widgets.requireKind(appID, kind) }
        timelines.reload(appID: appID, kind: kind)
    }

    /// `GetConfigurationOptions`: checked against the bundle, then forwarded to the app's `ProvideOptions`.
    func configurationOptions(
        _ appID: String, _ kind: String, _ parameter: String, _ configuration: [String: DBusValue], _ reply: TypedReply<[(String, String)]>
    ) {
        timelines.configurationOptions(appID, kind, parameter, configuration, reply)
    }

    /// `CurrentConfigurations(s app_id) → a(osssa{sv})`: the app's placed widgets, in placement order.
    func currentConfigurations(_ appID: String) throws -> [(String, String, String, String, [String: DBusValue])] {
        try Validate.appID(appID)
        guard apps.app(appID) != nil || widgets.bundle(appID) != nil else {
            throw HostError.unknownApp("\(appID) is not a known app; it becomes known by RegisterApp or by a desktop entry with DBusActivatable=true")
        }
        return widgets.widgetIDs(appID: appID).compactMap(widgets.widget).map { widget in
            (
                Host1Widget.objectPath(widget.id), widget.kind, widget.family.rawValue, widget.id,
                widget.configuration.mapValues(\.dbusValue)
            )
        }
    }
}
