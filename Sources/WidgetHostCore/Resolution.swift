/// Widget families (docs/names.md).
public enum WidgetFamily: String, Sendable, CaseIterable {
    case systemSmall, systemMedium, systemLarge, systemExtraLarge
    case accessoryCircular, accessoryRectangular, accessoryInline, accessoryCorner

    /// What a tap on this family honours under `policy` (docs/widgets.md#resolution-rules).
    public func capabilities(_ policy: LinkPolicy) -> TapCapabilities {
        let controls: Bool
        switch self {
        case .systemSmall, .systemMedium, .systemLarge, .systemExtraLarge, .accessoryCircular, .accessoryRectangular: controls = true
        case .accessoryInline, .accessoryCorner: controls = false
        }
        let links: Bool
        switch policy {
        case .current: links = [.systemSmall, .systemMedium, .systemLarge, .systemExtraLarge, .accessoryRectangular].contains(self)
        case .legacy: links = [.systemMedium, .systemLarge, .systemExtraLarge].contains(self)
        }
        return TapCapabilities(controls: controls, links: links)
    }

    /// Families where `button` and `toggle` run their action (rule `control`).
    public var allowsInteractiveControls: Bool { capabilities(.current).controls }

    /// Families where `link` elements open their URL (rule `link`) under `policy`.
    public func supportsLinks(_ policy: LinkPolicy) -> Bool { capabilities(policy).links }

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

/// What the rules need to know about a placed widget.
public struct WidgetTapContext: Sendable {
    /// The widget, which holds what a tap reads of its content (``PlacedWidget/tapped(_:)``).
    private let widget: PlacedWidget
    public var widgetID: String { widget.id }
    public var kind: String { widget.kind }
    public var family: WidgetFamily { widget.family }
    /// The configuration intent's name, when the kind is configurable.
    public var intent: String?
    public var app: AppOptions

    public init(
        widgetID: String, kind: String, family: WidgetFamily, configuration: [String: OptionValue] = [:], intent: String? = nil,
        content: ViewTree?, app: AppOptions
    ) {
        self.init(
            PlacedWidget(id: widgetID, appID: "", kind: kind, family: family, configuration: configuration, content: content),
            intent: intent, app: app)
    }

    init(_ widget: PlacedWidget, intent: String?, app: AppOptions) {
        self.widget = widget
        self.intent = intent
        self.app = app
    }

    /// The configuration, unpacked: only a configurable kind's tap reads it.
    public var configuration: [String: OptionValue] { widget.configuration }

    /// What a tap on `elementID` reads of the content (``PlacedWidget/tapped(_:)``).
    func tapped(_ elementID: String) -> TappedTree? { widget.tapped(elementID) }
}

/// The resolution rules (``TapRules``) for a tap on a placed widget.
public enum WidgetTapRules {
    /// Resolves a tap on `elementID` of `widget` (`""`: the background); an id the
    /// widget's tree does not hold is `UnknownElement`.
    public static func resolve(
        elementID: String, surface: Surface, policy: LinkPolicy, _ widget: WidgetTapContext
    ) throws(HostError) -> TapResolution {
        guard let tapped = widget.tapped(elementID) else {
            throw .unknownElement(
                "widget \(widget.widgetID) has no element with id '\(elementID)'; report the id of an element in its Content, or \"\" for the background")
        }
        let tap = TapTarget(surface: surface, capabilities: widget.family.capabilities(policy), tapped: tapped, app: widget.app)
        // The closure takes the few fields it reads, not the whole context:
        // capturing the context copied it, a retain and a release of each of
        // its references, on every tap.
        // The configuration is unpacked only when the outcome is the user
        // activity of a configurable kind, not for every tap on one.
        let (kind, family, widgetID, intent) = (widget.kind, widget.family, widget.widgetID, widget.intent)
        return TapRules.resolve(tap) {
            var userInfo: [String: OptionValue] = ["kind": .string(kind), "family": .string(family.rawValue), "widget_id": .string(widgetID)]
            if let intent {
                var configuration = widget.configuration
                configuration["intent"] = .string(intent)
                userInfo["configuration"] = .dict(configuration)
            }
            return UserActivity(activityType: kind, userInfo: userInfo)
        }
    }
}
