#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// The resolution rules (docs/widgets.md#resolution-rules): one ordered table for
// widgets and Live Activities, over what the tapped family or presentation honours.
// `Tap` and `Resolve` apply it through ``TapRules/resolve(_:)``; the lint reads the
// same rules to say what a tree holds that a tap would never reach.

/// What a widget family (under a link policy) or a Live Activity presentation honours.
public struct TapCapabilities: Sendable, Equatable {
    /// `button` and `toggle` run their action (rule `control`).
    public var controls: Bool
    /// `link` elements open their URL (rule `link`).
    public var links: Bool

    public init(controls: Bool, links: Bool) {
        self.controls = controls
        self.links = links
    }
}

/// How a tap came to open a URL: the `via` detail of `open-url`.
public enum TapVia: String, Sendable, CaseIterable {
    /// The innermost tapped `link`.
    case link
    /// The tapped tree's first `widgetURL`.
    case widgetURL = "widget-url"
    /// A Live Activity's activity-level `widgetURL`.
    case activityURL = "default"
    /// `Apps.OpenURL`, not a tap.
    case openURL = "open-url"
}

/// Why a tap delivers nothing: the `reason` detail of `none`.
public enum NoTapReason: String, Sendable, CaseIterable {
    case appDoesNotSupportCar = "app-does-not-support-car"
    case watchLaunchNotSupported = "watch-launch-not-supported"
}

/// What the rules noticed on the way: the `diagnostics` detail.
public enum TapDiagnostic: String, Sendable, CaseIterable {
    /// More than one element carries `widgetURL`; the first in pre-order was used.
    case multipleWidgetURLs = "multiple-widget-urls"
    /// The URL's scheme is not among the app's declared `schemes`.
    case undeclaredScheme = "undeclared-scheme"
}

/// What a tap means (docs/widgets.md).
public enum TapOutcome: Sendable, Equatable {
    case openURL(url: String, via: TapVia)
    case continueUserActivity(activityType: String, userInfo: [String: OptionValue])
    /// `toggleIsOn`: a toggle's new state, nil for a button (docs/delivery.md#platform-data-and-context).
    case performAction(action: String, parameter: JSONValue?, toggleIsOn: Bool? = nil)
    case none(reason: NoTapReason)

    /// The outcomes' names on the bus.
    public enum Name: String, Sendable, CaseIterable {
        case openURL = "open-url"
        case continueUserActivity = "continue-user-activity"
        case performAction = "perform-action"
        case none
    }

    public var name: Name {
        switch self {
        case .openURL: .openURL
        case .continueUserActivity: .continueUserActivity
        case .performAction: .performAction
        case .none: .none
        }
    }

    /// The URL the outcome opens, if it opens one.
    public var url: String? {
        if case .openURL(let url, _) = self { url } else { nil }
    }
}

/// A resolved tap: its outcome, the diagnostics found on the way, and any
/// further details the outcome carries.
public struct TapResolution: Sendable, Equatable {
    public var outcome: TapOutcome
    public var diagnostics: [TapDiagnostic]
    /// Further `details` keys of the tap's reply, beyond those the outcome and the
    /// diagnostics give (for example `offer_primary` when a watch may not launch the app).
    public var details: [String: OptionValue]

    public init(outcome: TapOutcome, diagnostics: [TapDiagnostic] = [], details: [String: OptionValue] = [:]) {
        self.outcome = outcome
        self.diagnostics = diagnostics
        self.details = details
    }
}

/// What the rules read of a tapped tree: the innermost control and link
/// around the tapped element, and the tree's `widgetURL`s. A widget's is
/// derived once, when its content is stored (``TapIndex``); a Live Activity's
/// from its tree's elements (``init(_:in:)``).
public struct TappedTree: Sendable, Equatable {
    /// What a tapped `button` or `toggle` runs.
    public struct Control: Sendable, Equatable {
        public var action: String
        /// What it sends with its action: its `parameter`, as the tree gives it.
        public var parameter: JSONValue?
        /// What a toggle turns to (``ViewElement/isOnAfterTap``); nil for a button.
        public var isOnAfterTap: Bool?

