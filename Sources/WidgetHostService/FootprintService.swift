import DBus
import FoundationEssentials
import WidgetHostCore

/// The budgets on what the host holds (the model's `Footprint`), measured as
/// it travels on the bus. Every change that makes an object larger is checked
/// before it is stored; every change is charged after it is made.
extension HostService {
    /// What a widget takes on the bus: its object as `GetManagedObjects` lists
    /// it, showing the largest of its content and its timeline's entries (so
    /// an entry that comes due never needs a check), and its timeline as
    /// `DescribeTimeline` lists it.
    func widgetBytes(_ widget: PlacedWidget, entries: [TimelineEntry]) -> Int {
        var shown = widget
        if let largest = entries.max(by: { $0.content.json.utf8.count < $1.content.json.utf8.count }),
            largest.content.json.utf8.count > widget.content?.json.utf8.count ?? 0
        {
            shown.content = largest.content
        }
        let properties = Self.widgetProperties(shown).values
        let timeline = DBusValue.array(element: "(xs)", entries.map { .structure([.int64($0.unixMs), .string($0.content.json)]) })
        return Self.objectBytes(
            Host1Widget.objectPath(widget.id), Host1Widget.description, properties, also: entries.isEmpty ? [] : [timeline])
    }

    /// What a Live Activity takes on the bus: its object as `GetManagedObjects`
    /// lists it, and its path in `Order`.
    func activityBytes(_ activity: LiveActivity) -> Int {
        let now = self.now
        let path = Host1LiveActivity.objectPath(activity.id)
        let properties = Self.activityProperties(activity, at: now).values
        return Self.objectBytes(path, Host1LiveActivity.description, properties, also: [.objectPath(path)])
    }

    /// An object's entry in `GetManagedObjects` (a one-entry dictionary: its
    /// 8 bytes of length and padding cover the padding before the entry in a
    /// longer one), plus `also`.
    nonisolated static func objectBytes(
        _ path: String, _ interface: InterfaceDescription, _ values: [DBusValue], also: [DBusValue]
    ) -> Int {
        // Over D-Bus's limits: more than any budget allows.
        (try? interface.managedObjectSize(path: path, values: values, also: also)) ?? MessageLimits.maxMessageBytes
    }

    /// Checks that `widget` (a new one, or a change to one) fits the budgets
    /// with `entries` as its timeline (default: the one it has); changes
    /// nothing. Returns its bytes, to charge once the change is made.
    func checkFootprint(of widget: PlacedWidget, entries: [TimelineEntry]? = nil) throws(HostError) -> Int {
        let bytes = widgetBytes(widget, entries: entries ?? timelines.entries(of: widget.id))
        try footprint.check(widget.id, appID: widget.appID, bytes: bytes)
        return bytes
    }

    /// Checks that `activity` (a new one, or a change to one) fits the budgets;
    /// changes nothing. Returns its bytes, to charge once the change is made.
    func checkFootprint(of activity: LiveActivity) throws(HostError) -> Int {
        let bytes = activityBytes(activity)
        try footprint.check(activity.id, appID: activity.appID, bytes: bytes)
        return bytes
    }

    /// Charges widget `id` as it is now (restoring), or takes its charge off when it is gone.
    func chargeWidget(_ id: String) {
        guard let widget = widgets.widgets[id] else { return footprint.release(id) }
        footprint.set(id, appID: widget.appID, bytes: widgetBytes(widget, entries: timelines.entries(of: id)))
    }

    /// Charges Live Activity `id` as it is now, or takes its charge off when it is gone.
    func chargeActivity(_ id: String) {
        guard let activity = activities.activity(id) else { return footprint.release(id) }
        footprint.set(id, appID: activity.appID, bytes: activityBytes(activity))
    }
}
