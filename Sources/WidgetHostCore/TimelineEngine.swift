#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The timelines of placed widgets (docs/timelines.md) as a pure, clock-driven state machine.
///
/// The engine decides; the service acts. It never reads a clock, starts a timer
/// or calls anything: every method takes the current date, and the answers say
/// what to do — show an entry's content, or fetch a timeline from the app's
/// `org.widgethost.Provider1.GetTimeline`. The same calls with the same dates
/// always give the same answers.
///
/// ## How the service drives it
/// 1. When a widget is placed: ``track(widgetID:)``, then
///    ``requestReload(widgetID:reason:appIsLive:now:)`` with ``ReloadReason/added``.
///    Likewise ``ReloadReason/configured`` after `Configure`, ``ReloadReason/action``
///    after each `perform-action`, ``ReloadReason/appRequested`` for every widget
///    that `ReloadTimelines`/`ReloadAllTimelines` names. On `Remove`: ``untrack(widgetID:)``.
/// 2. For each ``TimelineFetch`` (from a ``ReloadDecision/fetch(_:)`` or a
///    ``TimelineEffect/fetch(_:)``): call `GetTimeline`; on a reply, call
///    ``fetchSucceeded(_:entries:policy:reloadAtMs:now:)``; if that throws, or
///    the call fails or times out, call ``fetchFailed(_:error:now:)``.
/// 3. Perform the returned effects in order.
/// 4. After every call, arm one timer for ``nextDeadline()``; when it fires,
///    call ``advance(to:)`` and go to 3.
///
/// ## Entries
/// A new timeline replaces the previous one. Its entries are sorted by date
/// (stably); of entries with the same date the one sent last wins. The latest
/// entry whose date is not after the arrival is shown at once and earlier ones
/// are dropped; each later entry is shown from its date on. When several
/// entries fall due between two ``advance(to:)`` calls, only the latest is shown.
/// Until the first entry is due — and for an empty timeline — the widget keeps
/// what it showed before.
///
/// ## Policies
/// A policy reload is planned when a timeline arrives: `at-end` at the last
/// entry's date (at the arrival for an empty timeline), `after` at `reload_at`,
/// `never` not at all — each no sooner than ``TimelineOptions/minimumReloadInterval``
/// after the arrival. So `after` with a `reload_at` in the past means "as soon
/// as allowed", not a busy loop.
///
/// ## Budget
/// See ``ReloadReason`` for which reloads are budgeted. A budgeted fetch takes
/// a slot when it starts; the window slides: a slot taken at *t* is free again
/// at *t* + ``TimelineOptions/budgetWindow``. A budgeted reload that finds no
/// slot (a request, a due policy, a retry) waits until one frees; while one
/// waits, further budgeted requests join it. An exempt request always runs.
///
/// ## Coalescing
/// A widget has at most one fetch in flight. Requests meanwhile are remembered
/// as one follow-up reload (exempt if any of them was) that is handled as a new
/// request when the fetch ends. A fetch starting replaces any planned reload:
/// its timeline brings a new plan.
///
/// ## Failures
/// A failed fetch leaves the content and entries untouched and gives its budget
/// slot back — nothing was obtained — and a retry follows after
/// ``TimelineOptions/retryInitialDelay``, doubling with each consecutive
/// failure up to ``TimelineOptions/retryMaximumDelay``; retries go on at that
/// pace until one succeeds, which resets the count, or the widget is untracked. A retry is paced by the
/// backoff and takes a slot only if the failed reload was budgeted (so a reload
/// counts once, when it delivers). During the backoff, budgeted requests join
/// the retry; exempt ones run at once.
///
/// ## Cost
/// Deadlines live in a binary heap with lazy invalidation, so ``advance(to:)``
/// touches only widgets with a deadline that passed — O(k log n) for k of n
/// widgets — and ``nextDeadline()`` is O(1). Stale heap items are discarded
/// when they surface, and the heap is rebuilt when they outnumber live ones.
public struct TimelineEngine: Sendable {
    /// The options in force (raised to valid values; see ``TimelineOptions/validate()``).
    public let options: TimelineOptions

    private let limits: TimelineLimits
    private var states: [String: WidgetState] = [:]
    private var heap = DeadlineHeap<String>()
    /// Widgets with a deadline in the heap.
    private var armedCount = 0
    private var lastSequence: UInt64 = 0
    private var lastFetchID: UInt64 = 0
    /// Work done, for tests to check that advancing stays proportional to what is due.
    private(set) var counters = Counters()

