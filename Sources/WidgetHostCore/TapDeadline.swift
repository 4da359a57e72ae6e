#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A tap's `deadline` option (docs/delivery.md#the-renderers-deadline): the
/// Unix milliseconds after which the renderer that reported the tap no longer
/// waits for its answer. A tap the host reads after its deadline (the host was
/// stopped, or busy) is delivered to nobody: the person was already told it
/// failed, and an app opening long after would surprise them. One read in time
/// is delivered, and waits for the app no longer than the renderer waits.
public enum TapDeadline {
    /// What a tap read at some moment may still do.
    public enum Window: Sendable, Equatable {
        /// Deliver it, waiting at most `milliseconds` for the app: the
        /// delivery timeout, or less when the renderer stops waiting first
        /// (`renderers` true). `deadline` (Unix milliseconds) is when the
        /// host stops waiting, which the delivery tells the app.
        case deliver(milliseconds: Int64, deadline: Int64, renderers: Bool)
        /// The renderer stopped waiting `late` milliseconds ago: deliver nothing.
        case passed(late: Int64)
    }

    /// The window of a tap read at `now` with the renderer's `deadline`
    /// (nil when it gave none), the host waiting for an app at most `timeout`.
    public static func window(deadline: Int64?, now: Date, timeout: Duration) -> Window {
        let nowMs = UnixTime.milliseconds(now)
        let (seconds, attoseconds) = timeout.components
        let whole = seconds.multipliedReportingOverflow(by: 1000)
        let timeoutMs = whole.overflow ? Int64.max : max(0, whole.partialValue &+ attoseconds / 1_000_000_000_000_000)
        let (hostsDeadline, overflow) = nowMs.addingReportingOverflow(timeoutMs)
        let host = overflow ? Int64.max : hostsDeadline
        guard let deadline, deadline < host else { return .deliver(milliseconds: timeoutMs, deadline: host, renderers: false) }
        guard deadline > nowMs else { return .passed(late: nowMs - deadline) }
        return .deliver(milliseconds: deadline - nowMs, deadline: deadline, renderers: true)
    }
}
