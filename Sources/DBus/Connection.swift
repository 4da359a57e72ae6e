import CDBus
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which bus to connect to.
public enum BusAddress: Sendable, Equatable, CustomStringConvertible {
    /// `DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when it exists.
    case session
    /// `DBUS_SYSTEM_BUS_ADDRESS`, else the well-known system socket.
    case system
    /// The bus that started this process by D-Bus activation (`DBUS_STARTER_ADDRESS`).
    case starter
    /// A D-Bus address such as `unix:path=/run/user/1000/bus`.
    case address(String)

    public var description: String {
        switch self {
        case .session: return "the session bus"
        case .system: return "the system bus"
        case .starter: return "the starter bus"
        case .address(let a): return "the bus at \(a)"
        }
    }

    /// True when this process was started by D-Bus activation.
    public static var startedByActivation: Bool {
        environment("DBUS_STARTER_ADDRESS").map { !$0.isEmpty } ?? false
    }

    /// The address string libdbus connects to.
    public func resolve() throws -> String {
        switch self {
        case .address(let a):
            return a
        case .starter:
            guard let a = Self.environment("DBUS_STARTER_ADDRESS"), !a.isEmpty else {
                throw DBusError(
                    name: "org.freedesktop.DBus.Error.BadAddress",
                    message: "DBUS_STARTER_ADDRESS is not set: this process was not started by D-Bus activation")
            }
            return a
        case .system:
            if let a = Self.environment("DBUS_SYSTEM_BUS_ADDRESS"), !a.isEmpty { return a }
            return "unix:path=/var/run/dbus/system_bus_socket"
        case .session:
            if let a = Self.environment("DBUS_SESSION_BUS_ADDRESS"), !a.isEmpty { return a }
            if let runtime = Self.environment("XDG_RUNTIME_DIR"), !runtime.isEmpty, access(runtime + "/bus", F_OK) == 0 {
                return "unix:path=" + runtime + "/bus"
            }
            throw DBusError(
                name: "org.freedesktop.DBus.Error.BadAddress",
                message: "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
        }
    }

    static func environment(_ name: String) -> String? {
        guard let p = getenv(name) else { return nil }
        return String(cString: p)
    }
}

/// A connection pointer handed from the thread that opened it to its owner.
struct RawConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Calls `dbus_threads_init_default` once, before any other libdbus call.
package let threadsInitialized: Bool = dbus_threads_init_default() != 0

/// Runs a libdbus call that reports through a `DBusError*`, mapping a set error to a thrown one.
package func withCError<T>(_ body: (UnsafeMutablePointer<CDBus.DBusError>) -> T?) throws -> T {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let result = body(&error)
    if dbus_error_is_set(&error) != 0 {
        throw DBusError(
            name: error.name.map { String(cString: $0) } ?? DBusError.failedName,
            message: error.message.map { String(cString: $0) } ?? "")
    }
    guard let result else { throw DBusError.failed("libdbus returned no result and no error") }
    return result
}

/// A private connection to a message bus (or a peer), driven by a thread
/// of its own. Every method is safe to call from any thread or task and
/// none blocks: calls are asynchronous, sends are queued.
///
/// Close a connection with `close()` when done; it is also closed when the
/// last reference goes away.
public final class Connection: Sendable {
    let loop: MainLoop
    var raw: OpaquePointer { loop.raw }
    /// A serial executor running on the connection's thread: an actor that
    /// adopts it shares the connection's thread of control, so its state
    /// changes stay in the order messages arrived.
    public let executor: LoopExecutor
    let state = Locked(ConnectionState())
    let objects: ObjectServer

    struct ConnectionState {
        var uniqueName: String?
        var calls: [ObjectIdentifier: PendingCall] = [:]
        var subscriptions: [UInt64: Subscription] = [:]
        var nextID: UInt64 = 1
        var disconnected = false
        var disconnectWaiters: [CheckedContinuation<Void, Never>] = []
        var disconnectHandlers: [@Sendable () -> Void] = []
        /// When the deadline timer is set to fire (uptime ns); nil when disarmed.
        var timerArmedFor: UInt64?
    }

