import DBus
import FoundationEssentials
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
    /// `org.widgethost.source`.
    var source: TapSource
    /// `org.widgethost.deadline`: Unix milliseconds after which the host no
    /// longer waits for the answer, so the app should drop the delivery.
    var deadline: Int64 = 0

    /// The call to make, or nil when there is nothing to deliver.
    func message(on connection: Connection) throws -> Message? {
        // docs/delivery.md: the token travels with every delivery of a tap that gave one;
        // for a control's action the app is told not to raise itself (App1 docs).
        var platformData = Context(source: source, deadline: deadline, activationToken: activationToken.flatMap { $0.isEmpty ? nil : $0 })
        // A toggle's new state travels beside its parameter, whichever the protocol.
        if case .performAction(_, _, let toggleIsOn) = outcome { platformData.toggleIsOn = toggleIsOn }
        // Only the proxy the delivery uses is made.
        var application: FreedesktopApplication.Proxy { .init(connection, destination: destination, path: options.objectPath) }
        var app1: App1.Proxy { .init(connection, destination: destination, path: options.objectPath) }
        switch (options.appProtocol, outcome) {
        case (_, .none):
            return nil
        case (.freedesktop, .openURL(let url, _)):
            return try application.openMessage(uris: [url], platformData: platformData)
        case (.freedesktop, .continueUserActivity(let type, let info)):
            let userInfo = DBusValue.vardict(info.mapValues(\.dbusValue))
            if let action = options.userActivityAction {
                return try application.activateActionMessage(
                    actionName: action, parameter: [.structure([.string(type), userInfo])], platformData: platformData)
            }
            platformData.userActivity = .vardict(["activity_type": .string(type), "user_info": userInfo])
            return try application.activateMessage(platformData: platformData)
        case (.freedesktop, .performAction(let action, let parameter, _)):
            // av: each element is a variant's content.
            let parameters = parameter.flatMap(Self.value).map { [$0] } ?? []
            return try application.activateActionMessage(actionName: action, parameter: parameters, platformData: platformData)
        case (.widgethost, .openURL(let url, _)):
            return try app1.openURLMessage(url: url, context: platformData)
        case (.widgethost, .continueUserActivity(let type, let info)):
            return try app1.continueUserActivityMessage(activityType: type, userInfo: info.mapValues(\.dbusValue), context: platformData)
        case (.widgethost, .performAction(let action, let parameter, _)):
            let value = parameter.flatMap(Self.value) ?? .array(element: "v", [])
            return try app1.performActionMessage(action: action, parameter: value, context: platformData)
        }
    }

    /// `org.widgethost.source` (docs/delivery.md): what was tapped, written
    /// straight into the delivery, its keys in increasing order as a
    /// dictionary's are (a dictionary built for it cost an allocation, a hash
    /// of each key and a sort, on every tap).
    struct TapSource: VardictWritable, Sendable {
        enum Tapped: Sendable {
            case widget(id: String, kind: String, family: String)
            case activity(id: String, attributesType: String, presentation: String)
            /// `Apps.OpenURL`: no tap, only `via`.
            case nothing
        }
        var tapped: Tapped
        var elementID: String?
        var surface: Surface?
        var via: TapVia?

        func writeEntries(to writer: inout MessageWriter) throws {
            func entry(_ key: String, _ value: String?) throws {
                guard let value else { return }
                try writer.appendEntry(key, "s") { try $0.append(value) }
            }
            switch tapped {
            case .widget(let id, let kind, let family):
                try entry("element_id", elementID)
                try entry("family", family)
                try entry("kind", kind)
                try entry("surface", surface?.rawValue)
                try entry("via", via?.rawValue)
                try entry("widget_id", id)
            case .activity(let id, let attributesType, let presentation):
                try entry("activity_id", id)
                try entry("attributes_type", attributesType)
                try entry("element_id", elementID)
                try entry("presentation", presentation)
                try entry("surface", surface?.rawValue)
                try entry("via", via?.rawValue)
            case .nothing:
                try entry("via", via?.rawValue)
            }
        }
    }

    /// `platform_data` or `context` (a{sv}), written straight into the call:
    /// built as a dictionary, with the source as a tree inside it, it cost a
    /// dozen allocations a tap.
    struct Context: VardictWritable {
        var source: TapSource
        var deadline: Int64
        var activationToken: String?
        /// `org.widgethost.toggle-is-on`, for a toggle's action: the state the
        /// tap turns it to, beside the parameter the toggle gives as is.
        var toggleIsOn: Bool?
        /// `org.widgethost.user-activity`, for a user activity delivered by `Activate`.
        var userActivity: DBusValue?

        /// In increasing key order, as a dictionary is written.
        func writeEntries(to writer: inout MessageWriter) throws {
            if let token = activationToken {
                try writer.appendEntry("activation-token", "s") { try $0.append(token) }
                try writer.appendEntry("desktop-startup-id", "s") { try $0.append(token) }
            }
            if deadline > 0 { try writer.appendEntry("org.widgethost.deadline", "x") { try $0.append(deadline) } }
            try writer.appendEntry("org.widgethost.source", "a{sv}") { try $0.appendVardict(source) }
            if let toggleIsOn { try writer.appendEntry("org.widgethost.toggle-is-on", "b") { try $0.append(toggleIsOn) } }
            if let userActivity {
                try writer.appendDictEntry { entry in
                    try entry.append("org.widgethost.user-activity")
                    try entry.appendVariant(userActivity)
                }
            }
        }
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
    /// `timedOut` says the app left it unanswered for the whole delivery
    /// timeout; `untilRenderersDeadline` says `timeout` is only what was left
    /// of the tap's deadline, which a slow app may miss without being silent.
    func perform(
        on connection: Connection, timeout: Duration, untilRenderersDeadline: Bool, completion: @escaping @Sendable (HostError?, _ timedOut: Bool) -> Void
    ) {
        let message: Message?
        do { message = try self.message(on: connection) } catch {
            return completion(.activationFailed("could not build the delivery to \(appID): \(error)"), false)
        }
        guard let message else { return completion(nil, false) }
        let member = message.member ?? "?"
        let appID = self.appID
        connection.send(message, timeout: timeout) { result in
            switch result {
            case .success:
                completion(nil, false)
            case .failure(let error as DBusError) where error.name == DBusError.noReplyName:
                let limit = untilRenderersDeadline ? "before the tap's deadline, when its renderer stopped waiting" : "(the delivery timeout)"
                completion(.activationFailed("\(appID) did not answer \(member) within \(timeout.seconds) s \(limit)"), !untilRenderersDeadline)
            case .failure(let error as DBusError):
                completion(.activationFailed("\(appID) answered \(member) with \(error.name): \(error.message)"), false)
            case .failure(let error):
                completion(.activationFailed("delivering \(member) to \(appID) failed: \(error)"), false)
            }
        }
    }

    /// The `a{sv}` details of a resolution.
    static func details(appID: String, _ resolution: TapResolution) -> [String: DBusValue] {
        // Room for the keys added below, and for `error` later: one allocation, not one per growth.
        var details = [String: DBusValue](minimumCapacity: resolution.details.count + 6)
        for (key, value) in resolution.details { details[key] = value.dbusValue }
        details["app_id"] = .string(appID)
        details["diagnostics"] = .strings(resolution.diagnostics.map(\.rawValue))
        switch resolution.outcome {
        case .openURL(let url, let via):
            details["url"] = .string(url)
            details["via"] = .string(via.rawValue)
        case .continueUserActivity(let type, let info):
            details["activity_type"] = .string(type)
            details["user_info"] = .vardict(info.mapValues(\.dbusValue))
        case .performAction(let action, let parameter, let toggleIsOn):
            details["action"] = .string(action)
            if let value = parameter.flatMap(value) { details["parameter"] = value }
            if let toggleIsOn { details["toggle_is_on"] = .bool(toggleIsOn) }
        case .none(let reason):
            details["reason"] = .string(reason.rawValue)
        }
        return details
    }
}

