import DBus
import FoundationEssentials
import WidgetHostCore

/// Providers, configuration and timelines (docs/timelines.md): the model's
/// `TimelineEngine` on the bus. The engine decides; this store calls the
/// providers (`GetTimeline`, a few of each app's at once, and
/// `ProvideOptions`), shows the entries the engine says are due, and keeps one
/// wall-clock timer armed for its next deadline.
///
/// A widget has a timeline when its app names a provider (`provider_path`, or
/// `X-WidgetHost-ProviderPath` in its desktop entry); other widgets show only
/// what `SetContent` gives them.
final class Timelines: Store {
    private var engine: TimelineEngine
    /// `GetTimeline` calls under way to each app's provider, and those waiting (`maxProviderCallsPerApp`).
    private var providerCalls: TurnLimiter<String, TimelineFetch>
    private let context: HostContext
    private let widgets: Widgets
    private let apps: any AppDirectory
    private let storage: Storage
    private let budgets: Budgets
    private let timers: Deadlines

    init(_ context: HostContext, widgets: Widgets, apps: any AppDirectory, storage: Storage, budgets: Budgets, timers: Deadlines) {
        self.context = context
        self.widgets = widgets
        self.apps = apps
        self.storage = storage
        self.budgets = budgets
        self.timers = timers
        engine = TimelineEngine(options: context.configuration.timelines)
        providerCalls = TurnLimiter(limit: context.configuration.maxProviderCallsPerApp)
    }

    /// Provider calls are an app's: one made to a connection that left ends
    /// with the error the bus answers it with, and a timeline keeps its
    /// entries until the app is back.
    func connectionLeft(_ connection: String) {}

    // MARK: What the servers ask for

    /// A widget's timeline's entries (none when it has no timeline).
    func entries(of id: String) -> [TimelineEntry] { engine.entries(of: id) }

    /// The widgets that have a timeline.
    var trackedCount: Int { engine.trackedCount }

    /// `ReloadTimelines(s app_id, s kind)` and `ReloadAllTimelines(s app_id)`,
    /// once the caller was found to hold the app's live registration: exempt
    /// from the budget.
    func reload(appID: String, kind: String?) {
        let ids = widgets.widgetIDs(appID: appID, kind: kind).filter { engine.isTracked($0) }
        for id in ids { requestReload(id, .appRequested) }
        context.logger.debug(
            "timelines reload requested", metadata: ["app": "\(appID)", "kind": "\(kind ?? "*")", "widgets": "\(ids.count)"])
    }

    /// `GetConfigurationOptions(s app_id, s kind, s parameter, a{sv} configuration) → a(ss)`:
    /// checked against the bundle, then forwarded to the app's `ProvideOptions`.
    func configurationOptions(
        _ appID: String, _ kindName: String, _ parameter: String, _ configuration: [String: DBusValue], _ reply: TypedReply<[(String, String)]>
    ) {
        do {
            let chosen = OptionValue.dictionary(configuration)
            try Validate.appID(appID)
            let kind = try widgets.requireKind(appID, kindName)
            try kind.requireDynamic(parameter, appID: appID)
            try WidgetStore.check(chosen, kind)
            let (destination, path) = try providerTarget(appID, doing: "provide options for '\(parameter)'")
            let provider = Provider1.Proxy(context.connection, destination: destination, path: path)
            let message = try provider.provideOptionsMessage(
                kind: kindName, parameter: parameter, configuration: chosen.mapValues(\.dbusValue))
            context.connection.send(message, timeout: context.configuration.providerTimeout) { result in
                do {
                    reply.succeed(try Self.options(from: result.get(), appID: appID))
                } catch {
                    reply.fail(Self.providerError(error, appID: appID, member: Provider1.Method.provideOptions))
                }
            }
        } catch {
            reply.fail(error)
        }
    }

    /// `Reload() → (s state, x date)`: a budgeted reload asked for on the widget object.
    func reloadWidget(_ id: String) throws -> (state: String, date: Int64) {
        let widget = try widgets.existing(id)
        guard engine.isTracked(id) else {
            throw HostError.invalidArgument(
                "widget \(id)'s app \(widget.appID) serves no timelines (no provider_path), so there is nothing to reload; its content comes from SetContent")
        }
        let decision = requestReload(id, .requested)
        switch decision {
        case .fetch?: return ("fetching", 0)
        case .coalesced?: return ("queued", 0)
        case .deferred(let until, let because)?: return (because.rawValue, UnixTime.milliseconds(until))
        case nil: return ("failed", 0)
        }
    }

