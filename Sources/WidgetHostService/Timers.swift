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

/// Each timer's wall-clock deadline, and the timer loop waiting for one to change.
struct Deadlines {
    private var at: [HostTimer: Date] = [:]
    /// The timer loop waiting for a deadline to change; ``arm(_:at:)`` resumes it.
    private var waiter: CheckedContinuation<Void, Never>?
    /// Counts deadline changes, so a change made before the loop waits is not missed.
    private(set) var changes = 0

    /// `timer`'s deadline; nil while it is disarmed.
    func deadline(_ timer: HostTimer) -> Date? { at[timer] }

    /// The earliest deadline armed.
    var next: Date? { at.values.min() }

    /// Arms `timer` for `deadline`, or disarms it with nil; a change wakes the loop.
    mutating func arm(_ timer: HostTimer, at deadline: Date?) {
        guard at[timer] != deadline else { return }
        at[timer] = deadline
        changes += 1
        wake()
    }

    /// Whether `timer`'s deadline passed by `now`; it is then disarmed.
    mutating func takeIfDue(_ timer: HostTimer, now: Date) -> Bool {
        guard let deadline = at[timer], deadline <= now else { return false }
        at[timer] = nil
        return true
    }

    /// Parks the loop until a deadline changes after it saw `seen` changes:
    /// at once when one changed meanwhile or the loop is cancelled.
    mutating func wait(_ continuation: CheckedContinuation<Void, Never>, since seen: Int, cancelled: Bool) {
        if cancelled || changes != seen { continuation.resume() } else { waiter = continuation }
    }

    /// Resumes the parked loop, if any.
    mutating func wake() {
        waiter?.resume()
        waiter = nil
    }
}

/// The timer loop: one task of `run()` fires each timer when its deadline passes.
extension HostService {
    /// Arms `timer` for a wall-clock `deadline`, or disarms it with `nil`.
    func arm(_ timer: HostTimer, at deadline: Date?) {
        timers.arm(timer, at: deadline)
    }

    /// Fires each timer whose deadline passed, then sleeps until the next
    /// deadline or until one changes.
    func serveTimers() async {
        while !Task.isCancelled {
            let now = self.now
            // Each checked just before it fires: what one fires may arm the next.
            for timer in HostTimer.allCases where timers.takeIfDue(timer, now: now) { fire(timer) }
            let next = timers.next
            let seen = timers.changes
            await withTaskGroup(of: Void.self) { group in
                if let next {
                    // Deadlines are wall-clock times: waking at least once a minute
                    // notices a clock set forward or a machine that slept.
                    let wait = min(max(0, next.timeIntervalSince(now)), 60)
                    // Late by at most an eighth of the wait: a frame's end is a few
                    // milliseconds away, the other deadlines seconds or more.
                    let tolerance = Duration.microseconds(Int(min(20_000, wait * 1_000_000 / 8)))
                    group.addTask { try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1), tolerance: tolerance) }
                }
                group.addTask { await self.untilDeadlineChanges(since: seen) }
                await group.next()
                group.cancelAll()
            }
        }
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

    /// Returns once a deadline changed after the loop saw `seen` changes, or the
    /// calling task is cancelled. The wait starts on this actor after handlers
    /// may have armed timers meanwhile: those changes end it at once.
    private func untilDeadlineChanges(since seen: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                timers.wait(continuation, since: seen, cancelled: Task.isCancelled)
            }
        } onCancel: { [connection] in
            // The handler may run on any thread; the continuation belongs to this actor.
            connection.async {
                self.assumeIsolated { $0.timers.wake() }
            }
        }
    }
}
