#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
@testable import WidgetHostCore

extension Fuzzer {
    /// What the host promises of a state it read from its state directory:
    /// the snapshot it writes of it reads back the same, and the model is
    /// rebuilt from it as at start-up (`HostService.openState`).
    public static func checkRead(_ state: DurableState) {
        let snapshot: [UInt8]
        do { snapshot = try StateFile.snapshot(state) } catch {
            return expect(false, "a state read back cannot be written as a snapshot: \(error)")
        }
        expect(StateFile.readSnapshot(snapshot).0 == state, "the snapshot of a state read back does not read back the same")

        var widgets = WidgetStore()
        for (appID, json) in state.bundles { try? widgets.restoreBundle(appID: appID, json: json) }
        for stored in state.widgets.values { try? widgets.restore(stored, nextNumber: state.nextWidgetNumber) }
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        var activities = LiveActivityStore()
        for stored in state.activities.values { try? activities.restore(stored, nextNumber: state.nextActivityNumber, now: now) }
        _ = activities.ordered(now: now)
        var timelines = TimelineEngine()
        for stored in state.timelines.values where widgets.widgets[stored.widgetID] != nil {
            guard let timeline = try? stored.timeline() else { continue }
            _ = timelines.restore(widgetID: stored.widgetID, timeline: timeline, receivedAt: UnixTime.date(stored.receivedAt))
        }
        _ = timelines.advance(to: now)
    }
}
