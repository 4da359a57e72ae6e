import DBus
import FoundationEssentials
import WidgetHostCore

/// The budgets on what the host holds (the model's `Footprint`), measured as
/// it travels on the bus. Every change that makes an object larger is checked
/// before it is stored; every change is charged after it is made.
final class Budgets: Store {
    private var footprint: Footprint

    init(_ budgets: Footprint.Budgets) {
        footprint = Footprint(budgets: budgets)
    }

    /// Charges are an app's: its widgets and activities outlive its connection.
    func connectionLeft(_ connection: String) {}

    /// Checks that `widget` (a new one, or a change to one) fits the budgets
    /// with `entries` as its timeline; changes nothing. Returns its bytes, to
    /// ``charge(_:appID:bytes:)`` once the change is made.
    func check(_ widget: PlacedWidget, entries: [TimelineEntry]) throws(HostError) -> Int {
        let bytes = Self.bytes(of: widget, entries: entries)
        try footprint.check(widget.id, appID: widget.appID, bytes: bytes)
        return bytes
    }

    /// Checks that `activity` (a new one, or a change to one) fits the budgets;
    /// changes nothing. Returns its bytes, to charge once the change is made.
    func check(_ activity: LiveActivity, at now: Date) throws(HostError) -> Int {
        let bytes = Self.bytes(of: activity, at: now)
        try footprint.check(activity.id, appID: activity.appID, bytes: bytes)
        return bytes
    }

    /// Charges what a check measured, once the change is made.
    func charge(_ id: String, appID: String, bytes: Int) {
        footprint.set(id, appID: appID, bytes: bytes)
    }

    /// Charges a widget as it is now (restoring, putting back).
    func charge(_ widget: PlacedWidget, entries: [TimelineEntry]) {
        footprint.set(widget.id, appID: widget.appID, bytes: Self.bytes(of: widget, entries: entries))
    }

    /// Charges a Live Activity as it is now.
    func charge(_ activity: LiveActivity, at now: Date) {
        footprint.set(activity.id, appID: activity.appID, bytes: Self.bytes(of: activity, at: now))
    }

    /// Takes the charge of an object that is gone off.
    func release(_ id: String) {
        footprint.release(id)
    }

    func reserveCapacity(_ count: Int) {
        footprint.reserveCapacity(count)
    }

    /// What a widget takes on the bus: its object as `GetManagedObjects` lists
    /// it, showing the largest of its content and its timeline's entries (so
    /// an entry that comes due never needs a check), and its timeline as
    /// `DescribeTimeline` lists it.
    static func bytes(of widget: PlacedWidget, entries: [TimelineEntry]) -> Int {
        var shown = widget.content
        if let largest = entries.max(by: { $0.content.json.utf8.count < $1.content.json.utf8.count }),
            largest.content.json.utf8.count > shown?.json.utf8.count ?? 0
        {
            shown = largest.content
        }
        let properties = Host1Widget.Properties(widget, showing: shown).values
        let timeline = DBusValue.array(element: "(xs)", entries.map { .structure([.int64($0.unixMs), .string($0.content.json)]) })
        return objectBytes(
            Host1Widget.objectPath(widget.id), Host1Widget.description, properties, also: entries.isEmpty ? [] : [timeline])
    }

    /// What a Live Activity takes on the bus: its object as `GetManagedObjects`
    /// lists it, and its path in `Order`.
    static func bytes(of activity: LiveActivity, at now: Date) -> Int {
        let path = Host1LiveActivity.objectPath(activity.id)
        let properties = Host1LiveActivity.Properties(activity, at: now).values
        return objectBytes(path, Host1LiveActivity.description, properties, also: [.objectPath(path)])
    }

    /// An object's entry in `GetManagedObjects` (a one-entry dictionary: its
    /// 8 bytes of length and padding cover the padding before the entry in a
    /// longer one), plus `also`.
    static func objectBytes(_ path: String, _ interface: InterfaceDescription, _ values: [DBusValue], also: [DBusValue]) -> Int {
        // Over D-Bus's limits: more than any budget allows.
        (try? interface.managedObjectSize(path: path, values: values, also: also)) ?? MessageLimits.maxMessageBytes
    }
}
