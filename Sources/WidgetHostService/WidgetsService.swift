import DBus
import WidgetHostCore

extension HostNames {
    public static let widgets = "org.widgethost.Host1.Widgets"
    public static let widget = "org.widgethost.Host1.Widget"
    public static func widgetPath(_ id: String) -> String { rootPath + "/widgets/" + id }
}

/// Widgets and taps (docs/widgets.md, docs/delivery.md).
extension HostService {
    func widgetsInterface() throws -> ExportedInterface {
        var exported = ExportedInterface(try description(HostNames.widgets))
        exported.method("RegisterWidgets", appOwned { service, call, identity in try service.registerWidgets(call, identity) })
        exported.method("AddWidget", isolatedImmediate { service, call in try service.addWidget(call) })
        exported.method("LintContent", isolatedImmediate { service, call in try service.lintContent(call) })
        exported.method("LintAppContent", isolatedImmediate { service, call in try service.lintAppContent(call) })
        registerTimelineMethods(&exported)
        return exported
    }

    func description(_ name: String) throws -> InterfaceDescription {
        guard let description = interfaces[name] else { throw DBusEncodingError("dbus/\(name).xml is missing") }
        return description
    }

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

    func registerWidgets(_ call: MethodCall, _ identity: CallerIdentity) throws -> [DBusValue] {
        let appID = call.arguments[0].stringValue ?? ""
        try Validate.appID(appID)
        try requireOwner(appID, call.sender, identity, doing: "register its widgets")
        let json = call.arguments[1].stringValue ?? ""
        let bundle = try WidgetBundle.parse(json)
        let dropped = widgets.dropped(byBundle: bundle, of: appID)
        try persist([.bundle(appID: appID, json: json)] + dropped.map { .widgetRemoved(id: $0) })
        widgets.registerBundle(appID: appID, bundle, dropping: dropped)
        for id in dropped {
            connection.unexport(HostNames.widgetPath(id))
            widgetGone(id)
        }
        logger.info("widgets registered", metadata: ["app": "\(appID)", "kinds": "\(bundle.kinds.map(\.kind))"])
        return []
    }

    func addWidget(_ call: MethodCall) throws -> [DBusValue] {
        let appID = call.arguments[0].stringValue ?? ""
        let widget = try widgets.placement(
            appID: appID, kind: call.arguments[1].stringValue ?? "", family: call.arguments[2].stringValue ?? "",
            configuration: OptionValue.dictionary(call.arguments[3]))
        let bytes = try checkFootprint(of: widget)
        try persist([.widget(StoredWidget(widget, content: nil))])
        widgets.insert(widget)
        footprint.set(widget.id, appID: appID, bytes: bytes)
        try connection.export(widgetInterfaces(), at: HostNames.widgetPath(widget.id))
        logger.info("widget added", metadata: ["widget": "\(widget.id)", "app": "\(appID)", "kind": "\(widget.kind)"])
        widgetPlaced(widget.id)
        return [.objectPath(HostNames.widgetPath(widget.id))]
    }

    func lintContent(_ call: MethodCall) throws -> [DBusValue] {
        try lint(family: call.arguments[0].stringValue ?? "", json: call.arguments[1].stringValue ?? "", schemes: nil)
    }

    func lintAppContent(_ call: MethodCall) throws -> [DBusValue] {
        let appID = call.arguments[0].stringValue ?? ""
        try Validate.appID(appID)
        guard let app = registry.app(appID) else {
            throw HostError.unknownApp(
                "\(appID) is not a known app; it becomes known by RegisterApp or by a desktop entry with DBusActivatable=true")
        }
        return try lint(family: call.arguments[1].stringValue ?? "", json: call.arguments[2].stringValue ?? "", schemes: app.options.schemes)
    }

    private func lint(family name: String, json: String, schemes: [String]?) throws -> [DBusValue] {
        let family = try WidgetFamily.parse(name)
        // The limits SetContent applies, so the lint never passes what SetContent refuses.
        let findings = try ContentLint.lint(
            json: json, family: family, policy: configuration.linkPolicy, schemes: schemes, limits: configuration.contentLimits)
        return [.array(element: "(sss)", findings.map { .structure([.string($0.severity), .string($0.code), .string($0.message)]) })]
    }

    // MARK: Widget objects

    /// The widget id in a widget object's path.
    nonisolated static func widgetID(_ path: String) -> String {
        let prefix = HostNames.rootPath + "/widgets/"
        return path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : ""
    }

    /// A widget object's properties: what its getters read and what its
    /// footprint measures (see FootprintService.swift).
    nonisolated static let widgetProperties: [(String, @Sendable (PlacedWidget) -> DBusValue, empty: DBusValue)] = [
        ("Id", { .string($0.id) }, empty: .string("")),
        ("AppId", { .string($0.appID) }, empty: .string("")),
        ("Kind", { .string($0.kind) }, empty: .string("")),
        ("Family", { .string($0.family.rawValue) }, empty: .string("")),
        ("Configuration", { .vardict($0.configuration.mapValues(\.dbusValue)) }, empty: .vardict([:])),
        ("Content", { .string($0.content?.json ?? "") }, empty: .string("")),
    ]

