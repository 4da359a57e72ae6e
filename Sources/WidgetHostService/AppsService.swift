import DBus
import Dispatch
import WidgetHostCore

/// `org.widgethost.Host1.Apps`: registrations, desktop entries and bare URLs
/// (docs/apps.md).
struct AppsServer: Host1Apps.Server {
    let dispatcher: Dispatcher<AppsHandlers>

    func registerApp(_ call: MethodCall, appID: String, options: [String: DBusValue], reply: TypedReply<Void>) {
        let options = OptionValue.dictionary(options)
        dispatcher.withNameOwner(call, reply, of: appID) { apps in
            try apps.checkOptions(appID, options)
        } _: { apps, identity, nameOwner in
            try apps.register(call.sender, appID, options, identity, ownsName: nameOwner == call.sender)
        }
    }

    func unregisterApp(_ call: MethodCall, appID: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { apps, identity in try apps.unregister(appID, call.sender, identity) }
    }

    func listApps(_ call: MethodCall, reply: TypedReply<[(String, [String: DBusValue])]>) {
        dispatcher.answer(call, reply) { apps in apps.list() }
    }

    func reload(_ call: MethodCall, reply: TypedReply<Void>) {
        dispatcher.spawn { apps in await apps.reload(reply) }
    }

    func openURL(_ call: MethodCall, url: String, options: [String: DBusValue], reply: TypedReply<String>) {
        dispatcher.inOrder(call) { [dispatcher] apps in
            // Bad input is refused at once, in the caller's order; the lookup comes after.
            guard let (scheme, token) = apps.checkURL(url, options, reply) else { return }
            dispatcher.spawn { apps in await apps.openURL(url, scheme: scheme, token: token, reply) }
        }
    }
}

/// What `Apps`'s calls do, over the stores they need: the registry, the
/// widgets' bundles (an app that goes leaves none behind), the timelines
/// (an app that names a provider gets them) and the deliveries (`OpenURL`).
final class AppsHandlers {
    private let apps: Apps
    private let widgets: Widgets
    private let timelines: Timelines
    private let deliveries: Deliveries
    private let context: HostContext

    init(apps: Apps, widgets: Widgets, timelines: Timelines, deliveries: Deliveries, context: HostContext) {
        self.apps = apps
        self.widgets = widgets
        self.timelines = timelines
        self.deliveries = deliveries
        self.context = context
    }

    /// `RegisterApp`'s options, checked before anything is looked up.
    func checkOptions(_ appID: String, _ options: [String: OptionValue]) throws {
        try apps.checkOptions(appID: appID, options)
    }

    /// `RegisterApp`, once the caller's identity and whether it owns the bus name `app_id` are known.
    func register(_ sender: String, _ appID: String, _ options: [String: OptionValue], _ identity: CallerIdentity, ownsName: Bool) throws {
        try apps.register(sender, appID, options, identity, ownsName: ownsName)
        timelines.providerMayHaveChanged(appID)
    }

    func unregister(_ appID: String, _ sender: String, _ identity: CallerIdentity) throws {
        try apps.unregister(appID, sender, identity)
        widgets.dropUnneededBundles(among: [appID])
    }

    func list() -> [(String, [String: DBusValue])] {
        apps.all.map { app in
            var details = app.options.optionValues().mapValues(\.dbusValue)
            details["registered"] = .bool(app.isRegistered)
            details["source"] = .string(app.isRegistered ? "registration" : "desktop-entry")
            if let owner = app.registeredBy { details["registered_by"] = .string(owner) }
            if let identity = app.registrant {
                details["sandbox"] = .string(identity.kind)
                if let id = identity.sandboxedID { details["sandbox_app_id"] = .string(id) }
            }
            if let entry = app.desktopEntry {
                details["desktop_file"] = .string(entry.path)
                if let name = entry.name { details["name"] = .string(name) }
            }
            return (app.id, details)
        }
    }

    /// `Reload`: reads the desktop entries again, off the connection's thread.
    nonisolated(nonsending) func reload(_ reply: TypedReply<Void>) async {
        applyScan(await DesktopScan.read(context.configuration.xdg))
        reply.succeed()
    }

    /// Takes the desktop entries a scan found: apps that name a provider get
    /// their timelines, and the bundles of apps now gone go.
    func applyScan(_ scan: DesktopScan) {
        apps.replaceDiscovered(scan)
        for app in scan.apps { timelines.providerMayHaveChanged(app.id) }
        widgets.dropUnneededBundles(among: widgets.bundles.keys)
    }

    /// `OpenURL`'s URL's scheme and activation token, or nil once `reply` was refused.
    func checkURL(_ url: String, _ options: [String: DBusValue], _ reply: TypedReply<String>) -> (scheme: String, token: String?)? {
        do {
            try ViewTree.checkURL(url, what: "url", limits: context.configuration.contentLimits)
            guard let scheme = URLParts.scheme(of: url) else { throw HostError.invalidArgument("url must be absolute") }
            return (scheme, try OpenURLOptions(options, as: OptionValue.init).activationToken)
        } catch let error as HostError {
            reply.fail(error.name == .invalidContent ? HostError.invalidArgument(error.message) : error)
        } catch {
            reply.fail(error)
        }
        return nil
    }

    /// Routes a bare URL by its scheme (docs/apps.md) and delivers it as a link would be.
    nonisolated(nonsending) func openURL(_ url: String, scheme: String, token: String?, _ reply: TypedReply<String>) async {
        let xdg = context.configuration.xdg
        // mimeapps.list is read off the connection's thread.
        let defaults = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: MimeApps.defaultHandlers(forScheme: scheme, dirs: xdg))
            }
        }
        guard let app = apps.route(scheme: scheme, mimeDefaults: defaults) else {
            return reply.fail(
                HostError.unknownApp(
                    "no known app handles the scheme '\(scheme)'; an app declares it with RegisterApp's 'schemes' or MimeType=x-scheme-handler/\(scheme); in its desktop entry"))
        }
        let delivery = Delivery(
            appID: app.id, options: app.options, destination: app.deliveryDestination,
            outcome: .openURL(url: url, via: .openURL), activationToken: token,
            source: Delivery.TapSource(tapped: .nothing, via: .openURL))
        let logger = context.logger
        deliveries.deliver(delivery) { error in
            if let error { return reply.fail(error) }
            logger.info("URL opened", metadata: ["app": "\(app.id)", "scheme": "\(scheme)"])
            reply.succeed(app.id)
        }
    }
}