    struct Counters: Sendable, Equatable {
        /// Heap items popped by `advance`, stale or not.
        var popped = 0
        /// Widgets `advance` processed.
        var processed = 0
        /// Stale items discarded anywhere.
        var staleDiscarded = 0
        /// Heap rebuilds.
        var rebuilds = 0
    }

    /// Creates an engine tracking no widgets. Options out of range are raised to
    /// the nearest valid value (a budget of at least 1, delays of at least 1 ms).
    public init(options: TimelineOptions = TimelineOptions()) {
        var options = options
        options.dailyBudget = max(1, options.dailyBudget)
        options.maxEntries = max(1, options.maxEntries)
        let retryInitial = UnixTime.milliseconds(seconds: options.retryInitialDelay, minimum: 1)
        limits = TimelineLimits(
            budget: options.dailyBudget,
            window: UnixTime.milliseconds(seconds: options.budgetWindow, minimum: 1),
            minimumInterval: UnixTime.milliseconds(seconds: options.minimumReloadInterval, minimum: 0),
            retryInitial: retryInitial,
            retryMaximum: UnixTime.milliseconds(seconds: options.retryMaximumDelay, minimum: retryInitial))
        self.options = options
    }

    // MARK: Widgets

    /// How many widgets are tracked.
    public var trackedCount: Int { states.count }

    /// The tracked widgets' ids, sorted.
    public var trackedWidgetIDs: [String] { states.keys.sorted() }

    /// Whether `widgetID` is tracked.
    public func isTracked(_ widgetID: String) -> Bool { states[widgetID] != nil }

    /// Starts tracking a widget with no timeline, nothing planned and an empty
    /// budget window. Asks for nothing: follow with a request for ``ReloadReason/added``.
    ///
    /// - Returns: `false` (and changes nothing) when the widget is already tracked.
    @discardableResult
    public mutating func track(widgetID: String) -> Bool {
        guard states[widgetID] == nil else { return false }
        states[widgetID] = WidgetState()
        return true
    }

    /// Forgets a widget: its entries, plans, queued reload, budget and failures.
    /// A result for its fetch in flight is ignored when it arrives, even if the
    /// widget is tracked again meanwhile.
    ///
    /// - Returns: `false` when the widget was not tracked.
    @discardableResult
    public mutating func untrack(widgetID: String) -> Bool {
        guard let state = states.removeValue(forKey: widgetID) else { return false }
        if state.armed != nil { armedCount -= 1 }
        settle()
        return true
    }

    // MARK: Reloads

    /// Asks for a widget's timeline to be reloaded.
    ///
    /// - Parameters:
    ///   - reason: ``ReloadReason/added``, ``ReloadReason/configured``,
    ///     ``ReloadReason/appRequested`` or ``ReloadReason/action``.
    ///   - appIsLive: whether the widget's app holds a live registration; makes an
    ///     ``ReloadReason/appRequested`` reload exempt from the budget.
    ///   - now: the current date.
    /// - Returns: ``ReloadDecision/fetch(_:)`` to start now; ``ReloadDecision/coalesced(with:)``
    ///   when a fetch is in flight (one more follows it); ``ReloadDecision/deferred(until:because:)``
    ///   when a budgeted reload must wait for a budget slot or for the pending retry —
    ///   the engine then emits the fetch from ``advance(to:)``.
    /// - Throws: `InvalidArgument` for an untracked widget, or for the reasons
    ///   ``ReloadReason/policy`` and ``ReloadReason/retry``, which only the engine uses.
    public mutating func requestReload(widgetID: String, reason: ReloadReason, appIsLive: Bool, now: Date) throws(HostError)
        -> ReloadDecision
    {
        guard reason.isRequestable else {
            throw .invalidArgument(
                "'\(reason.rawValue)' reloads come from the timeline engine itself; request added, configured, app-requested or action")
        }
        guard states[widgetID] != nil else {
            throw .invalidArgument("no widget \(widgetID) is tracked for timelines; track it when it is placed")
        }
        let nowMs = UnixTime.milliseconds(now)
        lastFetchID += 1
        let decision = states[widgetID]!.request(
            reason: reason, budgeted: !reason.isBudgetExempt(appIsLive: appIsLive), now: nowMs, limits: limits,
            fetch: TimelineFetch(id: lastFetchID, widgetID: widgetID, reason: reason))
        rearm(widgetID)
        settle()
        return decision
    }

