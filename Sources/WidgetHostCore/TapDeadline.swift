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
    /// How long a delivery waits for the app: `milliseconds`, the delivery
    /// timeout or less when the renderer stops waiting first (`renderers`
    /// true); `deadline` (Unix milliseconds) is when the host stops waiting,
    /// which the delivery tells the app.
    public struct Wait: Sendable, Equatable {
        public var milliseconds: Int64
        public var deadline: Int64
        public var renderers: Bool

        public init(milliseconds: Int64, deadline: Int64, renderers: Bool) {
            (self.milliseconds, self.deadline, self.renderers) = (milliseconds, deadline, renderers)
        }
    }

    /// How many milliseconds past its `deadline` a tap read at `now` is; nil
    /// when it is in time or gave no deadline. A late tap is delivered to nobody.
    public static func late(_ deadline: Int64?, now: Date) -> Int64? {
        guard let deadline else { return nil }
        let nowMs = UnixTime.milliseconds(now)
        return deadline > nowMs ? nil : nowMs - deadline
    }

    /// The wait of a delivery sent at `now` for a tap with the renderer's
    /// `deadline` (nil when it gave none, and for deliveries that are no
    /// taps), the host waiting for an app at most `timeout` seconds.
    public static func wait(_ deadline: Int64?, now: Date, timeout: TimeInterval) -> Wait {
        let nowMs = UnixTime.milliseconds(now), host = UnixTime.milliseconds(now.addingTimeInterval(timeout))
        guard let deadline, deadline < host else { return Wait(milliseconds: host &- nowMs, deadline: host, renderers: false) }
        return Wait(milliseconds: max(0, deadline &- nowMs), deadline: deadline, renderers: true)
    }
}
