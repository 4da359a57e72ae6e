import DBus
import Dispatch
import FoundationEssentials
import WidgetHostCore

/// `org.widgethost.Host1.LiveActivities` and the Live Activities behind it
/// (docs/live-activities.md): the model's `LiveActivityStore` on the bus, its
/// deadlines on one timer of the connection's thread.
struct LiveActivitiesServer: Host1LiveActivities.Server {
    let dispatcher: Dispatcher

    func startActivity(
        _ call: MethodCall, appID: String, attributesType: String, contentJSON: String, options: [String: DBusValue],
        reply: TypedReply<String>
    ) {
        dispatcher.appOwned(call, reply) { host, identity in
            try host.startActivity(appID, attributesType, contentJSON, options, call.sender, identity)
        }
    }

    func properties(at path: String) -> Host1LiveActivities.Properties {
        Host1LiveActivities.Properties(order: dispatcher.read { $0.currentOrder() }.map { Host1LiveActivity.objectPath($0) })
    }
}

extension HostService {
    var now: Date { configuration.clock.now() }

    func currentOrder() -> [String] { activities.ordered(now: now) }

    /// A Live Activity object's properties at a date: what its getters read
    /// and what its footprint measures (see FootprintService.swift).
    nonisolated static func activityProperties(_ a: LiveActivity, at now: Date) -> Host1LiveActivity.Properties {
        func seconds(_ date: Date?) -> Int64 { date.map { Int64($0.timeIntervalSince1970.rounded(.down)) } ?? 0 }
        let state = a.activityState(at: now)
        return Host1LiveActivity.Properties(
            id: a.id, appID: a.appID, attributesType: a.attributesType, content: a.content.json, state: state.rawValue,
            staleDate: seconds(a.staleDate), relevance: a.relevance, attributes: a.attributes.mapValues(\.dbusValue),
            contentState: a.state.mapValues(\.dbusValue), startDate: seconds(a.startedAt),
            endDate: state == .ended ? seconds(a.endedAt ?? a.automaticEndDate) : 0,
            dismissalDate: state == .ended ? seconds(a.removalDate) : 0)
    }

    func startActivity(
        _ appID: String, _ attributesType: String, _ contentJSON: String, _ options: [String: DBusValue], _ sender: String,
        _ identity: CallerIdentity
    ) throws -> String {
        activityDeadlinePassed()
        try Validate.appID(appID)
        try requireOwner(appID, sender, identity, doing: "start its Live Activities")
        let now = self.now
        let activity = try storingActivities {
            try $0.start(
                appID: appID, attributesType: attributesType, contentJSON: contentJSON, options: OptionValue.dictionary(options), now: now)
        } records: { [.activity(StoredActivity($0))] }
        try connection.export(objectInterfaces.activity, at: Host1LiveActivity.objectPath(activity.id))
        logger.info(
            "Live Activity started", metadata: ["activity": "\(activity.id)", "app": "\(appID)", "type": "\(activity.attributesType)"])
        activitiesChanged()
        return Host1LiveActivity.objectPath(activity.id)
    }

    /// The activity at `id`, or the standard UnknownObject error. Deadlines
    /// already passed are applied (and announced) first, so a change is never
    /// judged against a state renderers were not told about, and a dismissed
    /// activity is gone even if the timer has not fired yet.
    func existingActivity(_ id: String) throws -> LiveActivity {
        if let due = timers.deadline(.activities), due <= now { activityDeadlinePassed() }
        guard let activity = activities.activity(id) else {
            throw DBusError(name: DBusError.unknownObjectName, message: "No Live Activity \(id); it ended and was dismissed, or never existed")
        }
        return activity
    }

    func updateActivity(
        _ id: String, _ contentJSON: String, _ options: [String: DBusValue], _ sender: String, _ identity: CallerIdentity
    ) throws {
        let before = try existingActivity(id)
        try requireOwner(before.appID, sender, identity, doing: "update its Live Activities")
        let now = self.now
        let after = try storingActivities {
            try $0.update(id: id, contentJSON: contentJSON, options: OptionValue.dictionary(options), now: now)
        } records: { [.activity(StoredActivity($0))] }
        announce(id, before: before, after: after)
        activitiesChanged()
    }