    /// Whether `fetch` is the widget's fetch in flight, whose result the engine waits for.
    public func isAwaiting(_ fetch: TimelineFetch) -> Bool {
        states[fetch.widgetID]?.inFlight?.fetch.id == fetch.id
    }

    /// Validates a `GetTimeline` reply and applies it with ``fetchSucceeded(_:timeline:now:)``.
    ///
    /// Validation is ``Timeline/parse(entries:policy:reloadAtMs:limits:maxEntries:)``
    /// with ``options``. When it throws, the engine is unchanged — the fetch is
    /// still in flight — and the service reports the error with ``fetchFailed(_:error:now:)``.
    ///
    /// - Parameters:
    ///   - fetch: the fetch this reply answers.
    ///   - entries: `(Unix ms, content JSON)` as sent.
    ///   - policy: `at-end`, `after` or `never`.
    ///   - reloadAtMs: the reply's `reload_at`.
    ///   - now: the current date.
    /// - Returns: the effects, as for ``fetchSucceeded(_:timeline:now:)``.
    /// - Throws: `InvalidArgument` for the policy; `InvalidContent` (or `LimitExceeded`)
    ///   naming the bad entry's index and date; `LimitExceeded` for too many entries.
    public mutating func fetchSucceeded(
        _ fetch: TimelineFetch, entries: [(Int64, String)], policy: String, reloadAtMs: Int64, now: Date
    ) throws(HostError) -> [TimelineEffect] {
        let timeline = try Timeline.parse(
            entries: entries, policy: policy, reloadAtMs: reloadAtMs, limits: options.contentLimits, maxEntries: options.maxEntries)
        return fetchSucceeded(fetch, timeline: timeline, now: now)
    }

    /// Applies a timeline the provider returned.
    ///
    /// The timeline replaces the previous one (see the type's discussion for how
    /// entries and policies are handled), the failure count resets, and a reload
    /// queued during the fetch is handled as a request made `now`.
    ///
    /// - Returns: ``TimelineEffect/show(widgetID:content:)`` when an entry is due
    ///   now, then ``TimelineEffect/fetch(_:)`` when a queued reload starts. Nothing,
    ///   and no change, when the engine no longer waits for `fetch` (the widget
    ///   was untracked, or this is not its fetch in flight).
    public mutating func fetchSucceeded(_ fetch: TimelineFetch, timeline: Timeline, now: Date) -> [TimelineEffect] {
        guard states[fetch.widgetID]?.inFlight?.fetch.id == fetch.id else { return [] }
        lastFetchID += 1
        let effects = states[fetch.widgetID]!.succeed(
            timeline, now: UnixTime.milliseconds(now), limits: limits, widgetID: fetch.widgetID, nextFetchID: lastFetchID)
        rearm(fetch.widgetID)
        settle()
        return effects
    }

    /// Records that a fetch failed: the call failed or timed out, or its reply was invalid.
    ///
    /// The content and entries stay as they are; the fetch's budget slot is given
    /// back; a retry is planned after the backoff delay. A reload queued during
    /// the fetch is handled as a request made `now`: an exempt one starts at
    /// once, a budgeted one joins the retry.
    ///
    /// - Parameters:
    ///   - fetch: the fetch that failed.
    ///   - error: what went wrong, for ``TimelineSnapshot/lastFailure``.
    ///   - now: the current date.
    /// - Returns: ``TimelineEffect/fetch(_:)`` when a queued exempt reload starts;
    ///   nothing, and no change, when the engine no longer waits for `fetch`.
    public mutating func fetchFailed(_ fetch: TimelineFetch, error: String, now: Date) -> [TimelineEffect] {
        guard states[fetch.widgetID]?.inFlight?.fetch.id == fetch.id else { return [] }
        lastFetchID += 1
        let effects = states[fetch.widgetID]!.fail(
            message: error, now: UnixTime.milliseconds(now), limits: limits, widgetID: fetch.widgetID, nextFetchID: lastFetchID)
        rearm(fetch.widgetID)
        settle()
        return effects
    }

