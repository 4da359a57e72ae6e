import DBus
import Dispatch
import Foundation
import Logging
import WidgetHostCore

/// How the host is configured (the daemon's options).
public struct HostConfiguration: Sendable {
    public typealias LinkPolicy = WidgetHostCore.LinkPolicy

    public var linkPolicy: LinkPolicy = .current
    /// How long a delivery may wait for an app's answer.
    public var deliveryTimeout: Duration = .seconds(25)
    public var stateDirectory: String
    /// Where desktop entries and mimeapps.list are looked up.
    public var xdg: XDGDirectories
    public var maxRegistrationsPerConnection = 256
    /// Live Activities per app (activities not yet removed).
    public var maxActivitiesPerApp = 64
    /// Placed widgets per app.
    public var maxWidgetsPerApp = 1000
    /// Bytes of one widget's configuration, serialized.
    public var maxConfigurationBytes = 65536
    /// What one app's and all apps' objects may take on the bus.
    public var budgets = Footprint.Budgets()
    /// Deliveries one app may have waiting for its answer; more taps for it are refused at once.
    public var maxPendingDeliveriesPerApp = 256
    /// Size, depth, element count and URL length of every view tree (content, activities, timelines).
    public var contentLimits = ViewTreeLimits() {
        didSet { timelines.contentLimits = contentLimits }
    }
    /// The clock the model's dates come from (Live Activity lifecycles, timelines).
    public var clock: any WallClock = SystemWallClock()
    /// How long a provider call (`GetTimeline`, `ProvideOptions`) may take.
    public var providerTimeout: Duration = .seconds(25)
    /// The timeline engine's budget, pacing and retry settings.
    public var timelines = TimelineOptions()

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        xdg = XDGDirectories.fromEnvironment(environment)
        let stateHome =
            environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.local/state")
        stateDirectory = stateHome + "/widgethost"
    }
}