extension Duration {
    /// In seconds.
    var timeInterval: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }

    /// Seconds as text, e.g. "2.5".
    var seconds: String {
        let (s, atto) = components
        let ms = s * 1000 + atto / 1_000_000_000_000_000
        return ms % 1000 == 0 ? "\(ms / 1000)" : "\(Double(ms) / 1000)"
    }
}

extension Delivery {
    /// Tap options (`TapOptions`, declared in Widget.Tap's XML), read as
    /// given: a tap converts nothing it does not use.
    static func tapOptions(_ options: [String: DBusValue]) throws(HostError) -> (surface: Surface, token: String?, deadline: Int64?) {
        guard !options.isEmpty else { return (.desktop, nil, nil) }
        let parsed = try TapOptions(options, as: OptionValue.init)
        guard let surface = Surface(rawValue: parsed.surface) else {
            throw .invalidArgument("option 'surface' is '\(Validate.prefix(parsed.surface))'; use one of \(Surface.allowedList)")
        }
        return (surface, parsed.activationToken, parsed.deadline)
    }

    /// The error of a tap read `late` milliseconds after its renderer's
    /// deadline, which reaches nobody (docs/delivery.md#the-renderers-deadline).
    static func late(_ late: Int64) -> HostError {
        .activationFailed(
            "the tap's deadline (option 'deadline') passed \(Duration.milliseconds(late).seconds) s before WidgetHost read it, so nothing was delivered: its renderer had stopped waiting; tap again")
    }
}

/// Taps on their way to apps (docs/delivery.md): the per-app limit on those
/// waiting for an answer (the model's `DeliveryGate`), the probe of an app
/// that left one unanswered, and `Tapped`.
final class Deliveries: Store {
    private var gate: DeliveryGate
    private let context: HostContext

    init(_ context: HostContext) {
        self.context = context
        gate = DeliveryGate(maxPendingPerApp: context.configuration.maxPendingDeliveriesPerApp)
    }

