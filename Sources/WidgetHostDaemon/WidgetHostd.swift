import ArgumentParser
import DBus
import FoundationEssentials
import Glibc
import Logging
import ServiceLifecycle
import UnixSignals
import WidgetHostCore
import WidgetHostSystem
import WidgetHostService

/// The `widget-hostd` command: its options, and running the host until it is stopped.
/// Both executables run it: `widget-hostd`, and `widget-host` when called by
/// that name (the package installs one binary under both names, see docs/daemon.md#footprint).
public struct WidgetHostd: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "widget-hostd",
        abstract: "The WidgetHost session service: resolves taps on widgets and Live Activities and delivers them to apps.",
        discussion: """
            Serves org.widgethost.Host1 on the session bus (DBUS_SESSION_BUS_ADDRESS), or on the bus that \
            started it when started by D-Bus activation. SIGTERM and SIGINT stop it gracefully; losing the \
            bus makes it exit with status 1.
            """,
        version: "widget-hostd \(WidgetHostVersion.current)")

    @Option(name: .customLong("address"), help: "Connect to this D-Bus address instead of the session bus.")
    var address: String?

    @Option(help: "Which families honour `link` elements: current or legacy.")
    var linkPolicy = HostDefaults.linkPolicy

    @Option(help: "Seconds a delivery waits for an app's answer (decimals allowed).")
    var deliveryTimeout = HostDefaults.deliveryTimeout

    @Option(help: "Where the host keeps its state (default: $XDG_STATE_HOME/widgethost).")
    var stateDir: String?

    @Flag(help: "Keep the state in a new folder of its own ($XDG_RUNTIME_DIR/widgethost-ephemeral-*, else in /tmp) and remove it when the host stops: the host starts with nothing placed and leaves nothing behind, for trying things out.")
    var ephemeral = false

    @Option(help: "Live Activities one app may have at a time.")
    var maxActivitiesPerApp = HostDefaults.maxActivitiesPerApp

    @Option(help: "Seconds a provider call (GetTimeline, ProvideOptions) waits for the app's answer (decimals allowed).")
    var providerTimeout = HostDefaults.providerTimeout

    @Option(help: "Timeline reloads each widget may have in a sliding 24 hours (only reloads the app asks for while registered do not count; reloads after an action do).")
    var dailyReloadBudget = HostDefaults.dailyReloadBudget

    @Option(help: "The fewest seconds between a timeline's arrival and the reload its policy asks for.")
    var minReloadInterval = HostDefaults.minReloadInterval

    @Option(help: "Seconds before the first retry of a failed timeline fetch; each further failure doubles it, up to one hour.")
    var reloadRetryDelay = HostDefaults.reloadRetryDelay

    @Option(help: "Milliseconds of a frame, a slot of the host's clock: each widget's and Live Activity's first change in a frame reaches renderers at once, the ones after it once at the frame's end, the latest.")
    var updateFrameMs = HostDefaults.updateFrameMs

    @Option(help: "Updates (SetContent, LiveActivity.Update) one app may send a second, sustained, each announced within a frame; past it they are still stored and acknowledged, and each of its widgets and activities is announced every \(UpdatePacingOptions.framesPastRate) frames.")
    var updateRate = HostDefaults.updateRate

    @Option(help: "Updates one app may send at once beyond its rate.")
    var updateBurst = HostDefaults.updateBurst

    @Option(help: "Updates one app may send a second at all; more are refused with LimitExceeded \(UpdatePacingOptions.framesPastRate) frames after they came, and nothing of them is stored.")
    var maxUpdateRate = HostDefaults.maxUpdateRate

    @Option(help: "Placed widgets one app may have.")
    var maxWidgetsPerApp = HostDefaults.maxWidgetsPerApp

    @Option(help: "The largest configuration of one widget, in bytes serialized as a{sv}.")
    var maxConfigurationBytes = HostDefaults.maxConfigurationBytes

    @Option(help: "The most bytes one app's widgets, their timelines and its Live Activities may take, measured as they travel on the bus.")
    var maxAppBytes = HostDefaults.maxAppBytes

    @Option(help: "The most bytes all apps' widgets, timelines and Live Activities may take, measured as they travel on the bus (at most \(Footprint.Budgets.largestTotal), so that GetManagedObjects always fits one D-Bus message).")
    var maxHostBytes = HostDefaults.maxHostBytes

    @Option(help: "App registrations one connection may hold.")
    var maxRegistrationsPerConnection = HostDefaults.maxRegistrationsPerConnection

    @Option(help: "Deliveries one app may have waiting for its answer; more taps for it fail at once with LimitExceeded.")
    var maxPendingDeliveriesPerApp = HostDefaults.maxPendingDeliveriesPerApp

    @Option(help: "Live registrations of one sandboxed app's ids (its own and those below it) over all its connections.")
    var maxIdsPerSandboxedApp = HostDefaults.maxIDsPerSandboxedApp

    @Option(help: "The most bytes of JSON all apps' widget bundles may take together.")
    var maxBundleBytes = HostDefaults.maxBundleBytes

    @Option(help: "The most bytes of JSON the widget bundles of the apps one connection holds may take together.")
    var maxBundleBytesPerConnection = HostDefaults.maxBundleBytesPerConnection

    @Option(help: "GetTimeline calls under way to one app's provider at once; more wait their turn, and a widget's later reloads join the one waiting.")
    var maxProviderCallsPerApp = HostDefaults.maxProviderCallsPerApp

    @Option(help: "The most entries of one array or dictionary in a call; a call with more is refused while it is read.")
    var maxDictEntries = HostDefaults.maxDictEntries

    @Option(help: "The most bytes of one a{sv} in a call (its keys and values, nested ones included); a call with more is refused while it is read.")
    var maxDictBytes = HostDefaults.maxDictBytes

    @Option(help: "The largest view tree (content JSON) in bytes.")
    var maxContentBytes = HostDefaults.maxContentBytes

    @Option(help: "The deepest nesting of elements in a view tree.")
    var maxContentDepth = HostDefaults.maxContentDepth

    @Option(help: "The most elements in a view tree.")
    var maxContentElements = HostDefaults.maxContentElements

    @Option(help: "The longest URL in bytes.")
    var maxUrlLength = HostDefaults.maxURLLength

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    public func validate() throws {
        guard !(ephemeral && stateDir != nil) else {
            throw ValidationError("--ephemeral and --state-dir exclude each other: --ephemeral makes a state directory of its own")
        }
        guard deliveryTimeout > 0, deliveryTimeout.isFinite else {
            throw ValidationError("--delivery-timeout must be a positive number of seconds, e.g. 2.5")
        }
        guard providerTimeout > 0, providerTimeout.isFinite else {
            throw ValidationError("--provider-timeout must be a positive number of seconds, e.g. 10")
        }
        guard dailyReloadBudget > 0 else {
            throw ValidationError("--daily-reload-budget must be at least 1")
        }
        guard minReloadInterval >= 0, minReloadInterval.isFinite else {
            throw ValidationError("--min-reload-interval must be 0 or more seconds")
        }
        guard reloadRetryDelay > 0, reloadRetryDelay.isFinite, reloadRetryDelay <= 3600 else {
            throw ValidationError("--reload-retry-delay must be more than 0 and at most 3600 seconds")
        }
        for (name, value) in [
            ("--max-activities-per-app", maxActivitiesPerApp), ("--max-widgets-per-app", maxWidgetsPerApp),
            ("--max-configuration-bytes", maxConfigurationBytes), ("--max-app-bytes", maxAppBytes), ("--max-host-bytes", maxHostBytes),
            ("--max-registrations-per-connection", maxRegistrationsPerConnection),
            ("--max-pending-deliveries-per-app", maxPendingDeliveriesPerApp), ("--max-content-bytes", maxContentBytes),
            ("--max-content-depth", maxContentDepth), ("--max-content-elements", maxContentElements), ("--max-url-length", maxUrlLength),
            ("--max-dict-entries", maxDictEntries), ("--max-dict-bytes", maxDictBytes), ("--max-provider-calls-per-app", maxProviderCallsPerApp),
            ("--max-ids-per-sandboxed-app", maxIdsPerSandboxedApp), ("--max-bundle-bytes", maxBundleBytes),
            ("--max-bundle-bytes-per-connection", maxBundleBytesPerConnection), ("--update-frame-ms", updateFrameMs),
            ("--update-rate", updateRate), ("--update-burst", updateBurst), ("--max-update-rate", maxUpdateRate),
        ] where value < 1 {
            throw ValidationError("\(name) must be at least 1")
        }
        guard maxContentDepth <= 255 else {
            throw ValidationError("--max-content-depth must be at most 255: each element is two levels of JSON, and the host reads JSON nested at most 512 levels deep")
        }
        guard maxHostBytes <= Footprint.Budgets.largestTotal else {
            throw ValidationError(
                "--max-host-bytes must be at most \(Footprint.Budgets.largestTotal): GetManagedObjects lists everything the host holds in one array, and D-Bus allows at most 64 MiB in one")
        }
        guard updateFrameMs <= 1000 else {
            throw ValidationError("--update-frame-ms must be at most 1000: a frame is what a renderer draws at once")
        }
        guard maxUpdateRate >= updateRate else {
            throw ValidationError("--max-update-rate (\(maxUpdateRate)) must be at least --update-rate (\(updateRate))")
        }
        guard maxAppBytes <= maxHostBytes else {
            throw ValidationError("--max-app-bytes (\(maxAppBytes)) must be at most --max-host-bytes (\(maxHostBytes))")
        }
    }

    public init() {}

    public func run() async throws {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "widget-hostd")
        Allocator.returnLargeBlocksAtOnce()

        var config = HostConfiguration()
        config.linkPolicy = linkPolicy
        config.deliveryTimeout = .milliseconds(Int64((deliveryTimeout * 1000).rounded()))
        if let stateDir { config.stateDirectory = stateDir }
        var throwaway: String? = nil
        if ephemeral {
            do { throwaway = try EphemeralState.make() } catch {
                logger.critical("\(error)")
                throw ExitCode(1)
            }
            config.stateDirectory = throwaway ?? config.stateDirectory
        }
        // An ephemeral state goes with the host however it stops, SIGKILL aside.
        defer { if let throwaway { EphemeralState.remove(throwaway) } }
        config.maxActivitiesPerApp = maxActivitiesPerApp
        config.maxWidgetsPerApp = maxWidgetsPerApp
        config.maxConfigurationBytes = maxConfigurationBytes
        config.maxRegistrationsPerConnection = maxRegistrationsPerConnection
        config.budgets.perApp = maxAppBytes
        config.budgets.total = maxHostBytes
        config.maxPendingDeliveriesPerApp = maxPendingDeliveriesPerApp
        config.maxDictionaryEntries = maxDictEntries
        config.maxProviderCallsPerApp = maxProviderCallsPerApp
        config.maxIDsPerSandboxedApp = maxIdsPerSandboxedApp
        config.maxBundleBytes = maxBundleBytes
        config.maxBundleBytesPerConnection = maxBundleBytesPerConnection
        config.maxDictionaryBytes = maxDictBytes
        config.contentLimits.maxBytes = maxContentBytes
        config.contentLimits.maxDepth = maxContentDepth
        config.contentLimits.maxElements = maxContentElements
        config.contentLimits.maxURLLength = maxUrlLength
        config.providerTimeout = .milliseconds(Int64((providerTimeout * 1000).rounded()))
        config.timelines.dailyBudget = dailyReloadBudget
        config.timelines.minimumReloadInterval = minReloadInterval
        config.timelines.retryInitialDelay = reloadRetryDelay
        config.updates = UpdatePacingOptions(frameMs: updateFrameMs, rate: updateRate, burst: updateBurst, ceiling: maxUpdateRate)

        let bus: BusAddress
        if let address {
            bus = .address(address)
        } else if BusAddress.startedByActivation {
            bus = .starter
        } else {
            bus = .session
        }

        do {
            // Connect first: the host's actor runs on its connection's thread.
            let host = try await HostService.connect(bus, configuration: config, logger: logger)
            let group = ServiceGroup(
                configuration: .init(
                    services: [.init(service: host)],
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger))
            try await group.run()
        } catch {
            logger.critical("\(error)")
            throw ExitCode(1)
        }
    }
}

/// The state directory of `--ephemeral`: made afresh at each start, removed at the stop.
enum EphemeralState {
    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    /// A new, empty folder only this user can read: in `$XDG_RUNTIME_DIR`
    /// (a tmpfs the session owns and empties at logout) when it is set, else in /tmp.
    static func make(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> String {
        let parent = environment["XDG_RUNTIME_DIR"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
        var template = Array((parent + "/widgethost-ephemeral-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw Failed(description: "--ephemeral: cannot make a state directory in \(parent): \(String(cString: strerror(errno)))")
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func remove(_ directory: String) {
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension HostConfiguration.LinkPolicy: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}
