import Foundation
import Testing
@testable import WidgetHostCore

// MARK: - Helpers

/// 2023-11-14T22:13:20Z, the default start of `TestWallClock`.
private let t0 = TestWallClock().now()
private let t0Ms: Int64 = 1_700_000_000_000

/// `t0` plus `seconds`.
private func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }
/// `t0` plus `seconds`, in Unix ms.
private func ms(_ seconds: Double) -> Int64 { t0Ms + Int64((seconds * 1000).rounded()) }
/// A small view tree whose text id names it.
private func view(_ name: String) -> String { #"{"type":"text","id":"\#(name)"}"# }

/// The ids of the trees shown, in order.
private func shown(_ effects: [TimelineEffect]) -> [String] {
    effects.compactMap { effect in
        if case .show(_, let content) = effect { return content.root.id }
        return nil
    }
}

private func fetches(_ effects: [TimelineEffect]) -> [TimelineFetch] {
    effects.compactMap { effect in
        if case .fetch(let fetch) = effect { return fetch }
        return nil
    }
}

private struct NotAFetch: Error, CustomStringConvertible {
    var decision: ReloadDecision
    var description: String { "expected a fetch, got \(decision)" }
}

extension TimelineEngine {
    /// Requests a reload and returns the fetch it starts, or throws.
    fileprivate mutating func start(
        _ id: String, _ reason: ReloadReason = .appRequested, live: Bool = true, at now: Date
    ) throws -> TimelineFetch {
        let decision = try requestReload(widgetID: id, reason: reason, appIsLive: live, now: now)
        guard case .fetch(let fetch) = decision else { throw NotAFetch(decision: decision) }
        #expect(fetch.widgetID == id)
        #expect(fetch.reason == reason)
        return fetch
    }

    /// A whole reload: request, then a successful reply.
    @discardableResult
    fileprivate mutating func reload(
        _ id: String, _ reason: ReloadReason = .appRequested, live: Bool = true, at now: Date,
        entries: [(Int64, String)] = [], policy: String = "never", reloadAt: Int64 = 0
    ) throws -> [TimelineEffect] {
        let fetch = try start(id, reason, live: live, at: now)
        return try fetchSucceeded(fetch, entries: entries, policy: policy, reloadAtMs: reloadAt, now: now)
    }

    fileprivate func snap(_ id: String, _ now: Date) throws -> TimelineSnapshot {
        try #require(snapshot(widgetID: id, now: now))
    }
}

/// An engine tracking `w1`.
private func engine(_ options: TimelineOptions = TimelineOptions()) -> TimelineEngine {
    var engine = TimelineEngine(options: options)
    engine.track(widgetID: "w1")
    return engine
}

// MARK: - Values

@Suite("Timeline values")
struct TimelineValueTests {
    @Test(arguments: [
        (ReloadReason.added, false, false), (.configured, false, false), (.policy, false, false),
        (.appRequested, true, false), (.action, false, false), (.retry, false, false), (.requested, false, false),
    ])
    func budgetExemption(_ reason: ReloadReason, _ whenLive: Bool, _ whenNotLive: Bool) {
        #expect(reason.isBudgetExempt(appIsLive: true) == whenLive)
        #expect(reason.isBudgetExempt(appIsLive: false) == whenNotLive)
    }

    @Test func reasonNames() {
        #expect(ReloadReason.allCases.map(\.rawValue) == ["added", "configured", "policy", "app-requested", "action", "retry", "requested"])
        #expect(ReloadReason.allCases.filter(\.isRequestable) == [.added, .configured, .appRequested, .action, .requested])
    }

    @Test func policies() throws {
        #expect(try TimelinePolicy.parse("at-end", reloadAtMs: 0) == .atEnd)
        #expect(try TimelinePolicy.parse("never", reloadAtMs: 5) == .never)
        #expect(try TimelinePolicy.parse("after", reloadAtMs: 5) == .after(unixMs: 5))
        #expect(TimelinePolicy.after(unixMs: t0Ms).description == "after 2023-11-14T22:13:20.000Z")
        #expect(TimelinePolicy.names == ["at-end", "after", "never"])
        expectHostError(.invalidArgument, mentioning: ["'sometimes'", "at-end", "after", "never"]) {
            try TimelinePolicy.parse("sometimes", reloadAtMs: 0)
        }
        expectHostError(.invalidArgument, mentioning: ["'after'", "reload_at", "-1", "at-end or never"]) {
            try TimelinePolicy.parse("after", reloadAtMs: -1)
        }
        expectHostError(.invalidArgument, mentioning: ["reload_at is 0"]) {
            try TimelinePolicy.parse("after", reloadAtMs: 0)
        }
        expectHostError(.invalidArgument, mentioning: ["'AT-END'"]) {
            try TimelinePolicy.parse("AT-END", reloadAtMs: 0)
        }
    }

    @Test func normalizationSortsStablyAndKeepsTheLastDuplicate() throws {
        let timeline = try Timeline.parse(
            entries: [(30, view("c")), (10, view("a1")), (20, view("b")), (10, view("a2")), (30, view("c2")), (10, view("a3"))],
            policy: "never", reloadAtMs: 0)
        #expect(timeline.entries.map(\.unixMs) == [30, 10, 20, 10, 30, 10])
        #expect(timeline.normalizedEntries.map(\.content.root.id) == ["a3", "b", "c2"])
        #expect(timeline.normalizedEntries.map(\.unixMs) == [10, 20, 30])
        #expect(timeline.normalizedEntries.first?.contentJSON == view("a3"))
    }

    @Test func iso8601() {
        #expect(UnixTime.iso8601(t0Ms) == "2023-11-14T22:13:20.000Z")
        #expect(UnixTime.iso8601(0) == "1970-01-01T00:00:00.000Z")
        #expect(UnixTime.iso8601(-1) == "1969-12-31T23:59:59.999Z")
        #expect(UnixTime.iso8601(951_782_400_123) == "2000-02-29T00:00:00.123Z")
        #expect(UnixTime.iso8601(Int64.max).hasPrefix("292278994-08-17T07:12:55.807Z"))
        #expect(UnixTime.iso8601(Int64.min).hasSuffix(".192Z"))
    }

    @Test func millisecondsRoundTrip() {
        for value: Int64 in [0, 1, -1, 999, t0Ms, t0Ms + 1, t0Ms + 999, 4_102_444_800_001, -62_135_596_800_001] {
            #expect(UnixTime.milliseconds(UnixTime.date(value)) == value)
        }
        #expect(UnixTime.milliseconds(Date.distantFuture) == 64_092_211_200_000)
        #expect(UnixTime.milliseconds(Date(timeIntervalSince1970: 1e300)) == .max)
        #expect(UnixTime.add(.max, 1) == .max)
        #expect(UnixTime.add(.min, -1) == .min)
        #expect(TimelineEntry(unixMs: t0Ms, content: try! ViewTree.parse(view("x"))).date == t0)
    }

    @Test func options() throws {
        try TimelineOptions().validate()
        #expect(TimelineOptions().dailyBudget == 70)
        #expect(TimelineOptions().minimumReloadInterval == 300)
        expectHostError(.invalidArgument, mentioning: ["budget is 0", "at least 1"]) { try TimelineOptions(dailyBudget: 0).validate() }
        expectHostError(.invalidArgument, mentioning: ["minimum reload interval", "-1"]) {
            try TimelineOptions(minimumReloadInterval: -1).validate()
        }
        expectHostError(.invalidArgument, mentioning: ["budget window", "nan"]) { try TimelineOptions(budgetWindow: .nan).validate() }
        expectHostError(.invalidArgument, mentioning: ["maximum retry delay", "10"]) {
            try TimelineOptions(retryInitialDelay: 60, retryMaximumDelay: 10).validate()
        }
        expectHostError(.invalidArgument, mentioning: ["entry limit is 0"]) { try TimelineOptions(maxEntries: 0).validate() }
        #expect(TimelineEngine(options: TimelineOptions(dailyBudget: -3)).options.dailyBudget == 1)
    }
}

// MARK: - The engine

@Suite("Timeline engine")
struct TimelineEngineTests {
    @Test("A tap after a timeline entry comes due reads that entry's tree, shown as the host shows it")
    func tapAfterEntryComesDue() throws {
        var store = try WidgetStoreTests().store()
        let id = try store.add(appID: "org.example.EmojiRangers", kind: "LeaderboardWidget", family: "systemMedium", configuration: [:]).id
        var e = TimelineEngine()
        e.track(widgetID: id)
        func show(_ effects: [TimelineEffect]) {
            for case .show(let widgetID, let content) in effects { store.setContent(widgetID, tree: content) }
        }
        let opening = WidgetStoreTests.opening
        show(try e.reload(id, .added, at: t0, entries: [(ms(0), opening("x://now")), (ms(60), opening("x://later"))]))
        #expect(try WidgetStoreTests.tapT(id, store) == .openURL(url: "x://now", via: .widgetURL))
        show(e.advance(to: at(59)))
        #expect(try WidgetStoreTests.tapT(id, store) == .openURL(url: "x://now", via: .widgetURL))
        show(e.advance(to: at(60)))
        #expect(try WidgetStoreTests.tapT(id, store) == .openURL(url: "x://later", via: .widgetURL))
    }

    @Test("isAwaiting names exactly the fetch in flight; a restored timeline brings its entries and plan back")
    func awaitingAndRestore() throws {
        var e = engine()
        let first = try e.start("w1", .added, live: false, at: at(0))
        #expect(e.isAwaiting(first))
        _ = try e.fetchSucceeded(first, entries: [], policy: "never", reloadAtMs: 0, now: at(1))
        #expect(!e.isAwaiting(first))
        #expect(!e.isAwaiting(TimelineFetch(id: 999, widgetID: "w1", reason: .added)))

        var restored = TimelineEngine()
        let timeline = try Timeline.parse(
            entries: [(t0Ms, #"{"type":"text","id":"a"}"#), (t0Ms + 60_000, #"{"type":"text","id":"b"}"#)], policy: "at-end", reloadAtMs: 0)
        let shown = restored.restore(widgetID: "w9", timeline: timeline, receivedAt: at(0))
        #expect(shown.map(\.widgetID) == ["w9"] && restored.isTracked("w9"))
        #expect(restored.nextDeadline() == at(60))
        let later = restored.advance(to: at(61))
        guard case .show(_, let tree)? = later.first else { Issue.record("no entry shown: \(later)"); return }
        #expect(tree.elements.first?.id == "b")
        #expect(try restored.snap("w9", at(61)).nextReload?.reason == .policy)
    }

    @Test func trackingAndRequests() throws {
        var e = TimelineEngine()
        let added = e.track(widgetID: "w1")
        let addedAgain = e.track(widgetID: "w1")
        #expect(added && !addedAgain)
        #expect(e.trackedCount == 1)
        #expect(e.isTracked("w1") && !e.isTracked("w2"))
        let s = try e.snap("w1", t0)
        #expect(s.entries.isEmpty && s.currentIndex == nil && s.policy == nil && s.nextReload == nil && s.fetchInFlight == nil)
        #expect(s.budgetUsed == 0 && s.budgetLeft == 70 && s.budgetLimit == 70)
        #expect(e.nextDeadline() == nil)
        expectHostError(.invalidArgument, mentioning: ["w2", "track"]) {
            try e.requestReload(widgetID: "w2", reason: .added, appIsLive: true, now: t0)
        }
        for reason in [ReloadReason.policy, .retry] {
            expectHostError(.invalidArgument, mentioning: ["'\(reason.rawValue)'", "added, configured, app-requested or action"]) {
                try e.requestReload(widgetID: "w1", reason: reason, appIsLive: true, now: t0)
            }
        }
        #expect(try e.snap("w1", t0).fetchInFlight == nil)
        let f = try e.start("w1", .added, at: t0)
        let inFlight = try e.snap("w1", at(1))
        #expect(inFlight.fetchInFlight == f)
        #expect(inFlight.fetchStartedAt == t0)
        #expect(inFlight.budgetUsed == 1)
    }

    @Test func entriesAppearAtTheirDates() throws {
        var e = engine()
        let effects = try e.reload(
            "w1", .added, at: t0, entries: [(ms(60), view("a")), (ms(120), view("b")), (ms(180), view("c")), (ms(240), view("d"))])
        #expect(effects.isEmpty, "no entry is due yet, so the widget keeps what it had")
        #expect(try e.snap("w1", t0).currentIndex == nil)
        #expect(try e.snap("w1", t0).nextEntryDate == at(60))
        #expect(e.nextDeadline() == at(60))
        #expect(e.advance(to: at(59.999)).isEmpty)
        let first = e.advance(to: at(60))
        #expect(first == [.show(widgetID: "w1", content: try ViewTree.parse(view("a")))])
        #expect(try e.snap("w1", at(60)).currentIndex == 0)
        #expect(e.nextDeadline() == at(120))
        #expect(e.advance(to: at(60)).isEmpty, "advancing twice to the same date shows nothing twice")
        #expect(shown(e.advance(to: at(200))) == ["c"], "of the entries due since the last advance only the latest is shown")
        #expect(try e.snap("w1", at(200)).currentIndex == 2)
        #expect(e.nextDeadline() == at(240))
        #expect(shown(e.advance(to: at(10_000))) == ["d"])
        #expect(e.nextDeadline() == nil, "policy never: nothing more is due")
        #expect(e.advance(to: at(1e7)).isEmpty)
    }

    @Test func outOfOrderDuplicateAndPastEntries() throws {
        var e = engine()
        let effects = try e.reload(
            "w1", .added, at: t0,
            entries: [
                (ms(120), view("b1")), (ms(-30), view("p2")), (ms(60), view("a1")), (ms(-90), view("p1")),
                (ms(60), view("a2")), (ms(120), view("b2")), (ms(-3600), view("p0")),
            ])
        #expect(shown(effects) == ["p2"], "the latest past entry is shown at once")
        let s = try e.snap("w1", t0)
        #expect(s.entries.map(\.content.root.id) == ["p2", "a2", "b2"], "sorted, later duplicate kept, earlier past entries dropped")
        #expect(s.entries.map(\.date) == [at(-30), at(60), at(120)])
        #expect(s.currentIndex == 0)
        #expect(shown(e.advance(to: at(60))) == ["a2"])
        #expect(shown(e.advance(to: at(120))) == ["b2"])

        // An entry dated exactly now is due now, and beats earlier past ones.
        let exact = try e.reload("w1", at: at(500), entries: [(ms(400), view("old")), (ms(500), view("now")), (ms(501), view("next"))])
        #expect(shown(exact) == ["now"])
        #expect(try e.snap("w1", at(500)).entries.map(\.content.root.id) == ["now", "next"])
    }

    @Test func emptyTimelineKeepsContentAndAppliesThePolicy() throws {
        var e = engine()
        try e.reload("w1", .added, at: t0, entries: [(ms(0), view("a")), (ms(100), view("b"))])
        let empty = try e.reload("w1", at: at(10), policy: "after", reloadAt: ms(3600))
        #expect(empty.isEmpty, "nothing is shown: the current content stays")
        let s = try e.snap("w1", at(10))
        #expect(s.entries.isEmpty && s.currentIndex == nil && s.nextEntryDate == nil)
        #expect(s.policy == .after(unixMs: ms(3600)))
        #expect(s.nextReload == PlannedReload(date: at(3600), reason: .policy, waitsForBudget: false))
        #expect(e.advance(to: at(3599.999)).isEmpty, "the old timeline's entry at +100 was replaced")
        #expect(fetches(e.advance(to: at(3600))).map(\.reason) == [.policy])

        // An empty at-end timeline ends at once, so it reloads after the minimum interval.
        var f = engine()
        try f.reload("w1", .added, at: t0, policy: "at-end")
        #expect(try f.snap("w1", t0).nextReload == PlannedReload(date: at(300), reason: .policy, waitsForBudget: false))
    }

    @Test func policyAtEnd() throws {
        var e = engine()
        try e.reload("w1", .added, at: t0, entries: [(ms(600), view("a")), (ms(1200), view("b"))], policy: "at-end")
        #expect(try e.snap("w1", t0).nextReload == PlannedReload(date: at(1200), reason: .policy, waitsForBudget: false))
        #expect(shown(e.advance(to: at(1199))) == ["a"])
        let end = e.advance(to: at(1200))
        #expect(shown(end) == ["b"])
        #expect(fetches(end).map(\.reason) == [.policy])
        #expect(end.count == 2 && shown([end[0]]) == ["b"], "the last entry is shown before the reload starts")
        #expect(try e.snap("w1", at(1200)).nextReload == nil, "no plan while the fetch is in flight")

        // A last entry sooner than the minimum interval: the reload waits for it.
        let soon = try e.fetchSucceeded(
            try #require(fetches(end).first), entries: [(ms(1260), view("c"))], policy: "at-end", reloadAtMs: 0, now: at(1200))
        #expect(soon.isEmpty)
        #expect(try e.snap("w1", at(1200)).nextReload?.date == at(1500))
        #expect(e.nextDeadline() == at(1260))
        #expect(shown(e.advance(to: at(1260))) == ["c"])
        #expect(e.nextDeadline() == at(1500))
    }

    @Test func policyAfter() throws {
        var e = engine()
        try e.reload("w1", .added, at: t0, policy: "after", reloadAt: ms(900))
        #expect(e.nextDeadline() == at(900))
        #expect(e.advance(to: at(899.999)).isEmpty)
        let due = fetches(e.advance(to: at(900)))
        #expect(due.map(\.reason) == [.policy])

        // reload_at in the past: as soon as allowed, which is the minimum interval later, not at once.
        let past = try e.fetchSucceeded(try #require(due.first), entries: [], policy: "after", reloadAtMs: ms(-86_400), now: at(900))
        #expect(past.isEmpty)
        #expect(e.nextDeadline() == at(1200))
        #expect(e.advance(to: at(1199)).isEmpty)
        let next = try #require(fetches(e.advance(to: at(1200))).first)

        // reload_at sooner than the minimum interval is also held back to it.
        _ = try e.fetchSucceeded(next, entries: [], policy: "after", reloadAtMs: ms(1260), now: at(1200))
        #expect(e.nextDeadline() == at(1500))

        // A configurable interval.
        var quick = engine(TimelineOptions(minimumReloadInterval: 60))
        try quick.reload("w1", .added, at: t0, policy: "after", reloadAt: 1)
        #expect(quick.nextDeadline() == at(60))
    }

    @Test func policyNever() throws {
        var e = engine()
        try e.reload("w1", .added, at: t0, entries: [(ms(0), view("a"))], policy: "never")
        #expect(e.nextDeadline() == nil)
        #expect(try e.snap("w1", t0).nextReload == nil)
        #expect(try e.snap("w1", t0).policy == .never)
        #expect(e.advance(to: at(365 * 86_400)).isEmpty)
        // Still reloads when asked.
        #expect(try e.requestReload(widgetID: "w1", reason: .action, appIsLive: false, now: at(10)).isFetch)
    }

    @Test func budgetRefusesTheSeventyFirstAndSlides() throws {
        var e = engine()
        for minute in 0..<70 {
            try e.reload("w1", .configured, at: at(Double(minute) * 60))
        }
        let full = try e.snap("w1", at(70 * 60))
        #expect(full.budgetUsed == 70 && full.budgetLeft == 0)
        #expect(full.budgetFreesAt == at(86_400))
        let refused = try e.requestReload(widgetID: "w1", reason: .configured, appIsLive: false, now: at(70 * 60))
        #expect(refused == .deferred(until: at(86_400), because: .budgetExhausted))
        #expect(try e.snap("w1", at(70 * 60)).nextReload == PlannedReload(date: at(86_400), reason: .configured, waitsForBudget: true))
        // A second budgeted request joins the first.
        #expect(try e.requestReload(widgetID: "w1", reason: .added, appIsLive: false, now: at(70 * 60 + 1))
            == .deferred(until: at(86_400), because: .budgetExhausted))
        #expect(e.nextDeadline() == at(86_400))
        #expect(e.advance(to: at(86_399.999)).isEmpty)
        let freed = fetches(e.advance(to: at(86_400)))
        #expect(freed.map(\.reason) == [.configured], "the deferred request runs when the first slot frees; it was not dropped")
        _ = e.fetchSucceeded(try #require(freed.first), timeline: Timeline(entries: [], policy: .never), now: at(86_400))

        // The window slides: the slot taken at +60 s frees at +24 h +60 s.
        let s = try e.snap("w1", at(86_430))
        #expect(s.budgetUsed == 70)
        #expect(s.budgetFreesAt == at(86_460))
        #expect(try e.requestReload(widgetID: "w1", reason: .configured, appIsLive: false, now: at(86_430))
            == .deferred(until: at(86_460), because: .budgetExhausted))
        // Once the day has passed, the old slots are all free again.
        #expect(try e.snap("w1", at(86_400 + 70 * 60)).budgetUsed == 1)
    }

    @Test func aDeferredPolicyReloadFiresWhenASlotFrees() throws {
        var e = engine()
        var fetch = try e.start("w1", .added, at: t0)
        var now = t0
        var started: [Date] = [t0]
        while true {
            // Ask again as soon as allowed: after a past reload_at means the minimum interval.
            _ = try e.fetchSucceeded(fetch, entries: [], policy: "after", reloadAtMs: 1, now: now)
            let deadline = try #require(e.nextDeadline())
            let due = fetches(e.advance(to: deadline))
            guard let next = due.first else {
                now = deadline
                break
            }
            #expect(next.reason == .policy)
            fetch = next
            now = deadline
            started.append(now)
        }
        #expect(started.count == 70, "the added reload and 69 policy reloads fill the budget")
        #expect(started.last == at(69 * 300))
        #expect(now == at(70 * 300), "the 71st policy reload came due, found no slot ...")
        let waiting = try e.snap("w1", now)
        #expect(waiting.nextReload == PlannedReload(date: at(86_400), reason: .policy, waitsForBudget: true), "... and was deferred")
        #expect(e.nextDeadline() == at(86_400))
        #expect(e.advance(to: at(86_399)).isEmpty)
        #expect(fetches(e.advance(to: at(86_400))).map(\.reason) == [.policy])
    }

    @Test func onlyLiveAppRequestsAreExempt() throws {
        var e = engine()
        for i in 0..<70 { try e.reload("w1", .configured, at: at(Double(i))) }
        #expect(try e.snap("w1", at(70)).budgetLeft == 0)
        for i in 0..<100 {
            try e.reload("w1", .appRequested, live: true, at: at(100 + Double(i)))
        }
        #expect(try e.snap("w1", at(500)).budgetUsed == 70, "exempt reloads take no slot")
        // The same app without a live registration is budgeted, and so is a reload after a control's action, from any app.
        #expect(try e.requestReload(widgetID: "w1", reason: .appRequested, appIsLive: false, now: at(500))
            == .deferred(until: at(86_400), because: .budgetExhausted))
        for live in [false, true] {
            #expect(try e.requestReload(widgetID: "w1", reason: .action, appIsLive: live, now: at(500))
                == .deferred(until: at(86_400), because: .budgetExhausted))
        }
        // An exempt request still runs while a budgeted one waits, and replaces the wait.
        #expect(try e.requestReload(widgetID: "w1", reason: .appRequested, appIsLive: true, now: at(501)).isFetch)
        #expect(try e.snap("w1", at(501)).nextReload == nil)

        var g = engine()
        for i in 0..<70 { try g.reload("w1", .appRequested, live: false, at: at(Double(i))) }
        #expect(try g.requestReload(widgetID: "w1", reason: .appRequested, appIsLive: false, now: at(70))
            == .deferred(until: at(86_400), because: .budgetExhausted))
    }

    @Test func requestsWhileAFetchIsInFlightAreCoalesced() throws {
        var e = engine()
        let first = try e.start("w1", .added, at: t0)
        #expect(try e.requestReload(widgetID: "w1", reason: .configured, appIsLive: false, now: at(1)) == .coalesced(with: first))
        #expect(try e.requestReload(widgetID: "w1", reason: .appRequested, appIsLive: false, now: at(2)) == .coalesced(with: first))
        #expect(try e.snap("w1", at(2)).reloadQueued == .configured)
        #expect(try e.snap("w1", at(2)).budgetUsed == 1, "queued requests take no slot until they start")
        let after = try e.fetchSucceeded(first, entries: [(ms(0), view("a"))], policy: "never", reloadAtMs: 0, now: at(3))
        #expect(shown(after) == ["a"])
        let follow = fetches(after)
        #expect(follow.map(\.reason) == [.configured], "one follow-up fetch for all the requests")
        #expect(follow.first != first)
        #expect(try e.snap("w1", at(3)).reloadQueued == nil)
        #expect(try e.snap("w1", at(3)).budgetUsed == 2)
        let done = e.fetchSucceeded(try #require(follow.first), timeline: Timeline(entries: [], policy: .never), now: at(4))
        #expect(done.isEmpty, "nothing more was queued")

        // An exempt request upgrades the queued reload.
        let second = try e.start("w1", .configured, at: at(10))
        _ = try e.requestReload(widgetID: "w1", reason: .configured, appIsLive: false, now: at(11))
        _ = try e.requestReload(widgetID: "w1", reason: .appRequested, appIsLive: true, now: at(12))
        _ = try e.requestReload(widgetID: "w1", reason: .configured, appIsLive: false, now: at(13))
        #expect(try e.snap("w1", at(13)).reloadQueued == .appRequested)
        let used = try e.snap("w1", at(13)).budgetUsed
        let upgraded = e.fetchSucceeded(second, timeline: Timeline(entries: [], policy: .never), now: at(14))
        #expect(fetches(upgraded).map(\.reason) == [.appRequested])
        #expect(try e.snap("w1", at(14)).budgetUsed == used, "the follow-up is exempt")
    }

    @Test func aQueuedReloadThatFindsTheBudgetSpentWaits() throws {
        var e = engine(TimelineOptions(dailyBudget: 2))
        try e.reload("w1", .added, at: t0)
        let second = try e.start("w1", .configured, at: at(10))
        _ = try e.requestReload(widgetID: "w1", reason: .configured, appIsLive: false, now: at(11))
        let after = try e.fetchSucceeded(second, entries: [], policy: "after", reloadAtMs: ms(100_000), now: at(12))
        #expect(fetches(after).isEmpty)
        #expect(try e.snap("w1", at(12)).nextReload == PlannedReload(date: at(86_400), reason: .configured, waitsForBudget: true),
                "the deferred request comes before the policy's later date")
    }

    @Test func failuresBackOffCapAndReset() throws {
        var e = engine()
        try e.reload("w1", .added, at: t0, entries: [(ms(0), view("a")), (ms(1e6), view("b"))])
        var fetch = try e.start("w1", .configured, at: at(10))
        #expect(try e.snap("w1", at(10)).budgetUsed == 2)
        var now = at(10)
        var delays: [Double] = []
        for attempt in 1...10 {
            let failed = e.fetchFailed(fetch, error: "org.freedesktop.DBus.Error.NoReply: attempt \(attempt)", now: now)
            #expect(failed.isEmpty, "a failure shows nothing: the content stays")
            let s = try e.snap("w1", now)
            #expect(s.consecutiveFailures == attempt)
            #expect(s.entries.map(\.content.root.id) == ["a", "b"] && s.currentIndex == 0, "the timeline is untouched")
            #expect(s.lastFailure?.message.hasSuffix("attempt \(attempt)") == true)
            let retry = try #require(s.nextReload)
            #expect(retry.reason == .retry && !retry.waitsForBudget)
            #expect(s.budgetUsed == 1, "a failed fetch gives its slot back")
            delays.append(retry.date.timeIntervalSince(now))
            #expect(e.advance(to: retry.date.addingTimeInterval(-0.001)).isEmpty)
            now = retry.date
            let due = fetches(e.advance(to: now))
            #expect(due.map(\.reason) == [.retry])
            fetch = try #require(due.first)
            #expect(try e.snap("w1", now).budgetUsed == 2, "the retry of a budgeted reload takes the slot again")
        }
        #expect(delays == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600])

        // A success resets the backoff; the failure stays on record.
        _ = e.fetchSucceeded(fetch, timeline: Timeline(entries: [], policy: .never), now: now)
        let ok = try e.snap("w1", now)
        #expect(ok.consecutiveFailures == 0)
        #expect(ok.lastFailure?.reason == .retry)
        #expect(ok.budgetUsed == 2, "the reload counted once, when it delivered")
        let again = try e.start("w1", .action, at: now)
        _ = e.fetchFailed(again, error: "boom", now: now)
        #expect(try e.snap("w1", now).nextReload?.date == now.addingTimeInterval(30))
        #expect(try e.snap("w1", now).lastFailure == TimelineFailure(date: now, reason: .action, message: "boom"))
    }

    @Test func requestsDuringBackoff() throws {
        var e = engine()
        let f = try e.start("w1", .added, at: t0)
        _ = e.fetchFailed(f, error: "no provider", now: t0)
        // A budgeted request joins the retry; it does not hammer a failing provider.
        #expect(try e.requestReload(widgetID: "w1", reason: .configured, appIsLive: false, now: at(5))
            == .deferred(until: at(30), because: .backoff))
        #expect(try e.requestReload(widgetID: "w1", reason: .appRequested, appIsLive: false, now: at(6))
            == .deferred(until: at(30), because: .backoff))
        // So does a reload after a control's action.
        #expect(try e.requestReload(widgetID: "w1", reason: .action, appIsLive: true, now: at(6))
            == .deferred(until: at(30), because: .backoff))
        // An exempt one runs at once; its failure continues the backoff.
        let tapped = try e.start("w1", .appRequested, live: true, at: at(7))
        #expect(try e.snap("w1", at(7)).nextReload == nil)
        _ = e.fetchFailed(tapped, error: "still no provider", now: at(7))
        #expect(try e.snap("w1", at(7)).nextReload == PlannedReload(date: at(67), reason: .retry, waitsForBudget: false))
        #expect(try e.snap("w1", at(7)).consecutiveFailures == 2)

        // Queued during a fetch that fails: an exempt reload starts at once, a budgeted one joins the retry.
        let retry = try #require(fetches(e.advance(to: at(67))).first)
        _ = try e.requestReload(widgetID: "w1", reason: .appRequested, appIsLive: true, now: at(68))
        let afterFailure = e.fetchFailed(retry, error: "x", now: at(69))
        #expect(fetches(afterFailure).map(\.reason) == [.appRequested])
        let action = try #require(fetches(afterFailure).first)
        _ = try e.requestReload(widgetID: "w1", reason: .configured, appIsLive: false, now: at(70))
        #expect(e.fetchFailed(action, error: "x", now: at(71)).isEmpty)
        #expect(try e.snap("w1", at(71)).nextReload?.reason == .retry)
        #expect(try e.snap("w1", at(71)).reloadQueued == nil)
    }

    @Test func untrackDropsEverything() throws {
        var e = engine()
        e.track(widgetID: "w2")
        try e.reload("w2", .added, at: t0, policy: "after", reloadAt: ms(7200))
        try e.reload("w1", .added, at: t0, entries: [(ms(0), view("a")), (ms(60), view("b"))], policy: "after", reloadAt: ms(3600))
        for i in 0..<5 { try e.reload("w1", .configured, at: at(Double(i + 1))) }
        let inFlight = try e.start("w1", .configured, at: at(10))
        _ = try e.requestReload(widgetID: "w1", reason: .action, appIsLive: false, now: at(11))
        #expect(e.nextDeadline() == at(7200), "w1 has no plan while its fetch is in flight")
        let removed = e.untrack(widgetID: "w1")
        let removedAgain = e.untrack(widgetID: "w1")
        #expect(removed && !removedAgain)
        #expect(e.snapshot(widgetID: "w1", now: at(11)) == nil)
        #expect(e.trackedWidgetIDs == ["w2"])
        #expect(e.nextDeadline() == at(7200))
        expectHostError(.invalidArgument, mentioning: ["w1"]) {
            try e.requestReload(widgetID: "w1", reason: .action, appIsLive: true, now: at(12))
        }
        // Its late reply is ignored, even once it is tracked again.
        let retracked = e.track(widgetID: "w1")
        #expect(retracked)
        #expect(try e.fetchSucceeded(inFlight, entries: [(ms(0), view("late"))], policy: "never", reloadAtMs: 0, now: at(12)).isEmpty)
        #expect(e.fetchFailed(inFlight, error: "late", now: at(12)).isEmpty)
        let fresh = try e.snap("w1", at(12))
        #expect(fresh.entries.isEmpty && fresh.fetchInFlight == nil && fresh.reloadQueued == nil && fresh.nextReload == nil)
        #expect(fresh.budgetUsed == 0 && fresh.consecutiveFailures == 0 && fresh.lastFailure == nil)
        #expect(e.advance(to: at(7199)).isEmpty)
        #expect(e.advance(to: at(7200)).map(\.widgetID) == ["w2"])
    }

    @Test func aReplyToAFetchNotInFlightChangesNothing() throws {
        var e = engine()
        let f = try e.start("w1", .added, at: t0)
        let stranger = TimelineFetch(id: f.id + 1000, widgetID: "w1", reason: .added)
        #expect(e.fetchSucceeded(stranger, timeline: Timeline(entries: [], policy: .never), now: at(1)).isEmpty)
        #expect(e.fetchFailed(TimelineFetch(id: f.id, widgetID: "w9", reason: .added), error: "x", now: at(1)).isEmpty)
        #expect(try e.snap("w1", at(1)).fetchInFlight == f)
        _ = e.fetchSucceeded(f, timeline: Timeline(entries: [], policy: .never), now: at(2))
        #expect(e.fetchSucceeded(f, timeline: Timeline(entries: [], policy: .atEnd), now: at(3)).isEmpty, "a second reply is ignored")
        #expect(try e.snap("w1", at(3)).policy == .never)
    }

    @Test func badRepliesAreNamedAndChangeNothing() throws {
        var e = engine(TimelineOptions(maxEntries: 3))
        try e.reload("w1", .added, at: t0, entries: [(ms(0), view("a")), (ms(600), view("b"))], policy: "after", reloadAt: ms(3600))
        let f = try e.start("w1", .action, at: at(10))
        let before = try e.snap("w1", at(10))
        let deadline = e.nextDeadline()

        expectHostError(.invalidContent, mentioning: ["timeline entry 1", "2023-11-14T22:14:20.000Z", "1700000060000 ms", "\"type\""]) {
            try e.fetchSucceeded(f, entries: [(ms(0), view("ok")), (ms(60), #"{"text":"no type"}"#)], policy: "never", reloadAtMs: 0, now: at(10))
        }
        expectHostError(.invalidContent, mentioning: ["timeline entry 0", "not valid JSON"]) {
            try e.fetchSucceeded(f, entries: [(ms(0), "")], policy: "never", reloadAtMs: 0, now: at(10))
        }
        expectHostError(.invalidArgument, mentioning: ["'hourly'", "at-end", "after", "never"]) {
            try e.fetchSucceeded(f, entries: [(ms(0), view("ok"))], policy: "hourly", reloadAtMs: 0, now: at(10))
        }
        expectHostError(.invalidArgument, mentioning: ["'after'", "reload_at"]) {
            try e.fetchSucceeded(f, entries: [(ms(0), view("ok"))], policy: "after", reloadAtMs: 0, now: at(10))
        }
        expectHostError(.limitExceeded, mentioning: ["4 entries", "limit is 3"]) {
            try e.fetchSucceeded(f, entries: (0..<4).map { (ms(Double($0)), view("x\($0)")) }, policy: "never", reloadAtMs: 0, now: at(10))
        }
        let huge = #"{"type":"text","text":""# + String(repeating: "x", count: 300_000) + #""}"#
        expectHostError(.limitExceeded, mentioning: ["timeline entry 0", "bytes"]) {
            try e.fetchSucceeded(f, entries: [(ms(0), huge)], policy: "never", reloadAtMs: 0, now: at(10))
        }
        #expect(try e.snap("w1", at(10)) == before, "a rejected reply leaves the state as it was, the fetch still in flight")
        #expect(e.nextDeadline() == deadline)

        // The service then reports the failure.
        _ = e.fetchFailed(f, error: "InvalidContent: timeline entry 1 …", now: at(10))
        let failed = try e.snap("w1", at(10))
        #expect(failed.fetchInFlight == nil && failed.consecutiveFailures == 1)
        #expect(failed.entries == before.entries && failed.currentIndex == before.currentIndex)
        #expect(failed.nextReload == PlannedReload(date: at(40), reason: .retry, waitsForBudget: false))
    }

    @Test func nextDeadlineIsTheEarliestLiveOne() throws {
        var e = TimelineEngine()
        #expect(e.nextDeadline() == nil)
        for (id, reload) in [("a", 900.0), ("b", 600.0), ("c", 1200.0)] {
            e.track(widgetID: id)
            try e.reload(id, .added, at: t0, policy: "after", reloadAt: ms(reload))
        }
        #expect(e.nextDeadline() == at(600))
        e.untrack(widgetID: "b")
        #expect(e.nextDeadline() == at(900), "the untracked widget's deadline is gone")
        // A new, later plan replaces an earlier one.
        try e.reload("a", at: at(1), policy: "after", reloadAt: ms(5000))
        #expect(e.nextDeadline() == at(1200))
        // An entry before the plan comes first.
        try e.reload("c", at: at(2), entries: [(ms(700), view("x"))], policy: "after", reloadAt: ms(1200))
        #expect(e.nextDeadline() == at(700))
        #expect(shown(e.advance(to: at(700))) == ["x"])
        #expect(e.nextDeadline() == at(1200))
        // A request between advances can leave a deadline in the past; advancing catches up.
        e.track(widgetID: "d")
        try e.reload("d", at: at(800), entries: [(ms(801), view("y"))])
        #expect(e.nextDeadline() == at(801))
        _ = try e.requestReload(widgetID: "c", reason: .action, appIsLive: false, now: at(900))
        #expect(e.nextDeadline() == at(801))
        #expect(shown(e.advance(to: at(900))) == ["y"])
        #expect(e.nextDeadline() == at(5000))
        e.untrack(widgetID: "a")
        #expect(e.nextDeadline() == nil, "c's fetch is in flight and d has nothing left")
    }

    @Test func theHeapStaysSmallUnderChurn() throws {
        var e = engine()
        e.track(widgetID: "w2")
        try e.reload("w2", .added, at: t0, policy: "after", reloadAt: ms(5000))
        for i in 0..<2000 {
            // Each reload moves w1's deadline, leaving a stale heap item behind w2's earlier one.
            try e.reload("w1", at: at(Double(i)), policy: "after", reloadAt: ms(10_000 + Double(i)))
        }
        #expect(e.heapCount <= 2 * 2 + 64 + 1)
        #expect(e.counters.rebuilds >= 20)
        #expect(e.nextDeadline() == at(5000))
        let due = e.advance(to: at(1_000_000))
        #expect(due.map(\.widgetID) == ["w2", "w1"], "deadline order")
        #expect(e.counters.processed == 2)
    }

    @Test func advanceTouchesOnlyWhatIsDueAmongAHundredThousandWidgets() throws {
        let count = 100_000
        var e = TimelineEngine()
        let content = try ViewTree.parse(view("tick"))
        for i in 1...count {
            let id = "w\(i)"
            e.track(widgetID: id)
            let f = try e.start(id, .added, at: t0)
            // Widget i shows its entry i seconds from now and reloads at its end (no sooner than 300 s).
            _ = e.fetchSucceeded(f, timeline: Timeline(entries: [TimelineEntry(unixMs: ms(Double(i)), content: content)], policy: .atEnd), now: t0)
        }
        #expect(e.trackedCount == count)
        #expect(e.heapCount == count, "one heap item per widget")
        #expect(e.nextDeadline() == at(1))
        #expect(e.counters == TimelineEngine.Counters())

        #expect(e.advance(to: at(0.5)).isEmpty)
        #expect(e.counters.popped == 0, "advancing with nothing due looks at nothing")
        let first = e.advance(to: at(10))
        #expect(first.map(\.widgetID) == (1...10).map { "w\($0)" })
        #expect(shown(first).count == 10)
        #expect(e.counters.popped == 10 && e.counters.processed == 10, "ten due widgets, ten looked at")

        var shows = 10, policyFetches = 0
        var step = 10.0
        while step < Double(count) {
            step += 100
            let effects = e.advance(to: at(step))
            shows += shown(effects).count
            policyFetches += fetches(effects).filter { $0.reason == .policy }.count
        }
        #expect(shows == count)
        #expect(policyFetches == count, "every at-end reload came due once")
        // Widgets 1…210 showed their entry in an advance before the one that passed 300 s, so they
        // were looked at again for their reload at 300 s; every other widget once, for both.
        #expect(e.counters.processed == count + 210)
        #expect(e.counters.popped == e.counters.processed, "no stale items, no scanning")
        #expect(e.nextDeadline() == nil, "every widget's fetch is in flight")
    }

    @Test func theDeadlineHeapPopsInOrder() {
        var heap = DeadlineHeap<String>()
        var seed: UInt64 = 42
        func next() -> Int64 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int64(seed >> 54)
        }
        var items: [DeadlineHeap<String>.Item] = []
        for sequence in 0..<2000 {
            let item = DeadlineHeap<String>.Item(deadline: next(), sequence: UInt64(sequence), key: "w\(sequence)")
            items.append(item)
            heap.push(item)
        }
        let expected = items.sorted(by: DeadlineHeap<String>.Item.precedes)
        var popped: [DeadlineHeap<String>.Item] = []
        while let item = heap.pop() { popped.append(item) }
        #expect(popped == expected)
        #expect(heap.isEmpty && heap.top == nil)
        heap.rebuild(items.reversed())
        var rebuilt: [DeadlineHeap<String>.Item] = []
        while let item = heap.pop() { rebuilt.append(item) }
        #expect(rebuilt == expected)
    }

    @Test func timeOnlyMovesWithTheClockGiven() throws {
        let clock = TestWallClock()
        var e = engine()
        try e.reload("w1", .added, at: clock.now(), entries: [(ms(60), view("a"))], policy: "at-end")
        clock.advance(by: 59)
        #expect(e.advance(to: clock.now()).isEmpty)
        clock.advance(by: 1)
        #expect(shown(e.advance(to: clock.now())) == ["a"])
        // Going back in time undoes nothing and does nothing.
        clock.set(t0)
        #expect(e.advance(to: clock.now()).isEmpty)
        #expect(try e.snap("w1", clock.now()).currentIndex == 0)
        clock.advance(by: 300)
        #expect(fetches(e.advance(to: clock.now())).map(\.reason) == [.policy])
    }
}

extension ReloadDecision {
    fileprivate var isFetch: Bool {
        if case .fetch = self { return true }
        return false
    }
}
