import DBus
import WidgetHostCore

/// `org.widgethost.Host1.Widgets`: widget bundles, placing widgets, linting
/// content, and the app's side of timelines (docs/widgets.md, docs/timelines.md).
struct WidgetsServer: Host1Widgets.Server {
    let dispatcher: Dispatcher

    func registerWidgets(_ call: MethodCall, appID: String, bundleJSON: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { host, identity in try host.registerWidgets(appID, bundleJSON, call.sender, identity) }
    }

    func listBundles(_ call: MethodCall, reply: TypedReply<[(String, String)]>) {
        dispatcher.answer(call, reply) { host in host.widgets.bundles.sorted { $0.key < $1.key }.map { ($0.key, $0.value.json) } }
    }

    func addWidget(
        _ call: MethodCall, appID: String, kind: String, family: String, configuration: [String: DBusValue], reply: TypedReply<String>
    ) {
        dispatcher.answer(call, reply) { host in try host.addWidget(appID, kind, family, configuration) }
    }

    func lintContent(_ call: MethodCall, family: String, contentJSON: String, reply: TypedReply<[(String, String, String)]>) {
        dispatcher.answer(call, reply) { host in try host.lint(family: family, json: contentJSON, schemes: nil) }
    }

    func lintAppContent(
        _ call: MethodCall, appID: String, family: String, contentJSON: String, reply: TypedReply<[(String, String, String)]>
    ) {
        dispatcher.answer(call, reply) { host in try host.lintAppContent(appID, family, contentJSON) }
    }

    func reloadTimelines(_ call: MethodCall, appID: String, kind: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { host, identity in try host.reloadTimelines(appID, kind: kind, call.sender, identity) }
    }

    func reloadAllTimelines(_ call: MethodCall, appID: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { host, identity in try host.reloadTimelines(appID, kind: nil, call.sender, identity) }
    }

    func getConfigurationOptions(
        _ call: MethodCall, appID: String, kind: String, parameter: String, configuration: [String: DBusValue],
        reply: TypedReply<[(String, String)]>
    ) {
        dispatcher.inOrder(call) { host in host.configurationOptions(appID, kind, parameter, configuration, reply) }
    }

    func currentConfigurations(
        _ call: MethodCall, appID: String, reply: TypedReply<[(String, String, String, String, [String: DBusValue])]>
    ) {
        dispatcher.answer(call, reply) { host in try host.currentConfigurations(appID) }
    }
}

extension HostService {
    /// The caller must be allowed to act for the app (a sandbox only for its
    /// own id) and hold the app's live registration.
    func requireOwner(_ appID: String, _ sender: String, _ identity: CallerIdentity, doing what: String) throws(HostError) {
        try identity.check(appID, doing: what)
        guard let app = registry.app(appID) else {
            throw .unknownApp("\(appID) is not a known app; it must RegisterApp before it can \(what)")
        }
        guard app.registeredBy == sender else {
            throw .accessDenied(
                app.registeredBy == nil
                    ? "only \(appID)'s live registration may \(what); RegisterApp from the app's connection first"
                    : "only the connection that registered \(appID) may \(what)")
        }
    }

    func registerWidgets(_ appID: String, _ json: String, _ sender: String, _ identity: CallerIdentity) throws {
        try Validate.appID(appID)
        try requireOwner(appID, sender, identity, doing: "register its widgets")
        let bundle = try WidgetBundle.parse(json)
        try widgets.checkBundleBudget(appID: appID, bundle, sharing: registry.appIDs(registeredBy: sender))
        let dropped = widgets.dropped(byBundle: bundle, of: appID)
        try persist([.bundle(appID: appID, json: json)] + dropped.map { .widgetRemoved(id: $0) })
        widgets.registerBundle(appID: appID, bundle, dropping: dropped)
        for id in dropped {
            connection.unexport(Host1Widget.objectPath(id))
            widgetGone(id)
        }
        logger.info("widgets registered", metadata: ["app": "\(appID)", "kinds": "\(bundle.kinds.map(\.kind))"])
    }

    func addWidget(_ appID: String, _ kind: String, _ family: String, _ configuration: [String: DBusValue]) throws -> String {
        let widget = try widgets.placement(appID: appID, kind: kind, family: family, configuration: OptionValue.dictionary(configuration))
        let bytes = try checkFootprint(of: widget)
        try persist([.widget(StoredWidget(widget, content: nil))])
        widgets.insert(widget)
        footprint.set(widget.id, appID: appID, bytes: bytes)
        try connection.export(objectInterfaces.widget, at: Host1Widget.objectPath(widget.id))
        logger.info("widget added", metadata: ["widget": "\(widget.id)", "app": "\(appID)", "kind": "\(widget.kind)"])
        widgetPlaced(widget.id)
        return Host1Widget.objectPath(widget.id)
    }

    func lintAppContent(_ appID: String, _ family: String, _ json: String) throws -> [(String, String, String)] {
        try Validate.appID(appID)
        guard let app = registry.app(appID) else {
            throw HostError.unknownApp(
                "\(appID) is not a known app; it becomes known by RegisterApp or by a desktop entry with DBusActivatable=true")
        }
        return try lint(family: family, json: json, schemes: app.options.schemes)
    }

    func lint(family name: String, json: String, schemes: [String]?) throws -> [(String, String, String)] {
        let family = try WidgetFamily.parse(name)
        // The limits SetContent applies, so the lint never passes what SetContent refuses.
        let findings = try ContentLint.lint(
            json: json, family: family, policy: configuration.linkPolicy, schemes: schemes, limits: configuration.contentLimits)
        return findings.map { ($0.severity.rawValue, $0.code.rawValue, $0.message) }
    }

}
