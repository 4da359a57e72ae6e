import CDBus
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

// libdbus main-loop integration on a thread of the connection's own, after
// GDBus's worker thread and BlueZ's gdbus/mainloop.c:
//
// - the thread sleeps in poll(2) on the connection's socket and an eventfd;
//   a message that arrives wakes exactly this thread, which reads it,
//   dispatches it and runs the handlers, with no hop to another thread;
// - a watch is polled only while libdbus has it enabled; a disabled watch is
//   left out of the poll set, so an idle connection costs nothing;
// - a timeout is a repeating timer (libdbus timeouts fire until removed or
//   disabled), re-armed when toggled because its interval may change;
// - the dispatch-status callback never dispatches: it queues a drain, which
//   runs after the callback has returned;
// - every box libdbus holds is retained once and released by the free
//   function libdbus calls, so each ref has its unref.
//
// Jobs (handlers, the Swift jobs of actors on the connection's executor)
// are queued with `async` and run on the thread in order. The thread ends
// once the connection is released; jobs queued after that run, still in
// order and one at a time, on a serial DispatchQueue.

/// One libdbus watch. Guarded by `MainLoop.state`.
final class WatchBox: @unchecked Sendable {
    var watch: OpaquePointer?
    var enabled = false
    init(_ watch: OpaquePointer) { self.watch = watch }
}

/// A timer run by the loop: fires on the loop thread at `deadline`
/// (monotonic ns), then every `interval` ns when it repeats.
final class LoopTimer: @unchecked Sendable {
    /// Guarded by `MainLoop.state`; `.max` while disarmed.
    var deadline: UInt64 = .max
    var interval: UInt64?
    /// Set before the timer is first scheduled; runs on the loop thread.
    var fire: @Sendable () -> Void
    init(_ fire: @escaping @Sendable () -> Void) { self.fire = fire }
}

/// One libdbus timeout and its loop timer. Guarded by `MainLoop.state`.
final class TimeoutBox: @unchecked Sendable {
    var timeout: OpaquePointer?
    var timer: LoopTimer?
    init(_ timeout: OpaquePointer) { self.timeout = timeout }
}

/// Drives one connection: watches, timeouts, dispatch and queued jobs, all
/// on the connection's thread.
final class MainLoop: @unchecked Sendable {
    let raw: OpaquePointer

    struct State {
        var jobs: [@Sendable () -> Void] = []
        var watches: [WatchBox] = []
        var timers: [LoopTimer] = []
        /// The thread is (about to be) asleep in poll and must be woken.
        var sleeping = false
        /// Asked to end once every queued job has run.
        var stopping = false
        /// The thread has ended; jobs go to `fallback`.
        var exited = false
    }
    let state = Locked(State())
    /// True while a drain is queued; coalesces dispatch-status callbacks.
    private let drainScheduled = Atomic<Bool>(false)
    /// Set once the connection is closed; no libdbus call is made after it.
    let closed = Atomic<Bool>(false)
    /// Called on the loop thread for each message libdbus dispatches to the filter.
    var onMessage: (@Sendable (Message) -> Bool)?
    /// The queue's storage between runs of the jobs; the loop thread's alone.
    private var spareJobs: [@Sendable () -> Void] = []
    /// The job ``scheduleDrain()`` queues, made once (set in `init`, read only after).
    private var drainJob: @Sendable () -> Void = {}

    /// Written to wake the thread from poll.
    private let wakeFD: Int32
    /// The loop thread's id, once it runs.
    private let threadID = Atomic<UInt>(0)
    /// Runs jobs queued after the thread ended, keeping them serial.
    private let fallback: DispatchQueue
    private let fallbackKey = DispatchSpecificKey<ObjectIdentifier>()

