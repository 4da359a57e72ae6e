import DBus
import WidgetHostCore

/// `org.widgethost.Host1.LiveActivity`, one Live Activity (docs/live-activities.md).
/// One exported value serves every activity object (``ObjectInterfaces``):
/// the handlers read the activity's id from the path they are called on.
struct LiveActivityServer: Host1LiveActivity.Server {
    let dispatcher: Dispatcher

    func update(_ call: MethodCall, contentJSON: String, options: [String: DBusValue], reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { host, identity in
            try host.updateActivity(Self.activityID(call.path), contentJSON, options, call.sender, identity)
        }
    }

    func end(_ call: MethodCall, options: [String: DBusValue], reply: TypedReply<Void>) {
        dispatcher.appOwned(call, reply) { host, identity in try host.endActivity(Self.activityID(call.path), options, call.sender, identity) }
    }

    func tap(_ call: MethodCall, presentation: String, elementID: String, options: [String: DBusValue], reply: TapReply) {
        dispatcher.inOrder(call) { host in
            host.tapActivity(Self.activityID(call.path), presentation, elementID, options, reply, deliver: true)
        }
    }

    func resolve(_ call: MethodCall, presentation: String, elementID: String, options: [String: DBusValue], reply: TapReply) {
        dispatcher.inOrder(call) { host in
            host.tapActivity(Self.activityID(call.path), presentation, elementID, options, reply, deliver: false)
        }
    }

    func properties(at path: String) -> Host1LiveActivity.Properties {
        dispatcher.read { host in
            host.activities.activity(Self.activityID(path)).map { HostService.activityProperties($0, at: host.now) }
        } ?? Self.noActivity
    }

    /// What a getter reads after its activity went away.
    static let noActivity = Host1LiveActivity.Properties(
        id: "", appID: "", attributesType: "", content: "", state: "", staleDate: 0, relevance: 0, attributes: [:], contentState: [:],
        startDate: 0, endDate: 0, dismissalDate: 0)

    /// The activity id in an activity object's path.
    static func activityID(_ path: String) -> String { Host1LiveActivity.id(inPath: path) ?? "" }
}
