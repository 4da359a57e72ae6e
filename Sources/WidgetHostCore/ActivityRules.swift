#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The resolution rules for taps on Live Activities (docs/live-activities.md), which reuse the
/// widget rules (docs/widgets.md#resolution-rules) where ActivityKit behaves like WidgetKit.
public enum ActivityTapRules {
    /// The `activity_type` of the user activity a tap continues when it opens no URL.
    public static let userActivityType = "org.widgethost.LiveActivity"

    /// Resolves a tap on `presentation` of `activity`.
    ///
    /// `elementID` is the id of the innermost element with an id under the pointer in
    /// that presentation's tree, or `""` for the background; an id the tree does not
    /// hold is `UnknownElement`. The tap is then resolved from that element up to the
    /// root, in this order:
    ///
    /// 1. Surface `car`: an app whose surfaces lack `car` gets
    ///    `none`, `reason=app-does-not-support-car`.
    /// 2. Surface `watch`: the app is launched only when its
    ///    ``AppOptions/liveActivityLaunchTypes`` is set and is empty or names the
    ///    activity's attributes type; otherwise `none`,
    ///    `reason=watch-launch-not-supported`, with the detail `offer_primary`=true (the
    ///    renderer may offer to continue on the primary device).
    /// 3. Inside a `button` or `toggle`, in `lockScreen` or `expanded` (where ActivityKit
    ///    allows interactive controls): `perform-action` with the control's action and
    ///    parameter. As ActivityKit does; it follows
    ///    ActivityKit's interactive Live Activities and the widget rule 1. Elsewhere
    ///    a control is no more than its area.
    /// 4. Inside a `link`, only in `expanded`: `open-url`, `via=link`.
    /// 5. The presentation tree's `widgetURL` (the first in depth-first pre-order; more
    ///    than one adds the diagnostic `multiple-widget-urls`): `open-url`, `via=widget-url`.
    /// 6. The activity-level `widgetURL`: `open-url`, `via=default` (the tap details' name for a URL the tree does not carry).
    /// 7. `continue-user-activity` with `activity_type` ``userActivityType`` and
    ///    `user_info` {`activity_id`, `attributes_type`, `presentation`}.
    ///
    /// A URL whose scheme the app did not declare adds the diagnostic `undeclared-scheme`;
    /// it still goes to the activity's app. Every resolution carries the detail
    /// `activity_state` (the activity's ``ActivityState`` at `now`): an ended activity
    /// that has not disappeared yet is still shown, so taps on it resolve as usual.
    public static func resolve(
        presentation: ActivityPresentation, elementID: String, surface: Surface, activity: LiveActivity, app: AppOptions,
        now: Date
    ) throws(HostError) -> TapResolution {
        let tree = activity.content.tree(for: presentation)
        // Hit-testing: the reported element and everything above it, innermost first.
        var chain: [ViewElement] = []
        if !elementID.isEmpty {
            guard let path = tree.path(to: elementID) else {
                throw .unknownElement(
                    "Live Activity \(activity.id) has no element with id '\(elementID)' in its \(presentation.rawValue) presentation; report the id of an element in that presentation's tree, or \"\" for the background")
            }
            chain = path.reversed()
        }
        var diagnostics: [String] = []
        var details: [String: OptionValue] = ["activity_state": .string(activity.activityState(at: now).rawValue)]
        func result(_ outcome: TapOutcome) -> TapResolution {
            TapResolution(outcome: outcome, diagnostics: diagnostics, details: details)
        }

        // Car: only an app that supports car is launched or sent an action.
        if surface == .car && !app.surfaces.contains(.car) {
            return result(.none(reason: "app-does-not-support-car"))
        }
        // Watch: only for attributes types the app lets a watch launch it for.
        if surface == .watch && !launchesFromWatch(app: app, attributesType: activity.attributesType) {
            details["offer_primary"] = .bool(true)
            return result(.none(reason: "watch-launch-not-supported"))
        }
        // Controls, where ActivityKit makes them interactive.
        if presentation.allowsInteractiveControls, let control = chain.first(where: \.isControl), let action = control.action {
            return result(.performAction(action: action, parameter: control.actionParameter))
        }
        // Links, in the expanded presentation only.
        if presentation.supportsLinks, let link = chain.first(where: \.isLink), let url = link.url {
            WidgetTapRules.noteScheme(url, app, &diagnostics)
            return result(.openURL(url: url, via: "link"))
        }
        // The presentation's widgetURL; the first in pre-order wins.
        let urls = tree.widgetURLs
        if let url = urls.first {
            if urls.count > 1 { diagnostics.append("multiple-widget-urls") }
            WidgetTapRules.noteScheme(url, app, &diagnostics)
            return result(.openURL(url: url, via: "widget-url"))
        }
        // The activity's widgetURL.
        if let url = activity.content.widgetURL {
            WidgetTapRules.noteScheme(url, app, &diagnostics)
            return result(.openURL(url: url, via: "default"))
        }
        // Continue the activity's user activity.
        return result(
            .continueUserActivity(
                activityType: userActivityType,
                userInfo: [
                    "activity_id": .string(activity.id), "attributes_type": .string(activity.attributesType),
                    "presentation": .string(presentation.rawValue),
                ]))
    }

    /// Whether a tap on a watch may launch `app` for an activity of `attributesType`:
    /// its ``AppOptions/liveActivityLaunchTypes`` is set, and empty (every type) or
    /// naming `attributesType`.
    public static func launchesFromWatch(app: AppOptions, attributesType: String) -> Bool {
        guard let types = app.liveActivityLaunchTypes else { return false }
        return types.isEmpty || types.contains(attributesType)
    }
}