    /// One timer for every call's timeout. libdbus would create (and a
    /// main loop arm and cancel) a timeout per pending call; instead calls
    /// are sent without one and this timer fires at the earliest deadline of
    /// the calls in flight. It is disarmed while no call is waiting.
    let deadlineTimer: LoopTimer

    private init(loop: MainLoop, deadlineTimer: LoopTimer) {
        self.loop = loop
        executor = LoopExecutor(loop: loop)
        objects = ObjectServer()
        self.deadlineTimer = deadlineTimer
    }

    deinit {
        let loop = self.loop
        loop.removeTimer(deadlineTimer)
        let wasClosed = loop.closed.exchange(true, ordering: .acquiringAndReleasing)
        loop.async {
            if !wasClosed { dbus_connection_close(loop.raw) }
            dbus_connection_unref(loop.raw)
        }
        loop.stop()
    }

    /// Runs `body` on the connection's thread, after what is already queued there.
    public func async(_ body: @escaping @Sendable () -> Void) {
        loop.async(body)
    }

    /// True when called on the connection's thread.
    public var isCurrentThread: Bool { loop.isCurrent }

    /// A timer that runs `fire` on the connection's thread (the executor of
    /// actors that adopt ``executor``) once its deadline passes; disarmed
    /// until ``ConnectionTimer/fire(after:)``. The loop sleeps until the
    /// earliest deadline of its timers, so a timer costs one wake-up when it
    /// fires and nothing while it waits or is disarmed.
    public func makeTimer(_ fire: @escaping @Sendable () -> Void) -> ConnectionTimer {
        ConnectionTimer(loop: loop, timer: loop.addTimer(fire))
    }

    /// Opens a private connection and, for a bus, registers with it (`Hello`).
    public static func connect(_ bus: BusAddress = .session, label: String = "dbus", register: Bool = true) async throws
        -> Connection
    {
        precondition(threadsInitialized, "dbus_threads_init_default failed")
        let address = try bus.resolve()
        // Opening connects a socket and authenticates, which blocks: do it on
        // a thread of its own, not on the cooperative pool.
        let opened: RawConnection = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue(label: "dbus.\(label).open").async {
                continuation.resume(with: Result { RawConnection(pointer: try withCError { dbus_connection_open_private(address, $0) }) })
            }
        }
        let raw = opened.pointer
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let loop = MainLoop(raw: raw, label: label)
        let connection = Connection(loop: loop, deadlineTimer: loop.addTimer {})
        // Set before the loop thread starts, which is what reads it.
        connection.deadlineTimer.fire = { [weak connection] in connection?.expireCalls() }
        loop.onMessage = { [weak connection] message in
            connection?.route(message) ?? false
        }
        guard loop.install(), loop.start() else {
            connection.close()
            throw DBusError.noMemory
        }
        if register {
            do {
                let reply = try await connection.call(
                    Message.methodCall(
                        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                        interface: "org.freedesktop.DBus", member: "Hello"))
                guard case .string(let name)? = reply.arguments().first else {
                    throw DBusError.failed("the bus answered Hello without a unique name")
                }
                _ = name.withCString { dbus_bus_set_unique_name(raw, $0) }
                connection.state.withLock { $0.uniqueName = name }
            } catch {
                connection.close()
                throw error
            }
        }
        return connection
    }

    /// This connection's unique name on the bus (":1.42"), once registered.
    public var uniqueName: String? { state.withLock { $0.uniqueName } }

    /// False once the bus went away or `close()` was called.
    public var isConnected: Bool {
        !loop.closed.load(ordering: .acquiring) && !state.withLock { $0.disconnected }
    }

    /// Closes the connection. Calls in flight fail with `Disconnected`.
    public func close() {
        guard !loop.closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let loop = self.loop
        loop.async { dbus_connection_close(loop.raw) }
        connectionLost()
    }

