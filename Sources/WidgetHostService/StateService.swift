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
        for stored in durable.widgets.values.sorted(by: { MintedID.areInOrder($0.id, $1.id) }) {
            do {
                try widgets.restore(stored, nextNumber: durable.nextWidgetNumber)
            } catch {
                logger.warning("stored content of widget \(stored.id) skipped: \(error)")
                var bare = stored
                bare.content = nil
                try? widgets.restore(bare, nextNumber: durable.nextWidgetNumber)
            }
            if widgets.widgets[stored.id] != nil { try connection.export(widgetInterfaces(), at: Host1Widget.objectPath(stored.id)) }
        }
        for stored in durable.activities.values {
            do {
                try activities.restore(stored, nextNumber: durable.nextActivityNumber, now: now)
                try connection.export(activityInterfaces(), at: Host1LiveActivity.objectPath(stored.id))
            } catch {
                logger.warning("stored Live Activity \(stored.id) skipped: \(error)")
            }
        }
        var effects: [TimelineEffect] = []
        for stored in durable.timelines.values where widgets.widgets[stored.widgetID] != nil {
            do {
                let timeline = try stored.timeline(limits: configuration.timelines.contentLimits)
                effects += timelines.restore(
                    widgetID: stored.widgetID, timeline: timeline, receivedAt: UnixTime.date(stored.receivedAt))
            } catch {
                logger.warning("stored timeline of widget \(stored.widgetID) skipped: \(error)")
            }
        }
        apply(effects)
        // What was stored is served even when it passes budgets lowered since.
        for id in widgets.widgets.keys { chargeWidget(id) }
        for id in durable.activities.keys { chargeActivity(id) }
        state = directory
        // Opening may have left the files behind the model (a snapshot it could not write).
        armStorageRetry()
        logger.info(
            "state restored",
            metadata: [
                "dir": "\(directory.path)", "widgets": "\(widgets.widgets.count)", "activities": "\(durable.activities.count)",
                "timelines": "\(timelines.trackedCount)",
            ])
    }

    /// Journals `records` and waits until they are on disk. Callers store a
    /// change before they make it (or undo it when this throws), so a refused
    /// write changes nothing.
    ///
    /// - Throws: `StorageFailed` when the disk refuses (full, read-only, I/O
    ///   error): the host goes on serving, and the change can be sent again; the
    ///   host retries what it must keep by itself (`retryStorage`).
    ///   `InvalidArgument` for a value that cannot be stored: the caller's input.
    func persist(_ records: [StateRecord]) throws {
        guard let state, !records.isEmpty else { return }
        do {
            if state.needsSnapshot {
                // The files lag behind the model: write it whole, with this change.
                var image = durableImage()
                for record in records { image.apply(record) }
                try state.compact(image)
            } else {
                try state.append(records)
            }
        } catch StateDirectoryError.encoding(let what) {
            throw HostError.invalidArgument("the change cannot be stored (\(what)); nothing was changed — send only finite numbers and valid strings")
        } catch {
            storageFailed(error)
            // Opening the journal may have found it behind: write the whole state once it can.
            if deadlines[.storage] == nil { armStorageRetry() }
            throw HostError(
                .storageFailed,
                "the state directory \(state.path) cannot take the change (\(error)); nothing was changed and everything else goes on working — free space on that disk or make the directory writable, then send it again")
        }
        storageWorks()
        if state.wantsCompaction, nextCompactionAttempt.map({ $0 <= now }) ?? true { compact() }
    }

    /// `persist` where no caller waits for an answer (timers, provider replies):
    /// the change stays in the model; when the disk refuses it, the state
    /// directory is marked behind and the host writes a snapshot once it can.
    func persistQuietly(_ records: [StateRecord]) {
        do { try persist(records) } catch let error as HostError where error.name == .storageFailed {
            state?.markBehind()
            armStorageRetry()
        } catch {
            // Not the disk: a value that cannot be stored, which validation keeps out.
            logger.error("a change could not be stored: \(error)")
        }
    }

    /// Writes a snapshot so the journal starts again. It only saves space and
    /// reading time: the journal already holds every change, so a failure is
    /// logged and tried again later, never a failed call.
    func compact() {
        guard let state else { return }
        do {
            try state.compact(durableImage())
            nextCompactionAttempt = nil
        } catch {
            nextCompactionAttempt = now.addingTimeInterval(60)
            logger.warning("cannot compact the state directory (\(error)); the journal keeps every change, trying again in a minute")
        }
    }

    /// Logs the first failure of an outage.
    func storageFailed(_ error: any Error) {
        guard storageFailingSince == nil else { return }
        storageFailingSince = now
        logger.error(
            "the state directory refuses writes (\(error)); changes are refused with StorageFailed, everything else goes on working")
    }

    /// A write went through: the outage, if any, is over.
    func storageWorks() {
        guard let since = storageFailingSince else { return }
        storageFailingSince = nil
        storageRetryDelay = 1
        logger.notice("the state directory takes writes again", metadata: ["after": "\(Int(now.timeIntervalSince(since))) s"])
        if state?.needsSnapshot != true { arm(.storage, at: nil) }
    }

    /// Retries, with a growing delay, while the files lag behind the model.
    func armStorageRetry() {
        guard state?.needsSnapshot == true else { return }
        arm(.storage, at: now.addingTimeInterval(storageRetryDelay))
        storageRetryDelay = min(storageRetryDelay * 2, 60)
    }

    /// Writes the whole state once the directory takes it again.
    func retryStorage() {
        guard let state, state.needsSnapshot else { return arm(.storage, at: nil) }
        do {
            try state.compact(durableImage())
            storageWorks()
            arm(.storage, at: nil)
        } catch {
            storageFailed(error)
            armStorageRetry()
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
}
