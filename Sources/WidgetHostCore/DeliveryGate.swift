/// Which deliveries (taps, URLs on their way to an app's handler) may be sent
/// now (docs/delivery.md): an app has at most `maxPendingPerApp` waiting for
/// its answer, and an app that left one unanswered past the delivery timeout
/// gets none until it answers a probe again.
///
/// Plain bookkeeping: the host sends the deliveries and the probes, and tells
/// the gate how each ended.
public struct DeliveryGate: Sendable {
    /// What ``admit(_:)`` decides.
    public enum Admission: Sendable, Equatable {
        /// Send it; report its end with ``ended(_:timedOut:)``.
        case send
        /// Do not send it: the caller gets this error.
        case refuse(HostError)
        /// Do not send it, and probe the app (``probeAnswered(_:stillSilent:)``):
        /// nothing else asks it whether it answers again.
        case refuseAndProbe(HostError)
    }

    public let maxPendingPerApp: Int
    /// Deliveries sent to each app and not yet answered.
    private var pending: [String: Int] = [:]
    /// Apps that left a delivery unanswered past the timeout, each with
    /// whether a probe of it is under way.
    private var silent: [String: Bool] = [:]

    public init(maxPendingPerApp: Int) {
        self.maxPendingPerApp = maxPendingPerApp
    }

    /// Whether a delivery to `appID` may be sent now; `.send` counts it as waiting.
    public mutating func admit(_ appID: String) -> Admission {
        if !silent.isEmpty, let probing = silent[appID] {
            let error = HostError.activationFailed(
                "\(appID) left an earlier delivery unanswered past the delivery timeout (it may be stopped or busy), so this one was not sent — it will not reach the app late; try again once the app answers")
            guard probing else {
                silent[appID] = true
                return .refuseAndProbe(error)
            }
            return .refuse(error)
        }
        let waiting = pending[appID, default: 0]
        guard waiting < maxPendingPerApp else {
            return .refuse(
                .limitExceeded(
                    "\(appID) has \(waiting) deliveries waiting for its answer, the most allowed (the limit max-pending-deliveries-per-app); try again once it answers"))
        }
        pending[appID] = waiting + 1
        return .send
    }

    /// A delivery sent to `appID` ended; `timedOut` when the app left it
    /// unanswered past the timeout. Returns whether to probe the app now
    /// (the first delivery it left unanswered).
    public mutating func ended(_ appID: String, timedOut: Bool) -> Bool {
        let left = pending[appID, default: 1] - 1
        pending[appID] = left > 0 ? left : nil
        guard timedOut, silent[appID] == nil else { return false }
        silent[appID] = true
        return true
    }

    /// A probe of `appID` ended: still no answer (the next delivery asks
    /// again), or the app answers again (or is gone, and the next delivery
    /// starts it anew), so deliveries go to it again.
    public mutating func probeAnswered(_ appID: String, stillSilent: Bool) {
        silent[appID] = stillSilent ? false : nil
    }

    /// Deliveries sent to `appID` and not yet answered.
    public func waiting(_ appID: String) -> Int { pending[appID, default: 0] }
}