    /// Returns when the connection is lost or closed.
    public func waitUntilDisconnected() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.disconnected { return true }
                state.disconnectWaiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Caps the file descriptors the messages read but not yet released may
    /// hold: past it, libdbus reads nothing more from the socket until some are
    /// released. Without a cap, a flood of messages each carrying descriptors
    /// fills the process's table before they are dispatched, and a message whose
    /// descriptors no longer fit is a broken connection.
    public func limitReceivedUnixFDs(_ count: Int) {
        let loop = self.loop
        loop.async { dbus_connection_set_max_received_unix_fds(loop.raw, count) }
    }

    /// Runs `handler` (on the connection's thread) when the connection is lost.
    public func onDisconnect(_ handler: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.disconnected { return true }
            state.disconnectHandlers.append(handler)
            return false
        }
        if runNow { handler() }
    }

    // MARK: Sending

    /// Queues a message for sending; returns at once.
    public func send(_ message: Message) throws {
        guard isConnected else { throw DBusError.disconnected() }
        loop.execute((self, message)) { connection, message in _ = dbus_connection_send(connection.raw, message.raw, nil) }
    }

    /// Emits a signal.
    public func emit(path: String, interface: String, member: String, arguments: [DBusValue] = []) throws {
        try objects.checkSignal(path: path, interface: interface, member: member, arguments: arguments)
        try send(Message.signal(path: path, interface: interface, member: member, arguments: arguments))
    }

    /// Emits a signal whose arguments `body` writes (see ``MessageWriter``);
    /// they must have the signature the signal is declared with.
    public func emit(path: String, interface: String, member: String, writing body: (inout MessageWriter) throws -> Void) throws {
        let signal = try objects.declaredSignal(path: path, interface: interface, member: member)
        let message = try Message.signal(path: path, interface: interface, member: member, writing: body)
        guard message.hasSignature(signal.signature) else {
            throw ObjectServer.wrongSignature(signal, interface, signature: message.signature)
        }
        try send(message)
    }

    /// Sends a method call and waits for its reply without blocking a thread.
    /// An error reply is thrown as `DBusError`; so are timeouts (`NoReply`) and
    /// a lost connection (`Disconnected`). Cancelling the task cancels the call.
    ///
    /// The call runs on the caller's executor (`nonisolated(nonsending)`): an
    /// actor on the connection's executor makes it without leaving its thread.
    public nonisolated(nonsending) func call(_ message: Message, timeout: Duration? = nil) async throws -> Message {
        let call = PendingCall()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Message, any Error>) in
                start(call, message, timeout: timeout) { continuation.resume(with: $0) }
            }
        } onCancel: {
            call.finish(.failure(CancellationError()), cancelPending: true)
        }
    }

    /// Sends a method call; `completion` runs once with the reply (or the
    /// error, `NoReply` on timeout, `Disconnected`) on the connection's thread.
    ///
    /// The callback flavour of `call(_:timeout:)` for code that already runs
    /// on that thread (an actor on the connection's executor): no task is
    /// created and nothing leaves the thread.
    public func send(
        _ message: Message, timeout: Duration? = nil, completion: @escaping @Sendable (Result<Message, any Error>) -> Void
    ) {
        start(PendingCall(completingOn: loop), message, timeout: timeout, completion)
    }

    /// Convenience: a method call built and sent in one step; returns the reply's arguments.
    public nonisolated(nonsending) func call(
        destination: String, path: String, interface: String, member: String, _ arguments: [DBusValue] = [],
        timeout: Duration? = nil
    ) async throws -> [DBusValue] {
        let message = try Message.methodCall(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        return try await call(message, timeout: timeout).arguments()
    }

    private func start(
        _ call: PendingCall, _ message: Message, timeout: Duration?,
        _ completion: @escaping @Sendable (Result<Message, any Error>) -> Void
    ) {
        guard call.setCompletion(completion) else { return }  // already cancelled
        loop.execute((self, call, message, timeout)) { connection, call, message, timeout in connection.send(call, message, timeout: timeout) }
    }

    /// Sends a call's message; runs on the connection's thread.
    private func send(_ call: PendingCall, _ message: Message, timeout: Duration?) {
        // Cancelled between the caller and the thread: nothing to send or track.
        guard !call.isFinished else { return }
        let registered = state.withLock { state -> Bool in
            guard !state.disconnected else { return false }
            state.calls[ObjectIdentifier(call)] = call
            return true
        }
        guard registered, !loop.closed.load(ordering: .acquiring) else {
            call.finish(.failure(DBusError.disconnected()), cancelPending: false)
            return
        }
        call.track(by: self)
        var pending: OpaquePointer?
        // The timeout is ours (see `deadlineTimer`); libdbus gets none. A
        // timeout beyond what libdbus could express waits like an infinite one.
        let ms = timeout.map { max(0, $0.milliseconds) } ?? Int64(Self.defaultTimeoutMilliseconds)
        if ms <= Int64(Int32.max) {
            call.deadline = monotonicNanoseconds() &+ UInt64(ms) * 1_000_000
            call.timeoutMilliseconds = ms
            armDeadline(call.deadline)
        }
        guard dbus_connection_send_with_reply(raw, message.raw, &pending, cdbus_timeout_infinite()) != 0 else {
            call.finish(.failure(DBusError.noMemory), cancelPending: false)
            return
        }
        guard let pending else {
            call.finish(.failure(DBusError.disconnected()), cancelPending: false)
            return
        }
        guard call.attach(pending) else { return }  // cancelled meanwhile; attach dropped it
        let data = Unmanaged.passRetained(call).toOpaque()
        guard dbus_pending_call_set_notify(pending, pendingCallNotify, data, releasePendingCall) != 0 else {
            Unmanaged<PendingCall>.fromOpaque(data).release()
            call.finish(.failure(DBusError.noMemory), cancelPending: true)
            return
        }
        // The reply may have been dispatched before the notify was set.
        if dbus_pending_call_get_completed(pending) != 0 { call.complete() }
    }

    /// Stops tracking a call that finished.
    func forget(_ call: PendingCall) {
        _ = state.withLock { $0.calls.removeValue(forKey: ObjectIdentifier(call)) }
    }

    /// libdbus's default reply timeout, used when a call names none.
    static let defaultTimeoutMilliseconds = 25_000

    /// Makes the deadline timer fire no later than `deadline`. On the connection's thread.
    private func armDeadline(_ deadline: UInt64) {
        let rearm = state.withLock { state -> Bool in
            if let armed = state.timerArmedFor, armed <= deadline { return false }
            state.timerArmedFor = deadline
            return true
        }
        if rearm { loop.schedule(deadlineTimer, at: deadline) }
    }

    /// Fails every call whose deadline has passed with `NoReply` and re-arms
    /// the timer for the earliest remaining one. On the connection's thread.
    func expireCalls() {
        let now = monotonicNanoseconds()
        let (expired, next) = state.withLock { state -> ([PendingCall], UInt64?) in
            state.timerArmedFor = nil
            var expired: [PendingCall] = []
            var next: UInt64?
            for call in state.calls.values {
                if call.deadline <= now {
                    expired.append(call)
                } else if call.deadline != .max {
                    next = min(next ?? .max, call.deadline)
                }
            }
            return (expired, next)
        }
        for call in expired {
            call.finish(
                .failure(DBusError(
                    name: DBusError.noReplyName,
                    message: "No reply within \(call.timeoutMilliseconds) ms: the peer may be busy, blocked or gone, or the call's timeout too short")),
                cancelPending: true)
        }
        // A timer scheduled without an interval fires once; with no call waiting it stays quiet.
        if let next { armDeadline(next) }
    }

    // MARK: Incoming

    /// Routes one dispatched message. Runs on the connection's thread.
    private func route(_ message: Message) -> Bool {
        switch message.kind {
        case .methodCall:
            objects.handle(message, on: self)
            return true
        case .signal:
            if message.isLocalDisconnected {
                connectionLost()
                return true
            }
            deliverSignal(message)
            return false
        default:
            return false
        }
    }

    /// The bus went away or the connection was closed: fail everything in flight.
    func connectionLost() {
        let (calls, subscriptions, waiters, handlers) = state.withLock {
            state -> ([PendingCall], [Subscription], [CheckedContinuation<Void, Never>], [@Sendable () -> Void]) in
            if state.disconnected { return ([], [], [], []) }
            state.disconnected = true
            defer {
                state.calls.removeAll()
                state.subscriptions.removeAll()
                state.disconnectWaiters.removeAll()
                state.disconnectHandlers.removeAll()
            }
            return (
                Array(state.calls.values), Array(state.subscriptions.values), state.disconnectWaiters,
                state.disconnectHandlers
            )
        }
        for call in calls { call.finish(.failure(DBusError.disconnected()), cancelPending: false) }
        // No one is left to answer: the handlers still running are cancelled.
        objects.handlerTasks.cancelAll()
        for subscription in subscriptions { subscription.continuation.finish() }
        for waiter in waiters { waiter.resume() }
        for handler in handlers { handler() }
    }
}

