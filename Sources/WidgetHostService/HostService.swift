import DBus
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
    /// The frame announcements are coalesced in, and each app's update rate, burst and ceiling.
    public var updates = UpdatePacingOptions()

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        xdg = XDGDirectories.fromEnvironment(environment)
        let stateHome =
            environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path) + "/.local/state")
        stateDirectory = stateHome + "/widgethost"
    }
}

/// `widget-hostd` as a ServiceLifecycle service: ``run()`` serves the
/// objects, owns the name and serves the bus until a graceful shutdown (it
/// returns) or the bus is lost (it throws). Runs on the connection's thread
/// (the actor's executor), so every change of a sender happens in the order it
/// sent the messages that caused it (see `senders`).
///
/// The host is the one isolation domain: it owns the stores (``Stores``),
/// builds each interface's server over the stores it needs
/// (``makeServers()``), and routes what is not a call — a connection leaving
/// the bus, a timer, the journal's reports — to the stores it concerns.
public actor HostService: Service, CustomStringConvertible {
    public nonisolated var description: String { "widget-hostd on \(bus)" }
    /// The connection, the log and the options, which every part shares.
    let context: HostContext
    /// The bus `connection` is on.
    public let bus: BusAddress
    /// The model, one store per concern, each handed to the servers that need it.
    let stores: Stores
    /// Each timer's wall-clock deadline: the stores arm them, a timer of the connection's loop fires them (see Timers.swift).
    let timers: Deadlines
    /// Work a handler starts that outlives its call; `run()` runs each as its child.
    private let jobs = AsyncStream<Job>.makeStream()
    /// Name owners changing on the bus, watched from `start()` on; `run()` reads them.
    private var ownerChanges: AsyncStream<NameOwnerChange>?
    /// Each sender's calls in the order it sent them, and each connection's
    /// identity once looked up (see IdentityService.swift).
    lazy var senders = SenderLines<String, Result<CallerIdentity, HostError>> { [unowned self] sender in
        self.scheduleTurn(of: sender)
    }

    public nonisolated var connection: Connection { context.connection }
    public nonisolated var configuration: HostConfiguration { context.configuration }
    nonisolated var logger: Logger { context.logger }

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
        let context = HostContext(connection: connection, logger: logger, configuration: configuration)
        let timers = Deadlines(clock: configuration.clock)
        self.context = context
        self.bus = bus
        self.timers = timers
        self.stores = Stores(context, timers: timers)
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

    /// Serves the objects, then owns the name, then serves the bus: the timers
    /// start firing (see Timers.swift), and name owner changes and the work
    /// handlers start (``spawn(_:)``), each a child task. SIGTERM/SIGINT (a graceful shutdown) give the name back and
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
        serveTimers()
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await self.watchConnections() }
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
        // Reading every object's properties for a reply of many objects leaves
        // their blocks freed but resident: give the pages back once it is sent.
        connection.afterLargeReply(ofAtLeast: 1 << 20) { Allocator.returnFreePagesInBackground() }
        let (root, apps) = makeServers()
        // The stores whose objects outlive a run: what start-up restores, a
        // snapshot writes and a refused write puts back.
        try stores.storage.open(DurableModel(widgets: stores.widgets, activities: stores.activities, timelines: stores.timelines))
        // Reading the files left their text, their records and the paths
        // exported freed but resident: the reader's locals are gone by now.
        Allocator.returnFreePages()
        apps.applyScan(await DesktopScan.read(configuration.xdg))
        // What fell due while the host was not running.
        stores.activities.deadlinePassed()
        stores.timelines.deadlinePassed()
        try connection.export(root, at: Host1Apps.objectPath)
        logger.info("serving \(Host1Apps.objectPath)", metadata: ["interfaces": "\(root.map(\.description.name))"])
    }

    /// Each interface's server over the stores its calls need — the one place
    /// that says which server reaches which store — and the interfaces every
    /// widget and activity object shares, handed to the stores that export
    /// those objects. Returns the root object's interfaces, and the apps'
    /// handlers, which read the desktop entries at start-up as `Reload` does.
    private func makeServers() -> (root: [ExportedInterface], apps: AppsHandlers) {
        let s = stores
        let apps = AppsHandlers(apps: s.apps, widgets: s.widgets, timelines: s.timelines, deliveries: s.deliveries, context: context)
        let widgets = WidgetsHandlers(widgets: s.widgets, apps: s.apps, timelines: s.timelines, context: context)
        let widget = WidgetHandlers(widgets: s.widgets, apps: s.apps, timelines: s.timelines, deliveries: s.deliveries, context: context)
        let activities = LiveActivitiesHandlers(activities: s.activities, apps: s.apps)
        let activity = LiveActivityHandlers(activities: s.activities, apps: s.apps, deliveries: s.deliveries, context: context)
        let objects = ObjectInterfaces(
            widget: WidgetServer(dispatcher: Dispatcher(self, widget)), activity: LiveActivityServer(dispatcher: Dispatcher(self, activity)))
        s.widgets.objectInterfaces = objects.widget
        s.activities.objectInterfaces = objects.activity
        let root = [
            Host1Apps.exported(AppsServer(dispatcher: Dispatcher(self, apps))),
            Host1Widgets.exported(WidgetsServer(dispatcher: Dispatcher(self, widgets))),
            Host1LiveActivities.exported(LiveActivitiesServer(dispatcher: Dispatcher(self, activities))),
        ]
        return (root, apps)
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
        if let journal = stores.storage.closing() {
            await journal.finish()
            stores.storage.closed()
        }
        ownerChanges = nil
        timers.stop()
        jobs.continuation.finish()
        // The exported handlers hold this service; let both go.
        connection.unexportAll()
    }

    /// A connection left the bus: what it owned goes, here and nowhere else —
    /// what is known of it (a lookup of it still under way stores nothing),
    /// then what each store holds of it (``Store/connectionLeft(_:)``).
    func connectionClosed(_ owner: String) {
        senders.forget(owner)
        for store in stores.all { store.connectionLeft(owner) }
    }
}
