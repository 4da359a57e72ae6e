import DBus
import Dispatch
import Foundation
import WidgetHostCore

/// Durable state (`--state-dir`): every change the host acknowledges is
/// journalled, and synced, before the reply goes out; at start-up the model
/// is rebuilt from the directory before the bus name is taken.
extension HostService {
    /// Reads the state directory and puts back bundles, widgets (same ids and
    /// paths), Live Activities and timelines. Damage is logged and kept aside
    /// by `StateDirectory`; what cannot be put back is logged and skipped.
    func openState() throws {
        let directory: StateDirectory
        let durable: DurableState
        do {
            (directory, durable) = try StateDirectory.open(directory: configuration.stateDirectory)
        } catch {
            throw DBusError.failed("cannot use the state directory \(configuration.stateDirectory): \(error)")
        }
        for note in directory.notes { logger.warning("\(note)") }
        for (appID, json) in durable.bundles.sorted(by: { $0.key < $1.key }) {
            do { try widgets.restoreBundle(appID: appID, json: json) } catch { logger.warning("stored bundle of \(appID) skipped: \(error)") }
        }
        for stored in durable.widgets.values.sorted(by: { DurableState.number($0.id, prefix: "w") < DurableState.number($1.id, prefix: "w") }) {
            do {
                try widgets.restore(stored, nextNumber: durable.nextWidgetNumber)
            } catch {
                logger.warning("stored content of widget \(stored.id) skipped: \(error)")
                var bare = stored
                bare.content = nil
                try? widgets.restore(bare, nextNumber: durable.nextWidgetNumber)
            }
            if widgets.widgets[stored.id] != nil { try connection.export(widgetInterfaces(), at: HostNames.widgetPath(stored.id)) }
        }
        for stored in durable.activities.values {
            do {
                try activities.restore(stored, nextNumber: durable.nextActivityNumber, now: now)
                try connection.export(activityInterfaces(), at: HostNames.activityPath(stored.id))
            } catch {
                logger.warning("stored Live Activity \(stored.id) skipped: \(error)")
            }
        }
        var effects: [TimelineEffect] = []
        for stored in durable.timelines.values where widgets.widgets[stored.widgetID] != nil {
            do {
                let timeline = try stored.timeline(limits: configuration.timelines.contentLimits)
                effects += timelines.restore(
                    widgetID: stored.widgetID, timeline: timeline, receivedAt: Date(timeIntervalSince1970: TimeInterval(stored.receivedAt) / 1000))
            } catch {
                logger.warning("stored timeline of widget \(stored.widgetID) skipped: \(error)")
            }
        }
        apply(effects)
        state = directory
        logger.info(
            "state restored",
            metadata: [
                "dir": "\(directory.path)", "widgets": "\(widgets.widgets.count)", "activities": "\(durable.activities.count)",
                "timelines": "\(timelines.trackedCount)",
            ])
    }

    /// Journals `records` and waits until they are on disk. When that fails the
    /// change is not acknowledged (the caller gets an error) and the host exits
    /// with status 1, so that what it holds never differs from what it saved;
    /// systemd starts it again from the directory.
    func persist(_ records: [StateRecord]) throws {
        guard let state, !records.isEmpty else { return }
        do {
            try state.append(records)
            if state.wantsCompaction { try state.compact(durableImage()) }
        } catch {
            logger.critical("cannot write the state directory (\(error)); exiting so that nothing unsaved is acknowledged")
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { exit(1) }
            throw DBusError.failed("the host could not save the change (\(error)); nothing was changed")
        }
    }

    /// The durable state as the model holds it now: what a snapshot writes.
    func durableImage() -> DurableState {
        var image = DurableState()
        image.bundles = widgets.bundles.mapValues(\.json)
        for widget in widgets.widgets.values { image.widgets[widget.id] = StoredWidget(widget, content: widget.content?.json) }
        image.nextWidgetNumber = widgets.nextWidgetNumber
        for activity in activities.all { image.activities[activity.id] = StoredActivity(activity) }
        image.nextActivityNumber = activities.nextActivityNumber
        let now = self.now
        for id in timelines.trackedWidgetIDs {
            guard let snapshot = timelines.snapshot(widgetID: id, now: now), let policy = snapshot.policy,
                let received = snapshot.timelineReceivedAt
            else { continue }
            image.timelines[id] = StoredTimeline(
                widgetID: id, timeline: Timeline(entries: snapshot.entries, policy: policy), receivedAt: received)
        }
        return image
    }

    /// `persist` where no caller waits for an answer (timers, provider replies).
    func persistQuietly(_ records: [StateRecord]) {
        try? persist(records)
    }

    /// The stored form of a placed widget as it is now.
    func storedWidget(_ id: String) -> StateRecord? {
        widgets.widgets[id].map { .widget(StoredWidget($0, content: $0.content?.json)) }
    }

    func storedActivity(_ id: String) -> StateRecord? {
        activities.activity(id).map { .activity(StoredActivity($0)) }
    }
}
