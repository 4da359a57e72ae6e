import DBus
import Logging
import ServiceLifecycle

/// Why the daemon stopped other than by a signal.
public enum DaemonError: Error, CustomStringConvertible {
    case nameTaken(owner: String?)
    case busLost(BusAddress)

    public var description: String {
        switch self {
        case .nameTaken(let owner):
            return "\(Host1Apps.busName) is already owned\(owner.map { " by \($0)" } ?? "") — another widget-hostd is running on this bus"
        case .busLost(let bus):
            return "lost the connection to \(bus); exiting so the service manager can restart the host"
        }
    }
}

/// `widget-hostd` as a ServiceLifecycle service: connect, serve the objects,
/// then own the name; on SIGTERM/SIGINT give the name back and close.
public struct HostDaemon: Service, CustomStringConvertible {
    public var description: String { "widget-hostd on \(bus)" }
    public let bus: BusAddress
    public let configuration: HostConfiguration
    public let logger: Logger
    /// Called once the name is owned (used by the demo and tests).
    public var onReady: (@Sendable (Connection) -> Void)?

    public init(bus: BusAddress, configuration: HostConfiguration, logger: Logger) {
        self.bus = bus
        self.configuration = configuration
        self.logger = logger
    }

    public func run() async throws {
        let connection = try await Connection.connect(bus, label: "host")
        defer { connection.close() }
        let service = try HostService(connection: connection, configuration: configuration, logger: logger)
        try await service.start()
        switch try await connection.requestName(Host1Apps.busName) {
        case .primaryOwner, .alreadyOwner:
            break
        case .exists, .inQueue:
            await service.stop()
            throw DaemonError.nameTaken(owner: try? await connection.nameOwner(Host1Apps.busName))
        }
        logger.info(
            "widget-hostd ready",
            metadata: ["bus": "\(bus)", "name": "\(Host1Apps.busName)", "unique": "\(connection.uniqueName ?? "?")"])
        onReady?(connection)

        // Until the bus goes away or a graceful shutdown closes the
        // connection: the service reads name owner changes meanwhile.
        await withDiscardingTaskGroup { group in
            group.addTask { await service.run() }
            group.addTask {
                // SIGTERM/SIGINT: give the name back, then close, which ends the wait below.
                guard (try? await gracefulShutdown()) != nil else { return }
                try? await connection.releaseName(Host1Apps.busName)
                connection.close()
            }
            await connection.waitUntilDisconnected()
            group.cancelAll()
        }
        await service.stop()
        if Task.isShuttingDownGracefully {
            logger.info("widget-hostd stopped")
        } else {
            throw DaemonError.busLost(bus)
        }
    }
}
