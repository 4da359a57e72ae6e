import DBus
import WidgetHostCore

/// The one way a call reaches the host. Each interface's server is a
/// `Sendable` type of its own (`AppsServer`, `WidgetsServer`, `WidgetServer`,
/// `LiveActivitiesServer`, `LiveActivityServer`) holding only this, and runs
/// every handler through it: on the connection's thread, isolated to the
/// host, in the order its sender sent it (``SenderLines``), with the server's
/// handlers (`AppsHandlers`, …), which hold only the stores its calls need.
/// A handler never sees the host, so it reaches no other store.
///
/// | method      | runs the body                                        | answers                        |
/// |-------------|------------------------------------------------------|--------------------------------|
/// | `inOrder`   | at once, or behind the sender's calls that wait      | the body does                  |
/// | `answer`    | as `inOrder`                                         | with its result, once stored   |
/// | `appOwned`  | in a turn of its own (a burst never holds up others), with the caller's identity | with its result, once stored |
/// | `withNameOwner` | as `inOrder`, with the caller's identity and the owner of a bus name | with its result, once stored |
/// | `spawn`     | as a child task of `run()`: work that outlives a call, isolated to the host across its awaits | the body does |
/// | `read`      | at once (a property getter)                          | returns the value              |
struct Dispatcher<Handlers: AnyObject>: Sendable {
    private let host: HostService
    private let handlers: Confined<Handlers>

    init(_ host: HostService, _ handlers: Handlers) {
        self.host = host
        self.handlers = Confined(handlers, on: host.connection)
    }

    func inOrder(_ call: MethodCall, _ body: @escaping @Sendable (Handlers) -> Void) {
        inLine(call.sender, body) { host, handlers, body in body(handlers.part(on: host)) }
    }

    func answer<T>(_ call: MethodCall, _ reply: TypedReply<T>, _ body: @escaping @Sendable (Handlers) throws -> T) {
        inLine(call.sender, (reply, body)) { host, handlers, context in
            let (reply, body) = context
            let handlers = handlers.part(on: host)
            host.stores.storage.answerOnceStored(reply) { try body(handlers) }
        }
    }

    /// Answers a call of an app-owned method: `body` runs with the caller's
    /// identity (looked up on the first such call of a connection, then cached).
    func appOwned<T>(_ call: MethodCall, _ reply: TypedReply<T>, _ body: @escaping @Sendable (Handlers, CallerIdentity) throws -> T) {
        host.onExecutor((call.sender, handlers, reply, body)) { host, context in
            let (sender, handlers, reply, body) = context
            host.senders.inTurn(sender) {
                host.withCaller(sender, reply: reply, handlers: handlers) { handlers, identity, _ in try body(handlers, identity) }
            }
        }
    }

    /// Answers a call that needs its caller's identity and the unique name
    /// owning the bus name `name` now (`RegisterApp`), in the caller's order;
    /// `check` refuses bad input first, before anything is looked up.
    func withNameOwner<T>(
        _ call: MethodCall, _ reply: TypedReply<T>, of name: String, check: @escaping @Sendable (Handlers) throws -> Void,
        _ body: @escaping @Sendable (Handlers, CallerIdentity, _ nameOwner: String?) throws -> T
    ) {
        inLine(call.sender, (call.sender, reply, name, check, body)) { host, handlers, context in
            let (sender, reply, name, check, body) = context
            do { try check(handlers.part(on: host)) } catch { return reply.fail(error) }
            host.withCaller(sender, nameOwnerOf: name, reply: reply, handlers: handlers, body)
        }
    }

    /// Runs `body` isolated to the host, in `sender`'s order: at once when
    /// nothing of the sender waits, with no closure made to queue it, else
    /// behind what waits. Entered through `onExecutor`, not `assumeIsolated`,
    /// which allocates twice each time; `body` gets what it needs as
    /// `context` and captures nothing, so it is made without allocating.
    private func inLine<Context>(
        _ sender: String, _ context: Context, _ body: @escaping (isolated HostService, Confined<Handlers>, Context) -> Void
    ) {
        host.onExecutor((sender, handlers, context, body)) { host, line in
            let (sender, handlers, context, body) = line
            if host.senders.isIdle(sender) { return body(host, handlers, context) }
            host.senders.inOrder(sender) { body(host, handlers, context) }
        }
    }

    /// Runs `job` as a child task of `run()` (dropped once the bus is gone),
    /// isolated to the host before and after each of its awaits.
    func spawn(_ job: nonisolated(nonsending) @escaping @Sendable (Handlers) async -> Void) {
        let handlers = self.handlers
        host.spawn { host in await job(handlers.part(on: host)) }
    }

    func read<T>(_ body: (Handlers) -> T) -> T {
        handlers.run(body)
    }
}

/// A part of the host — a server's handlers, a store — carried by what must
/// be `Sendable` (an exported server, the callback of a reply or of the
/// journal writer) and reached only on the connection's thread, which is the
/// host's executor: ``run(_:)`` checks that it runs there, as `assumeIsolated`
/// does, and traps anywhere else. So every part lives in the host's one
/// isolation domain and needs no lock, no hop and no await; this is the one
/// place that vouches for it.
struct Confined<Part: AnyObject>: @unchecked Sendable {
    private let part: Part
    private let executor: LoopExecutor

    init(_ part: Part, on connection: Connection) {
        self.part = part
        executor = connection.executor
    }

    /// Runs `body` with the part, on the connection's thread.
    func run<T>(_ body: (Part) throws -> T) rethrows -> T {
        executor.preconditionIsolated("a part of the host was reached off the connection's thread")
        return try body(part)
    }

    /// The part, to code isolated to the host already: its executor is this thread.
    func part(on host: isolated HostService) -> Part {
        assert(host.connection.executor === executor)
        return part
    }
}

/// The interfaces exported at every widget's and every Live Activity's path:
/// built once and shared, so an object costs a dictionary entry, not a set of
/// closures.
struct ObjectInterfaces: Sendable {
    let widget: [ExportedInterface]
    let activity: [ExportedInterface]

    init(widget: WidgetServer, activity: LiveActivityServer) {
        self.widget = [Host1Widget.exported(widget)]
        self.activity = [Host1LiveActivity.exported(activity)]
    }
}
