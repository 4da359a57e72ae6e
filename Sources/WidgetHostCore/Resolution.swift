/// Widget families (docs/names.md).
public enum WidgetFamily: String, Sendable, CaseIterable {
    case systemSmall, systemMedium, systemLarge, systemExtraLarge
    case accessoryCircular, accessoryRectangular, accessoryInline, accessoryCorner

    /// Families where `button` and `toggle` run their action (rule 1).
    public var allowsInteractiveControls: Bool {
        switch self {
        case .systemSmall, .systemMedium, .systemLarge, .systemExtraLarge, .accessoryCircular, .accessoryRectangular: return true
        case .accessoryInline, .accessoryCorner: return false
        }
    }

    /// Families where `link` elements open their URL (rule 2) under `policy`.
    public func supportsLinks(_ policy: LinkPolicy) -> Bool {
        switch policy {
        case .current: return [.systemSmall, .systemMedium, .systemLarge, .systemExtraLarge, .accessoryRectangular].contains(self)
        case .legacy: return [.systemMedium, .systemLarge, .systemExtraLarge].contains(self)
        }
    }

    public static func parse(_ s: String) throws(HostError) -> WidgetFamily {
        guard let family = WidgetFamily(rawValue: s) else {
            throw .invalidArgument(
                "'\(Validate.prefix(s))' is not a widget family; use one of \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return family
    }
}

/// Which families honour `link` elements (the daemon's `--link-policy`).
public enum LinkPolicy: String, Sendable, CaseIterable { case current, legacy }

/// What a tap means (docs/widgets.md).
public enum TapOutcome: Sendable, Equatable {
    case openURL(url: String, via: String)
    case continueUserActivity(activityType: String, userInfo: [String: OptionValue])
    case performAction(action: String, parameter: JSONValue?)
    case none(reason: String)

    /// The outcome's name on the bus.
    public var name: String {
        switch self {
        case .openURL: return "open-url"
        case .continueUserActivity: return "continue-user-activity"
        case .performAction: return "perform-action"
        case .none: return "none"
        }
    }
}

/// A resolved tap: its outcome, the diagnostics found on the way, and any
/// further details the outcome carries.
public struct TapResolution: Sendable, Equatable {
    public var outcome: TapOutcome
    public var diagnostics: [String]
    /// Further `details` keys of the tap's reply, beyond those the outcome and the
    /// diagnostics give (for example `offer_primary` when a watch may not launch the app).
    public var details: [String: OptionValue]

    public init(outcome: TapOutcome, diagnostics: [String] = [], details: [String: OptionValue] = [:]) {
        self.outcome = outcome
        self.diagnostics = diagnostics
        self.details = details
    }
}

/// What the rules need to know about a placed widget.
public struct WidgetTapContext: Sendable {
    public var widgetID: String
    public var kind: String
    public var family: WidgetFamily
    public var configuration: [String: OptionValue]
    /// The configuration intent's name, when the kind is configurable.
    public var intent: String?
    public var content: ViewTree?
    public var app: AppOptions

    public init(
        widgetID: String, kind: String, family: WidgetFamily, configuration: [String: OptionValue] = [:], intent: String? = nil,
        content: ViewTree?, app: AppOptions
    ) {
        self.widgetID = widgetID
        self.kind = kind
        self.family = family
        self.configuration = configuration
        self.intent = intent
        self.content = content
        self.app = app
    }
}

/// The widget resolution rules (docs/widgets.md#resolution-rules), in the table's order.
public enum WidgetTapRules {
    public static func resolve(
        elementID: String, surface: Surface, policy: LinkPolicy, _ widget: WidgetTapContext
    ) throws(HostError) -> TapResolution {
        // Hit-testing: the reported element and everything above it, innermost first.
        var chain: [ViewElement] = []
        if !elementID.isEmpty {
            guard let path = widget.content?.path(to: elementID) else {
                throw .unknownElement(
                    "widget \(widget.widgetID) has no element with id '\(elementID)'; report the id of an element in its Content, or \"\" for the background")
            }
            chain = path.reversed()
        }
        var diagnostics: [String] = []

        // Car: only an app that supports car is launched or sent an action.
        if surface == .car && !widget.app.surfaces.contains(.car) {
            return TapResolution(outcome: .none(reason: "app-does-not-support-car"), diagnostics: diagnostics)
        }
        // 1. Inside a control, in a family that allows interactive controls.
        if widget.family.allowsInteractiveControls, let control = chain.first(where: \.isControl), let action = control.action {
            return TapResolution(outcome: .performAction(action: action, parameter: control.actionParameter), diagnostics: diagnostics)
        }
        // 2. Inside a link, in a family that supports links.
        if widget.family.supportsLinks(policy), let link = chain.first(where: \.isLink), let url = link.url {
            noteScheme(url, widget.app, &diagnostics)
            return TapResolution(outcome: .openURL(url: url, via: "link"), diagnostics: diagnostics)
        }
        // 3. The tree's widgetURL; the first in pre-order wins.
        let urls = widget.content?.widgetURLs ?? []
        if let url = urls.first {
            if urls.count > 1 { diagnostics.append("multiple-widget-urls") }
            noteScheme(url, widget.app, &diagnostics)
            return TapResolution(outcome: .openURL(url: url, via: "widget-url"), diagnostics: diagnostics)
        }
        // 4. Continue the user activity of the widget's kind.
        var userInfo: [String: OptionValue] = [
            "kind": .string(widget.kind), "family": .string(widget.family.rawValue), "widget_id": .string(widget.widgetID),
        ]
        if let intent = widget.intent {
            var configuration = widget.configuration
            configuration["intent"] = .string(intent)
            userInfo["configuration"] = .dict(configuration)
        }
        return TapResolution(
            outcome: .continueUserActivity(activityType: widget.kind, userInfo: userInfo), diagnostics: diagnostics)
    }

    static func noteScheme(_ url: String, _ app: AppOptions, _ diagnostics: inout [String]) {
        if let scheme = URLParts.scheme(of: url), !app.schemes.contains(scheme) {
            diagnostics.append("undeclared-scheme")
        }
    }
}