        public init(action: String, parameter: JSONValue?, isOnAfterTap: Bool? = nil) {
            self.action = action
            self.parameter = parameter
            self.isOnAfterTap = isOnAfterTap
        }
    }

    /// The innermost control that is or contains the tapped element (rule `control`).
    public var control: Control?
    /// The URL of the innermost `link` that is or contains the tapped element (rule `link`).
    public var linkURL: String?
    /// The tree's first `widgetURL` in depth-first pre-order (rule `widgetURL`).
    public var widgetURL: String?
    /// Whether the tree holds more than one `widgetURL`.
    public var multipleWidgetURLs = false

    public init(control: Control? = nil, linkURL: String? = nil, widgetURL: String? = nil, multipleWidgetURLs: Bool = false) {
        self.control = control
        self.linkURL = linkURL
        self.widgetURL = widgetURL
        self.multipleWidgetURLs = multipleWidgetURLs
    }

    /// What a tap on `elementID` reads of the tree under `root` (`""`: the
    /// background, nothing tapped); nil when the tree has no element `elementID`.
    public init?(_ elementID: String, in root: ViewElement?) {
        var chain: [ViewElement] = []
        if !elementID.isEmpty {
            guard let path = root?.path(to: elementID) else { return nil }
            chain = path
        }
        // The path runs from the root down: the innermost is the last.
        self.init(
            control: chain.last(where: \.isControl).map(Control.init), linkURL: chain.last(where: \.isLink).map { $0.url ?? "" })
        if let urls = root?.widgetURLs {
            widgetURL = urls.first
            multipleWidgetURLs = urls.count > 1
        }
    }
}

extension TappedTree.Control {
    /// What tapping `control` (a `button` or `toggle`) runs.
    init(_ control: ViewElement) { self.init(action: control.action ?? "", parameter: control.parameter, isOnAfterTap: control.isOnAfterTap) }
}

/// A hit-tested tap: everything the rules read.
public struct TapTarget: Sendable {
    public var surface: Surface
    public var capabilities: TapCapabilities
    /// What the rules read of the tapped tree; empty for a tree that has no content.
    public var tapped: TappedTree
    /// A Live Activity's activity-level `widgetURL`; never set for a widget.
    public var activityURL: String?
    /// Whether a tap on a watch may launch the app; `nil` where the watch is no gate (widgets).
    public var watchLaunches: Bool?
    /// The app's surfaces and declared schemes.
    public var app: AppOptions

    public init(
        surface: Surface, capabilities: TapCapabilities, tapped: TappedTree, activityURL: String? = nil, watchLaunches: Bool? = nil,
        app: AppOptions
    ) {
        self.surface = surface
        self.capabilities = capabilities
        self.tapped = tapped
        self.activityURL = activityURL
        self.watchLaunches = watchLaunches
        self.app = app
    }
}

/// The resolution rules, in the table's order: the first that applies wins.
public enum TapRule: String, Sendable, CaseIterable {
    /// Surface `car`, and the app's surfaces lack `car`: `none`.
    case car
    /// Surface `watch`, and the app does not let a watch launch it (Live Activities): `none`, `offer_primary`.
    case watch
    /// Inside a `button`/`toggle`, where controls are interactive: `perform-action`.
    case control
    /// Inside a `link`, where links are honoured: `open-url`, `via=link`.
    case link
    /// The tapped tree's first `widgetURL`: `open-url`, `via=widget-url`.
    case widgetURL
    /// A Live Activity's activity-level `widgetURL`: `open-url`, `via=default`.
    case activityURL
    /// Otherwise: `continue-user-activity`.
    case userActivity

    /// Whether the rule takes a tap on `element` (an element rule): the lint's question.
    func takes(_ element: ViewElement) -> Bool {
        switch self {
        case .control: element.isControl
        case .link: element.isLink
        default: false
        }
    }

