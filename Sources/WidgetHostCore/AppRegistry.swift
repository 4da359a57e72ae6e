/// One app the host knows: live-registered, discovered from a desktop entry, or both.
public struct KnownApp: Sendable, Equatable {
    /// The app id.
    public var id: String
    /// The live registration's options merged over the desktop entry's (an
    /// option the registration leaves out keeps the entry's value); the entry's
    /// alone when not registered.
    public var options: AppOptions
    /// The unique bus name of the registering connection; `nil` when only discovered.
    public var registeredBy: String?
    /// The registration's place in registration order (smaller = earlier); `nil` when only discovered.
    public var registeredSequence: UInt64?
    /// What the kernel says the registering connection's process is; `nil` when only discovered.
    public var registrant: CallerIdentity?
    /// The app's desktop entry, when one was discovered (kept even when registered).
    public var desktopEntry: DesktopEntry?

    public init(
        id: String, options: AppOptions, registeredBy: String? = nil, registeredSequence: UInt64? = nil,
        registrant: CallerIdentity? = nil, desktopEntry: DesktopEntry? = nil
    ) {
        self.id = id
        self.options = options
        self.registeredBy = registeredBy
        self.registeredSequence = registeredSequence
        self.registrant = registrant
        self.desktopEntry = desktopEntry
    }

    /// Whether a connection holds a live registration of the app.
    public var isRegistered: Bool { registeredBy != nil }

    /// The bus name a delivery goes to (docs/apps.md#identity-who-may-act-for-an-app): for
    /// protocol `freedesktop` the app's own well-known name — its owner, or
    /// started by D-Bus activation — whoever registered; for `widgethost` the
    /// registering connection, which owned that name when it registered.
    public var deliveryDestination: String {
        switch options.appProtocol {
        case .freedesktop: id
        case .widgethost: registeredBy ?? id
        }
    }
}

/// The registry of known apps (docs/apps.md): live registrations, each tied to the
/// bus connection (unique name) that made it, plus apps discovered from desktop entries.
public struct AppRegistry: Sendable {
    private struct Registration: Sendable {
        var owner: String
        /// The options as `RegisterApp` gave them (validated).
        var given: [String: OptionValue]
        /// `given` merged over the desktop entry's options.
        var options: AppOptions
        var sequence: UInt64
        var identity: CallerIdentity
    }

    private var registrations: [String: Registration] = [:]
    private var discovered: [String: DiscoveredApp] = [:]
    private var nextSequence: UInt64 = 1

    /// The most live registrations one connection may hold.
    public var maxRegistrationsPerConnection: Int
    /// The most live registrations of one sandboxed app's ids (its own and
    /// those below it, `<id>.*`), over all its connections.
    public var maxRegistrationsPerSandboxedApp = HostDefaults.maxIDsPerSandboxedApp

    /// The warnings of the last scan given to ``replaceDiscovered(_:)``.
    public private(set) var scanWarnings: [String] = []
    /// The schemes installed desktop entries declare, with the entries (``DesktopScan/installedHandlers``).
    public private(set) var installedHandlers: [String: Set<String>] = [:]

    /// The apps whose live registration `owner` holds.
    public func appIDs(registeredBy owner: String) -> [String] {
        registrations.compactMap { $0.value.owner == owner ? $0.key : nil }
    }

    /// An empty registry.
    public init(maxRegistrationsPerConnection: Int = HostDefaults.maxRegistrationsPerConnection) {
        self.maxRegistrationsPerConnection = maxRegistrationsPerConnection
    }

    /// What ``register(appID:owner:options:identity:ownsName:)`` did.
    public enum RegisterOutcome: Sendable, Equatable {
        /// A new live registration.
        case registered
        /// The same connection registered again; its options were replaced and it
        /// keeps its place in registration order.
        case updated
        /// The owner of the bus name `app_id` took the id over from `previousOwner`,
        /// a connection that did not own the name.
        case replaced(previousOwner: String)
    }