    /// Deliveries are an app's, and one waiting on a connection that left
    /// ends with the error the bus answers it with (docs/delivery.md).
    func connectionLeft(_ connection: String) {}

    /// Answers a resolved tap: at once for Resolve, else after delivering it
    /// to the app (docs/delivery.md), then emits `Tapped` for `target` and
    /// runs `afterAction` (given for a control's action) on the connection's thread.
    func deliverTap(
        _ target: String, _ resolution: TapResolution, app: KnownApp, token: String?, deadline: Int64?, source: Delivery.TapSource,
        reply: TapReply, deliver: Bool, afterAction: (@Sendable () -> Void)? = nil
    ) {
        let details = Delivery.details(appID: app.id, resolution)
        guard deliver else { return reply.succeed((resolution.outcome.name.rawValue, details)) }
        // A tap its renderer stopped waiting for reaches nobody, and is not announced.
        let now = context.now
        if let late = TapDeadline.late(deadline, now: now) { return reply.fail(Delivery.late(late)) }
        var source = source
        if case .openURL(_, let via) = resolution.outcome { source.via = via }
        let delivery = Delivery(
            appID: app.id, options: app.options, destination: app.deliveryDestination, outcome: resolution.outcome,
            activationToken: token, source: source)
        // The delivery's answer arrives on the connection's thread.
        self.deliver(delivery, renderersDeadline: deadline, now: now) { [context] error in
            var details = details
            if let error { details["error"] = .string(error.message) }
            // The reply and the signal are each written straight from the details.
            let outcome = resolution.outcome.name.rawValue
            if let error { reply.fail(error) } else { reply.succeed((outcome, details)) }
            let tapped = Host1Widgets.Tapped(target: target, outcome: outcome, details: details)
            context.emitting(Host1Widgets.Signal.tapped.rawValue) { try tapped.emit(on: $0, path: Host1Widgets.objectPath) }
            afterAction?()
        }
    }

    /// Sends a delivery unless its app already has `maxPendingDeliveriesPerApp`
    /// waiting for an answer, or left one unanswered (``DeliveryGate``): a
    /// flood of taps for one app that does not keep up is refused at once
    /// instead of piling up in the host.
    /// A tap's delivery waits for the app at most until `renderersDeadline`
    /// (the tap's `deadline`, which was not passed at `now`), when that comes
    /// before the delivery timeout.
    func deliver(
        _ delivery: consuming Delivery, renderersDeadline: Int64? = nil, now: Date? = nil, completion: @escaping @Sendable (HostError?) -> Void
    ) {
        // An outcome of `none` sends nothing, so no limit on sending applies to it.
        if case .none = delivery.outcome { return completion(nil) }
        let appID = delivery.appID
        switch gate.admit(appID) {
        case .send: break
        case .refuse(let error): return completion(error)
        case .refuseAndProbe(let error):
            probe(appID, at: delivery.destination)
            return completion(error)
        }
        // How long the app is waited for: the delivery timeout, or less when
        // the tap's renderer stops waiting first.
        let wait = TapDeadline.wait(renderersDeadline, now: now ?? context.now, timeout: context.configuration.deliveryTimeout.timeInterval)
        // The caller's delivery, taken over: setting its deadline copies nothing.
        delivery.deadline = wait.deadline
        // The answer arrives on the connection's thread.
        let destination = delivery.destination
        let deliveries = Confined(self, on: context.connection)
        delivery.perform(on: context.connection, timeout: .milliseconds(wait.milliseconds), untilRenderersDeadline: wait.renderers) { error, timedOut in
            deliveries.run { deliveries in
                if deliveries.gate.ended(appID, timedOut: timedOut) { deliveries.probe(appID, at: destination) }
            }
            completion(error)
        }
    }

    /// Asks an app that left a delivery unanswered whether it answers again
    /// (`org.freedesktop.DBus.Peer.Ping`, which every D-Bus library answers by
    /// itself and which does nothing if it arrives late). Until it does, no
    /// delivery is sent to it: what a stopped app would find waiting when it
    /// resumes are taps whose callers were told long ago that they failed.
    private func probe(_ appID: String, at destination: String) {
        do {
            let ping = try Message.methodCall(destination: destination, path: "/", interface: StandardInterfaces.peer, member: StandardInterfaces.ping)
            let deliveries = Confined(self, on: context.connection)
            context.connection.send(ping, timeout: context.configuration.deliveryTimeout) { result in
                deliveries.run { deliveries in
                    switch result {
                    case .failure(let error as DBusError) where error.name == DBusError.noReplyName:
                        // Still silent: the next delivery asks again.
                        deliveries.gate.probeAnswered(appID, stillSilent: true)
                    default:
                        // It answered, or it is gone and the next delivery starts it anew.
                        deliveries.gate.probeAnswered(appID, stillSilent: false)
                        deliveries.context.logger.info("the app answers deliveries again", metadata: ["app": "\(appID)"])
                    }
                }
            }
        } catch {
            gate.probeAnswered(appID, stillSilent: false)
        }
    }
}