// MARK: - Pending calls

/// One call in flight. Finishes exactly once: by its reply, a timeout, cancellation or disconnection.
final class PendingCall: @unchecked Sendable {
    private struct State {
        var pending: OpaquePointer?
        var completion: (@Sendable (Result<Message, any Error>) -> Void)?
        var finished = false
        var early: Result<Message, any Error>?
        /// The connection that tracks the call until it finishes (weak: it
        /// holds the call, and a closure of the call's holding it was a cycle).
        weak var connection: Connection?
    }
    /// Guards `guarded`, which lives in the call itself rather than in a
    /// `Locked` of its own: one allocation less for every call.
    private let lock = Mutex(())
    nonisolated(unsafe) private var guarded = State()
    /// Where the completion runs when it must run on the connection's thread
    /// (``Connection/send(_:timeout:completion:)``); nil: wherever the call finishes.
    private let loop: MainLoop?
    /// When the call times out (uptime ns; `.max` for never). Written and read on the connection's thread.
    nonisolated(unsafe) var deadline: UInt64 = .max
    nonisolated(unsafe) var timeoutMilliseconds: Int64 = 0

    init(completingOn loop: MainLoop? = nil) {
        self.loop = loop
    }

    private func withState<R>(_ body: (inout State) -> R) -> R {
        var result: R?
        lock.withLock { _ in result = body(&guarded) }
        return result!
    }