    /// `DescribeTimeline() → a{sv}`: the engine's view of the widget (`widget-host timeline`).
    func describe(_ id: String) throws -> [String: DBusValue] {
        let widget = try widgets.existing(id)
        var out: [String: DBusValue] = ["tracked": .bool(false)]
        if let path = apps.app(widget.appID)?.options.providerPath { out["provider_path"] = .objectPath(path) }
        guard let snapshot = engine.snapshot(widgetID: id, now: context.now) else { return out }
        func ms(_ date: Date?) -> DBusValue { .int64(date.map(UnixTime.milliseconds) ?? 0) }
        out["tracked"] = .bool(true)
        out["entries"] = .array(
            element: "(xs)", snapshot.entries.map { .structure([.int64($0.unixMs), .string($0.content.json)]) })
        out["current"] = .int32(Int32(snapshot.currentIndex ?? -1))
        out["policy"] = .string(snapshot.policy?.name ?? "")
        if case .after(let at)? = snapshot.policy { out["reload_at"] = .int64(at) }
        out["received"] = ms(snapshot.timelineReceivedAt)
        out["next_entry"] = ms(snapshot.nextEntryDate)
        if let next = snapshot.nextReload {
            out["next_reload"] = ms(next.date)
            out["next_reload_reason"] = .string(next.reason.rawValue)
            out["waits_for_budget"] = .bool(next.waitsForBudget)
        }
        if let fetch = snapshot.fetchInFlight {
            out["fetching"] = .string(fetch.reason.rawValue)
            out["fetch_started"] = ms(snapshot.fetchStartedAt)
        }
        if let queued = snapshot.reloadQueued { out["queued"] = .string(queued.rawValue) }
        out["budget_limit"] = .uint32(UInt32(snapshot.budgetLimit))
        out["budget_used"] = .uint32(UInt32(snapshot.budgetUsed))
        out["budget_left"] = .uint32(UInt32(snapshot.budgetLeft))
        if let frees = snapshot.budgetFreesAt { out["budget_frees_at"] = ms(frees) }
        out["failures"] = .uint32(UInt32(snapshot.consecutiveFailures))
        if let failure = snapshot.lastFailure {
            out["last_failure"] = .string(failure.message)
            out["last_failure_at"] = ms(failure.date)
            out["last_failure_reason"] = .string(failure.reason.rawValue)
        }
        return out
    }

    // MARK: Driving the engine

    /// Starts the timeline of a widget just placed, when its app has a provider.
    func placed(_ id: String) {
        guard let widget = widgets.widget(id), apps.app(widget.appID)?.options.providerPath != nil else { return }
        engine.track(widgetID: id)
        requestReload(id, .added)
    }

    /// A widget went: its timeline goes.
    func gone(_ id: String) {
        if engine.untrack(widgetID: id) { rearm() }
    }

    /// After `RegisterApp` or a desktop-entry scan: the app's widgets get a
    /// timeline once it names a provider; those whose fetches were failing
    /// (the app was gone) are asked again now rather than at the next retry.
    func providerMayHaveChanged(_ appID: String) {
        guard apps.app(appID)?.options.providerPath != nil else { return }
        let now = context.now
        for id in widgets.widgetIDs(appID: appID) {
            if engine.track(widgetID: id) {
                requestReload(id, .added)
            } else if let snapshot = engine.snapshot(widgetID: id, now: now), snapshot.consecutiveFailures > 0,
                snapshot.fetchInFlight == nil
            {
                requestReload(id, .requested)
            }
        }
    }