    /// Puts back a timeline that arrived at `receivedAt` (read from the state
    /// directory), as if its fetch had just succeeded then: its entries and its
    /// policy's plan come back; the budget and failures start afresh. Tracks the
    /// widget when needed. Follow with ``advance(to:)`` for what fell due since.
    ///
    /// - Returns: the effects of the arrival, as ``fetchSucceeded(_:timeline:now:)`` gives.
    public mutating func restore(widgetID: String, timeline: Timeline, receivedAt: Date) -> [TimelineEffect] {
        track(widgetID: widgetID)
        lastFetchID += 1
        states[widgetID]!.inFlight = nil
        let effects = states[widgetID]!.succeed(
            timeline, now: UnixTime.milliseconds(receivedAt), limits: limits, widgetID: widgetID, nextFetchID: lastFetchID)
        rearm(widgetID)
        settle()
        return effects
    }

    // MARK: Time

    /// Applies every deadline up to and including `now`.
    ///
    /// For each widget with a deadline passed, in deadline order: shows the
    /// latest entry that became due (one ``TimelineEffect/show(widgetID:content:)``
    /// per widget, even if several entries fell due), then starts its planned
    /// reload (policy, retry, or one that waited for the budget) if it came due —
    /// or, when a budgeted one finds the budget spent, plans it for when a slot frees.
    ///
    /// Only widgets whose deadline passed are touched. A `now` earlier than a
    /// previous one does nothing.
    public mutating func advance(to now: Date) -> [TimelineEffect] {
        let nowMs = UnixTime.milliseconds(now)
        var effects: [TimelineEffect] = []
        while let top = heap.top, top.deadline <= nowMs {
            heap.pop()
            counters.popped += 1
            guard isCurrent(top) else {
                counters.staleDiscarded += 1
                continue
            }
            counters.processed += 1
            let id = top.key
            states[id]!.armed = nil
            armedCount -= 1
            lastFetchID += 1
            effects += states[id]!.process(now: nowMs, limits: limits, widgetID: id, nextFetchID: lastFetchID)
            rearm(id)
        }
        settle()
        return effects
    }

    /// The earliest date at which ``advance(to:)`` has something to do, or nil.
    /// Arm one timer for it after every call into the engine. It can be in the
    /// past when a request or result came between two advances; advance at once then.
    public func nextDeadline() -> Date? {
        heap.top.map { UnixTime.date($0.deadline) }
    }

    // MARK: Introspection

    /// The entries of the timeline the engine holds for a widget (none when it has none).
    public func entries(of widgetID: String) -> [TimelineEntry] { states[widgetID]?.entries ?? [] }

    /// A widget's timeline state at `now`, or nil when it is not tracked. Changes nothing.
    public func snapshot(widgetID: String, now: Date) -> TimelineSnapshot? {
        guard let state = states[widgetID] else { return nil }
        let nowMs = UnixTime.milliseconds(now)
        let windowStart = limits.windowStart(nowMs)
        let counted = state.budgetStarts.filter { $0 > windowStart }
        let used = counted.count
        let freesAt = used >= limits.budget ? UnixTime.date(UnixTime.add(counted[used - limits.budget], limits.window)) : nil
        let next = state.nextEntryIndex
        return TimelineSnapshot(
            widgetID: widgetID,
            entries: state.entries,
            currentIndex: state.current,
            policy: state.policy,
            timelineReceivedAt: state.receivedMs.map(UnixTime.date),
            nextEntryDate: next < state.entries.count ? state.entries[next].date : nil,
            nextReload: state.planned.map {
                PlannedReload(date: UnixTime.date($0.atMs), reason: $0.reason, waitsForBudget: $0.waitsForBudget)
            },
            fetchInFlight: state.inFlight?.fetch,
            fetchStartedAt: state.inFlight.map { UnixTime.date($0.startedMs) },
            reloadQueued: state.queued?.reason,
            budgetLimit: limits.budget,
            budgetUsed: used,
            budgetFreesAt: freesAt,
            consecutiveFailures: state.failures,
            lastFailure: state.lastFailure)
    }

    /// The number of items in the deadline heap, live and stale (for tests).
    var heapCount: Int { heap.count }

    // MARK: Heap upkeep

    private func isCurrent(_ item: DeadlineHeap<String>.Item) -> Bool {
        states[item.key]?.armed?.sequence == item.sequence
    }

    /// Puts the widget's deadline in the heap if it changed.
    private mutating func rearm(_ id: String) {
        guard let state = states[id] else { return }
        let deadline = state.deadline
        guard deadline != state.armed?.deadline else { return }
        if state.armed == nil { armedCount += 1 }
        if let deadline {
            lastSequence += 1
            states[id]!.armed = Armed(deadline: deadline, sequence: lastSequence)
            heap.push(DeadlineHeap<String>.Item(deadline: deadline, sequence: lastSequence, key: id))
        } else {
            states[id]!.armed = nil
            armedCount -= 1
        }
    }

