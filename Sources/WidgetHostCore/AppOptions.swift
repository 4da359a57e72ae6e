/// How the host talks to an app's handler (docs/delivery.md).
public enum AppProtocol: String, Sendable, CaseIterable {
    /// `org.widgethost.App1` on the registering connection. The default for `RegisterApp`.
    case widgethost
    /// `org.freedesktop.Application` (GApplication, KDBusService, …), with D-Bus activation.
    case freedesktop
}

/// Where a widget or Live Activity is shown. Ordered as declared:
/// `desktop` < `lock-screen` < `car` < `watch`.
public enum Surface: String, Sendable, CaseIterable, Comparable {
    case desktop
    case lockScreen = "lock-screen"
    case car
    case watch

    private var order: Int {
        switch self {
        case .desktop: 0
        case .lockScreen: 1
        case .car: 2
        case .watch: 3
        }
    }

    public static func < (lhs: Surface, rhs: Surface) -> Bool { lhs.order < rhs.order }

    /// `"desktop, lock-screen, car, watch"`, for messages.
    public static var allowedList: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// The options of a host app: what `RegisterApp` accepts (docs/apps.md), what
/// desktop entries declare through `X-WidgetHost-*` keys, and what `ListApps` reports.
public struct AppOptions: Sendable, Equatable {
    /// URL schemes the app handles: lowercased, de-duplicated, in the order given.
    public var schemes: [String]
    /// How the host delivers to the app.
    public var appProtocol: AppProtocol
    /// Where the app's handler object lives.
    public var objectPath: String
    /// Surfaces the app supports: sorted and unique. Default `[.desktop, .lockScreen]`.
    public var surfaces: [Surface]
    /// Live Activity attributes types that may launch the app from a watch:
    /// `nil` = no watch launch, `[]` = every type, else those types (unique, in order).
    public var liveActivityLaunchTypes: [String]?
    /// The action that receives user activities (freedesktop apps only); `nil` = `Activate`.
    public var userActivityAction: String?
    /// Where the app serves `org.widgethost.Provider1`, if anywhere.
    public var providerPath: String?

    /// The default surfaces: `desktop` and `lock-screen`.
    public static let defaultSurfaces: [Surface] = [.desktop, .lockScreen]

    /// Creates options with every field given.
    public init(
        schemes: [String],
        appProtocol: AppProtocol,
        objectPath: String,
        surfaces: [Surface],
        liveActivityLaunchTypes: [String]?,
        userActivityAction: String?,
        providerPath: String?
    ) {
        self.schemes = schemes
        self.appProtocol = appProtocol
        self.objectPath = objectPath
        self.surfaces = surfaces
        self.liveActivityLaunchTypes = liveActivityLaunchTypes
        self.userActivityAction = userActivityAction
        self.providerPath = providerPath
    }

    /// The default options of `appID`: no schemes, the given protocol, the default
    /// object path (``Validate/busNameElementsPath(appID:)``), the default surfaces,
    /// no watch launch, no user activity action, no provider.
    public init(defaultsFor appID: String, appProtocol: AppProtocol = .widgethost) {
        self.init(
            schemes: [],
            appProtocol: appProtocol,
            objectPath: Validate.busNameElementsPath(appID: appID),
            surfaces: Self.defaultSurfaces,
            liveActivityLaunchTypes: nil,
            userActivityAction: nil,
            providerPath: nil
        )
    }