/// The host's state and its D-Bus face. Runs on the connection's thread (the
/// actor's executor), so every change happens in the order the bus delivered
/// the messages that caused it.
public actor HostService {
    public let connection: Connection
    public let configuration: HostConfiguration
    let logger: Logger
    let interfaces: [String: InterfaceDescription]
    var registry: AppRegistry
    var widgets = WidgetStore()
    /// What each app's objects take on the bus, against the budgets (see FootprintService.swift).
    var footprint: Footprint
    /// Built on first use; see `widgetInterfaces()`.
    var sharedWidgetInterfaces: [ExportedInterface]?
    var activities: LiveActivityStore
    /// Fires at the next Live Activity deadline (stale, end, removal); see `rearmActivityTimer()`.
    var activityTimer: (any DispatchSourceTimer)?
    /// The deadline the timer is armed for, so operations can tell cheaply whether one has passed.
    var activityDeadline: Date?
    var sharedActivityInterfaces: [ExportedInterface]?
    /// The last `LiveActivities.Order` announced, to emit PropertiesChanged only on change.
    var announcedOrder: [String] = []
    var timelines: TimelineEngine
    /// Deliveries waiting for each app's answer (`maxPendingDeliveriesPerApp`).
    var pendingDeliveries: [String: Int] = [:]
    /// The state directory; nil until `start()` opened it.
    var state: StateDirectory?
    /// Retries writing what the state directory refused (see StateService.swift).
    var storageTimer: (any DispatchSourceTimer)?
    /// Since when the state directory refuses writes; nil while it takes them.
    var storageFailingSince: Date?
    /// How long the next retry waits; doubles up to a minute while writes fail.
    var storageRetryDelay: TimeInterval = 1
    /// No compaction is tried before this, after one failed.
    var nextCompactionAttempt: Date?
    /// Fires at the timeline engine's next deadline; see `rearmTimelineTimer()`.
    var timelineTimer: (any DispatchSourceTimer)?
    /// Name owners changing on the bus, watched from `start()` on; `run()` reads them.
    private var ownerChanges: AsyncStream<NameOwnerChange>?
    /// Each connection's identity once looked up (see IdentityService.swift).
    var identities: [String: Result<CallerIdentity, HostError>] = [:]
    /// Connections whose identity is being looked up.
    var lookups: Set<String> = []
    /// Calls waiting behind an earlier call of the same sender that waits for a lookup.
    var held: [String: [() -> Void]] = [:]

    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        connection.executor.asUnownedSerialExecutor()
    }

    public init(connection: Connection, configuration: HostConfiguration, logger: Logger) throws {
        self.connection = connection
        self.configuration = configuration
        self.logger = logger
        self.interfaces = try HostInterfaces.all()
        self.registry = AppRegistry(maxRegistrationsPerConnection: configuration.maxRegistrationsPerConnection)
        var limits = ActivityLimits()
        limits.maxPerApp = configuration.maxActivitiesPerApp
        limits.content = configuration.contentLimits
        self.activities = LiveActivityStore(limits: limits)
        widgets.limits = configuration.contentLimits
        widgets.maxPerApp = configuration.maxWidgetsPerApp
        widgets.maxConfigurationBytes = configuration.maxConfigurationBytes
        self.timelines = TimelineEngine(options: configuration.timelines)
        self.footprint = Footprint(budgets: configuration.budgets)
    }

    /// Serves the objects, starts watching connections and reads desktop
    /// entries. Call before requesting the bus name, so the first caller
    /// finds everything in place.
    public func start() async throws {
        // Watch connections leaving before accepting registrations.
        ownerChanges = try await connection.nameOwnerChanges()
        connection.addObjectManager(at: HostNames.rootPath)
        try openState()
        applyScan(await Self.scan(configuration.xdg))
        // What fell due while the host was not running.
        activityDeadlinePassed()
        timelineDeadlinePassed()
        try connection.export([appsInterface(), widgetsInterface(), liveActivitiesInterface()], at: HostNames.rootPath)
        logger.info("serving \(HostNames.rootPath)", metadata: ["interfaces": "\(HostInterfaces.hostInterfaceNames)"])
    }

    /// Ends the registrations of every connection that closes, until the
    /// calling task is cancelled. Runs beside the daemon's wait for the bus
    /// (see `HostDaemon.run()`), after `start()`.
    public func run() async {
        guard let changes = ownerChanges else { return }
        for await change in changes where change.name.hasPrefix(":") && change.newOwner.isEmpty {
            connectionClosed(change.name)
        }
    }

    public func stop() {
        // A clean stop leaves one snapshot and an empty journal: the next start reads less.
        if let state {
            do { try state.compact(durableImage()) } catch { logger.error("could not compact the state directory: \(error)") }
        }
        ownerChanges = nil
        activityTimer?.cancel()
        activityTimer = nil
        timelineTimer?.cancel()
        timelineTimer = nil
        storageTimer?.cancel()
        storageTimer = nil
    }

    // MARK: Apps

    func appsInterface() throws -> ExportedInterface {
        guard let description = interfaces[HostNames.apps] else {
            throw DBusEncodingError("dbus/\(HostNames.apps).xml is missing")
        }
        var exported = ExportedInterface(description)
        exported.method("RegisterApp", isolatedDeferred { service, call, reply in service.registerApp(call, reply) })
        exported.method("UnregisterApp", appOwned { service, call, identity in try service.unregisterApp(call, identity) })
        exported.method("ListApps", isolatedImmediate { service, _ in [service.listApps()] })
        exported.method("OpenURL", isolatedDeferred { service, call, reply in service.openURL(call, reply) })
        exported.method(
            "Reload",
            .deferred { [weak self] _, reply in
                guard let self else { return reply.fail(DBusError.failed("the host is shutting down")) }
                Task {
                    let scan = await Self.scan(self.configuration.xdg)
                    await self.applyScan(scan)
                    reply.succeed()
                }
            })
        return exported
    }

    /// A handler that runs on the connection's thread, isolated to this actor,
    /// and answers at once — after any earlier call of the same sender still
    /// waiting for a lookup.
    nonisolated func isolatedImmediate(
        _ body: @escaping @Sendable (isolated HostService, MethodCall) throws -> [DBusValue]
    ) -> MethodHandler {
        isolatedDeferred { service, call, reply in
            do { reply.succeed(try body(service, call)) } catch { reply.fail(error) }
        }
    }

    /// A handler of an app-owned method: runs with the caller's identity
    /// (looked up on the first such call of a connection, then cached).
    nonisolated func appOwned(
        _ body: @escaping @Sendable (isolated HostService, MethodCall, CallerIdentity) throws -> [DBusValue]
    ) -> MethodHandler {
        isolatedDeferred { service, call, reply in
            service.withCaller(call.sender, reply: reply) { identity, _ in try body(service, call, identity) }
        }
    }

    /// `RegisterApp`: needs the caller's identity and whether it owns the bus name `app_id`.
    func registerApp(_ call: MethodCall, _ reply: Reply) {
        let appID = call.arguments[0].stringValue ?? ""
        let options = OptionValue.dictionary(call.arguments[1])
        do {
            // Bad input is refused before anything is looked up.
            _ = try registry.parseOptions(appID: appID, options)
        } catch {
            return reply.fail(error)
        }
        withCaller(call.sender, nameOwnerOf: appID, reply: reply) { [self] identity, nameOwner in
            let outcome = try registry.register(
                appID: appID, owner: call.sender, options: options, identity: identity, ownsName: nameOwner == call.sender)
            switch outcome {
            case .registered:
                logger.info("registered", metadata: ["app": "\(appID)", "owner": "\(call.sender)", "sandbox": "\(identity)"])
                emit("AppRegistered", appID)
            case .replaced(let previous):
                logger.info(
                    "registration taken over by the owner of the app's bus name",
                    metadata: ["app": "\(appID)", "owner": "\(call.sender)", "previous": "\(previous)"])
                emit("AppUnregistered", appID)
                emit("AppRegistered", appID)
            case .updated:
                logger.debug("registration updated", metadata: ["app": "\(appID)", "owner": "\(call.sender)"])
            }
            providerMayHaveChanged(appID)
            return []
        }
    }

    func unregisterApp(_ call: MethodCall, _ identity: CallerIdentity) throws -> [DBusValue] {
        guard case .string(let appID) = call.arguments[0] else { return [] }
        try Validate.appID(appID)
        try identity.check(appID, doing: "unregister")
        try registry.unregister(appID: appID, caller: call.sender)
        logger.info("unregistered", metadata: ["app": "\(appID)", "owner": "\(call.sender)"])
        emit("AppUnregistered", appID)
        dropUnneededBundles(among: [appID])
        return []
    }

    func listApps() -> DBusValue {
        .array(
            element: "(sa{sv})",
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
                return .structure([.string(app.id), .vardict(details)])
            })
    }

    /// Routes a bare URL by its scheme (docs/apps.md) and delivers it as a link would be.
    func openURL(_ call: MethodCall, _ reply: Reply) {
        do {
            let url = call.arguments[0].stringValue ?? ""
            try ViewTree.checkURL(url, what: "url", limits: configuration.contentLimits)
            guard let scheme = URLParts.scheme(of: url) else { throw HostError.invalidArgument("url must be absolute") }
            var token: String?
            for (key, value) in OptionValue.dictionary(call.arguments[1]) {
                guard key == "activation_token", case .string(let s) = value else {
                    throw HostError.invalidArgument("OpenURL takes one option, activation_token (s); '\(key)' is not it")
                }
                token = s
            }
            let xdg = configuration.xdg
            Task {
                // mimeapps.list is read off the connection's thread.
                let defaults = await withCheckedContinuation { continuation in
                    DispatchQueue.global(qos: .userInitiated).async {
                        continuation.resume(returning: MimeApps.defaultHandlers(forScheme: scheme, dirs: xdg))
                    }
                }
                guard let app = registry.route(scheme: scheme, mimeDefaults: defaults) else {
                    return reply.fail(
                        HostError.unknownApp(
                            "no known app handles the scheme '\(scheme)'; an app declares it with RegisterApp's 'schemes' or MimeType=x-scheme-handler/\(scheme); in its desktop entry"))
                }
                let delivery = Delivery(
                    appID: app.id, options: app.options, destination: app.deliveryDestination,
                    outcome: .openURL(url: url, via: "open-url"), activationToken: token, source: ["via": .string("open-url")])
                let logger = self.logger
                deliver(delivery) { error in
                    if let error { return reply.fail(error) }
                    logger.info("URL opened", metadata: ["app": "\(app.id)", "scheme": "\(scheme)"])
                    reply.succeed([.string(app.id)])
                }
            }
        } catch let error as HostError {
            reply.fail(error.name == .invalidContent ? HostError.invalidArgument(error.message) : error)
        } catch {
            reply.fail(error)
        }
    }

    func connectionClosed(_ owner: String) {
        forgetCaller(owner)
        let ended = registry.connectionClosed(owner)
        for appID in ended {
            logger.info("registration ended with its connection", metadata: ["app": "\(appID)", "owner": "\(owner)"])
            emit("AppUnregistered", appID)
        }
        dropUnneededBundles(among: ended)
    }

    /// Forgets the bundles of apps among `appIDs` that are gone (no live
    /// registration, no desktop entry) and have no placed widget, so that
    /// apps that come and go leave nothing behind. When the disk refuses,
    /// the bundles stay until the next chance.
    func dropUnneededBundles(among appIDs: some Sequence<String>) {
        let unneeded = widgets.unneededBundles(among: appIDs) { registry.app($0) != nil }
        guard !unneeded.isEmpty else { return }
        do {
            try persist(unneeded.map { .bundleRemoved(appID: $0) })
        } catch {
            return logger.warning("could not forget the bundles of apps that are gone: \(error)")
        }
        for appID in unneeded { widgets.dropBundle(appID: appID) }
        logger.info("bundles of apps that are gone forgotten", metadata: ["apps": "\(unneeded)"])
    }

    private func emit(_ signal: String, _ appID: String) {
        do {
            try connection.emit(path: HostNames.rootPath, interface: HostNames.apps, member: signal, arguments: [.string(appID)])
        } catch {
            logger.error("could not emit \(signal): \(error)")
        }
    }

    // MARK: Desktop entries

    /// Reads desktop entries off the connection's thread (it is file I/O).
    nonisolated static func scan(_ xdg: XDGDirectories) async -> DesktopScan {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async { continuation.resume(returning: DesktopScan.scan(xdg)) }
        }
    }

    func applyScan(_ scan: DesktopScan) {
        for warning in scan.warnings { logger.warning("\(warning)") }
        registry.replaceDiscovered(scan)
        logger.info("desktop entries read", metadata: ["apps": "\(scan.apps.map(\.id))"])
        for app in scan.apps { providerMayHaveChanged(app.id) }
        dropUnneededBundles(among: widgets.bundles.keys)
    }
}
