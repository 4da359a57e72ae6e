import DBus
import WidgetHostCore

/// `org.widgethost.Host1.LiveActivity`, one Live Activity (docs/live-activities.md).
/// One exported value serves every activity object: the handlers read the
/// activity's id from the path they are called on.
extension HostService: Host1LiveActivity.Server {
    public nonisolated func update(_ call: MethodCall, contentJSON: String, options: [String: DBusValue], reply: TypedReply<Void>) {
        appOwned(call, reply) { service, identity in
            try service.updateActivity(Self.activityID(call.path), contentJSON, options, call.sender, identity)
        }
    }

    public nonisolated func end(_ call: MethodCall, options: [String: DBusValue], reply: TypedReply<Void>) {
        appOwned(call, reply) { service, identity in try service.endActivity(Self.activityID(call.path), options, call.sender, identity) }
    }

    public nonisolated func tap(_ call: MethodCall, presentation: String, elementID: String, options: [String: DBusValue], reply: TapReply) {
        inOrder(call) { service in
            service.tapActivity(Self.activityID(call.path), presentation, elementID, options, reply, deliver: true)
        }
    }

    public nonisolated func resolve(_ call: MethodCall, presentation: String, elementID: String, options: [String: DBusValue], reply: TapReply) {
        inOrder(call) { service in
            service.tapActivity(Self.activityID(call.path), presentation, elementID, options, reply, deliver: false)
        }
    }

    public nonisolated func properties(at path: String) -> Host1LiveActivity.Properties {
        assumeIsolated { service in
            service.activities.activity(Self.activityID(path)).map { Self.activityProperties($0, at: service.now) }
        } ?? Self.noActivity
    }

    /// What a getter reads after its activity went away.
    nonisolated static let noActivity = Host1LiveActivity.Properties(
        id: "", appID: "", attributesType: "", content: "", state: "", staleDate: 0, relevance: 0, attributes: [:], contentState: [:],
        startDate: 0, endDate: 0, dismissalDate: 0)

    /// The activity id in an activity object's path.
    nonisolated static func activityID(_ path: String) -> String { Host1LiveActivity.id(inPath: path) ?? "" }

    /// The interface, built once and exported at every activity's path.
    func activityInterfaces() -> [ExportedInterface] {
        shared(&sharedActivityInterfaces) { Host1LiveActivity.exported(self) }
    }
}