    /// True once the call has finished, whichever way.
    var isFinished: Bool { withState { $0.finished } }

    /// Has `connection` track the call until it finishes.
    func track(by connection: Connection) {
        withState { $0.connection = connection }
    }

    /// False when the call finished (was cancelled) before it started.
    func setCompletion(_ completion: @escaping @Sendable (Result<Message, any Error>) -> Void) -> Bool {
        let early: Result<Message, any Error>? = withState { state in
            if state.finished { return state.early ?? .failure(CancellationError()) }
            state.completion = completion
            return nil
        }
        if let early {
            run(completion, early)
            return false
        }
        return true
    }

    /// Keeps the pending call; false (and the pending call dropped) when already finished.
    func attach(_ pending: OpaquePointer) -> Bool {
        let keep = withState { state -> Bool in
            if state.finished { return false }
            state.pending = pending
            return true
        }
        if !keep {
            dbus_pending_call_cancel(pending)
            dbus_pending_call_unref(pending)
        }
        return keep
    }

    /// The reply arrived (or libdbus produced a timeout error reply).
    func complete() {
        let taken = withState { state -> (OpaquePointer?, (@Sendable (Result<Message, any Error>) -> Void)?, Connection?)? in
            guard !state.finished, let pending = state.pending else { return nil }
            state.finished = true
            defer {
                state.pending = nil
                state.completion = nil
            }
            return (pending, state.completion, state.connection)
        }
        guard let (pending, completion, connection) = taken, let pending else { return }
        let reply = dbus_pending_call_steal_reply(pending)
        dbus_pending_call_unref(pending)
        connection?.forget(self)
        guard let completion else { return }
        guard let reply else {
            run(completion, .failure(DBusError(name: DBusError.noReplyName, message: "No reply was received")))
            return
        }
        let message = Message(owning: reply)
        if let error = message.error {
            run(completion, .failure(error))
        } else {
            run(completion, .success(message))
        }
    }

