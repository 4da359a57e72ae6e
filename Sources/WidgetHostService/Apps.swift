import DBus
import Dispatch
import WidgetHostCore

/// The apps as the servers that only look them up see them: read only.
protocol AppDirectory: AnyObject {
    /// The app, live-registered or discovered; nil when the host does not know it.
    func app(_ appID: String) -> KnownApp?
    /// The apps whose live registration `connection` holds.
    func appIDs(registeredBy connection: String) -> [String]
    /// The caller must be allowed to act for the app (a sandbox only for its
    /// own id) and hold the app's live registration.
    func requireOwner(_ appID: String, _ sender: String, _ identity: CallerIdentity, doing what: String) throws(HostError)
}

/// The apps the host knows (the model's `AppRegistry`: live registrations and
/// desktop entries, docs/apps.md), and the signals that announce them.
final class Apps: Store, AppDirectory {
    private var registry: AppRegistry
    private let context: HostContext

    init(_ context: HostContext) {
        self.context = context
        registry = AppRegistry(maxRegistrationsPerConnection: context.configuration.maxRegistrationsPerConnection)
        registry.maxRegistrationsPerSandboxedApp = context.configuration.maxIDsPerSandboxedApp
    }

    /// A connection's registrations end with it.
    func connectionLeft(_ connection: String) {
        for appID in registry.connectionClosed(connection) {
            context.logger.info("registration ended with its connection", metadata: ["app": "\(appID)", "owner": "\(connection)"])
            emitUnregistered(appID)
        }
    }

    // MARK: Reading

    func app(_ appID: String) -> KnownApp? { registry.app(appID) }

    func appIDs(registeredBy connection: String) -> [String] { registry.appIDs(registeredBy: connection) }

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

    /// Every known app, registered or discovered.
    var all: [KnownApp] { registry.apps }

    /// The app that handles `scheme` (docs/apps.md).
    func route(scheme: String, mimeDefaults: [String]) -> KnownApp? {
        registry.route(scheme: scheme, mimeDefaults: mimeDefaults)
    }

    // MARK: Changing

    /// Checks `RegisterApp`'s options, so that bad input is refused before anything is looked up.
    func checkOptions(appID: String, _ options: [String: OptionValue]) throws(HostError) {
        _ = try registry.parseOptions(appID: appID, options)
    }

    /// Makes `sender` the app's live handler (`RegisterApp`), once its identity
    /// and whether it owns the bus name `appID` are known.
    func register(_ sender: String, _ appID: String, _ options: [String: OptionValue], _ identity: CallerIdentity, ownsName: Bool) throws {
        let outcome = try registry.register(appID: appID, owner: sender, options: options, identity: identity, ownsName: ownsName)
        switch outcome {
        case .registered:
            context.logger.info("registered", metadata: ["app": "\(appID)", "owner": "\(sender)", "sandbox": "\(identity)"])
            emitRegistered(appID)
        case .replaced(let previous):
            context.logger.info(
                "registration taken over by the owner of the app's bus name",
                metadata: ["app": "\(appID)", "owner": "\(sender)", "previous": "\(previous)"])
            emitUnregistered(appID)
            emitRegistered(appID)
        case .updated:
            context.logger.debug("registration updated", metadata: ["app": "\(appID)", "owner": "\(sender)"])
        }
    }

    /// Ends `sender`'s live registration of `appID` (`UnregisterApp`).
    func unregister(_ appID: String, _ sender: String, _ identity: CallerIdentity) throws {
        try Validate.appID(appID)
        try identity.check(appID, doing: "unregister")
        try registry.unregister(appID: appID, caller: sender)
        context.logger.info("unregistered", metadata: ["app": "\(appID)", "owner": "\(sender)"])
        emitUnregistered(appID)
    }

    /// Takes the desktop entries a scan found in place of those known before.
    func replaceDiscovered(_ scan: DesktopScan) {
        for warning in scan.warnings { context.logger.warning("\(warning)") }
        registry.replaceDiscovered(scan)
        context.logger.info("desktop entries read", metadata: ["apps": "\(scan.apps.map(\.id))"])
    }

    private func emitRegistered(_ appID: String) {
        context.emitting(Host1Apps.Signal.appRegistered.rawValue) {
            try Host1Apps.AppRegistered(appID: appID).emit(on: $0, path: Host1Apps.objectPath)
        }
    }

    private func emitUnregistered(_ appID: String) {
        context.emitting(Host1Apps.Signal.appUnregistered.rawValue) {
            try Host1Apps.AppUnregistered(appID: appID).emit(on: $0, path: Host1Apps.objectPath)
        }
    }
}

extension DesktopScan {
    /// Reads desktop entries off the connection's thread (it is file I/O).
    static func read(_ xdg: XDGDirectories) async -> DesktopScan {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async { continuation.resume(returning: DesktopScan.scan(xdg)) }
        }
    }
}