    /// `org.widgethost.Host1.Widget`, built once and exported at every widget's
    /// path: the handlers read the widget id from the path they are called on,
    /// so a placed widget costs a dictionary entry, not a set of closures.
    func widgetInterfaces() throws -> [ExportedInterface] {
        if let shared = sharedWidgetInterfaces { return shared }
        var exported = ExportedInterface(try description(HostNames.widget))
        for (name, value, empty) in Self.widgetProperties {
            exported.property(
                name,
                PropertyHandler(getAt: { [weak self] path in
                    self?.assumeIsolated { service in service.widgets.widgets[Self.widgetID(path)].map(value) } ?? empty
                }))
        }
        exported.method(
            "SetContent", appOwned { service, call, identity in try service.setContent(Self.widgetID(call.path), call, identity) })
        exported.method("Configure", isolatedImmediate { service, call in try service.configure(Self.widgetID(call.path), call) })
        exported.method("Remove", isolatedImmediate { service, call in try service.removeWidget(Self.widgetID(call.path)) })
        exported.method("Reload", isolatedImmediate { service, call in try service.reloadWidget(Self.widgetID(call.path)) })
        exported.method("DescribeTimeline", isolatedImmediate { service, call in try service.describeTimeline(Self.widgetID(call.path)) })
        exported.method(
            "Tap", isolatedDeferred { service, call, reply in service.tap(Self.widgetID(call.path), call, reply, deliver: true) })
        exported.method(
            "Resolve", isolatedDeferred { service, call, reply in service.tap(Self.widgetID(call.path), call, reply, deliver: false) })
        sharedWidgetInterfaces = [exported]
        return [exported]
    }

    /// A deferred handler that starts on the connection's thread, isolated to
    /// this actor, in the order its sender sent it (see `mustWait`).
    nonisolated func isolatedDeferred(
        _ body: @escaping @Sendable (isolated HostService, MethodCall, Reply) -> Void
    ) -> MethodHandler {
        .deferred { [weak self] call, reply in
            guard let self else { return reply.fail(DBusError.failed("the host is shutting down")) }
            self.assumeIsolated { service in
                if service.mustWait(call.sender) {
                    service.holdBack(call.sender) { body(service, call, reply) }
                } else {
                    body(service, call, reply)
                }
            }
        }
    }

    func setContent(_ id: String, _ call: MethodCall, _ identity: CallerIdentity) throws -> [DBusValue] {
        guard let widget = widgets.widgets[id] else { throw DBusError(name: DBusError.unknownObjectName, message: "No widget \(id)") }
        try requireOwner(widget.appID, call.sender, identity, doing: "set the content of its widgets")
        let content = try widgets.content(call.arguments[0].stringValue ?? "")
        var changed = widget
        changed.content = content
        let bytes = try checkFootprint(of: changed)
        try persist([.widget(StoredWidget(widget, content: content?.json))])
        widgets.setContent(id, tree: content)
        footprint.set(id, appID: widget.appID, bytes: bytes)
        try? connection.emitPropertiesChanged(path: HostNames.widgetPath(id), interface: HostNames.widget, properties: ["Content"])
        return []
    }

    func configure(_ id: String, _ call: MethodCall) throws -> [DBusValue] {
        let configuration = OptionValue.dictionary(call.arguments[0])
        try widgets.checkConfiguration(id, configuration)
        var changed = widgets.widgets[id]!
        changed.configuration = configuration
        let bytes = try checkFootprint(of: changed)
        try persist([.widget(StoredWidget(changed, content: changed.content?.json))])
        widgets.setConfiguration(id, configuration)
        footprint.set(id, appID: changed.appID, bytes: bytes)
        try? connection.emitPropertiesChanged(path: HostNames.widgetPath(id), interface: HostNames.widget, properties: ["Configuration"])
        requestReload(id, .configured)
        return []
    }

    func removeWidget(_ id: String) throws -> [DBusValue] {
        guard let widget = widgets.widgets[id] else { throw DBusError(name: DBusError.unknownObjectName, message: "No widget \(id)") }
        try persist([.widgetRemoved(id: id)])
        widgets.remove(id)
        connection.unexport(HostNames.widgetPath(id))
        widgetGone(id)
        logger.info("widget removed", metadata: ["widget": "\(id)"])
        dropUnneededBundles(among: [widget.appID])
        return []
    }

