import DBus
import WidgetHostCore

/// Hands a resolved tap to the app's D-Bus handler (docs/delivery.md).
struct Delivery: Sendable {
    var appID: String
    var options: AppOptions
    /// The bus name the call goes to: ``KnownApp/deliveryDestination`` — the
    /// app's well-known name for `freedesktop` (so the bus starts it when it is
    /// not running, whoever registered it), the registering connection for `widgethost`.
    var destination: String
    var outcome: TapOutcome
    var activationToken: String?
    /// `org.widgethost.source`: kind, family, widget_id or activity_id, presentation, surface, via.
    var source: [String: DBusValue]

    /// The call to make, or nil when there is nothing to deliver.
    func message() throws -> Message? {
        var platformData: [String: DBusValue] = ["org.widgethost.source": .vardict(source)]
        // docs/delivery.md: the token travels with every delivery of a tap that gave one;
        // for a control's action the app is told not to raise itself (App1 docs).
        if let token = activationToken, !token.isEmpty {
            platformData["activation-token"] = .string(token)
            platformData["desktop-startup-id"] = .string(token)
        }
        let path = options.objectPath
        switch (options.appProtocol, outcome) {
        case (_, .none):
            return nil
        case (.freedesktop, .openURL(let url, _)):
            return try call(destination, path, "org.freedesktop.Application", "Open", [.strings([url]), .vardict(platformData)])
        case (.freedesktop, .continueUserActivity(let type, let info)):
            let userInfo = DBusValue.vardict(info.mapValues(\.dbusValue))
            if let action = options.userActivityAction {
                return try call(
                    destination, path, "org.freedesktop.Application", "ActivateAction",
                    [.string(action), .array(element: "v", [.variant(.structure([.string(type), userInfo]))]), .vardict(platformData)])
            }
            platformData["org.widgethost.user-activity"] = .vardict(["activity_type": .string(type), "user_info": userInfo])
            return try call(destination, path, "org.freedesktop.Application", "Activate", [.vardict(platformData)])
        case (.freedesktop, .performAction(let action, let parameter)):
            let parameters = parameter.flatMap(Self.value).map { [DBusValue.variant($0)] } ?? []
            return try call(
                destination, path, "org.freedesktop.Application", "ActivateAction",
                [.string(action), .array(element: "v", parameters), .vardict(platformData)])
        case (.widgethost, .openURL(let url, _)):
            return try call(destination, path, HostNames.app1, "OpenURL", [.string(url), .vardict(platformData)])
        case (.widgethost, .continueUserActivity(let type, let info)):
            return try call(
                destination, path, HostNames.app1, "ContinueUserActivity",
                [.string(type), .vardict(info.mapValues(\.dbusValue)), .vardict(platformData)])
        case (.widgethost, .performAction(let action, let parameter)):
            let value = parameter.flatMap(Self.value) ?? .array(element: "v", [])
            return try call(destination, path, HostNames.app1, "PerformAction", [.string(action), .variant(value), .vardict(platformData)])
        }
    }

    private func call(_ destination: String, _ path: String, _ interface: String, _ member: String, _ args: [DBusValue]) throws
        -> Message
    {
        try Message.methodCall(destination: destination, path: path, interface: interface, member: member, arguments: args)
    }

    /// A JSON parameter as a D-Bus value: s, b, x, d, av, a{sv}; null is no parameter.
    static func value(_ json: JSONValue) -> DBusValue? {
        switch json {
        case .null: return nil
        case .bool(let b): return .bool(b)
        case .integer(let i): return .int64(i)
        case .number(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let items): return .array(element: "v", items.map { .variant(value($0) ?? .array(element: "v", [])) })
        case .object(let fields): return .vardict(fields.compactMapValues(value))
        }
    }

    /// Sends the delivery; `completion` runs on the connection's thread once
    /// the app answered (nil) or failed (`ActivationFailed`), at once when
    /// there is nothing to deliver. No task is involved: the host's actor
    /// runs on that thread and carries on from the callback.
    func perform(on connection: Connection, timeout: Duration, completion: @escaping @Sendable (HostError?) -> Void) {
        let message: Message?
        do { message = try self.message() } catch {
            return completion(.activationFailed("could not build the delivery to \(appID): \(error)"))
        }
        guard let message else { return completion(nil) }
        let member = message.member ?? "?"
        let appID = self.appID
        connection.send(message, timeout: timeout) { result in
            switch result {
            case .success:
                completion(nil)
            case .failure(let error as DBusError) where error.name == DBusError.noReplyName:
                completion(.activationFailed("\(appID) did not answer \(member) within \(timeout.seconds) s (the delivery timeout)"))
            case .failure(let error as DBusError):
                completion(.activationFailed("\(appID) answered \(member) with \(error.name): \(error.message)"))
            case .failure(let error):
                completion(.activationFailed("delivering \(member) to \(appID) failed: \(error)"))
            }
        }
    }

    /// The `a{sv}` details of a resolution.
    static func details(appID: String, _ resolution: TapResolution) -> [String: DBusValue] {
        var details: [String: DBusValue] = resolution.details.mapValues(\.dbusValue)
        details["app_id"] = .string(appID)
        details["diagnostics"] = .strings(resolution.diagnostics)
        switch resolution.outcome {
        case .openURL(let url, let via):
            details["url"] = .string(url)
            details["via"] = .string(via)
        case .continueUserActivity(let type, let info):
            details["activity_type"] = .string(type)
            details["user_info"] = .vardict(info.mapValues(\.dbusValue))
        case .performAction(let action, let parameter):
            details["action"] = .string(action)
            if let value = parameter.flatMap(value) { details["parameter"] = value }
        case .none(let reason):
            details["reason"] = .string(reason)
        }
        return details
    }
}

extension Duration {
    /// Seconds as text, e.g. "2.5".
    var seconds: String {
        let (s, atto) = components
        let ms = s * 1000 + atto / 1_000_000_000_000_000
        return ms % 1000 == 0 ? "\(ms / 1000)" : "\(Double(ms) / 1000)"
    }
}
