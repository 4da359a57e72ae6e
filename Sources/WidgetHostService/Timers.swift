import DBus
import FoundationEssentials
import WidgetHostCore

/// The host's timers: one per concern, never one per item.
enum HostTimer: CaseIterable, Sendable {
    /// The next Live Activity deadline (stale, end, removal); see `Activities.changed()`.
    case activities
    /// The timeline engine's next deadline; see `Timelines.rearm()`.
    case timelines
    /// Writing what the state directory refused, again (see Storage.swift).
    case storage
    /// Answering the callers of a write the disk has not taken within the
    /// delivery timeout (see `Storage.answerSlowWrites()`).
    case slowWrites
    /// The end of the earliest frame an announcement is held for (see Pacing.swift).
    case announcements
    /// Answering the oldest refused update held back (see Pacing.swift).
    case refusals
}

/// Each timer's wall-clock deadline, and one timer of the connection's loop
/// set for the earliest: the stores that keep a timer arm it; the loop timer
/// fires the host's ``HostService/timersDue()`` on the connection's thread
/// (the host's executor), with no task woken. Arming costs a comparison and,
/// when the earliest deadline moves, a lock; with nothing armed the loop
/// timer is disarmed and the host never wakes for it.
final class Deadlines {
    private var at: [HostTimer: Date] = [:]
    private let clock: any WallClock
    /// Set once the host serves the bus (``serve(with:)``); nil before and after.
    private var loopTimer: ConnectionTimer?
    /// The deadline the loop timer is set for.
    private var setFor: Date?

    init(clock: any WallClock) {
        self.clock = clock
    }

    /// `timer`'s deadline; nil while it is disarmed.
    func deadline(_ timer: HostTimer) -> Date? { at[timer] }

    /// Arms `timer` for `deadline`, or disarms it with nil.
    func arm(_ timer: HostTimer, at deadline: Date?) {
        guard at[timer] != deadline else { return }
        at[timer] = deadline
        schedule()
    }

    /// Whether `timer`'s deadline passed by `now`; it is then disarmed.
    func takeIfDue(_ timer: HostTimer, now: Date) -> Bool {
        guard let deadline = at[timer], deadline <= now else { return false }
        at[timer] = nil
        return true
    }

    /// Starts firing with `loopTimer`, set for the earliest deadline.
    func serve(with loopTimer: ConnectionTimer) {
        self.loopTimer = loopTimer
        setFor = nil
        schedule()
    }

    /// Stops firing: the loop timer goes.
    func stop() {
        loopTimer?.invalidate()
        loopTimer = nil
    }

    /// The loop timer fired: it is set for nothing until ``schedule()``.
    func fired() { setFor = nil }

    /// Sets the loop timer for the earliest deadline, or disarms it.
    func schedule() {
        let next = at.values.min()
        guard let loopTimer, next != setFor else { return }
        setFor = next
        guard let next else { return loopTimer.disarm() }
        // Deadlines are wall-clock times: waking at least once a minute
        // notices a clock set forward or a machine that slept.
        let wait = min(max(0, next.timeIntervalSince(clock.now())), 60)
        loopTimer.fire(after: .nanoseconds(Int64((wait * 1e9).rounded(.up))))
    }
}

/// Firing the timers: the loop timer calls ``timersDue()``.
extension HostService {
    /// Starts firing the timers (`run()` calls it once the host serves the
    /// bus), with those already due.
    func serveTimers() {
        timers.serve(with: connection.makeTimer { [weak self] in self?.assumeIsolated { $0.timersDue() } })
        timersDue()
    }

    /// Fires each timer whose deadline passed, then sets the loop timer for the next.
    func timersDue() {
        timers.fired()
        let now = context.now
        // Each checked just before it fires: what one fires may arm the next.
        for timer in HostTimer.allCases where timers.takeIfDue(timer, now: now) { fire(timer) }
        timers.schedule()
    }

    private func fire(_ timer: HostTimer) {
        switch timer {
        case .activities: stores.activities.deadlinePassed()
        case .timelines: stores.timelines.deadlinePassed()
        case .storage: stores.storage.retry()
        case .slowWrites: stores.storage.answerSlowWrites()
        case .announcements: stores.pacing.announcementsDue()
        case .refusals: stores.pacing.answerRefusals()
        }
    }
}
