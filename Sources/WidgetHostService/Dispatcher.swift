import DBus
import WidgetHostCore

/// The one way a call reaches the host. Each interface's server is a type of
/// its own (`AppsServer`, `WidgetsServer`, `WidgetServer`,
/// `LiveActivitiesServer`, `LiveActivityServer`) holding only this, and runs
/// every handler through it: on the connection's thread, isolated to the
/// host, in the order its sender sent it (``SenderLines``).
///
/// | method      | runs the body                                        | answers                        |
/// |-------------|------------------------------------------------------|--------------------------------|
/// | `inOrder`   | at once, or behind the sender's calls that wait      | the body does                  |
/// | `answer`    | as `inOrder`                                         | with its result, once stored   |
/// | `inTurn`    | in a turn of its own (a burst never holds up others) | the body does                  |
/// | `appOwned`  | as `inTurn`, with the caller's identity              | with its result, once stored   |
/// | `spawn`     | as a child task of `run()`: work that outlives a call | the body does                 |
/// | `read`      | at once (a property getter)                          | returns the value              |
struct Dispatcher: Sendable {
    let host: HostService

    func inOrder(_ call: MethodCall, _ body: @escaping @Sendable (isolated HostService) -> Void) {
        host.onExecutor((call.sender, body)) { host, context in
            let (sender, body) = context
            // Nothing of the sender waits: the body runs now, with no closure made to queue it.
            if host.senders.isIdle(sender) { return body(host) }
            host.senders.inOrder(sender) { body(host) }
        }
    }

    func answer<T>(_ call: MethodCall, _ reply: TypedReply<T>, _ body: @escaping @Sendable (isolated HostService) throws -> T) {
        inOrder(call) { host in host.answerOnceStored(reply) { try body(host) } }
    }

    func inTurn(_ call: MethodCall, _ body: @escaping @Sendable (isolated HostService) -> Void) {
        host.onExecutor((call.sender, body)) { host, context in host.senders.inTurn(context.0) { context.1(host) } }
    }

    /// Answers a call of an app-owned method: `body` runs with the caller's
    /// identity (looked up on the first such call of a connection, then cached).
    func appOwned<T>(
        _ call: MethodCall, _ reply: TypedReply<T>, _ body: @escaping @Sendable (isolated HostService, CallerIdentity) throws -> T
    ) {
        inTurn(call) { host in
            host.withCaller(call.sender, reply: reply) { host, identity, _ in try body(host, identity) }
        }
    }

    func spawn(_ job: @escaping HostService.Job) {
        host.spawn(job)
    }

    func read<T: Sendable>(_ body: (isolated HostService) -> T) -> T {
        host.assumeIsolated(body)
    }
}

/// The interfaces exported at every widget's and every Live Activity's path:
/// built once and shared, so an object costs a dictionary entry, not a set of
/// closures.
struct ObjectInterfaces: Sendable {
    let widget: [ExportedInterface]
    let activity: [ExportedInterface]

    init(_ dispatcher: Dispatcher) {
        widget = [Host1Widget.exported(WidgetServer(dispatcher: dispatcher))]
        activity = [Host1LiveActivity.exported(LiveActivityServer(dispatcher: dispatcher))]
    }
}