    /// Makes `owner` the live handler of `appID` with the given `RegisterApp`
    /// options, by the rules of docs/apps.md#identity-who-may-act-for-an-app:
    ///
    /// - `identity` is what the kernel says `owner`'s process is: a sandboxed
    ///   caller registers only its own id or ids below it.
    /// - `ownsName` says whether `owner` owns the bus name `appID` now. Protocol
    ///   `widgethost` is delivered to the registering connection, so it needs the
    ///   name; and the name's owner always wins the id, replacing a registration
    ///   held by a connection that does not own it.
    /// - Options the registration leaves out keep the desktop entry's values.
    ///
    /// Throws `InvalidArgument` for a bad app id or options; `AccessDenied` for a
    /// sandbox acting for another app, for `widgethost` without the name, and
    /// when another connection holds the id and `owner` does not own the name;
    /// `LimitExceeded` when `owner` already holds ``maxRegistrationsPerConnection``.
    @discardableResult
    public mutating func register(
        appID: String, owner: String, options: [String: OptionValue], identity: CallerIdentity = .unsandboxed, ownsName: Bool
    ) throws(HostError) -> RegisterOutcome {
        let parsed = try parseOptions(appID: appID, options)
        try identity.check(appID, doing: "register")
        if parsed.appProtocol == .widgethost && !ownsName {
            throw .accessDenied(
                "connection \(owner) does not own the bus name '\(appID)', and protocol 'widgethost' delivers taps to the registering connection; request the name first (RequestName, as GApplication does), or register with protocol 'freedesktop' to have taps delivered to whoever owns '\(appID)'")
        }
        var outcome = RegisterOutcome.registered
        if let existing = registrations[appID] {
            if existing.owner == owner {
                registrations[appID]?.given = options
                registrations[appID]?.options = parsed
                registrations[appID]?.identity = identity
                return .updated
            }
            guard ownsName else {
                throw .accessDenied(
                    "app '\(appID)' is already registered by connection \(existing.owner); that connection must call UnregisterApp or disconnect before \(owner) can register it (the owner of the bus name '\(appID)' may always register it)")
            }
            outcome = .replaced(previousOwner: existing.owner)
            registrations[appID] = nil
        }
        let held = registrations.values.reduce(0) { $0 + ($1.owner == owner ? 1 : 0) }
        if held >= maxRegistrationsPerConnection {
            throw .limitExceeded("connection \(owner) already holds \(held) app registrations, the most allowed (the limit max-registrations-per-connection); UnregisterApp some before registering '\(appID)'")
        }
        if let sandbox = identity.sandboxedID {
            let ids = registrations.values.reduce(0) { $0 + ($1.identity.sandboxedID == sandbox ? 1 : 0) }
            if ids >= maxRegistrationsPerSandboxedApp {
                throw .limitExceeded(
                    "the sandboxed app \(sandbox) already holds \(ids) registrations of its ids, the most allowed (the limit max-ids-per-sandboxed-app); UnregisterApp some of them before registering '\(appID)'")
            }
        }
        registrations[appID] = Registration(owner: owner, given: options, options: parsed, sequence: nextSequence, identity: identity)
        nextSequence += 1
        return outcome
    }

    /// `RegisterApp` options for `appID` merged over its desktop entry's; throws
    /// `InvalidArgument` for a bad app id or options. Changes nothing.
    public func parseOptions(appID: String, _ options: [String: OptionValue]) throws(HostError) -> AppOptions {
        try AppOptions.parse(appID: appID, options, base: discovered[appID]?.options)
    }