    /// Asks the engine for a reload and starts the fetch it allows.
    @discardableResult
    func requestReload(_ id: String, _ reason: ReloadReason) -> ReloadDecision? {
        guard let widget = widgets.widget(id), engine.isTracked(id) else { return nil }
        let live = apps.app(widget.appID)?.registeredBy != nil
        let decision: ReloadDecision
        do {
            decision = try engine.requestReload(widgetID: id, reason: reason, appIsLive: live, now: context.now)
        } catch {
            context.logger.error("timeline reload refused: \(error)", metadata: ["widget": "\(id)"])
            return nil
        }
        switch decision {
        case .fetch(let fetch): startFetch(fetch)
        case .deferred(let until, let because):
            context.logger.debug(
                "timeline reload deferred", metadata: ["widget": "\(id)", "until": "\(until)", "because": "\(because.rawValue)"])
        case .coalesced: break
        }
        rearm()
        return decision
    }

    /// Calls the provider's `GetTimeline` for one fetch the engine started —
    /// now, or once fewer than `maxProviderCallsPerApp` of the app's are under
    /// way (the engine coalesces later reloads of the widget with it meanwhile).
    private func startFetch(_ fetch: TimelineFetch) {
        guard let widget = widgets.widget(fetch.widgetID), providerCalls.admit(fetch, for: widget.appID) else { return }
        callProvider(fetch, widget)
    }

    /// A `GetTimeline` of `appID` is over: the next fetch waiting for one of
    /// its turns starts, skipping those of widgets gone or reloaded meanwhile.
    private func providerCallEnded(_ appID: String) {
        while let next = providerCalls.finished(appID) {
            if engine.isAwaiting(next), let widget = widgets.widget(next.widgetID) {
                return callProvider(next, widget)
            }
        }
    }

    private func callProvider(_ fetch: TimelineFetch, _ widget: PlacedWidget) {
        do {
            let (destination, path) = try providerTarget(widget.appID, doing: "provide a timeline")
            let context: [String: DBusValue] = ["widget_id": .string(widget.id), "reason": .string(fetch.reason.rawValue)]
            let message = try Provider1.Proxy(self.context.connection, destination: destination, path: path).getTimelineMessage(
                kind: widget.kind, family: widget.family.rawValue, configuration: widget.configuration.mapValues(\.dbusValue),
                context: context)
            let appID = widget.appID
            // The answer arrives on the connection's thread.
            let timelines = Confined(self, on: self.context.connection)
            self.context.connection.send(message, timeout: self.context.configuration.providerTimeout) { result in
                timelines.run { $0.fetchAnswered(fetch, appID: appID, result) }
            }
        } catch {
            providerCallEnded(widget.appID)
            fetchFailed(fetch, Self.providerError(error, appID: widget.appID, member: .getTimeline).message)
        }
    }

    private func fetchAnswered(_ fetch: TimelineFetch, appID: String, _ result: Result<Message, any Error>) {
        providerCallEnded(appID)
        do {
            let message = try result.get()
            let answer = try Self.answer(message, of: .getTimeline, by: appID, Provider1.Proxy.getTimelineResult)
            let entries = answer.entries
            let options = engine.options
            let timeline = try Timeline.parse(
                entries: entries, policy: answer.policy, reloadAtMs: answer.reloadAt, limits: options.contentLimits,
                maxEntries: options.maxEntries)
            let arrived = context.now
            guard engine.isAwaiting(fetch) else { return }
            // Charged with the entries as sent: the engine keeps those from the one due now on.
            guard let widget = widgets.widget(fetch.widgetID) else { return }
            let bytes = try budgets.check(widget, entries: timeline.entries)
            storage.persistQuietly([.timeline(StoredTimeline(widgetID: fetch.widgetID, timeline: timeline, receivedAt: arrived))])
            let effects = engine.fetchSucceeded(fetch, timeline: timeline, now: arrived)
            budgets.charge(widget.id, appID: widget.appID, bytes: bytes)
            context.logger.debug(
                "timeline received", metadata: ["widget": "\(fetch.widgetID)", "entries": "\(entries.count)", "reason": "\(fetch.reason.rawValue)"])
            apply(effects)
        } catch {
            fetchFailed(fetch, Self.providerError(error, appID: appID, member: .getTimeline).message)
        }
        rearm()
    }

    private func fetchFailed(_ fetch: TimelineFetch, _ message: String) {
        context.logger.warning("timeline fetch failed: \(message)", metadata: ["widget": "\(fetch.widgetID)", "reason": "\(fetch.reason.rawValue)"])
        apply(engine.fetchFailed(fetch, error: message, now: context.now))
        rearm()
    }