    init(raw: OpaquePointer, label: String) {
        self.raw = raw
        wakeFD = (try? System.eventFD()) ?? -1
        fallback = DispatchQueue(label: "dbus.\(label).after")
        fallback.setSpecific(key: fallbackKey, value: ObjectIdentifier(self))
        drainJob = { [weak self] in
            guard let self else { return }
            drainScheduled.store(false, ordering: .releasing)
            drain()
        }
    }

    deinit {
        if wakeFD >= 0 { System.close(wakeFD) }
    }

    /// Starts the loop thread. It holds the loop until it ends.
    func start() -> Bool {
        guard wakeFD >= 0 else { return false }
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            let loop = Unmanaged<MainLoop>.fromOpaque(context!).takeRetainedValue()
            loop.run()
            return nil
        }, context)
        guard created == 0 else {
            Unmanaged<MainLoop>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    /// Installs the callbacks. libdbus holds one reference to `self` for each
    /// set of callbacks and releases it through `releaseLoop`.
    func install() -> Bool {
        let watchData = Unmanaged.passRetained(self).toOpaque()
        guard dbus_connection_set_watch_functions(raw, addWatch, removeWatch, toggleWatch, watchData, releaseLoop) != 0 else {
            Unmanaged<MainLoop>.fromOpaque(watchData).release()
            return false
        }
        let timeoutData = Unmanaged.passRetained(self).toOpaque()
        guard dbus_connection_set_timeout_functions(raw, addTimeout, removeTimeout, toggleTimeout, timeoutData, releaseLoop) != 0 else {
            Unmanaged<MainLoop>.fromOpaque(timeoutData).release()
            return false
        }
        dbus_connection_set_dispatch_status_function(raw, dispatchStatusChanged, Unmanaged.passRetained(self).toOpaque(), releaseLoop)
        dbus_connection_set_wakeup_main_function(raw, wakeUp, Unmanaged.passRetained(self).toOpaque(), releaseLoop)
        guard dbus_connection_add_filter(raw, filterMessage, Unmanaged.passRetained(self).toOpaque(), releaseLoop) != 0 else {
            return false
        }
        // Messages may already be waiting (e.g. read during authentication).
        scheduleDrain()
        return true
    }

    // MARK: Jobs

    /// True on the loop thread (or, once it ended, on the queue that took over).
    var isCurrent: Bool {
        let id = threadID.load(ordering: .relaxed)
        if id != 0, pthread_equal(pthread_self(), id) != 0 { return true }
        return DispatchQueue.getSpecific(key: fallbackKey) == ObjectIdentifier(self)
    }

    /// Queues `job` to run on the loop thread after the jobs queued before it.
    func async(_ job: @escaping @Sendable () -> Void) {
        let (wake, exited) = state.withLock { state -> (Bool, Bool) in
            if state.exited { return (false, true) }
            state.jobs.append(job)
            return (Self.takeSleeper(&state), false)
        }
        if exited {
            fallback.async(execute: job)
        } else if wake {
            signal()
        }
    }

    /// Runs `job` at once when on the loop thread, else queues it.
    func execute(_ job: @escaping @Sendable () -> Void) {
        if isCurrent { job() } else { async(job) }
    }

    /// Runs `job` with `context` at once when on the loop thread, else queues
    /// it. A `job` that captures nothing is made without allocating, so only
    /// a job that is queued costs one.
    ///
    /// Every libdbus call that touches the socket is made on the loop thread
    /// this way. When another thread holds a connection's I/O path (as a send
    /// does while it writes), libdbus's watch handler gives up after a
    /// millisecond and reads nothing; keeping all I/O on one thread means that
    /// never happens.
    func execute<Context: Sendable>(_ context: Context, _ job: @escaping @Sendable (Context) -> Void) {
        if isCurrent { job(context) } else { async { job(context) } }
    }

    /// Ends the thread once the jobs queued so far have run.
    func stop() {
        let wake = state.withLock { state -> Bool in
            state.stopping = true
            return Self.takeSleeper(&state)
        }
        if wake { signal() }
    }

    private func signal() {
        try? System.signal(wakeFD)
    }

    /// True when the thread sleeps and must be signalled (it is then marked
    /// awake, so one signal serves every change made meanwhile).
    private static func takeSleeper(_ state: inout State) -> Bool {
        guard state.sleeping else { return false }
        state.sleeping = false
        return true
    }

    // MARK: The loop

    private func run() {
        threadID.store(pthread_self(), ordering: .relaxed)
        var fds: [pollfd] = []
        var polled: [WatchBox] = []
        var due: [LoopTimer] = []
        while true {
            // Jobs first: they may send, which may toggle watches.
            runJobs()

            // Timers that are due, and how long to sleep until the next one.
            let now = monotonicNanoseconds()
            var next = UInt64.max
            let step: Step = state.withLock { state -> Step in
                due.removeAll(keepingCapacity: true)
                for timer in state.timers {
                    if timer.deadline <= now {
                        due.append(timer)
                        if let interval = timer.interval {
                            timer.deadline = now &+ interval
                            next = min(next, timer.deadline)
                        } else {
                            timer.deadline = .max
                        }
                    } else {
                        next = min(next, timer.deadline)
                    }
                }
                let busy = !due.isEmpty || !state.jobs.isEmpty
                if !busy && state.stopping {
                    state.exited = true
                    return .exit
                }
                fds.removeAll(keepingCapacity: true)
                polled.removeAll(keepingCapacity: true)
                fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
                for box in state.watches where box.enabled {
                    guard let watch = box.watch else { continue }
                    let fd = dbus_watch_get_unix_fd(watch)
                    guard fd >= 0 else { continue }
                    let flags = dbus_watch_get_flags(watch)
                    var events: Int16 = 0
                    if flags & UInt32(DBUS_WATCH_READABLE.rawValue) != 0 { events |= Int16(POLLIN) }
                    if flags & UInt32(DBUS_WATCH_WRITABLE.rawValue) != 0 { events |= Int16(POLLOUT) }
                    fds.append(pollfd(fd: fd, events: events, revents: 0))
                    polled.append(box)
                }
                if busy { return .work }
                state.sleeping = true
                return .sleep
            }
            let timeout: Int32
            switch step {
            case .exit:
                threadID.store(0, ordering: .relaxed)
                return
            case .work:
                for timer in due { timer.fire() }
                due.removeAll(keepingCapacity: true)
                // More jobs are queued (a job may queue the next one): look at
                // the socket without sleeping before running them, so messages
                // that arrived meanwhile are not held up behind a long line of jobs.
                timeout = 0
            case .sleep:
                timeout = Self.pollTimeout(until: next)
            }
            // A failing poll (only EFAULT, EINVAL or ENOMEM remain) is tried again.
            let ready = (try? System.poll(&fds, timeout: timeout)) ?? 0
            if step == .sleep { state.withLock { $0.sleeping = false } }
            guard ready > 0 else { continue }
            if fds[0].revents != 0 {
                try? System.drain(wakeFD)
            }
            for index in 1..<fds.count where fds[index].revents != 0 {
                let revents = fds[index].revents
                var condition: UInt32 = 0
                if revents & Int16(POLLIN) != 0 { condition |= UInt32(DBUS_WATCH_READABLE.rawValue) }
                if revents & Int16(POLLOUT) != 0 { condition |= UInt32(DBUS_WATCH_WRITABLE.rawValue) }
                if revents & Int16(POLLHUP) != 0 { condition |= UInt32(DBUS_WATCH_HANGUP.rawValue) }
                if revents & Int16(POLLERR | POLLNVAL) != 0 { condition |= UInt32(DBUS_WATCH_ERROR.rawValue) }
                handle(polled[index - 1], condition)
            }
        }
    }

    /// How long poll may sleep until the timer due at `next` (monotonic ns).
    private static func pollTimeout(until next: UInt64) -> Int32 {
        guard next != .max else { return -1 }
        let now = monotonicNanoseconds()
        return next <= now ? 0 : Int32(clamping: (next - now + 999_999) / 1_000_000)
    }

    /// What the loop does after looking at its jobs and timers.
    private enum Step { case work, sleep, exit }

    private func runJobs() {
        // The queue and an empty array trade places, and the array comes back
        // emptied: taking the jobs allocates nothing, where copying them out
        // made the queue allocate its storage again each time.
        var jobs = spareJobs
        spareJobs = []
        state.withLock { swap(&$0.jobs, &jobs) }
        for job in jobs { job() }
        jobs.removeAll(keepingCapacity: true)
        spareJobs = jobs
    }

    private func handle(_ box: WatchBox, _ condition: UInt32) {
        guard !closed.load(ordering: .acquiring) else { return }
        // The watch may have been removed or disabled by an earlier handler.
        let watch: OpaquePointer? = state.withLock { _ in box.enabled ? box.watch : nil }
        guard let watch else { return }
        dbus_watch_handle(watch, condition)
        // Jobs queued before the socket was read run before what it brought
        // is dispatched: a thread that queued a send and then caused a
        // message to arrive here sees its send go out first.
        runJobs()
        drain()
    }

    // MARK: Watches

    func add(_ box: WatchBox) {
        let wake = state.withLock { state -> Bool in
            box.enabled = box.watch.map { dbus_watch_get_enabled($0) != 0 } ?? false
            state.watches.append(box)
            return Self.takeSleeper(&state)
        }
        if wake { signal() }
    }

    func toggle(_ box: WatchBox) {
        let wake = state.withLock { state -> Bool in
            box.enabled = box.watch.map { dbus_watch_get_enabled($0) != 0 } ?? false
            return Self.takeSleeper(&state)
        }
        if wake { signal() }
    }

    func remove(_ box: WatchBox) {
        state.withLock { state in
            box.enabled = false
            box.watch = nil
            state.watches.removeAll { $0 === box }
        }
    }

    // MARK: Timers

    /// Registers a timer; it stays disarmed until `schedule`.
    func addTimer(_ fire: @escaping @Sendable () -> Void) -> LoopTimer {
        let timer = LoopTimer(fire)
        state.withLock { $0.timers.append(timer) }
        return timer
    }

    /// Fires `timer` at `deadline` (monotonic ns), then every `interval` ns if given.
    func schedule(_ timer: LoopTimer, at deadline: UInt64, repeating interval: UInt64? = nil) {
        let wake = state.withLock { state -> Bool in
            let earlier = deadline < timer.deadline
            timer.deadline = deadline
            timer.interval = interval
            return earlier && Self.takeSleeper(&state)
        }
        if wake { signal() }
    }

    func disarm(_ timer: LoopTimer) {
        state.withLock { _ in timer.deadline = .max }
    }

    func removeTimer(_ timer: LoopTimer) {
        state.withLock { state in
            timer.deadline = .max
            state.timers.removeAll { $0 === timer }
        }
    }

    /// libdbus timeouts: repeating, re-armed when toggled.
    func arm(_ box: TimeoutBox) {
        let (timer, interval): (LoopTimer?, UInt64?) = state.withLock { _ in
            guard let timeout = box.timeout, dbus_timeout_get_enabled(timeout) != 0 else { return (box.timer, nil) }
            return (box.timer, UInt64(max(1, dbus_timeout_get_interval(timeout))) * 1_000_000)
        }
        guard let timer else { return }
        if let interval {
            schedule(timer, at: monotonicNanoseconds() &+ interval, repeating: interval)
        } else {
            disarm(timer)
        }
    }

    func fire(_ box: TimeoutBox) {
        guard !closed.load(ordering: .acquiring) else { return }
        let timeout: OpaquePointer? = state.withLock { _ in box.timeout }
        guard let timeout, dbus_timeout_get_enabled(timeout) != 0 else { return }
        dbus_timeout_handle(timeout)
        drain()
    }

    // MARK: Dispatch

    /// Queues a drain unless one is pending.
    func scheduleDrain() {
        guard !drainScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        async(drainJob)
    }

    /// Dispatches every queued message. Runs on the loop thread only.
    func drain() {
        while !closed.load(ordering: .acquiring), dbus_connection_dispatch(raw) == DBUS_DISPATCH_DATA_REMAINS {}
    }
}



