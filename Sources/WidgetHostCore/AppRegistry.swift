/// One app the host knows: live-registered, discovered from a desktop entry, or both.
public struct KnownApp: Sendable, Equatable {
    /// The app id.
    public var id: String
    /// The live registration's options when registered, else the desktop entry's.
    public var options: AppOptions
    /// The unique bus name of the registering connection; `nil` when only discovered.
    public var registeredBy: String?
    /// The registration's place in registration order (smaller = earlier); `nil` when only discovered.
    public var registeredSequence: UInt64?
    /// The app's desktop entry, when one was discovered (kept even when registered).
    public var desktopEntry: DesktopEntry?

    public init(id: String, options: AppOptions, registeredBy: String? = nil, registeredSequence: UInt64? = nil, desktopEntry: DesktopEntry? = nil) {
        self.id = id
        self.options = options
        self.registeredBy = registeredBy
        self.registeredSequence = registeredSequence
        self.desktopEntry = desktopEntry
    }

    /// Whether a connection holds a live registration of the app.
    public var isRegistered: Bool { registeredBy != nil }
}

/// The registry of known apps (CONTRACT §2): live registrations, each tied to the
/// bus connection (unique name) that made it, plus apps discovered from desktop entries.
public struct AppRegistry: Sendable {
    private struct Registration: Sendable {
        var owner: String
        var options: AppOptions
        var sequence: UInt64
    }

    private var registrations: [String: Registration] = [:]
    private var discovered: [String: DiscoveredApp] = [:]
    private var nextSequence: UInt64 = 1

    /// The most live registrations one connection may hold.
    public var maxRegistrationsPerConnection: Int

    /// The warnings of the last scan given to ``replaceDiscovered(_:)``.
    public private(set) var scanWarnings: [String] = []

    /// An empty registry.
    public init(maxRegistrationsPerConnection: Int = 256) {
        self.maxRegistrationsPerConnection = maxRegistrationsPerConnection
    }

    /// What ``register(appID:owner:options:)`` did.
    public enum RegisterOutcome: Sendable, Equatable {
        /// A new live registration.
        case registered
        /// The same connection registered again; its options were replaced and it
        /// keeps its place in registration order.
        case updated
    }

    /// Makes `owner` the live handler of `appID` with the given `RegisterApp` options.
    ///
    /// Throws `InvalidArgument` for a bad app id or options; `AccessDenied` when
    /// another connection holds a live registration of `appID`; `LimitExceeded`
    /// when `owner` already holds ``maxRegistrationsPerConnection`` registrations.
    @discardableResult
    public mutating func register(appID: String, owner: String, options: [String: OptionValue]) throws(HostError) -> RegisterOutcome {
        let parsed = try AppOptions.parse(appID: appID, options)
        if let existing = registrations[appID] {
            guard existing.owner == owner else {
                throw .accessDenied("app '\(appID)' is already registered by connection \(existing.owner); that connection must call UnregisterApp or disconnect before \(owner) can register it")
            }
            registrations[appID]?.options = parsed
            return .updated
        }
        let held = registrations.values.reduce(0) { $0 + ($1.owner == owner ? 1 : 0) }
        if held >= maxRegistrationsPerConnection {
            throw .limitExceeded("connection \(owner) already holds \(held) app registrations, the most allowed (the limit max-registrations-per-connection); UnregisterApp some before registering '\(appID)'")
        }
        registrations[appID] = Registration(owner: owner, options: parsed, sequence: nextSequence)
        nextSequence += 1
        return .registered
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
    }

    /// The known app with id `id`, or `nil`.
    public func app(_ id: String) -> KnownApp? {
        let found = discovered[id]
        if let reg = registrations[id] {
            return KnownApp(id: id, options: reg.options, registeredBy: reg.owner, registeredSequence: reg.sequence, desktopEntry: found?.entry)
        }
        if let found {
            return KnownApp(id: id, options: found.options, desktopEntry: found.entry)
        }
        return nil
    }

    /// Every known app, sorted by id. A live registration overrides the options of
    /// a discovered entry of the same id; the entry stays in `desktopEntry`.
    public var apps: [KnownApp] {
        Set(registrations.keys).union(discovered.keys).sorted().compactMap { app($0) }
    }

    /// The app ids `owner` holds live registrations of, sorted.
    public func registrations(of owner: String) -> [String] {
        registrations.filter { $0.value.owner == owner }.map(\.key).sorted()
    }

    /// The handler for a bare URL of `scheme` (CONTRACT §2, `OpenURL`):
    /// 1. the live registration declaring the scheme that was registered earliest;
    /// 2. else the first of `mimeDefaults` (see ``MimeApps/defaultHandlers(forScheme:dirs:)``)
    ///    that is a known app, registered or discovered;
    /// 3. else the known app declaring the scheme whose id sorts first.
    ///
    /// The scheme is compared case-insensitively. `nil` when nothing handles it.
    public func route(scheme: String, mimeDefaults: [String]) -> KnownApp? {
        let scheme = scheme.lowercased()
        if let earliest = registrations
            .filter({ $0.value.options.schemes.contains(scheme) })
            .min(by: { $0.value.sequence < $1.value.sequence }) {
            return app(earliest.key)
        }
        for id in mimeDefaults {
            if let known = app(id) { return known }
        }
        return apps.first { $0.options.schemes.contains(scheme) }
    }
}
