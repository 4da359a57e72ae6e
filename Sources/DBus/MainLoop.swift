import CDBus
import Dispatch

#if canImport(Glibc)
import Glibc
#endif
import Synchronization

// libdbus main-loop integration on a serial DispatchQueue, after BlueZ's
// gdbus/mainloop.c:
//
// - a watch gets DispatchSources only while libdbus has it enabled; a disabled
//   watch has no source at all, so an idle connection costs nothing;
// - a timeout is a repeating timer (libdbus timeouts fire until removed or
//   disabled), re-armed when toggled because its interval may change;
// - the dispatch-status callback never dispatches: it schedules a drain on
//   the queue, which runs after the callback has returned;
// - every box libdbus holds is retained once and released by the free
//   function libdbus calls, so each ref has its unref.

/// One libdbus watch and the sources that serve it while it is enabled.
/// Mutable state is guarded by `MainLoop.lock`.
final class WatchBox: @unchecked Sendable {
    var watch: OpaquePointer?
    var sources: [any DispatchSourceProtocol] = []
    init(_ watch: OpaquePointer) { self.watch = watch }
}

/// One libdbus timeout and its timer while enabled. Guarded by `MainLoop.lock`.
final class TimeoutBox: @unchecked Sendable {
    var timeout: OpaquePointer?
    var timer: (any DispatchSourceTimer)?
    init(_ timeout: OpaquePointer) { self.timeout = timeout }
}

/// Drives one connection: watches, timeouts and dispatch, all on `queue`.
final class MainLoop: @unchecked Sendable {
    let raw: OpaquePointer
    let queue: DispatchQueue
    let lock = Mutex(())
    /// True while a drain is scheduled; coalesces dispatch-status callbacks.
    private let drainScheduled = Atomic<Bool>(false)
    /// Set once the connection is closed; no libdbus call is made after it.
    let closed = Atomic<Bool>(false)
    /// The readable watch, for the watchdog below. Guarded by `lock`.
    private var readBox: WatchBox?
    private let watchdogRunning = Atomic<Bool>(false)
    private let lastActivity = Atomic<UInt64>(0)
    /// Called on `queue` for each message libdbus dispatches to the filter.
    var onMessage: (@Sendable (Message) -> Bool)?

    /// Marks `queue`, so code can tell it runs there.
    let queueKey = DispatchSpecificKey<ObjectIdentifier>()