// MARK: - C callbacks

private func loop(_ data: UnsafeMutableRawPointer?) -> MainLoop {
    Unmanaged<MainLoop>.fromOpaque(data!).takeUnretainedValue()
}

private let releaseLoop: DBusFreeFunction = { data in
    guard let data else { return }
    Unmanaged<MainLoop>.fromOpaque(data).release()
}

private let releaseBox: DBusFreeFunction = { data in
    guard let data else { return }
    Unmanaged<AnyObject>.fromOpaque(data).release()
}

private let addWatch: DBusAddWatchFunction = { watch, data in
    guard let watch else { return 0 }
    let box = WatchBox(watch)
    dbus_watch_set_data(watch, Unmanaged.passRetained(box as AnyObject).toOpaque(), releaseBox)
    loop(data).add(box)
    return 1
}

private func watchBox(_ watch: OpaquePointer?) -> WatchBox? {
    guard let watch, let p = dbus_watch_get_data(watch) else { return nil }
    return Unmanaged<AnyObject>.fromOpaque(p).takeUnretainedValue() as? WatchBox
}

private let toggleWatch: DBusWatchToggledFunction = { watch, data in
    guard let box = watchBox(watch) else { return }
    loop(data).toggle(box)
}

private let removeWatch: DBusRemoveWatchFunction = { watch, data in
    guard let box = watchBox(watch) else { return }
    loop(data).remove(box)
}

