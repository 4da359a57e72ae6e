import DBus
import WidgetHostCore

/// `org.widgethost.Host1.LiveActivities`: starting a Live Activity, and their
/// order (docs/live-activities.md).
struct LiveActivitiesServer: Host1LiveActivities.Server {
    let dispatcher: Dispatcher<LiveActivitiesHandlers>

    func startActivity(
        _ call: MethodCall, appID: String, attributesType: String, contentJSON: String, options: [String: DBusValue],
        reply: TypedReply<String>
    ) {
        dispatcher.appOwned(call, reply) { activities, identity in
            try activities.start(appID, attributesType, contentJSON, options, call.sender, identity)
        }
    }

    func properties(at path: String) -> Host1LiveActivities.Properties {
        Host1LiveActivities.Properties(order: dispatcher.read { $0.order }.map { Host1LiveActivity.objectPath($0) })
    }
}

/// What `LiveActivities`'s calls do, over the stores they need: the
/// activities, and the apps (read: who may start one).
final class LiveActivitiesHandlers {
    private let activities: Activities
    private let apps: any AppDirectory

    init(activities: Activities, apps: any AppDirectory) {
        self.activities = activities
        self.apps = apps
    }

    var order: [String] { activities.order }

    func start(
        _ appID: String, _ attributesType: String, _ contentJSON: String, _ options: [String: DBusValue], _ sender: String,
        _ identity: CallerIdentity
    ) throws -> String {
        try Validate.appID(appID)
        try apps.requireOwner(appID, sender, identity, doing: "start its Live Activities")
        return try activities.start(appID, attributesType, contentJSON, options)
    }
}