    /// Tap options: `surface` (s) and `activation_token` (s).
    static func tapOptions(_ value: DBusValue) throws(HostError) -> (Surface, String?) {
        var surface = Surface.desktop
        var token: String?
        for (key, raw) in OptionValue.dictionary(value) {
            switch key {
            case "surface":
                guard case .string(let s) = raw, let parsed = Surface(rawValue: s) else {
                    throw .invalidArgument(
                        "option 'surface' must be one of \(Surface.allCases.map(\.rawValue).joined(separator: ", ")) (s)")
                }
                surface = parsed
            case "activation_token":
                guard case .string(let s) = raw else { throw .invalidArgument("option 'activation_token' must be a string (s)") }
                token = s
            default:
                throw .invalidArgument("unknown tap option '\(key)'; the options are surface (s) and activation_token (s)")
            }
        }
        return (surface, token)
    }

    func tap(_ id: String, _ call: MethodCall, _ reply: Reply, deliver: Bool) {
        do {
            guard let widget = widgets.widgets[id] else {
                throw DBusError(name: DBusError.unknownObjectName, message: "No widget \(id)")
            }
            let (surface, token) = try Self.tapOptions(call.arguments[1])
            guard let app = registry.app(widget.appID) else {
                throw HostError.unknownApp("\(widget.appID) is not running and has no desktop entry, so nothing can receive the tap")
            }
            let context = widgets.tapContext(id, app: app.options)!
            let resolution = try WidgetTapRules.resolve(
                elementID: call.arguments[0].stringValue ?? "", surface: surface, policy: configuration.linkPolicy, context)
            let source: [String: DBusValue] = [
                "kind": .string(widget.kind), "family": .string(widget.family.rawValue), "widget_id": .string(id),
                "surface": .string(surface.rawValue),
            ]
            deliverTap(
                HostNames.widgetPath(id), resolution, app: app, token: token, source: source, reply: reply, deliver: deliver)
        } catch {
            reply.fail(error)
        }
    }

    /// Answers a resolved tap: at once for Resolve, else after delivering it
    /// to the app (docs/delivery.md), then emits `Tapped` for `target`.
    func deliverTap(
        _ target: String, _ resolution: TapResolution, app: KnownApp, token: String?, source: [String: DBusValue], reply: Reply,
        deliver: Bool
    ) {
        let details = Delivery.details(appID: app.id, resolution)
        guard deliver else { return reply.succeed([.string(resolution.outcome.name), .vardict(details)]) }
        var source = source
        if case .openURL(_, let via) = resolution.outcome { source["via"] = .string(via) }
        let delivery = Delivery(
            appID: app.id, options: app.options, destination: app.deliveryDestination, outcome: resolution.outcome,
            activationToken: token, source: source)
        // The delivery's answer arrives on the connection's thread, which is this actor's executor.
        self.deliver(delivery) { [weak self, details, source] error in
            var details = details
            if let error { details["error"] = .string(error.message) }
            // One a{sv} for the reply and the signal.
            let detailsValue = DBusValue.vardict(details)
            if let error {
                reply.fail(error)
            } else {
                reply.succeed([.string(resolution.outcome.name), detailsValue])
            }
            self?.assumeIsolated { service in
                service.emitTapped(target, resolution.outcome.name, detailsValue)
                // docs/widgets.md#resolution-rules, row W1: after a control's action the widget's timeline is reloaded.
                if case .performAction = resolution.outcome, case .string(let widgetID)? = source["widget_id"] {
                    service.requestReload(widgetID, .action)
                }
            }
        }
    }

    /// Sends a delivery unless its app already has `maxPendingDeliveriesPerApp`
    /// waiting for an answer: a flood of taps for one app that does not keep
    /// up is refused at once instead of piling up in the host.
    func deliver(_ delivery: Delivery, completion: @escaping @Sendable (HostError?) -> Void) {
        let appID = delivery.appID
        let waiting = pendingDeliveries[appID, default: 0]
        guard waiting < configuration.maxPendingDeliveriesPerApp else {
            return completion(
                .limitExceeded(
                    "\(appID) has \(waiting) deliveries waiting for its answer, the most allowed (the limit max-pending-deliveries-per-app); try again once it answers"))
        }
        pendingDeliveries[appID] = waiting + 1
        // The answer arrives on the connection's thread, which is this actor's executor.
        delivery.perform(on: connection, timeout: configuration.deliveryTimeout) { [weak self] error in
            self?.assumeIsolated { service in
                let left = service.pendingDeliveries[appID, default: 1] - 1
                service.pendingDeliveries[appID] = left > 0 ? left : nil
            }
            completion(error)
        }
    }

    func emitTapped(_ target: String, _ outcome: String, _ details: DBusValue) {
        do {
            try connection.emit(
                path: HostNames.rootPath, interface: HostNames.widgets, member: "Tapped",
                arguments: [.objectPath(target), .string(outcome), details])
        } catch {
            logger.error("could not emit Tapped: \(error)")
        }
    }
}
