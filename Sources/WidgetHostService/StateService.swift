import DBus
import Dispatch
import FoundationEssentials
import WidgetHostCore
import WidgetHostSystem

/// Durable state (`--state-dir`): every change the host acknowledges is
/// journalled, and synced, before the reply goes out — by the journal writer,
/// off the connection's thread, one sync for every change that arrived
/// meanwhile; at start-up the model is rebuilt from the directory before the
/// bus name is taken.
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
        var restored: [String] = []
        restored.reserveCapacity(durable.widgets.count)
        widgets.reserveCapacity(durable.widgets.count)
        footprint.reserveCapacity(durable.widgets.count + durable.activities.count)
        for stored in durable.widgets.values.sorted(by: { MintedID.areInOrder($0.id, $1.id) }) {
            do {
                try widgets.restore(stored, nextNumber: durable.nextWidgetNumber)
            } catch {
                logger.warning("stored widget \(stored.id) skipped: \(error)")
            }
            if widgets.widgets[stored.id] != nil { restored.append(Host1Widget.objectPath(stored.id)) }
        }
        // Ids minted before are never minted again, though no object kept holds them.
        widgets.reserveNumbers(upTo: durable.nextWidgetNumber)
        activities.reserveNumbers(upTo: durable.nextActivityNumber)
        // Nobody can be watching before the name is owned: nothing is announced.
        try connection.export(objectInterfaces.widget, at: restored)
        for stored in durable.activities.values {
            do {
                try activities.restore(stored, nextNumber: durable.nextActivityNumber, now: now)
                try connection.export(objectInterfaces.activity, at: Host1LiveActivity.objectPath(stored.id), announce: false)
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
        let journal = JournalWriter(directory) { [connection] report in
            connection.async { self.assumeIsolated { $0.journalReported(report) } }
        }
        storage = Storage(journal: journal, path: directory.path, filesBehind: directory.needsSnapshot)
        // Opening may have left the files behind the model (a snapshot it could not write).
        armStorageRetry()
        logger.info(
            "state restored",
            metadata: [
                "dir": "\(directory.path)", "widgets": "\(widgets.widgets.count)", "activities": "\(durable.activities.count)",
                "timelines": "\(timelines.trackedCount)",
            ])
    }

    /// Queues `records` — a change the caller is about to make to the model,
    /// or has just made to the Live Activities (`activitiesBefore` is then the
    /// store before it) — for the journal writer, and returns at once: the
    /// sync happens off this thread, together with every other write queued
    /// meanwhile (group commit). A handler answered by ``answerOnceStored(_:_:)``
    /// is answered once the change is on disk.
    ///
    /// When the disk refuses the write, the change is put back
    /// (``journalReported(_:)``), with every change queued after it, and their
    /// callers get `StorageFailed`; a change made with `keep` (timers, provider
    /// answers: nobody waits for it) stays, and the whole state is written
    /// once the disk takes it again.
    ///
    /// - Throws: `InvalidArgument` for a value that cannot be stored (it is
    ///   encoded here, so that nothing is queued): the caller's input.
    func persist(_ records: [StateRecord], activitiesBefore: LiveActivityStore? = nil, keep: Bool = false) throws {
        guard let journal = storage.journal, !records.isEmpty else { return }
        let lines: [String]
        do {
            lines = try records.map(StateFile.line)
        } catch {
            throw HostError.invalidArgument("the change cannot be stored (\(error)); nothing was changed — send only finite numbers and valid strings")
        }
        let priors = keep ? nil : records.flatMap { prior(of: $0, activities: activitiesBefore ?? activities) }
        let number: UInt64
        let whole = storage.filesBehind
        if whole {
            // The files lag behind the model: write it whole, with this change.
            var image = durableImage()
            for record in records { image.apply(record) }
            number = journal.writeSnapshot(image)
        } else {
            number = journal.append(lines)
        }
        if storage.queued(PendingWrite(number: number, priors: priors, isSnapshot: whole, queuedAt: now)) { armSlowWrites() }
    }

    /// Arms the timer for the oldest write with callers still waiting.
    func armSlowWrites() {
        arm(.slowWrites, at: storage.oldestWaiting.map { $0.addingTimeInterval(configuration.deliveryTimeout.timeInterval) })
    }

    /// A write the disk has not taken within the delivery timeout — a frozen
    /// or failing file system that neither syncs nor fails — answers its
    /// callers `StorageFailed` now rather than never: the change is in the
    /// model and may still reach the disk, so it is not put back, and what it
    /// changed is announced. Taps and reads never wait on a write.
    func answerSlowWrites() {
        let due = now.addingTimeInterval(-configuration.deliveryTimeout.timeInterval)
        let answered = storage.takeWaiters(queuedBy: due)
        let statePath = storage.path
        if !answered.isEmpty {
            let count = answered.count
            logger.error(
                "the state directory has not taken changes within the delivery timeout; their callers are told they may still be stored",
                metadata: ["dir": "\(statePath)", "callers": "\(count)"])
            announceHeld()
            let failure = HostError(
                .storageFailed,
                "the state directory \(statePath) has not taken the change within \(configuration.deliveryTimeout.seconds) s (its disk may be frozen, failing or very slow); it may still be stored — read the object back to see, and check that disk")
            for waiter in answered { waiter(failure) }
        }
        let next = storage.oldestWaiting(after: due)
        arm(.slowWrites, at: next.map { $0.addingTimeInterval(configuration.deliveryTimeout.timeInterval) })
    }

    /// `persist` for a change the host keeps whatever the disk says (timers,
    /// provider answers): nobody waits for it, and when the disk refuses it
    /// the whole state is written once it can.
    func persistQuietly(_ records: [StateRecord]) {
        do { try persist(records, keep: true) } catch {
            // A value that cannot be stored, which validation keeps out.
            logger.error("a change could not be stored: \(error)")
        }
    }

    /// Answers `reply` with what `body` returns or throws — at once when it
    /// changed nothing durable, else once the writer reports its changes on
    /// disk, or with `StorageFailed` (and the changes put back) when the disk
    /// refuses them. Nothing is acknowledged before it is on disk. An update
    /// refused past its app's ceiling is answered ten frames later.
    func answerOnceStored<T>(_ reply: TypedReply<T>, _ body: () throws -> T) {
        // Reports arrive between handlers, never during one: a new last write is this call's.
        let mark = storage.lastWrite
        let result = Result { try body() }
        if case .failure(let refused as RefusedUpdate) = result { return holdRefusal(refused, reply) }
        guard storage.lastWrite != mark else { return reply.send(result) }
        storage.waitForLastWrite { refused in
            if let refused { reply.fail(refused) } else { reply.send(result) }
        }
    }

    /// What the journal writer reports, on this actor, in order.
    func journalReported(_ report: JournalReport) {
        switch report {
        case .written(let through, let wantsCompaction):
            let done = storage.written(through: through)
            storageWorks()
            announceHeld()
            for write in done { for waiter in write.waiters { waiter(nil) } }
            armSlowWrites()
            if wantsCompaction { compactSoon() }
        case .failed(let error, let behind):
            storageFailed(error)
            // Nothing queued since the last write reported written is on disk, nor will be:
            // put the model back as the files hold it, newest first, then answer.
            // The refused writes count as pending until all are put back, so what the
            // put-backs change joins the held announcements: one signal per object.
            let refused = storage.pendingWrites
            storage.compactionQueued = false
            for write in refused.reversed() {
                guard let priors = write.priors else {
                    storage.filesBehind = true
                    continue
                }
                for prior in priors.reversed() { putBack(prior) }
            }
            storage.pendingWrites.removeFirst(refused.count)
            if behind { storage.filesBehind = true }
            activitiesChanged()
            announceHeld()
            storage.journal?.resume()
            armStorageRetry()
            let failure = HostError(
                .storageFailed,
                "the state directory \(storage.path) cannot take the change (\(error)); nothing was changed and everything else goes on working — free space on that disk or make the directory writable, then send it again")
            for write in refused { for waiter in write.waiters { waiter(failure) } }
            armSlowWrites()
        case .compacted:
            storage.compactionQueued = false
            storage.nextCompactionAttempt = nil
        case .compactionFailed(let error):
            storage.compactionQueued = false
            storage.nextCompactionAttempt = now.addingTimeInterval(60)
            logger.warning("cannot compact the state directory (\(error)); the journal keeps every change, trying again in a minute")
        }
    }

    /// Announces that properties of the object at `path` changed: at once
    /// when no write waits for the disk, else when the writer next reports,
    /// once per object with the values current then. A burst of writes to one
    /// object costs one signal per sync instead of one per write, and the
    /// signals of a batch go out just before its callers' replies.
    func propertiesChanged(_ path: String, _ interface: String, _ names: [String]) {
        guard storage.hold(path, interface, names) else {
            try? connection.emitPropertiesChanged(path: path, interface: interface, properties: names)
            return
        }
    }

    /// Emits what ``propertiesChanged(_:_:_:)`` held back; an object gone
    /// meanwhile is skipped (its InterfacesRemoved said so).
    func announceHeld() {
        for (path, interface, names) in storage.takeHeld() {
            try? connection.emitPropertiesChanged(path: path, interface: interface, properties: names)
        }
    }

    /// Queues a snapshot so the journal starts again. It only saves space and
    /// reading time: the journal already holds every change, so a failure is
    /// logged and tried again later, never a failed call.
    func compactSoon() {
        guard let journal = storage.journal, storage.mayCompact(now: now) else { return }
        storage.compactionQueued = true
        journal.compact(durableImage())
    }

    /// Logs the first failure of an outage.
    func storageFailed(_ error: any Error) {
        guard storage.failingSince == nil else { return }
        storage.failingSince = now
        logger.error(
            "the state directory refuses writes (\(error)); changes are refused with StorageFailed, everything else goes on working")
    }

    /// A write went through: the outage, if any, is over.
    func storageWorks() {
        guard let since = storage.failingSince else { return }
        storage.failingSince = nil
        storage.retryDelay = 1
        logger.notice("the state directory takes writes again", metadata: ["after": "\(Int(now.timeIntervalSince(since))) s"])
        if !storage.filesBehind { arm(.storage, at: nil) }
    }

    /// Retries, with a growing delay, while the files lag behind the model.
    func armStorageRetry() {
        guard storage.filesBehind else { return }
        arm(.storage, at: now.addingTimeInterval(storage.retryDelay))
        storage.retryDelay = min(storage.retryDelay * 2, 60)
    }

    /// Writes the whole state once the directory takes it again; a failure
    /// arms the next try (``journalReported(_:)``).
    func retryStorage() {
        arm(.storage, at: nil)
        guard let journal = storage.journal, storage.filesBehind else { return }
        let number = journal.writeSnapshot(durableImage())
        _ = storage.queued(PendingWrite(number: number, priors: nil, isSnapshot: true, queuedAt: now))
    }

    // MARK: Putting changes back

    /// What `record` replaces in the model now: what to put back if the disk refuses it.
    func prior(of record: StateRecord, activities: LiveActivityStore) -> [PendingWrite.Prior] {
        switch record {
        case .bundle(let appID, _), .bundleRemoved(let appID): [.bundle(appID, widgets.bundles[appID])]
        case .widget(let stored): [.widget(stored.id, widgets.widgets[stored.id])]
        case .widgetRemoved(let id): [.widget(id, widgets.widgets[id])]
        case .activity(let stored): [.activity(stored.id, activities.activity(stored.id))]
        case .activityRemoved(let id): [.activity(id, activities.activity(id))]
        // Only provider answers, which the host keeps; ids minted are never journalled.
        case .timeline, .minted: []
        }
    }

    /// Puts one object back as it was, and tells renderers.
    func putBack(_ prior: PendingWrite.Prior) {
        switch prior {
        case .bundle(let appID, let old):
            widgets.putBackBundle(appID: appID, old)
        case .widget(let id, let old):
            let current = widgets.widgets[id]
            widgets.putBack(id, old)
            let path = Host1Widget.objectPath(id)
            switch (current, old) {
            case (nil, nil):
                break
            case (nil, .some):
                try? connection.export(objectInterfaces.widget, at: path)
                chargeWidget(id)
                widgetPlaced(id)
            case (.some, nil):
                connection.unexport(path)
                widgetGone(id)
            case (let current?, let old?):
                chargeWidget(id)
                var changed: [Host1Widget.Property] = []
                if current.content != old.content { changed.append(.content) }
                if current.configuration != old.configuration { changed.append(.configuration) }
                if !changed.isEmpty { propertiesChanged(path, Host1Widget.name, changed.map(\.rawValue)) }
            }
        case .activity(let id, let old):
            let current = activities.activity(id)
            activities.putBack(id, old, now: now)
            let path = Host1LiveActivity.objectPath(id)
            switch (current, old) {
            case (nil, nil):
                break
            case (nil, .some):
                try? connection.export(objectInterfaces.activity, at: path)
                chargeActivity(id)
            case (.some, nil):
                connection.unexport(path)
                footprint.release(id)
            case (let current?, let old?):
                chargeActivity(id)
                announce(id, before: current, after: old)
            }
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
