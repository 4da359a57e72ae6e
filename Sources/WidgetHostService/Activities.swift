import DBus
import FoundationEssentials
import WidgetHostCore

/// The Live Activities (the model's `LiveActivityStore`,
/// docs/live-activities.md), their objects on the bus, their order, their
/// budgets and their journal, and their deadlines on one timer.
final class Activities: Store {
    private var store: LiveActivityStore
    /// The last `LiveActivities.Order` announced, to emit PropertiesChanged only on change.
    private var announcedOrder: [String] = []
    private let context: HostContext
    private let storage: Storage
    private let budgets: Budgets
    private let pacing: Pacing
    private let timers: Deadlines
    /// The interfaces every Live Activity object serves (``ObjectInterfaces``),
    /// handed over once the servers are built.
    var objectInterfaces: [ExportedInterface] = []

    init(_ context: HostContext, storage: Storage, budgets: Budgets, pacing: Pacing, timers: Deadlines) {
        self.context = context
        self.storage = storage
        self.budgets = budgets
        self.pacing = pacing
        self.timers = timers
        var limits = ActivityLimits()
        limits.maxPerApp = context.configuration.maxActivitiesPerApp
        limits.content = context.configuration.contentLimits
        store = LiveActivityStore(limits: limits)
    }

    /// Live Activities are an app's: they outlive the connection that started
    /// them, and end by `End`, by their own dates or by dismissal.
    func connectionLeft(_ connection: String) {}

    // MARK: Reading

    /// The activities' paths, most relevant first (`LiveActivities.Order`).
    var order: [String] { store.ordered(now: context.now) }

    /// The activity at `id`, or the standard UnknownObject error. Deadlines
    /// already passed are applied (and announced) first, so a change is never
    /// judged against a state renderers were not told about, and a dismissed
    /// activity is gone even if the timer has not fired yet.
    func existing(_ id: String) throws -> LiveActivity {
        if let due = timers.deadline(.activities), due <= context.now { deadlinePassed() }
        guard let activity = store.activity(id) else {
            throw DBusError(name: DBusError.unknownObjectName, message: "No Live Activity \(id); it ended and was dismissed, or never existed")
        }
        return activity
    }

    /// The object's properties now; nil once it is gone.
    func properties(_ id: String) -> Host1LiveActivity.Properties? {
        store.activity(id).map { Host1LiveActivity.Properties($0, at: context.now) }
    }

    // MARK: Changing

    /// Starts a Live Activity of `appID` (`StartActivity`); returns its path.
    /// The deadlines passed are applied first: an app's activities dismissed
    /// meanwhile no longer count against its limit.
    func start(_ appID: String, _ attributesType: String, _ contentJSON: String, _ options: [String: DBusValue]) throws -> String {
        deadlinePassed()
        let now = context.now
        let activity = try storing {
            try $0.start(
                appID: appID, attributesType: attributesType, contentJSON: contentJSON, options: OptionValue.dictionary(options), now: now)
        }
        try context.connection.export(objectInterfaces, at: Host1LiveActivity.objectPath(activity.id))
        context.logger.info(
            "Live Activity started", metadata: ["activity": "\(activity.id)", "app": "\(appID)", "type": "\(activity.attributesType)"])
        changed()
        return Host1LiveActivity.objectPath(activity.id)
    }

    /// Updates the activity at `id` once `authorize` accepted it (`Update`),
    /// counted against its app's updates before any of it is read.
    func update(_ id: String, _ contentJSON: String, _ options: [String: DBusValue], authorize: (LiveActivity) throws -> Void) throws {
        let before = try existing(id)
        try authorize(before)
        let pace = try pacing.admit(before.appID)
        let now = context.now
        let after = try storing {
            try $0.update(id: id, contentJSON: contentJSON, options: OptionValue.dictionary(options), now: now)
        }
        announce(id, before: before, after: after, pace: pace)
        changed()
    }

    /// Ends the activity at `id` once `authorize` accepted it (`End`).
    func end(_ id: String, _ options: [String: DBusValue], authorize: (LiveActivity) throws -> Void) throws {
        let before = try existing(id)
        try authorize(before)
        let now = context.now
        let result = try storing {
            try $0.end(id: id, options: OptionValue.dictionary(options), now: now)
        }
        context.logger.info("Live Activity ended", metadata: ["activity": "\(id)", "removed": "\(result.isRemoved)"])
        if result.isRemoved {
            context.connection.unexport(Host1LiveActivity.objectPath(id))
        } else {
            announce(id, before: before, after: result.activity)
        }
        changed()
    }

