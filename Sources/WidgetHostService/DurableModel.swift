import FoundationEssentials
import WidgetHostCore

/// The stores whose objects outlive a run of the host — the apps' bundles and
/// placed widgets, Live Activities, timelines — as ``Storage`` sees them: what
/// start-up restores, what a snapshot writes, and what a write the disk
/// refused puts back.
final class DurableModel {
    private let widgets: Widgets
    private let activities: Activities
    private let timelines: Timelines

    init(widgets: Widgets, activities: Activities, timelines: Timelines) {
        self.widgets = widgets
        self.activities = activities
        self.timelines = timelines
    }

    /// Puts back what the state directory held: bundles, widgets (same ids and
    /// paths), Live Activities and timelines, each charged as stored. What
    /// cannot be put back is logged and skipped. Returns how many widgets and
    /// timelines it put back.
    func restore(_ durable: DurableState) throws -> (widgets: Int, timelines: Int) {
        try widgets.restore(durable)
        activities.restore(durable)
        timelines.restore(durable.timelines)
        // What was stored is served even when it passes budgets lowered since.
        for id in widgets.ids { widgets.charge(id, entries: timelines.entries(of: id)) }
        for id in durable.activities.keys { activities.charge(id) }
        return (widgets.ids.count, timelines.trackedCount)
    }

    /// The durable state as the model holds it now: what a snapshot writes.
    func image() -> DurableState {
        var image = DurableState()
        widgets.store(into: &image)
        activities.store(into: &image)
        timelines.store(into: &image)
        return image
    }

    /// Puts one object back as it was, and tells renderers.
    func putBack(_ prior: DurableChange.Prior) {
        switch prior {
        case .bundle(let appID, let old):
            widgets.putBackBundle(appID, old)
        case .widget(let id, let old):
            switch widgets.putBack(id, old, entries: timelines.entries(of: id)) {
            case .placed?: timelines.placed(id)
            case .gone?: timelines.gone(id)
            case nil: break
            }
        case .activity(let id, let old):
            activities.putBack(id, old)
        }
    }

    /// After the objects of refused writes were put back: a new order is
    /// announced and the activities' timer armed again.
    func putBackEnded() {
        activities.changed()
    }
}