    private func apply(_ effects: [TimelineEffect]) {
        for effect in effects {
            switch effect {
            case .show(let id, let content): widgets.show(id, content)
            case .fetch(let fetch): startFetch(fetch)
            }
        }
    }

    /// Where the app's provider is: its live registration, else its well-known
    /// name, so that the bus starts a freedesktop app that is not running.
    private func providerTarget(_ appID: String, doing what: String) throws(HostError) -> (destination: String, path: String) {
        guard let app = apps.app(appID) else {
            throw .activationFailed("\(appID) is not running and has no desktop entry, so it cannot \(what)")
        }
        guard let path = app.options.providerPath else {
            throw .activationFailed(
                "\(appID) serves no org.widgethost.Provider1, so it cannot \(what); the app names one with RegisterApp's provider_path or X-WidgetHost-ProviderPath in its desktop entry")
        }
        return (app.registeredBy ?? appID, path)
    }

    static func options(from message: Message, appID: String) throws -> [(String, String)] {
        let items = try answer(message, of: .provideOptions, by: appID, Provider1.Proxy.provideOptionsResult)
        guard items.count <= 1000 else {
            throw HostError.activationFailed("\(appID)'s ProvideOptions returned \(items.count) choices; the limit is 1000")
        }
        guard items.allSatisfy({ !$0.0.isEmpty }) else {
            throw HostError.activationFailed("\(appID)'s ProvideOptions returned a choice with an empty identifier")
        }
        return items
    }

    /// A provider's answer decoded, or ActivationFailed saying what it
    /// answered and what it must return.
    static func answer<T>(
        _ message: Message, of member: Provider1.Method, by appID: String, _ decode: (Message) throws -> T
    ) throws -> T {
        let signature = Provider1.description.method(member.rawValue)?.outSignature ?? "?"
        guard message.signature == signature, let value = try? decode(message) else {
            throw HostError.activationFailed("\(appID)'s \(member.rawValue) answered with '\(message.signature)'; it must return \(signature)")
        }
        return value
    }

    /// A failed provider call as `ActivationFailed` naming the app, its error, or the timeout.
    static func providerError(_ error: any Error, appID: String, member: Provider1.Method) -> HostError {
        let member = member.rawValue
        switch error {
        case let error as HostError:
            return error
        case let error as DBusError where error.name == DBusError.noReplyName:
            return .activationFailed("\(appID) did not answer \(member) within the provider timeout (widget-hostd --provider-timeout)")
        case let error as DBusError:
            return .activationFailed("\(appID) answered \(member) with \(error.name): \(error.message)")
        default:
            return .activationFailed("calling \(appID)'s \(member) failed: \(error)")
        }
    }

    // MARK: The timer

    private func rearm() {
        timers.arm(.timelines, at: engine.nextDeadline())
    }

    func deadlinePassed() {
        apply(engine.advance(to: context.now))
        rearm()
    }

    // MARK: Durable state (see DurableModel.swift)

    /// Puts back the timelines stored of widgets still placed, and shows what is due.
    func restore(_ stored: [String: StoredTimeline]) {
        var effects: [TimelineEffect] = []
        for stored in stored.values where widgets.widget(stored.widgetID) != nil {
            do {
                let timeline = try stored.timeline(limits: context.configuration.timelines.contentLimits)
                effects += engine.restore(widgetID: stored.widgetID, timeline: timeline, receivedAt: UnixTime.date(stored.receivedAt))
            } catch {
                context.logger.warning("stored timeline of widget \(stored.widgetID) skipped: \(error)")
            }
        }
        apply(effects)
    }

    /// Writes the timelines received into a snapshot.
    func store(into image: inout DurableState) {
        let now = context.now
        for id in engine.trackedWidgetIDs {
            guard let snapshot = engine.snapshot(widgetID: id, now: now), let policy = snapshot.policy,
                let received = snapshot.timelineReceivedAt
            else { continue }
            image.timelines[id] = StoredTimeline(
                widgetID: id, timeline: Timeline(entries: snapshot.entries, policy: policy), receivedAt: received)
        }
    }
}