    /// Keeps the heap's top current (so that `nextDeadline` needs no mutation)
    /// and rebuilds the heap when stale items outnumber live ones.
    private mutating func settle() {
        if heap.count > 2 * armedCount + 64 {
            counters.staleDiscarded += heap.count - armedCount
            counters.rebuilds += 1
            heap.rebuild(
                states.compactMap { id, state in
                    state.armed.map { DeadlineHeap<String>.Item(deadline: $0.deadline, sequence: $0.sequence, key: id) }
                })
        }
        while let top = heap.top, !isCurrent(top) {
            heap.pop()
            counters.staleDiscarded += 1
        }
    }
}

// MARK: - Per-widget state

/// The options in whole milliseconds.
private struct TimelineLimits: Sendable {
    var budget: Int
    var window: Int64
    var minimumInterval: Int64
    var retryInitial: Int64
    var retryMaximum: Int64

    /// The start of the budget window ending at `now` (exclusive).
    func windowStart(_ now: Int64) -> Int64 { UnixTime.add(now, -window) }
}

/// The deadline a widget has in the heap.
private struct Armed: Sendable, Equatable {
    var deadline: Int64
    var sequence: UInt64
}

private struct InFlight: Sendable {
    var fetch: TimelineFetch
    var budgeted: Bool
    var startedMs: Int64
}

/// A reload wanted after the fetch in flight.
private struct Queued: Sendable {
    var reason: ReloadReason
    var budgeted: Bool
}

/// A reload planned for a date. Never set while a fetch is in flight.
private struct Planned: Sendable {
    var atMs: Int64
    var reason: ReloadReason
    var budgeted: Bool
    var waitsForBudget: Bool
}

private struct WidgetState: Sendable {
    /// Normalized, starting at the entry due on arrival.
    var entries: [TimelineEntry] = []
    var current: Int?
    var policy: TimelinePolicy?
    var receivedMs: Int64?
    /// Start times of budgeted fetches, ascending; pruned lazily.
    var budgetStarts: [Int64] = []
    var inFlight: InFlight?
    var queued: Queued?
    var planned: Planned?
    var failures = 0
    var lastFailure: TimelineFailure?
    var armed: Armed?

    var nextEntryIndex: Int { (current ?? -1) + 1 }

    /// The earliest date something is due: the next entry, or the planned reload.
    var deadline: Int64? {
        var result: Int64?
        if nextEntryIndex < entries.count { result = entries[nextEntryIndex].unixMs }
        if inFlight == nil, let planned { result = min(result ?? planned.atMs, planned.atMs) }
        return result
    }

    /// A request from the service.
    mutating func request(reason: ReloadReason, budgeted: Bool, now: Int64, limits: TimelineLimits, fetch: TimelineFetch)
        -> ReloadDecision
    {
        if let inFlight {
            if queued == nil || (queued!.budgeted && !budgeted) { queued = Queued(reason: reason, budgeted: budgeted) }
            return .coalesced(with: inFlight.fetch)
        }
        if budgeted, let planned, planned.reason == .retry {
            return .deferred(until: UnixTime.date(planned.atMs), because: .backoff)
        }
        return begin(reason: reason, budgeted: budgeted, now: now, limits: limits, fetch: fetch)
    }

    /// Starts a fetch, or — budgeted with no slot — plans it for when a slot frees.
    mutating func begin(reason: ReloadReason, budgeted: Bool, now: Int64, limits: TimelineLimits, fetch: TimelineFetch)
        -> ReloadDecision
    {
        if budgeted {
            let windowStart = limits.windowStart(now)
            if let stale = budgetStarts.firstIndex(where: { $0 > windowStart }) {
                budgetStarts.removeFirst(stale)
            } else {
                budgetStarts.removeAll()
            }
            if budgetStarts.count >= limits.budget {
                let freesAt = UnixTime.add(budgetStarts[budgetStarts.count - limits.budget], limits.window)
                let keptReason = planned?.waitsForBudget == true ? planned!.reason : reason
                planned = Planned(atMs: freesAt, reason: keptReason, budgeted: true, waitsForBudget: true)
                return .deferred(until: UnixTime.date(freesAt), because: .budgetExhausted)
            }
            budgetStarts.append(now)
        }
        inFlight = InFlight(fetch: fetch, budgeted: budgeted, startedMs: now)
        planned = nil
        return .fetch(fetch)
    }

