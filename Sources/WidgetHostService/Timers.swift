import FoundationEssentials

/// The host's timers: one per concern, never one per item.
enum HostTimer: CaseIterable, Sendable {
    /// The next Live Activity deadline (stale, end, removal); see `rearmActivityTimer()`.
    case activities
    /// The timeline engine's next deadline; see `rearmTimelineTimer()`.
    case timelines
    /// Writing what the state directory refused, again (see StateService.swift).
    case storage
    /// Answering the callers of a write the disk has not taken within the
    /// delivery timeout (see `answerSlowWrites()`).
    case slowWrites
    /// The end of the earliest frame an announcement is held for (see PacingService.swift).
    case announcements
    /// Answering the oldest refused update held a frame (see PacingService.swift).
    case refusals
}

/// Each timer's wall-clock deadline.
struct Deadlines {
    private var at: [HostTimer: Date] = [:]

    /// `timer`'s deadline; nil while it is disarmed.
    func deadline(_ timer: HostTimer) -> Date? { at[timer] }

    /// The earliest deadline armed.
    var next: Date? { at.values.min() }

    /// Arms `timer` for `deadline`, or disarms it with nil; whether that changed anything.
    mutating func arm(_ timer: HostTimer, at deadline: Date?) -> Bool {
        guard at[timer] != deadline else { return false }
        at[timer] = deadline
        return true
    }

    /// Whether `timer`'s deadline passed by `now`; it is then disarmed.
    mutating func takeIfDue(_ timer: HostTimer, now: Date) -> Bool {
        guard let deadline = at[timer], deadline <= now else { return false }
        at[timer] = nil
        return true
    }
}

/// The timers on the connection's loop: one loop timer, set for the earliest
/// deadline, fires each timer whose deadline passed on the connection's
/// thread (this actor's executor). Arming costs a comparison and, when the
/// earliest deadline moves, a lock; a host with nothing armed never wakes.
extension HostService {
    /// Arms `timer` for a wall-clock `deadline`, or disarms it with `nil`.
    func arm(_ timer: HostTimer, at deadline: Date?) {
        guard timers.arm(timer, at: deadline) else { return }
        scheduleLoopTimer()
    }

    /// Starts firing the timers (`run()` calls it once the host serves the
    /// bus), with those already due.
    func serveTimers() {
        timersServed = true
        timersDue()
    }

    /// Fires each timer whose deadline passed, then sets the loop timer for the next.
    func timersDue() {
        guard timersServed else { return }
        // The loop timer fired, or is about to be set again: either way it is not set now.
        loopTimerSetFor = nil
        let now = self.now
        // Each checked just before it fires: what one fires may arm the next.
        for timer in HostTimer.allCases where timers.takeIfDue(timer, now: now) { fire(timer) }
        scheduleLoopTimer()
    }

    /// Sets the loop timer for the earliest deadline, or disarms it.
    private func scheduleLoopTimer() {
        let next = timers.next
        guard timersServed, next != loopTimerSetFor else { return }
        loopTimerSetFor = next
        guard let next else { return loopTimer.disarm() }
        // Deadlines are wall-clock times: waking at least once a minute
        // notices a clock set forward or a machine that slept.
        let wait = min(max(0, next.timeIntervalSince(now)), 60)
        loopTimer.fire(after: .nanoseconds(Int64((wait * 1e9).rounded(.up))))
    }

    private func fire(_ timer: HostTimer) {
        switch timer {
        case .activities: activityDeadlinePassed()
        case .timelines: timelineDeadlinePassed()
        case .storage: retryStorage()
        case .slowWrites: answerSlowWrites()
        case .announcements: announcementsDue()
        case .refusals: answerRefusals()
        }
    }
}