    init(raw: OpaquePointer, queue: DispatchQueue) {
        self.raw = raw
        self.queue = queue
        queue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
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

    // MARK: Watches

    func enable(_ box: WatchBox) {
        lock.withLock { _ in
            guard let watch = box.watch, box.sources.isEmpty, dbus_watch_get_enabled(watch) != 0 else { return }
            let fd = dbus_watch_get_unix_fd(watch)
            guard fd >= 0 else { return }
            let flags = dbus_watch_get_flags(watch)
            if flags & UInt32(DBUS_WATCH_READABLE.rawValue) != 0 {
                readBox = box
                let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
                source.setEventHandler { [self] in self.handle(box, UInt32(DBUS_WATCH_READABLE.rawValue)) }
                box.sources.append(source)
                source.resume()
            }
            if flags & UInt32(DBUS_WATCH_WRITABLE.rawValue) != 0 {
                let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
                source.setEventHandler { [self] in self.handle(box, UInt32(DBUS_WATCH_WRITABLE.rawValue)) }
                box.sources.append(source)
                source.resume()
            }
        }
    }

    func disable(_ box: WatchBox) {
        lock.withLock { _ in
            for source in box.sources { source.cancel() }
            box.sources.removeAll()
        }
    }

    func handle(_ box: WatchBox, _ condition: UInt32) {
        guard !closed.load(ordering: .acquiring) else { return }
        let watch: OpaquePointer? = lock.withLock { _ in box.sources.isEmpty ? nil : box.watch }
        guard let watch else { return }
        let fd = dbus_watch_get_unix_fd(watch)
        dbus_watch_handle(watch, condition)
        drain()
        noteActivity()
        // libdbus skips the read when another thread holds the connection's
        // I/O path for more than a millisecond (a send in progress), and
        // returns as if it had read. Look again so no wake-up is lost.
        if condition == UInt32(DBUS_WATCH_READABLE.rawValue), lock.withLock({ _ in !box.sources.isEmpty }) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 0) > 0, pfd.revents & Int16(POLLIN) != 0 {
                queue.async { [self] in handle(box, condition) }
            }
        }
    }

    // MARK: Watchdog

    // A read source can miss readiness when libdbus reads less than is there
    // or another thread held the I/O path; then nothing wakes the queue until
    // more data arrives. While the connection is busy (and for a second
    // after), a 10 ms tick looks at the socket and reads what is waiting. An
    // idle connection runs no tick at all.

    /// Records traffic and starts the watchdog if it is not running.
    func noteActivity() {
        lastActivity.store(DirectLibdbus.monotonicNanoseconds(), ordering: .relaxed)
        if !watchdogRunning.exchange(true, ordering: .acquiringAndReleasing) { scheduleTick() }
    }

    private func scheduleTick() {
        queue.asyncAfter(deadline: .now() + .milliseconds(10)) { [self] in tick() }
    }

    private func tick() {
        guard !closed.load(ordering: .acquiring) else { return }
        let box: WatchBox? = lock.withLock { _ in readBox.flatMap { $0.sources.isEmpty ? nil : $0 } }
        if let box, let watch = lock.withLock({ _ in box.watch }) {
            var pfd = pollfd(fd: dbus_watch_get_unix_fd(watch), events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 0) > 0, pfd.revents & Int16(POLLIN) != 0 {
                handle(box, UInt32(DBUS_WATCH_READABLE.rawValue))
            }
        }
        let idleFor = DirectLibdbus.monotonicNanoseconds() &- lastActivity.load(ordering: .relaxed)
        if idleFor < 1_000_000_000 {
            scheduleTick()
            return
        }
        watchdogRunning.store(false, ordering: .releasing)
        // Traffic noted between the check and the store restarts it.
        let again = DirectLibdbus.monotonicNanoseconds() &- lastActivity.load(ordering: .relaxed) < 1_000_000_000
        if again, !watchdogRunning.exchange(true, ordering: .acquiringAndReleasing) { scheduleTick() }
    }

    // MARK: Timeouts

    func arm(_ box: TimeoutBox) {
        lock.withLock { _ in
            box.timer?.cancel()
            box.timer = nil
            guard let timeout = box.timeout, dbus_timeout_get_enabled(timeout) != 0 else { return }
            let interval = DispatchTimeInterval.milliseconds(Int(max(1, dbus_timeout_get_interval(timeout))))
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(1))
            timer.setEventHandler { [self] in self.fire(box) }
            box.timer = timer
            timer.resume()
        }
    }

    func disarm(_ box: TimeoutBox) {
        lock.withLock { _ in
            box.timer?.cancel()
            box.timer = nil
        }
    }

    private func fire(_ box: TimeoutBox) {
        guard !closed.load(ordering: .acquiring) else { return }
        let timeout: OpaquePointer? = lock.withLock { _ in box.timer == nil ? nil : box.timeout }
        guard let timeout else { return }
        dbus_timeout_handle(timeout)
        drain()
    }

    // MARK: Dispatch

    /// Schedules a drain on the queue unless one is pending.
    func scheduleDrain() {
        guard !drainScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            drainScheduled.store(false, ordering: .releasing)
            drain()
        }
    }

    /// Dispatches every queued message. Runs on `queue` only.
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
    loop(data).enable(box)
    return 1
}

private func watchBox(_ watch: OpaquePointer?) -> WatchBox? {
    guard let watch, let p = dbus_watch_get_data(watch) else { return nil }
    return Unmanaged<AnyObject>.fromOpaque(p).takeUnretainedValue() as? WatchBox
}

private let toggleWatch: DBusWatchToggledFunction = { watch, data in
    guard let watch, let box = watchBox(watch) else { return }
    if dbus_watch_get_enabled(watch) != 0 { loop(data).enable(box) } else { loop(data).disable(box) }
}

private let removeWatch: DBusRemoveWatchFunction = { watch, data in
    guard let box = watchBox(watch) else { return }
    let mainLoop = loop(data)
    mainLoop.disable(box)
    mainLoop.lock.withLock { _ in box.watch = nil }
}

private let addTimeout: DBusAddTimeoutFunction = { timeout, data in
    guard let timeout else { return 0 }
    let box = TimeoutBox(timeout)
    dbus_timeout_set_data(timeout, Unmanaged.passRetained(box as AnyObject).toOpaque(), releaseBox)
    loop(data).arm(box)
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
    mainLoop.disarm(box)
    mainLoop.lock.withLock { _ in box.timeout = nil }
}

private let dispatchStatusChanged: DBusDispatchStatusFunction = { _, status, data in
    // Never dispatch from here (libdbus holds its lock); schedule it instead.
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