    /// Finishes without a reply.
    func finish(_ result: Result<Message, any Error>, cancelPending: Bool) {
        let taken = withState { state -> (OpaquePointer?, (@Sendable (Result<Message, any Error>) -> Void)?, Connection?)? in
            guard !state.finished else { return nil }
            state.finished = true
            state.early = result
            defer {
                state.pending = nil
                state.completion = nil
            }
            return (state.pending, state.completion, state.connection)
        }
        guard let (pending, completion, connection) = taken else { return }
        if let pending {
            if cancelPending { dbus_pending_call_cancel(pending) }
            dbus_pending_call_unref(pending)
        }
        connection?.forget(self)
        if let completion { run(completion, result) }
    }

    /// Runs the completion, on the connection's thread when it must.
    private func run(_ completion: @escaping @Sendable (Result<Message, any Error>) -> Void, _ result: Result<Message, any Error>) {
        guard let loop, !loop.isCurrent else { return completion(result) }
        loop.async { completion(result) }
    }
}

private let pendingCallNotify: DBusPendingCallNotifyFunction = { _, data in
    guard let data else { return }
    Unmanaged<PendingCall>.fromOpaque(data).takeUnretainedValue().complete()
}

private let releasePendingCall: DBusFreeFunction = { data in
    guard let data else { return }
    Unmanaged<PendingCall>.fromOpaque(data).release()
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflow2) = ms.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        return overflow2 ? (ms < 0 ? .min : .max) : total
    }
}

// MARK: - Timers

/// A timer of a connection's loop (``Connection/makeTimer(_:)``).
public final class ConnectionTimer: Sendable {
    let loop: MainLoop
    let timer: LoopTimer

    init(loop: MainLoop, timer: LoopTimer) {
        self.loop = loop
        self.timer = timer
    }

    /// Fires once, `delay` from now (at the loop's next look when it is not
    /// positive), replacing any deadline set before.
    public func fire(after delay: Duration) {
        // Both components have the sign of the duration. At most 2³² s (136 years) ahead: nothing overflows.
        let (seconds, attoseconds) = delay.components
        let nanoseconds = seconds < 0 || attoseconds < 0 ? 0 : min(seconds, 1 << 32) * 1_000_000_000 + attoseconds / 1_000_000_000
        loop.schedule(timer, at: monotonicNanoseconds() + UInt64(nanoseconds))
    }

    /// Keeps it from firing until it is armed again.
    public func disarm() { loop.disarm(timer) }

    /// Removes it from the loop for good.
    public func invalidate() { loop.removeTimer(timer) }
}

// MARK: - Executor

/// A serial executor that runs jobs on the connection's thread. It is also
/// a task executor: code run under `withTaskExecutorPreference(connection.executor)`
/// makes its calls and takes their replies on the connection's own thread,
/// with no hop between threads on either side.
public final class LoopExecutor: SerialExecutor, TaskExecutor, @unchecked Sendable {
    let loop: MainLoop

    init(loop: MainLoop) { self.loop = loop }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        loop.async { unowned.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func isIsolatingCurrentContext() -> Bool? {
        loop.isCurrent
    }

    public func checkIsolated() {
        precondition(loop.isCurrent, "not on the connection's thread")
    }
}
