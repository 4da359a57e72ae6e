import DBus
import Dispatch
import WidgetHostCore
import WidgetHostSystem

/// `org.widgethost.Host1.Apps`: registrations, desktop entries and bare URLs
/// (docs/apps.md).
struct AppsServer: Host1Apps.Server {
    let dispatcher: Dispatcher

    func registerApp(_ call: MethodCall, appID: String, options: [String: DBusValue], reply: TypedReply<Void>) {
        dispatcher.inOrder(call) { host in host.registerApp(call.sender, appID, OptionValue.dictionary(options), reply) }
    }

    func unregisterApp(_ call: MethodCall, appID: String, reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { host, identity in try host.unregisterApp(appID, call.sender, identity) }
    }

    func listApps(_ call: MethodCall, reply: TypedReply<[(String, [String: DBusValue])]>) {
        dispatcher.answer(call, reply) { host in host.listApps() }
    }

    func reload(_ call: MethodCall, reply: TypedReply<Void>) {
        dispatcher.spawn { host in
            host.applyScan(await HostService.scan(host.configuration.xdg))
            reply.succeed()
        }
    }

    func openURL(_ call: MethodCall, url: String, options: [String: DBusValue], reply: TypedReply<String>) {
        dispatcher.inOrder(call) { host in host.openURL(url, options, reply) }
    }
}

extension HostService {
    // MARK: The methods

    /// `RegisterApp`: needs the caller's identity and whether it owns the bus name `app_id`.
    func registerApp(_ sender: String, _ appID: String, _ options: [String: OptionValue], _ reply: TypedReply<Void>) {
        do {
            // Bad input is refused before anything is looked up.
            _ = try registry.parseOptions(appID: appID, options)
        } catch {
            return reply.fail(error)
        }
        withCaller(sender, nameOwnerOf: appID, reply: reply) { service, identity, nameOwner in
            try service.register(sender, appID, options, identity, ownsName: nameOwner == sender)
        }
    }

    private func register(_ sender: String, _ appID: String, _ options: [String: OptionValue], _ identity: CallerIdentity, ownsName: Bool) throws {
        let outcome = try registry.register(
            appID: appID, owner: sender, options: options, identity: identity, ownsName: ownsName)
        switch outcome {
        case .registered:
            logger.info("registered", metadata: ["app": "\(appID)", "owner": "\(sender)", "sandbox": "\(identity)"])
            emitAppRegistered(appID)
        case .replaced(let previous):
            logger.info(
                "registration taken over by the owner of the app's bus name",
                metadata: ["app": "\(appID)", "owner": "\(sender)", "previous": "\(previous)"])
            emitAppUnregistered(appID)
            emitAppRegistered(appID)
        case .updated:
            logger.debug("registration updated", metadata: ["app": "\(appID)", "owner": "\(sender)"])
        }
        providerMayHaveChanged(appID)
    }

    func unregisterApp(_ appID: String, _ sender: String, _ identity: CallerIdentity) throws {
        try Validate.appID(appID)
        try identity.check(appID, doing: "unregister")
        try registry.unregister(appID: appID, caller: sender)
        logger.info("unregistered", metadata: ["app": "\(appID)", "owner": "\(sender)"])
        emitAppUnregistered(appID)
        dropUnneededBundles(among: [appID])
    }

    func listApps() -> [(String, [String: DBusValue])] {
        registry.apps.map { app in
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

    /// Routes a bare URL by its scheme (docs/apps.md) and delivers it as a link would be.
    func openURL(_ url: String, _ options: [String: DBusValue], _ reply: TypedReply<String>) {
        do {
            try ViewTree.checkURL(url, what: "url", limits: configuration.contentLimits)
            guard let scheme = URLParts.scheme(of: url) else { throw HostError.invalidArgument("url must be absolute") }
            let token = try OpenURLOptions(options, as: OptionValue.init).activationToken
            let xdg = configuration.xdg
            spawn { service in
                // mimeapps.list is read off the connection's thread.
                let defaults = await withCheckedContinuation { continuation in
                    DispatchQueue.global(qos: .userInitiated).async {
                        continuation.resume(returning: MimeApps.defaultHandlers(forScheme: scheme, dirs: xdg))
                    }
                }
                guard let app = service.registry.route(scheme: scheme, mimeDefaults: defaults) else {
                    return reply.fail(
                        HostError.unknownApp(
                            "no known app handles the scheme '\(scheme)'; an app declares it with RegisterApp's 'schemes' or MimeType=x-scheme-handler/\(scheme); in its desktop entry"))
                }
                let delivery = Delivery(
                    appID: app.id, options: app.options, destination: app.deliveryDestination,
                    outcome: .openURL(url: url, via: .openURL), activationToken: token, source: Delivery.TapSource(tapped: .nothing, via: .openURL))
                let logger = service.logger
                service.deliver(delivery) { error in
                    if let error { return reply.fail(error) }
                    logger.info("URL opened", metadata: ["app": "\(app.id)", "scheme": "\(scheme)"])
                    reply.succeed(app.id)
                }
            }
        } catch let error as HostError {
            reply.fail(error.name == .invalidContent ? HostError.invalidArgument(error.message) : error)
        } catch {
            reply.fail(error)
        }
    }

    func emitAppRegistered(_ appID: String) {
        emitting(Host1Apps.Signal.appRegistered.rawValue) {
            try Host1Apps.AppRegistered(appID: appID).emit(on: $0, path: Host1Apps.objectPath)
        }
    }

    func emitAppUnregistered(_ appID: String) {
        emitting(Host1Apps.Signal.appUnregistered.rawValue) {
            try Host1Apps.AppUnregistered(appID: appID).emit(on: $0, path: Host1Apps.objectPath)
        }
    }

    /// Emits a signal; a failure is logged, since nobody waits for it.
    func emitting(_ signal: String, _ emit: (Connection) throws -> Void) {
        do {
            try emit(connection)
        } catch let error as DBusError where error.name == DBusError.disconnectedName {
            // The host has let go of the bus — it is stopping, and an app that ended
            // just before is forgotten meanwhile — or the bus is gone: no one is left to tell.
            logger.debug("did not emit \(signal): \(error)")
        } catch {
            logger.error("could not emit \(signal): \(error)")
        }
    }
}
