import FoundationEssentials

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
}

/// Each timer's wall-clock deadline, and the timer loop waiting for one to
/// change. The stores that keep a timer arm it; the host's loop fires it.
final class Deadlines {
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
    func arm(_ timer: HostTimer, at deadline: Date?) {
        guard at[timer] != deadline else { return }
        at[timer] = deadline
        changes += 1
        wake()
    }

    /// Whether `timer`'s deadline passed by `now`; it is then disarmed.
    func takeIfDue(_ timer: HostTimer, now: Date) -> Bool {
        guard let deadline = at[timer], deadline <= now else { return false }
        at[timer] = nil
        return true
    }

    /// Parks the loop until a deadline changes after it saw `seen` changes:
    /// at once when one changed meanwhile or the loop is cancelled.
    func wait(_ continuation: CheckedContinuation<Void, Never>, since seen: Int, cancelled: Bool) {
        if cancelled || changes != seen { continuation.resume() } else { waiter = continuation }
    }

    /// Resumes the parked loop, if any.
    func wake() {
        waiter?.resume()
        waiter = nil
    }
}

/// The timer loop: one task of `run()` fires each timer when its deadline passes.
extension HostService {
    /// Fires each timer whose deadline passed, then sleeps until the next
    /// deadline or until one changes.
    func serveTimers() async {
        while !Task.isCancelled {
            let now = context.now
            // Each checked just before it fires: what one fires may arm the next.
            for timer in HostTimer.allCases where timers.takeIfDue(timer, now: now) { fire(timer) }
            let next = timers.next
            let seen = timers.changes
            await withTaskGroup(of: Void.self) { group in
                if let next {
                    // Deadlines are wall-clock times: waking at least once a minute
                    // notices a clock set forward or a machine that slept.
                    let wait = min(max(0, next.timeIntervalSince(now)), 60)
                    group.addTask { try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1), tolerance: .milliseconds(20)) }
                }
                group.addTask { await self.untilDeadlineChanges(since: seen) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    private func fire(_ timer: HostTimer) {
        switch timer {
        case .activities: stores.activities.deadlinePassed()
        case .timelines: stores.timelines.deadlinePassed()
        case .storage: stores.storage.retry()
        case .slowWrites: stores.storage.answerSlowWrites()
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