    /// Ends `caller`'s live registration of `appID`.
    ///
    /// Throws `InvalidArgument` for a bad app id; `UnknownApp` when `appID` has no
    /// live registration; `AccessDenied` when another connection registered it.
    public mutating func unregister(appID: String, caller: String) throws(HostError) {
        try Validate.appID(appID)
        guard let existing = registrations[appID] else {
            throw .unknownApp("app '\(appID)' is not registered; RegisterApp it first")
        }
        guard existing.owner == caller else {
            throw .accessDenied("app '\(appID)' was registered by connection \(existing.owner); only that connection may UnregisterApp it")
        }
        registrations[appID] = nil
    }

    /// Ends every registration of a connection that left the bus; returns their app ids, sorted.
    public mutating func connectionClosed(_ owner: String) -> [String] {
        let ids = registrations(of: owner)
        for id in ids { registrations[id] = nil }
        return ids
    }

    /// Replaces the discovered apps with those of `scan`.
    public mutating func replaceDiscovered(_ scan: DesktopScan) {
        discovered = Dictionary(scan.apps.map { ($0.entry.id, $0) }, uniquingKeysWith: { first, _ in first })
        scanWarnings = scan.warnings
        installedHandlers = scan.installedHandlers
        // The entries are the registrations' base: merge again over what they declare now.
        for (id, registration) in registrations {
            if let merged = try? AppOptions.parse(appID: id, registration.given, base: discovered[id]?.options) {
                registrations[id]?.options = merged
            }
        }
    }

    /// The known app with id `id`, or `nil`.
    public func app(_ id: String) -> KnownApp? {
        let found = discovered[id]
        if let reg = registrations[id] {
            return KnownApp(
                id: id, options: reg.options, registeredBy: reg.owner, registeredSequence: reg.sequence, registrant: reg.identity,
                desktopEntry: found?.entry)
        }
        if let found {
            return KnownApp(id: id, options: found.options, desktopEntry: found.entry)
        }
        return nil
    }

    /// Every known app, sorted by id. A live registration's options override a
    /// discovered entry's, and those it leaves out keep the entry's; the entry
    /// stays in `desktopEntry`.
    public var apps: [KnownApp] {
        Set(registrations.keys).union(discovered.keys).sorted().compactMap { app($0) }
    }

    /// The app ids `owner` holds live registrations of, sorted.
    public func registrations(of owner: String) -> [String] {
        registrations.filter { $0.value.owner == owner }.map(\.key).sorted()
    }

    /// The handler for a bare URL of `scheme` (`OpenURL`). Installed handlers
    /// outrank runtime claims:
    /// 1. the first of `mimeDefaults` (the user's `x-scheme-handler/<scheme>`
    ///    defaults, see ``MimeApps/defaultHandlers(forScheme:dirs:files:)``) that is a known app;
    /// 2. else a known app whose desktop entry declares the scheme, by id, a live one first;
    /// 3. else — only when no installed desktop entry at all declares the scheme —
    ///    the earliest live registration declaring it.
    ///
    /// So a process can never capture `https:`, or any scheme an installed app
    /// handles, by registering it. The scheme is compared case-insensitively.
    /// `nil` when nothing handles it.
    public func route(scheme: String, mimeDefaults: [String]) -> KnownApp? {
        let scheme = scheme.lowercased()
        for id in mimeDefaults {
            if let known = app(id) { return known }
        }
        // A known app (registered, or discovered) whose installed entry declares
        // the scheme, whether or not that entry is D-Bus-activatable.
        let installed = installedHandlers[scheme] ?? []
        let declaring = installed.filter { registrations[$0] != nil }
            + discovered.values.filter { $0.options.schemes.contains(scheme) }.map(\.id)
        if let id = declaring.min(by: { (registrations[$0] != nil ? 0 : 1, $0) < (registrations[$1] != nil ? 0 : 1, $1) }) {
            return app(id)
        }
        guard installed.isEmpty else { return nil }
        return registrations
            .filter { $0.value.options.schemes.contains(scheme) }
            .min { $0.value.sequence < $1.value.sequence }
            .flatMap { app($0.key) }
    }
}