    /// For the element rules: whether the family or presentation honours them.
    public func isHonoured(by capabilities: TapCapabilities) -> Bool {
        switch self {
        case .control: capabilities.controls
        case .link: capabilities.links
        default: true
        }
    }

    /// The rules that take a tap on an element of `element`'s type.
    public static func rules(takingTapsOn element: ViewElement) -> [TapRule] {
        allCases.filter { $0.takes(element) }
    }

    /// The rule's outcome for `tap`, or `nil` when it does not apply, adding to
    /// `diagnostics` what it notices; `userActivity` is asked only by the last rule.
    func outcome(for tap: TapTarget, userActivity: () -> UserActivity, diagnostics: inout [TapDiagnostic]) -> TapOutcome? {
        switch self {
        case .car:
            tap.surface == .car && !tap.app.surfaces.contains(.car) ? .none(reason: .appDoesNotSupportCar) : nil
        case .watch:
            tap.surface == .watch && tap.watchLaunches == false ? .none(reason: .watchLaunchNotSupported) : nil
        case .control:
            isHonoured(by: tap.capabilities)
                ? tap.tapped.control.map { .performAction(action: $0.action, parameter: $0.parameter, toggleIsOn: $0.isOnAfterTap) } : nil
        case .link:
            isHonoured(by: tap.capabilities) ? tap.tapped.linkURL.map { .openURL(url: $0, via: .link) } : nil
        case .widgetURL:
            // The first in depth-first pre-order wins.
            tap.tapped.widgetURL.map { url in
                if tap.tapped.multipleWidgetURLs { diagnostics.append(.multipleWidgetURLs) }
                return .openURL(url: url, via: .widgetURL)
            }
        case .activityURL:
            tap.activityURL.map { .openURL(url: $0, via: .activityURL) }
        case .userActivity:
            userActivity().outcome
        }
    }
}

/// The user activity a tap continues when no other rule applies.
public struct UserActivity: Sendable, Equatable {
    public var activityType: String
    public var userInfo: [String: OptionValue]

    public init(activityType: String, userInfo: [String: OptionValue]) {
        self.activityType = activityType
        self.userInfo = userInfo
    }

    var outcome: TapOutcome { .continueUserActivity(activityType: activityType, userInfo: userInfo) }
}

public enum TapRules {
    /// Applies the rules to `tap` in order; the first that applies gives the
    /// outcome. `userActivity` is built only when the last rule is reached.
    ///
    /// Diagnostics: `multiple-widget-urls` when the tree's `widgetURL` was used and
    /// the tree holds more than one; `undeclared-scheme` when the opened URL's scheme
    /// is not among the app's `schemes` (the URL still goes to the app). A watch the
    /// app may not be launched from adds the detail `offer_primary`.
    public static func resolve(_ tap: TapTarget, userActivity: () -> UserActivity) -> TapResolution {
        var outcome: TapOutcome?
        var diagnostics: [TapDiagnostic] = []
        for rule in TapRule.allCases {
            outcome = rule.outcome(for: tap, userActivity: userActivity, diagnostics: &diagnostics)
            if outcome != nil { break }
        }
        // The last rule, userActivity, always applies.
        var resolution = TapResolution(outcome: outcome ?? userActivity().outcome, diagnostics: diagnostics)
        switch resolution.outcome {
        case .openURL(let url, _):
            if !declares(url, tap.app.schemes) { resolution.diagnostics.append(.undeclaredScheme) }
        case .none(.watchLaunchNotSupported):
            resolution.details["offer_primary"] = .bool(true)
        default:
            break
        }
        return resolution
    }

    /// Whether `url` has no scheme or one of `schemes`.
    public static func declares(_ url: String, _ schemes: [String]) -> Bool {
        URLParts.scheme(of: url).map(schemes.contains) ?? true
    }
}
