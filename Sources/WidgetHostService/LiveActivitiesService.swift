import DBus
import Dispatch
import Foundation
import WidgetHostCore

extension HostNames {
    public static let liveActivities = "org.widgethost.Host1.LiveActivities"
    public static let liveActivity = "org.widgethost.Host1.LiveActivity"
    public static let activitiesPrefix = rootPath + "/activities/"
    public static func activityPath(_ id: String) -> String { activitiesPrefix + id }
}

/// Live Activities (docs/live-activities.md): the model's `LiveActivityStore` on the bus,
/// its deadlines on one timer of the connection's thread.
extension HostService {
    func liveActivitiesInterface() throws -> ExportedInterface {
        var exported = ExportedInterface(try description(HostNames.liveActivities))
        exported.method("StartActivity", appOwned { service, call, identity in try service.startActivity(call, identity) })
        exported.property(
            "Order",
            PropertyHandler(get: { [weak self] in
                .array(element: "o", (self?.assumeIsolated { $0.currentOrder() } ?? []).map { .objectPath(HostNames.activityPath($0)) })
            }))
        return exported
    }

    /// The activity id in an activity object's path.
    nonisolated static func activityID(_ path: String) -> String {
        path.hasPrefix(HostNames.activitiesPrefix) ? String(path.dropFirst(HostNames.activitiesPrefix.count)) : ""
    }

    var now: Date { configuration.clock.now() }

    func currentOrder() -> [String] { activities.ordered(now: now) }

    /// A Live Activity object's properties at a date: what its getters read
    /// and what its footprint measures (see FootprintService.swift).
    nonisolated static let activityProperties: [(String, @Sendable (LiveActivity, Date) -> DBusValue, empty: DBusValue)] = {
        @Sendable func seconds(_ date: Date?) -> DBusValue { .int64(date.map { Int64($0.timeIntervalSince1970.rounded(.down)) } ?? 0) }
        return [
            ("Id", { a, _ in .string(a.id) }, empty: .string("")),
            ("AppId", { a, _ in .string(a.appID) }, empty: .string("")),
            ("AttributesType", { a, _ in .string(a.attributesType) }, empty: .string("")),
            ("Content", { a, _ in .string(a.content.json) }, empty: .string("")),
            ("State", { a, now in .string(a.activityState(at: now).rawValue) }, empty: .string("")),
            ("StaleDate", { a, _ in seconds(a.staleDate) }, empty: .int64(0)),
            ("Relevance", { a, _ in .double(a.relevance) }, empty: .double(0)),
            ("Attributes", { a, _ in .vardict(a.attributes.mapValues(\.dbusValue)) }, empty: .vardict([:])),
            ("ContentState", { a, _ in .vardict(a.state.mapValues(\.dbusValue)) }, empty: .vardict([:])),
            ("StartDate", { a, _ in seconds(a.startedAt) }, empty: .int64(0)),
            ("EndDate", { a, now in a.activityState(at: now) == .ended ? seconds(a.endedAt ?? a.automaticEndDate) : .int64(0) },
             empty: .int64(0)),
            ("DismissalDate", { a, now in a.activityState(at: now) == .ended ? seconds(a.removalDate) : .int64(0) },
             empty: .int64(0)),
        ]
    }()

    /// `org.widgethost.Host1.LiveActivity`, one value shared by every activity
    /// object; handlers read the id from the path.
    func activityInterfaces() throws -> [ExportedInterface] {
        if let shared = sharedActivityInterfaces { return shared }
        var exported = ExportedInterface(try description(HostNames.liveActivity))
        for (name, value, empty) in Self.activityProperties {
            exported.property(
                name,
                PropertyHandler(getAt: { [weak self] path in
                    self?.assumeIsolated { service in
                        service.activities.activity(Self.activityID(path)).map { value($0, service.now) }
                    } ?? empty
                }))
        }
        exported.method(
            "Update", appOwned { service, call, identity in try service.updateActivity(Self.activityID(call.path), call, identity) })
        exported.method(
            "End", appOwned { service, call, identity in try service.endActivity(Self.activityID(call.path), call, identity) })
        exported.method(
            "Tap", isolatedDeferred { service, call, reply in service.tapActivity(Self.activityID(call.path), call, reply, deliver: true) })
        exported.method(
            "Resolve",
            isolatedDeferred { service, call, reply in service.tapActivity(Self.activityID(call.path), call, reply, deliver: false) })
        sharedActivityInterfaces = [exported]
        return [exported]
    }

    func startActivity(_ call: MethodCall, _ identity: CallerIdentity) throws -> [DBusValue] {
        activityDeadlinePassed()
        let appID = call.arguments[0].stringValue ?? ""
        try Validate.appID(appID)
        try requireOwner(appID, call.sender, identity, doing: "start its Live Activities")
        let now = self.now
        let activity = try storingActivities {
            try $0.start(
                appID: appID, attributesType: call.arguments[1].stringValue ?? "", contentJSON: call.arguments[2].stringValue ?? "",
                options: OptionValue.dictionary(call.arguments[3]), now: now)
        } records: { [.activity(StoredActivity($0))] }
        try connection.export(activityInterfaces(), at: HostNames.activityPath(activity.id))
        logger.info(
            "Live Activity started", metadata: ["activity": "\(activity.id)", "app": "\(appID)", "type": "\(activity.attributesType)"])
        activitiesChanged()
        return [.objectPath(HostNames.activityPath(activity.id))]
    }

