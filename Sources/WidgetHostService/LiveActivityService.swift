import DBus
import FoundationEssentials
import WidgetHostCore

/// `org.widgethost.Host1.LiveActivity`, one Live Activity (docs/live-activities.md).
/// One exported value serves every activity object (``ObjectInterfaces``):
/// the handlers read the activity's id from the path they are called on.
struct LiveActivityServer: Host1LiveActivity.Server {
    let dispatcher: Dispatcher<LiveActivityHandlers>

    func update(_ call: MethodCall, contentJSON: String, options: [String: DBusValue], reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { activity, identity in
            try activity.update(Self.activityID(call.path), contentJSON, options, call.sender, identity)
        }
    }

    func end(_ call: MethodCall, options: [String: DBusValue], reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { activity, identity in try activity.end(Self.activityID(call.path), options, call.sender, identity) }
    }

    func tap(_ call: MethodCall, presentation: String, elementID: String, options: [String: DBusValue], reply: TapReply) {
        dispatcher.inOrder(call) { activity in
            activity.tap(Self.activityID(call.path), presentation, elementID, options, reply, deliver: true)
        }
    }

    func resolve(_ call: MethodCall, presentation: String, elementID: String, options: [String: DBusValue], reply: TapReply) {
        dispatcher.inOrder(call) { activity in
            activity.tap(Self.activityID(call.path), presentation, elementID, options, reply, deliver: false)
        }
    }

    func properties(at path: String) -> Host1LiveActivity.Properties {
        dispatcher.read { activity in activity.properties(Self.activityID(path)) } ?? Self.noActivity
    }

    /// What a getter reads after its activity went away.
    static let noActivity = Host1LiveActivity.Properties(
        id: "", appID: "", attributesType: "", content: "", state: "", staleDate: 0, relevance: 0, attributes: [:], contentState: [:],
        startDate: 0, endDate: 0, dismissalDate: 0)

    /// The activity id in an activity object's path.
    static func activityID(_ path: String) -> String { Host1LiveActivity.id(inPath: path) ?? "" }
}

/// What a Live Activity object's calls do, over the stores they need: the
/// activities, the apps (read: who may change one, who receives its taps)
/// and the deliveries of its taps.
final class LiveActivityHandlers {
    private let activities: Activities
    private let apps: any AppDirectory
    private let deliveries: Deliveries
    private let context: HostContext

    init(activities: Activities, apps: any AppDirectory, deliveries: Deliveries, context: HostContext) {
        self.activities = activities
        self.apps = apps
        self.deliveries = deliveries
        self.context = context
    }

    func properties(_ id: String) -> Host1LiveActivity.Properties? {
        activities.properties(id)
    }

    func update(_ id: String, _ contentJSON: String, _ options: [String: DBusValue], _ sender: String, _ identity: CallerIdentity) throws {
        try activities.update(id, contentJSON, options) {
            try apps.requireOwner($0.appID, sender, identity, doing: "update its Live Activities")
        }
    }

    func end(_ id: String, _ options: [String: DBusValue], _ sender: String, _ identity: CallerIdentity) throws {
        try activities.end(id, options) {
            try apps.requireOwner($0.appID, sender, identity, doing: "end its Live Activities")
        }
    }

    func tap(_ id: String, _ presentationName: String, _ elementID: String, _ options: [String: DBusValue], _ reply: TapReply, deliver: Bool) {
        do {
            let activity = try activities.existing(id)
            let presentation = try ActivityPresentation.parse(presentationName)
            let (surface, token, deadline) = try Delivery.tapOptions(options)
            guard let app = apps.app(activity.appID) else {
                throw HostError.unknownApp("\(activity.appID) is not running and has no desktop entry, so nothing can receive the tap")
            }
            let resolution = try ActivityTapRules.resolve(
                presentation: presentation, elementID: elementID, surface: surface, activity: activity,
                app: app.options, now: context.now)
            let source = Delivery.TapSource(
                tapped: .activity(id: id, attributesType: activity.attributesType, presentation: presentation.rawValue), elementID: elementID,
                surface: surface)
            deliveries.deliverTap(
                Host1LiveActivity.objectPath(id), resolution, app: app, token: token, deadline: deadline, source: source, reply: reply,
                deliver: deliver)
        } catch {
            reply.fail(error)
        }
    }
}

extension Host1LiveActivity.Properties {
    /// A Live Activity object's properties at a date: what its getters read
    /// and what its footprint measures (see Budgets.swift).
    init(_ a: LiveActivity, at now: Date) {
        func seconds(_ date: Date?) -> Int64 { date.map { Int64($0.timeIntervalSince1970.rounded(.down)) } ?? 0 }
        let state = a.activityState(at: now)
        self.init(
            id: a.id, appID: a.appID, attributesType: a.attributesType, content: a.content.json, state: state.rawValue,
            staleDate: seconds(a.staleDate), relevance: a.relevance, attributes: a.attributes.mapValues(\.dbusValue),
            contentState: a.state.mapValues(\.dbusValue), startDate: seconds(a.startedAt),
            endDate: state == .ended ? seconds(a.endedAt ?? a.automaticEndDate) : 0,
            dismissalDate: state == .ended ? seconds(a.removalDate) : 0)
    }
}
