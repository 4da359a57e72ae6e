import DBus
import Dispatch
import FoundationEssentials
import Logging
import ServiceLifecycle
import WidgetHostCore
import WidgetHostSystem

/// How the host is configured (the daemon's options).
public struct HostConfiguration: Sendable {
    public typealias LinkPolicy = WidgetHostCore.LinkPolicy

    public var linkPolicy = HostDefaults.linkPolicy
    /// How long a delivery may wait for an app's answer.
    public var deliveryTimeout: Duration = .seconds(HostDefaults.deliveryTimeout)
    public var stateDirectory: String
    /// Where desktop entries and mimeapps.list are looked up.
    public var xdg: XDGDirectories
    public var maxRegistrationsPerConnection = HostDefaults.maxRegistrationsPerConnection
    /// Live Activities per app (activities not yet removed).
    public var maxActivitiesPerApp = HostDefaults.maxActivitiesPerApp
    /// Placed widgets per app.
    public var maxWidgetsPerApp = HostDefaults.maxWidgetsPerApp
    /// Bytes of one widget's configuration, serialized.
    public var maxConfigurationBytes = HostDefaults.maxConfigurationBytes
    /// What one app's and all apps' objects may take on the bus.
    public var budgets = Footprint.Budgets()
    /// Deliveries one app may have waiting for its answer; more taps for it are refused at once.
    public var maxPendingDeliveriesPerApp = HostDefaults.maxPendingDeliveriesPerApp
    /// Live registrations of one sandboxed app's ids.
    public var maxIDsPerSandboxedApp = HostDefaults.maxIDsPerSandboxedApp
    /// Bytes of JSON of all bundles, and of those of the apps one connection holds.
    public var maxBundleBytes = HostDefaults.maxBundleBytes
    public var maxBundleBytesPerConnection = HostDefaults.maxBundleBytesPerConnection
    /// `GetTimeline` calls under way to one app's provider at once; the rest wait their turn.
    public var maxProviderCallsPerApp = HostDefaults.maxProviderCallsPerApp
    /// Entries of one array or dictionary in a call, counted while it is read.
    public var maxDictionaryEntries = HostDefaults.maxDictEntries
    /// Bytes of one `a{sv}` in a call (its keys and values, nested ones
    /// included), weighed while it is read.
    public var maxDictionaryBytes = HostDefaults.maxDictBytes
    /// Size, depth, element count and URL length of every view tree (content, activities, timelines).
    public var contentLimits = ViewTreeLimits() {
        didSet { timelines.contentLimits = contentLimits }
    }
    /// The clock the model's dates come from (Live Activity lifecycles, timelines).
    public var clock: any WallClock = SystemWallClock()
    /// How long a provider call (`GetTimeline`, `ProvideOptions`) may take.
    public var providerTimeout: Duration = .seconds(HostDefaults.providerTimeout)
    /// The timeline engine's budget, pacing and retry settings.
    public var timelines = TimelineOptions()

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        xdg = XDGDirectories.fromEnvironment(environment)
        let stateHome =
            environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path) + "/.local/state")
        stateDirectory = stateHome + "/widgethost"
    }
}