private let addTimeout: DBusAddTimeoutFunction = { timeout, data in
    guard let timeout else { return 0 }
    let mainLoop = loop(data)
    let box = TimeoutBox(timeout)
    dbus_timeout_set_data(timeout, Unmanaged.passRetained(box as AnyObject).toOpaque(), releaseBox)
    // The timer holds the box weakly: libdbus owns the box through its data.
    box.timer = mainLoop.addTimer { [weak mainLoop, weak box] in
        if let mainLoop, let box { mainLoop.fire(box) }
    }
    mainLoop.arm(box)
    return 1
}

private func timeoutBox(_ timeout: OpaquePointer?) -> TimeoutBox? {
    guard let timeout, let p = dbus_timeout_get_data(timeout) else { return nil }
    return Unmanaged<AnyObject>.fromOpaque(p).takeUnretainedValue() as? TimeoutBox
}

private let toggleTimeout: DBusTimeoutToggledFunction = { timeout, data in
    guard let box = timeoutBox(timeout) else { return }
    loop(data).arm(box)
}

private let removeTimeout: DBusRemoveTimeoutFunction = { timeout, data in
    guard let box = timeoutBox(timeout) else { return }
    let mainLoop = loop(data)
    let timer = mainLoop.state.withLock { _ -> LoopTimer? in
        box.timeout = nil
        defer { box.timer = nil }
        return box.timer
    }
    if let timer { mainLoop.removeTimer(timer) }
}

private let dispatchStatusChanged: DBusDispatchStatusFunction = { _, status, data in
    // Never dispatch from here (libdbus holds its lock); queue it instead.
    if status == DBUS_DISPATCH_DATA_REMAINS { loop(data).scheduleDrain() }
}

private let wakeUp: DBusWakeupMainFunction = { data in
    loop(data).scheduleDrain()
}

private let filterMessage: DBusHandleMessageFunction = { _, message, data in
    guard let message else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let mainLoop = loop(data)
    guard let onMessage = mainLoop.onMessage else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    dbus_message_ref(message)
    return onMessage(Message(owning: message)) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
}