    /// Parses `RegisterApp`'s `a{sv}` options for `appID` (which is validated too).
    ///
    /// - Unknown keys → `InvalidArgument` listing the known keys.
    /// - A value of the wrong type → `InvalidArgument` naming the key, the expected
    ///   signature and the received one ("option 'schemes' must be an array of strings (as), got s").
    /// - A bad scheme, path, surface, protocol or action name → `InvalidArgument` saying what is allowed.
    /// - `user_activity_action` with protocol `widgethost` → `InvalidArgument`.
    ///
    /// `base` is the app's desktop entry, when it has one: an option left out
    /// keeps the entry's value (the entry is the app's static declaration; a
    /// registration cannot erase it). A `user_activity_action` inherited from
    /// the entry is dropped when the registration picks protocol `widgethost`.
    public static func parse(
        appID: String,
        _ options: [String: OptionValue],
        base: AppOptions? = nil
    ) throws(HostError) -> AppOptions {
        try Validate.appID(appID)
        let options = try RegisterAppOptions(options)
        var result = base ?? AppOptions(defaultsFor: appID)
        if let value = options.protocol {
            result.appProtocol = try parseProtocol(value, label: "option 'protocol'")
            if result.appProtocol != .freedesktop && options.userActivityAction == nil { result.userActivityAction = nil }
        }
        if let value = options.schemes {
            result.schemes = try parseSchemes(value, label: "option 'schemes'")
        }
        if let value = options.objectPath {
            result.objectPath = try parseObjectPath(value, label: "option 'object_path'")
        }
        if let value = options.surfaces {
            result.surfaces = try parseSurfaces(value, label: "option 'surfaces'")
        }
        if let value = options.liveActivityLaunchTypes {
            result.liveActivityLaunchTypes = try parseLaunchTypes(value, label: "option 'live_activity_launch_types'")
        }
        if let action = options.userActivityAction {
            try Validate.actionName(action, what: "option 'user_activity_action'")
            result.userActivityAction = action
        }
        if let value = options.providerPath {
            result.providerPath = try parseObjectPath(value, label: "option 'provider_path'")
        }
        try result.checkProtocolRules(actionLabel: "option 'user_activity_action'")
        return result
    }

    /// The `a{sv}` view used by `ListApps`: `schemes` (as), `protocol` (s),
    /// `object_path` (o), `surfaces` (as), and — only when set —
    /// `live_activity_launch_types` (as), `user_activity_action` (s), `provider_path` (o).
    public func optionValues() -> [String: OptionValue] {
        var out: [String: OptionValue] = [
            "schemes": .strings(schemes),
            "protocol": .string(appProtocol.rawValue),
            "object_path": .objectPath(objectPath),
            "surfaces": .strings(surfaces.map(\.rawValue)),
        ]
        if let liveActivityLaunchTypes { out["live_activity_launch_types"] = .strings(liveActivityLaunchTypes) }
        if let userActivityAction { out["user_activity_action"] = .string(userActivityAction) }
        if let providerPath { out["provider_path"] = .objectPath(providerPath) }
        return out
    }

    /// Whether the app declared `scheme` (compared case-insensitively).
    public func declares(scheme: String) -> Bool {
        schemes.contains(scheme.lowercased())
    }

    // MARK: - Field parsers, shared with desktop-entry discovery

    func checkProtocolRules(actionLabel: String) throws(HostError) {
        if let userActivityAction, appProtocol != .freedesktop {
            throw .invalidArgument("\(actionLabel) ('\(userActivityAction)') applies only to protocol 'freedesktop'; widgethost apps receive user activities through org.widgethost.App1.ContinueUserActivity — drop it or use protocol 'freedesktop'")
        }
    }

    static func parseProtocol(_ s: String, label: String) throws(HostError) -> AppProtocol {
        guard let p = AppProtocol(rawValue: s) else {
            throw .invalidArgument("\(label) is '\(s)', which is not a protocol; use 'widgethost' (the host calls org.widgethost.App1 on your connection) or 'freedesktop' (org.freedesktop.Application)")
        }
        return p
    }

    static func parseSchemes(_ items: [String], label: String) throws(HostError) -> [String] {
        var out: [String] = []
        for item in items {
            let scheme: String
            do throws(HostError) {
                scheme = try Validate.scheme(item)
            } catch {
                throw .invalidArgument("\(label): \(error.message)")
            }
            if !out.contains(scheme) { out.append(scheme) }
        }
        return out
    }

    static func parseObjectPath(_ s: String, label: String) throws(HostError) -> String {
        do throws(HostError) {
            try Validate.objectPath(s)
        } catch {
            throw .invalidArgument("\(label): \(error.message)")
        }
        return s
    }

    static func parseSurfaces(_ items: [String], label: String) throws(HostError) -> [Surface] {
        var set = Set<Surface>()
        for item in items {
            guard let surface = Surface(rawValue: item) else {
                throw .invalidArgument("\(label) contains '\(item)', which is not a surface; the surfaces are \(Surface.allowedList)")
            }
            set.insert(surface)
        }
        return set.sorted()
    }

    static func parseLaunchTypes(_ items: [String], label: String) throws(HostError) -> [String] {
        var out: [String] = []
        for item in items {
            if item.isEmpty {
                throw .invalidArgument("\(label) contains an empty type name; list Live Activity attributes type names, or give an empty list to allow every type")
            }
            if !out.contains(item) { out.append(item) }
        }
        return out
    }
}