/// The host's state and its D-Bus face, and `widget-hostd` as a ServiceLifecycle
/// service: ``run()`` serves the objects, owns the name and serves the bus until
/// a graceful shutdown (it returns) or the bus is lost (it throws). Runs on the
/// connection's thread (the actor's executor), so every change of a sender
/// happens in the order it sent the messages that caused it (see `senders`).
public actor HostService: Service, CustomStringConvertible {
    public nonisolated var description: String { "widget-hostd on \(bus)" }
    public let connection: Connection
    /// The bus `connection` is on.
    public let bus: BusAddress
    public let configuration: HostConfiguration
    let logger: Logger
    var registry: AppRegistry
    var widgets = WidgetStore()
    /// What each app's objects take on the bus, against the budgets (see FootprintService.swift).
    var footprint: Footprint
    var activities: LiveActivityStore
    /// The interfaces every widget and Live Activity object shares, built on first use.
    lazy var objectInterfaces = ObjectInterfaces(Dispatcher(host: self))
    /// The last `LiveActivities.Order` announced, to emit PropertiesChanged only on change.
    var announcedOrder: [String] = []
    var timelines: TimelineEngine
    /// `GetTimeline` calls under way to each app's provider, and those waiting (`maxProviderCallsPerApp`).
    var providerCalls: TurnLimiter<String, TimelineFetch>
    /// Deliveries waiting for each app's answer (`maxPendingDeliveriesPerApp`),
    /// and the apps that left one unanswered (see Delivery.swift).
    var deliveries: DeliveryGate
    /// The state directory: its journal, the writes not yet on disk and their callers (see Storage.swift).
    var storage = Storage()
    /// Each timer's wall-clock deadline: `arm(_:at:)` sets them, `run()` fires them (see Timers.swift).
    var timers = Deadlines()
    /// Work a handler starts that outlives its call; `run()` runs each as its child.
    private let jobs = AsyncStream<Job>.makeStream()
    /// Name owners changing on the bus, watched from `start()` on; `run()` reads them.
    private var ownerChanges: AsyncStream<NameOwnerChange>?
    /// Each sender's calls in the order it sent them, and each connection's
    /// identity once looked up (see IdentityService.swift).
    lazy var senders = SenderLines<String, Result<CallerIdentity, HostError>> { [unowned self] sender in
        self.scheduleTurn(of: sender)
    }

    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        connection.executor.asUnownedSerialExecutor()
    }

    /// Runs `operation` isolated to the host, from code already on its
    /// executor (the connection's thread): what `assumeIsolated` does, after
    /// the same check and with the same cast, without the two allocations it
    /// makes each time to carry its closure across. `operation` gets what it
    /// needs as `context` and captures nothing, so it is made without
    /// allocating either. A tap passes here three times.
    nonisolated func onExecutor<Context>(_ context: Context, _ operation: @escaping (isolated HostService, Context) -> Void) {
        precondition(connection.isCurrentThread, "the host was called off its connection's thread")
        unsafeBitCast(operation, to: ((HostService, Context) -> Void).self)(self, context)
    }

    /// Connects to `bus`; ``run()`` then serves it.
    public static func connect(
        _ bus: BusAddress, configuration: HostConfiguration, logger: Logger
    ) async throws -> HostService {
        HostService(connection: try await Connection.connect(bus, label: "host"), bus: bus, configuration: configuration, logger: logger)
    }

    init(connection: Connection, bus: BusAddress, configuration: HostConfiguration, logger: Logger) {
        self.connection = connection
        self.bus = bus
        self.configuration = configuration
        self.logger = logger
        self.registry = AppRegistry(maxRegistrationsPerConnection: configuration.maxRegistrationsPerConnection)
        var limits = ActivityLimits()
        limits.maxPerApp = configuration.maxActivitiesPerApp
        limits.content = configuration.contentLimits
        self.activities = LiveActivityStore(limits: limits)
        widgets.limits = configuration.contentLimits
        widgets.maxPerApp = configuration.maxWidgetsPerApp
        widgets.maxConfigurationBytes = configuration.maxConfigurationBytes
        widgets.maxBundleBytes = configuration.maxBundleBytes
        widgets.maxBundleBytesPerConnection = configuration.maxBundleBytesPerConnection
        registry.maxRegistrationsPerSandboxedApp = configuration.maxIDsPerSandboxedApp
        self.timelines = TimelineEngine(options: configuration.timelines)
        self.footprint = Footprint(budgets: configuration.budgets)
        self.providerCalls = TurnLimiter(limit: configuration.maxProviderCallsPerApp)
        self.deliveries = DeliveryGate(maxPendingPerApp: configuration.maxPendingDeliveriesPerApp)
        // The host takes no descriptors (every call carrying some is refused),
        // so those in messages not yet dispatched are kept few: a flood of them
        // cannot fill its descriptor table.
        connection.limitReceivedUnixFDs(64)
        // A call over these is refused while it is read: what it sends past
        // them is never built (a million-key a{sv} would stall every caller).
        connection.setDecodingLimits(
            DecodingLimits(
                maxContainerEntries: configuration.maxDictionaryEntries, maxDictionaryBytes: configuration.maxDictionaryBytes,
                errorName: HostError(.limitExceeded, "").dbusName, entriesName: "set by widget-hostd --max-dict-entries", bytesName: "set by widget-hostd --max-dict-bytes"))
    }

    /// Serves the objects, then owns the name, then serves the bus: name owner
    /// changes, the timers and the work handlers start (``spawn(_:)``), each a
    /// child task. SIGTERM/SIGINT (a graceful shutdown) give the name back and
    /// close the connection, and `run()` returns; a lost bus makes it throw
    /// ``DaemonError/busLost(_:)``, so the ServiceGroup ends with a failure.
    public func run() async throws {
        defer { connection.close() }
        do {
            try await start()
            switch try await connection.requestName(Host1Apps.busName) {
            case .primaryOwner, .alreadyOwner:
                break
            case .exists, .inQueue:
                throw DaemonError.nameTaken(owner: try? await connection.nameOwner(Host1Apps.busName))
            }
        } catch {
            // Let the exported handlers go, and write what was read back.
            await stop()
            throw error
        }
        logger.info(
            "widget-hostd ready",
            metadata: ["bus": "\(bus)", "name": "\(Host1Apps.busName)", "unique": "\(connection.uniqueName ?? "?")"])
        // Once the bus is gone no handler can start work: the loop below ends.
        connection.onDisconnect { [jobs] in jobs.continuation.finish() }
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.watchConnections() }
                group.addTask { await self.serveTimers() }
                group.addTask { [connection] in
                    // SIGTERM/SIGINT: give the name back, then close, which ends the wait below.
                    guard (try? await gracefulShutdown()) != nil else { return }
                    try? await connection.releaseName(Host1Apps.busName)
                    connection.close()
                }
                for await job in jobs.stream { group.addTask { await job(self) } }
                group.cancelAll()
            }
        } onCancel: { [connection] in
            connection.close()
        }
        await stop()
        if Task.isShuttingDownGracefully || Task.isCancelled {
            logger.info("widget-hostd stopped")
        } else {
            throw DaemonError.busLost(bus)
        }
    }

    /// Starts watching connections, serves the objects and reads desktop
    /// entries: everything is in place before the name is requested, so the
    /// first caller finds it.
    private func start() async throws {
        // Watch connections leaving before accepting registrations.
        ownerChanges = try await connection.nameOwnerChanges()
        connection.addObjectManager(at: Host1Apps.objectPath)
        try openState()
        // Reading the files left their text, their records and the paths
        // exported freed but resident: the reader's locals are gone by now.
        Allocator.returnFreePages()
        applyScan(await Self.scan(configuration.xdg))
        // What fell due while the host was not running.
        activityDeadlinePassed()
        timelineDeadlinePassed()
        let dispatcher = Dispatcher(host: self)
        let root = [
            Host1Apps.exported(AppsServer(dispatcher: dispatcher)), Host1Widgets.exported(WidgetsServer(dispatcher: dispatcher)),
            Host1LiveActivities.exported(LiveActivitiesServer(dispatcher: dispatcher)),
        ]
        try connection.export(root, at: Host1Apps.objectPath)
        logger.info("serving \(Host1Apps.objectPath)", metadata: ["interfaces": "\(root.map(\.description.name))"])
    }

    private func watchConnections() async {
        guard let changes = ownerChanges else { return }
        for await change in changes where change.name.hasPrefix(":") && change.newOwner.isEmpty {
            connectionClosed(change.name)
        }
    }

    /// What a handler starts that outlives its call (a lookup, a scan): run by `run()`, on this actor.
    typealias Job = @Sendable (isolated HostService) async -> Void

    /// Runs `job` as a child task of `run()` (dropped once the bus is gone).
    nonisolated func spawn(_ job: @escaping Job) {
        jobs.continuation.yield(job)
    }

    private func stop() async {
        // A clean stop writes what is queued, then one snapshot and an empty
        // journal, so the next start reads less.
        if let journal = storage.journal {
            journal.compact(durableImage())
            await journal.finish()
            // Its reports hold this service: let both go.
            storage.journal = nil
        }
        ownerChanges = nil
        jobs.continuation.finish()
        // The exported handlers hold this service; let both go.
        connection.unexportAll()
    }

    func connectionClosed(_ owner: String) {
        // What was known of it goes, and a lookup of it still under way stores nothing.
        senders.forget(owner)
        let ended = registry.connectionClosed(owner)
        for appID in ended {
            logger.info("registration ended with its connection", metadata: ["app": "\(appID)", "owner": "\(owner)"])
            emitAppUnregistered(appID)
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
