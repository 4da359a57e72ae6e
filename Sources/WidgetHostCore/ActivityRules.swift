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

    /// Resolves a tap on `elementID` (`""`: the background) in `presentation` of
    /// `activity` by ``TapRules``, with that presentation's tree, the activity-level
    /// `widgetURL`, and the watch gate of ``launchesFromWatch(app:attributesType:)``.
    /// An id the tree does not hold is `UnknownElement`. When nothing else applies,
    /// the tap continues the user activity ``userActivityType`` with `user_info`
    /// {`activity_id`, `attributes_type`, `presentation`}.
    ///
    /// Every resolution carries the detail `activity_state` (the activity's
    /// ``ActivityState`` at `now`): an ended activity that has not disappeared yet is
    /// still shown, so taps on it resolve as usual.
    public static func resolve(
        presentation: ActivityPresentation, elementID: String, surface: Surface, activity: LiveActivity, app: AppOptions,
        now: Date
    ) throws(HostError) -> TapResolution {
        guard let tapped = TappedTree(elementID, in: activity.content.root(for: presentation)) else {
            throw .unknownElement(
                "Live Activity \(activity.id) has no element with id '\(elementID)' in its \(presentation.rawValue) presentation; report the id of an element in that presentation's tree, or \"\" for the background")
        }
        let tap = TapTarget(
            surface: surface, capabilities: presentation.capabilities, tapped: tapped,
            activityURL: activity.content.widgetURL, watchLaunches: launchesFromWatch(app: app, attributesType: activity.attributesType),
            app: app)
        var resolution = TapRules.resolve(tap) {
            UserActivity(
                activityType: userActivityType,
                userInfo: [
                    "activity_id": .string(activity.id), "attributes_type": .string(activity.attributesType),
                    "presentation": .string(presentation.rawValue),
                ])
        }
        resolution.details["activity_state"] = .string(activity.activityState(at: now).rawValue)
        return resolution
    }

    /// Whether a tap on a watch may launch `app` for an activity of `attributesType`:
    /// its ``AppOptions/liveActivityLaunchTypes`` is set, and empty (every type) or
    /// naming `attributesType`.
    public static func launchesFromWatch(app: AppOptions, attributesType: String) -> Bool {
        guard let types = app.liveActivityLaunchTypes else { return false }
        return types.isEmpty || types.contains(attributesType)
    }
}