    /// Makes a change to the Live Activities, checks it against the budgets
    /// and stores what it did (``Storage/persist(_:)``); when it does not fit
    /// or cannot be stored, it is taken back before anything announced it.
    private func storing<T>(_ change: (inout LiveActivityStore) throws -> T) throws -> T {
        let (result, made) = try store.changing(change)
        var charges: [(LiveActivity, Int)] = []
        let now = context.now
        do {
            for case .activity(let stored) in made.records {
                if let activity = store.activity(stored.id) { charges.append((activity, try budgets.check(activity, at: now))) }
            }
            try storage.persist(made)
        } catch {
            store.undo(made, now: now)
            throw error
        }
        for (activity, bytes) in charges { budgets.charge(activity.id, appID: activity.appID, bytes: bytes) }
        for case .activityRemoved(let id) in made.records { budgets.release(id) }
        return result
    }

    /// PropertiesChanged for what differs between two states of an activity,
    /// within the activity's frame.
    private func announce(_ id: String, before: LiveActivity, after: LiveActivity, pace: UpdatePace = .withinRate) {
        let now = context.now
        var names: [Host1LiveActivity.Property] = []
        if before.content != after.content { names.append(.content) }
        if before.activityState(at: now) != after.activityState(at: now) || before.endedAt != after.endedAt {
            names += [.state, .endDate, .dismissalDate]
        }
        if before.staleDate != after.staleDate { names.append(.staleDate) }
        if before.relevance != after.relevance { names.append(.relevance) }
        if before.state != after.state { names.append(.contentState) }
        if before.removeAt != after.removeAt, !names.contains(.dismissalDate) { names.append(.dismissalDate) }
        guard !names.isEmpty else { return }
        pacing.announce(Host1LiveActivity.objectPath(id), Host1LiveActivity.name, names.map(\.rawValue), pace: pace)
    }

    /// After any change: announce a new order (within the root's frame: a
    /// stream of relevance changes reorders once a frame) and re-arm the
    /// deadline timer, one timer for the next stale date, 8 h end or dismissal.
    func changed() {
        let order = self.order
        if order != announcedOrder {
            announcedOrder = order
            pacing.announce(Host1LiveActivities.objectPath, Host1LiveActivities.name, [Host1LiveActivities.Property.order.rawValue])
        }
        timers.arm(.activities, at: store.nextDeadline(after: context.now))
    }

    /// Applies the deadlines passed: states that changed are announced, the
    /// activities dismissed go.
    func deadlinePassed() {
        let changes = store.advance(to: context.now)
        for change in changes.stateChanges {
            charge(change.id)
            try? Host1LiveActivity.emitPropertiesChanged(
                on: context.connection, path: Host1LiveActivity.objectPath(change.id), [.state, .endDate, .dismissalDate])
        }
        storage.persistQuietly(changes.removed.map { .activityRemoved(id: $0) })
        for id in changes.removed {
            budgets.release(id)
            context.connection.unexport(Host1LiveActivity.objectPath(id))
            context.logger.info("Live Activity dismissed", metadata: ["activity": "\(id)"])
        }
        changed()
    }

    /// Charges Live Activity `id` as it is now, or takes its charge off when it is gone.
    func charge(_ id: String) {
        guard let activity = store.activity(id) else { return budgets.release(id) }
        budgets.charge(activity, at: context.now)
    }

    // MARK: Durable state (see DurableModel.swift)

    /// Puts back the activities stored and serves their objects, unannounced.
    func restore(_ durable: DurableState) {
        store.reserveNumbers(upTo: durable.nextActivityNumber)
        let now = context.now
        for stored in durable.activities.values {
            do {
                try store.restore(stored, nextNumber: durable.nextActivityNumber, now: now)
                try context.connection.export(objectInterfaces, at: Host1LiveActivity.objectPath(stored.id), announce: false)
            } catch {
                context.logger.warning("stored Live Activity \(stored.id) skipped: \(error)")
            }
        }
    }

    /// Writes the activities into a snapshot.
    func store(into image: inout DurableState) {
        for activity in store.all { image.activities[activity.id] = StoredActivity(activity) }
        image.nextActivityNumber = store.nextActivityNumber
    }

    /// Puts activity `id` back as `old` (nil: no activity), and tells renderers.
    func putBack(_ id: String, _ old: LiveActivity?) {
        let current = store.activity(id)
        store.putBack(id, old, now: context.now)
        let path = Host1LiveActivity.objectPath(id)
        switch (current, old) {
        case (nil, nil):
            break
        case (nil, .some):
            try? context.connection.export(objectInterfaces, at: path)
            charge(id)
        case (.some, nil):
            context.connection.unexport(path)
            budgets.release(id)
        case (let current?, let old?):
            charge(id)
            announce(id, before: current, after: old)
        }
    }
}
