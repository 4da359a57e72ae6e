/// Each sender's calls, run in the order it sent them, and what is known of
/// each sender while it is on the bus (docs/apps.md#identity-who-may-act-for-an-app).
///
/// The host serves every sender on one thread, the executor. The contract:
///
/// - **One sender's calls run in the order it sent them.** A call runs at once
///   (``inOrder(_:_:)``) unless an earlier call of its sender still waits;
///   then it waits behind that one.
/// - **Other senders are never held behind it.** A call that runs in a turn of
///   its own (``inTurn(_:_:)``) is a job of the executor (`schedule` asks for
///   it; the job calls ``turn(of:)``): between two turns of one sender's burst
///   the executor serves what the others sent meanwhile. A call that must wait
///   for something off the thread — who its sender is — holds its sender
///   (``hold(_:)``): only that sender's later calls wait, until it lets go
///   (``release(_:)``), and then run in order until one holds again.
/// - **A sender that leaves is forgotten in one place** (``forget(_:)``): what
///   is known of it goes, and a hold under way when it left keeps nothing it
///   learns (``remember(_:for:)``); its calls sent before it left still run,
///   in order, and find it gone.
///
/// Not thread-safe: its owner calls it on the executor only.
public final class SenderLines<Sender: Hashable, Known> {
    public typealias Call = () -> Void

    @usableFromInline
    struct Line {
        /// Calls waiting for their turn, oldest first.
        @usableFromInline var waiting: [Call] = []
        /// Holds not yet released: while there is one, nothing of the sender runs.
        var holds = 0
        /// A job of the executor will run the next waiting call.
        var turnScheduled = false
        /// The sender left while held: what its holds learn is not kept.
        var left = false

        @usableFromInline init(waiting: [Call] = []) { self.waiting = waiting }
    }

    /// The senders with calls waiting, a hold, or a turn scheduled; the rest have no line.
    @usableFromInline var lines: [Sender: Line] = [:]
    private var known: [Sender: Known] = [:]
    private let schedule: (Sender) -> Void

    /// `schedule` asks the executor for a job of its own that calls ``turn(of:)``
    /// with the sender, after the jobs queued already.
    public init(schedule: @escaping (Sender) -> Void) {
        self.schedule = schedule
    }

    /// Runs `call` now, or after the calls of `sender` that wait already.
    /// One check of an empty dictionary when nothing waits.
    @inlinable
    public func inOrder(_ sender: Sender, _ call: @escaping Call) {
        if lines.isEmpty || lines[sender] == nil { return call() }
        lines[sender]!.waiting.append(call)
    }

    /// Runs `call` in a turn of its own, after the calls of `sender` that
    /// wait already: a burst of one sender is served one call per job.
    public func inTurn(_ sender: Sender, _ call: @escaping Call) {
        guard lines[sender] != nil else {
            var line = Line(waiting: [call])
            line.turnScheduled = true
            lines[sender] = line
            return schedule(sender)
        }
        lines[sender]!.waiting.append(call)
    }

    /// The executor's job for `sender`: runs its next waiting call, then asks
    /// for the next turn while calls wait and nothing holds it.
    public func turn(of sender: Sender) {
        guard lines[sender] != nil else { return }
        lines[sender]!.turnScheduled = false
        guard lines[sender]!.holds == 0, !lines[sender]!.waiting.isEmpty else { return settle(sender) }
        let call = lines[sender]!.waiting.removeFirst()
        call()
        guard let line = lines[sender], line.holds == 0, !line.turnScheduled else { return }
        guard !line.waiting.isEmpty else { return settle(sender) }
        lines[sender]!.turnScheduled = true
        schedule(sender)
    }

    /// Holds `sender`: its later calls wait until ``release(_:)``. A call that
    /// is running holds its sender while it waits for something off the thread.
    public func hold(_ sender: Sender) {
        lines[sender, default: Line()].holds += 1
    }

    /// Lets go of one hold of `sender`; once none is left, the calls that
    /// waited run, in order, until one of them holds again.
    public func release(_ sender: Sender) {
        guard let holds = lines[sender]?.holds, holds > 0 else { return }
        lines[sender]!.holds = holds - 1
        guard holds == 1 else { return }
        // The sender's holds are over: whether it left meanwhile is forgotten
        // too (its later calls find the bus says so).
        lines[sender]!.left = false
        while let line = lines[sender], line.holds == 0, !line.turnScheduled, !line.waiting.isEmpty {
            let call = lines[sender]!.waiting.removeFirst()
            call()
        }
        settle(sender)
    }

    /// Drops the line of `sender` when nothing of it is left.
    private func settle(_ sender: Sender) {
        guard let line = lines[sender], line.holds == 0, !line.turnScheduled, line.waiting.isEmpty else { return }
        lines[sender] = nil
    }

    /// Whether `sender` has no call waiting, no hold and no turn scheduled.
    public func isIdle(_ sender: Sender) -> Bool { lines[sender] == nil }

    // MARK: What is known of a sender

    /// What was learned of `sender` while it is on the bus.
    public func known(_ sender: Sender) -> Known? { known[sender] }

    /// Keeps what a hold of `sender` learned, unless it left the bus meanwhile.
    public func remember(_ value: Known, for sender: Sender) {
        guard !hasLeft(sender) else { return }
        known[sender] = value
    }

    /// Whether `sender` left the bus while held: what its held calls would
    /// leave behind would outlive it, so they keep nothing.
    public func hasLeft(_ sender: Sender) -> Bool { lines[sender]?.left ?? false }

    /// `sender` left the bus: what is known of it goes, and a hold under way
    /// keeps nothing. Its waiting calls still run, in order, and find it gone.
    public func forget(_ sender: Sender) {
        known[sender] = nil
        if let line = lines[sender], line.holds > 0 { lines[sender]!.left = true }
    }
}