    func endActivity(_ id: String, _ options: [String: DBusValue], _ sender: String, _ identity: CallerIdentity) throws {
        let before = try existingActivity(id)
        try requireOwner(before.appID, sender, identity, doing: "end its Live Activities")
        let now = self.now
        let result = try storingActivities {
            try $0.end(id: id, options: OptionValue.dictionary(options), now: now)
        } records: { [$0.isRemoved ? .activityRemoved(id: id) : .activity(StoredActivity($0.activity))] }
        logger.info("Live Activity ended", metadata: ["activity": "\(id)", "removed": "\(result.isRemoved)"])
        if result.isRemoved {
            connection.unexport(Host1LiveActivity.objectPath(id))
        } else {
            announce(id, before: before, after: result.activity)
        }
        activitiesChanged()
    }

    /// Makes a change to the Live Activities, checks it against the budgets
    /// and stores the records it gives; when it does not fit or cannot be
    /// stored, the activities are put back as they were.
    func storingActivities<T>(
        _ change: (inout LiveActivityStore) throws -> T, records: (T) -> [StateRecord]
    ) throws -> T {
        let saved = activities
        let result = try change(&activities)
        let records = records(result)
        var charges: [(LiveActivity, Int)] = []
        do {
            for case .activity(let stored) in records {
                if let activity = activities.activity(stored.id) { charges.append((activity, try checkFootprint(of: activity))) }
            }
            try persist(records, activitiesBefore: saved)
        } catch {
            activities = saved
            throw error
        }
        for (activity, bytes) in charges { footprint.set(activity.id, appID: activity.appID, bytes: bytes) }
        for case .activityRemoved(let id) in records { footprint.release(id) }
        return result
    }

    /// PropertiesChanged for what differs between two states of an activity.
    func announce(_ id: String, before: LiveActivity, after: LiveActivity) {
        let now = self.now
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
        propertiesChanged(Host1LiveActivity.objectPath(id), Host1LiveActivity.name, names.map(\.rawValue))
    }

    /// After any change: announce a new order and re-arm the deadline timer.
    func activitiesChanged() {
        let order = currentOrder()
        if order != announcedOrder {
            announcedOrder = order
            try? Host1LiveActivities.emitPropertiesChanged(on: connection, path: Host1LiveActivities.objectPath, [.order])
        }
        rearmActivityTimer()
    }

    /// One timer, on the connection's thread, for the next stale date, 8 h end or dismissal.
    func rearmActivityTimer() {
        arm(.activities, at: activities.nextDeadline(after: now))
    }

    func activityDeadlinePassed() {
        let changes = activities.advance(to: now)
        for change in changes.stateChanges {
            chargeActivity(change.id)
            try? Host1LiveActivity.emitPropertiesChanged(
                on: connection, path: Host1LiveActivity.objectPath(change.id), [.state, .endDate, .dismissalDate])
        }
        persistQuietly(changes.removed.map { .activityRemoved(id: $0) })
        for id in changes.removed {
            footprint.release(id)
            connection.unexport(Host1LiveActivity.objectPath(id))
            logger.info("Live Activity dismissed", metadata: ["activity": "\(id)"])
        }
        activitiesChanged()
    }

    func tapActivity(
        _ id: String, _ presentationName: String, _ elementID: String, _ options: [String: DBusValue], _ reply: TapReply, deliver: Bool
    ) {
        do {
            let activity = try existingActivity(id)
            let presentation = try ActivityPresentation.parse(presentationName)
            let (surface, token) = try Self.tapOptions(options)
            guard let app = registry.app(activity.appID) else {
                throw HostError.unknownApp("\(activity.appID) is not running and has no desktop entry, so nothing can receive the tap")
            }
            let resolution = try ActivityTapRules.resolve(
                presentation: presentation, elementID: elementID, surface: surface, activity: activity,
                app: app.options, now: now)
            let source = Delivery.TapSource(
                tapped: .activity(id: id, attributesType: activity.attributesType, presentation: presentation.rawValue), elementID: elementID,
                surface: surface)
            deliverTap(
                Host1LiveActivity.objectPath(id), resolution, app: app, token: token, source: source, reply: reply, deliver: deliver)
        } catch {
            reply.fail(error)
        }
    }
}