    /// The activity at `id`, or the standard UnknownObject error. Deadlines
    /// already passed are applied (and announced) first, so a change is never
    /// judged against a state renderers were not told about, and a dismissed
    /// activity is gone even if the timer has not fired yet.
    func existingActivity(_ id: String) throws -> LiveActivity {
        if let due = activityDeadline, due <= now { activityDeadlinePassed() }
        guard let activity = activities.activity(id) else {
            throw DBusError(name: DBusError.unknownObjectName, message: "No Live Activity \(id); it ended and was dismissed, or never existed")
        }
        return activity
    }

    func updateActivity(_ id: String, _ call: MethodCall, _ identity: CallerIdentity) throws -> [DBusValue] {
        let before = try existingActivity(id)
        try requireOwner(before.appID, call.sender, identity, doing: "update its Live Activities")
        let now = self.now
        let after = try storingActivities {
            try $0.update(id: id, contentJSON: call.arguments[0].stringValue ?? "", options: OptionValue.dictionary(call.arguments[1]), now: now)
        } records: { [.activity(StoredActivity($0))] }
        announce(id, before: before, after: after)
        activitiesChanged()
        return []
    }

    func endActivity(_ id: String, _ call: MethodCall, _ identity: CallerIdentity) throws -> [DBusValue] {
        let before = try existingActivity(id)
        try requireOwner(before.appID, call.sender, identity, doing: "end its Live Activities")
        let now = self.now
        let result = try storingActivities {
            try $0.end(id: id, options: OptionValue.dictionary(call.arguments[0]), now: now)
        } records: { [$0.isRemoved ? .activityRemoved(id: id) : .activity(StoredActivity($0.activity))] }
        logger.info("Live Activity ended", metadata: ["activity": "\(id)", "removed": "\(result.isRemoved)"])
        if result.isRemoved {
            connection.unexport(HostNames.activityPath(id))
        } else {
            announce(id, before: before, after: result.activity)
        }
        activitiesChanged()
        return []
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
            try persist(records)
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
        var names: [String] = []
        if before.content != after.content { names.append("Content") }
        if before.activityState(at: now) != after.activityState(at: now) || before.endedAt != after.endedAt {
            names += ["State", "EndDate", "DismissalDate"]
        }
        if before.staleDate != after.staleDate { names.append("StaleDate") }
        if before.relevance != after.relevance { names.append("Relevance") }
        if before.state != after.state { names.append("ContentState") }
        if before.removeAt != after.removeAt, !names.contains("DismissalDate") { names.append("DismissalDate") }
        guard !names.isEmpty else { return }
        try? connection.emitPropertiesChanged(path: HostNames.activityPath(id), interface: HostNames.liveActivity, properties: names)
    }

    /// After any change: announce a new order and re-arm the deadline timer.
    func activitiesChanged() {
        let order = currentOrder()
        if order != announcedOrder {
            announcedOrder = order
            try? connection.emitPropertiesChanged(path: HostNames.rootPath, interface: HostNames.liveActivities, properties: ["Order"])
        }
        rearmActivityTimer()
    }

    /// One timer, on the connection's thread, for the next stale date, 8 h end or dismissal.
    func rearmActivityTimer() {
        activityDeadline = activities.nextDeadline(after: now)
        arm(&activityTimer, at: activityDeadline) { service in service.activityDeadlinePassed() }
    }

    func activityDeadlinePassed() {
        let changes = activities.advance(to: now)
        for change in changes.stateChanges {
            chargeActivity(change.id)
            try? connection.emitPropertiesChanged(
                path: HostNames.activityPath(change.id), interface: HostNames.liveActivity, properties: ["State", "EndDate", "DismissalDate"])
        }
        persistQuietly(changes.removed.map { .activityRemoved(id: $0) })
        for id in changes.removed {
            footprint.release(id)
            connection.unexport(HostNames.activityPath(id))
            logger.info("Live Activity dismissed", metadata: ["activity": "\(id)"])
        }
        activitiesChanged()
    }

    func tapActivity(_ id: String, _ call: MethodCall, _ reply: Reply, deliver: Bool) {
        do {
            let activity = try existingActivity(id)
            let presentation = try ActivityPresentation.parse(call.arguments[0].stringValue ?? "")
            let (surface, token) = try Self.tapOptions(call.arguments[2])
            guard let app = registry.app(activity.appID) else {
                throw HostError.unknownApp("\(activity.appID) is not running and has no desktop entry, so nothing can receive the tap")
            }
            let resolution = try ActivityTapRules.resolve(
                presentation: presentation, elementID: call.arguments[1].stringValue ?? "", surface: surface, activity: activity,
                app: app.options, now: now)
            let source: [String: DBusValue] = [
                "activity_id": .string(id), "attributes_type": .string(activity.attributesType),
                "presentation": .string(presentation.rawValue), "surface": .string(surface.rawValue),
            ]
            deliverTap(
                HostNames.activityPath(id), resolution, app: app, token: token, source: source, reply: reply, deliver: deliver)
        } catch {
            reply.fail(error)
        }
    }
}