    mutating func succeed(_ timeline: Timeline, now: Int64, limits: TimelineLimits, widgetID: String, nextFetchID: UInt64)
        -> [TimelineEffect]
    {
        inFlight = nil
        failures = 0
        receivedMs = now
        policy = timeline.policy
        var effects: [TimelineEffect] = []
        let sorted = timeline.normalizedEntries
        if let due = Self.lastIndex(in: sorted, from: 0, notAfter: now) {
            entries = Array(sorted[due...])
            current = 0
            effects.append(.show(widgetID: widgetID, content: entries[0].content))
        } else {
            entries = sorted
            current = nil
        }
        let earliest = UnixTime.add(now, limits.minimumInterval)
        switch timeline.policy {
        case .never:
            planned = nil
        case .atEnd:
            planned = Planned(
                atMs: max(entries.last?.unixMs ?? now, earliest), reason: .policy, budgeted: true, waitsForBudget: false)
        case .after(let reloadAt):
            planned = Planned(atMs: max(reloadAt, earliest), reason: .policy, budgeted: true, waitsForBudget: false)
        }
        effects += resubmitQueued(now: now, limits: limits, widgetID: widgetID, nextFetchID: nextFetchID)
        return effects
    }

    mutating func fail(message: String, now: Int64, limits: TimelineLimits, widgetID: String, nextFetchID: UInt64)
        -> [TimelineEffect]
    {
        guard let failed = inFlight else { return [] }
        inFlight = nil
        if failed.budgeted, let slot = budgetStarts.lastIndex(of: failed.startedMs) {
            budgetStarts.remove(at: slot)
        }
        failures += 1
        lastFailure = TimelineFailure(date: UnixTime.date(now), reason: failed.fetch.reason, message: message)
        planned = Planned(
            atMs: UnixTime.add(now, Self.retryDelay(failures: failures, limits: limits)), reason: .retry,
            budgeted: failed.budgeted, waitsForBudget: false)
        return resubmitQueued(now: now, limits: limits, widgetID: widgetID, nextFetchID: nextFetchID)
    }

    /// Handles the reload queued during a fetch as a request made now.
    private mutating func resubmitQueued(now: Int64, limits: TimelineLimits, widgetID: String, nextFetchID: UInt64)
        -> [TimelineEffect]
    {
        guard let wanted = queued else { return [] }
        queued = nil
        let decision = request(
            reason: wanted.reason, budgeted: wanted.budgeted, now: now, limits: limits,
            fetch: TimelineFetch(id: nextFetchID, widgetID: widgetID, reason: wanted.reason))
        if case .fetch(let fetch) = decision { return [.fetch(fetch)] }
        return []
    }

    /// What `advance` does for a widget whose deadline passed.
    mutating func process(now: Int64, limits: TimelineLimits, widgetID: String, nextFetchID: UInt64) -> [TimelineEffect] {
        var effects: [TimelineEffect] = []
        if let due = Self.lastIndex(in: entries, from: nextEntryIndex, notAfter: now) {
            current = due
            effects.append(.show(widgetID: widgetID, content: entries[due].content))
        }
        if inFlight == nil, let due = planned, due.atMs <= now {
            planned = nil
            let decision = begin(
                reason: due.reason, budgeted: due.budgeted, now: now, limits: limits,
                fetch: TimelineFetch(id: nextFetchID, widgetID: widgetID, reason: due.reason))
            if case .fetch(let fetch) = decision { effects.append(.fetch(fetch)) }
        }
        return effects
    }

    /// The index of the last entry at or after `from` whose date is not after `now`; binary search.
    static func lastIndex(in entries: [TimelineEntry], from: Int, notAfter now: Int64) -> Int? {
        var low = from, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].unixMs <= now { low = middle + 1 } else { high = middle }
        }
        return low > from ? low - 1 : nil
    }

    /// initial × 2^(failures − 1), at most the maximum.
    static func retryDelay(failures: Int, limits: TimelineLimits) -> Int64 {
        var delay = limits.retryInitial
        var doublings = failures - 1
        while doublings > 0, delay < limits.retryMaximum {
            delay = delay > limits.retryMaximum / 2 ? limits.retryMaximum : delay * 2
            doublings -= 1
        }
        return min(delay, limits.retryMaximum)
    }
}
